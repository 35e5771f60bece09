//! The task-program interpreter: a CPU's current task runs its program's operations (run
//! work, sleep, block, wake, fork, exit, the objects' operations) until it runs work or leaves
//! the CPU, and the next task's program goes on from there.

use super::*;

impl Sim {
    /// The name of `parent`'s child `id`: the parent's name and the id ("make-3"), or, past a
    /// few generations, the workload task's name, an ellipsis and the id ("a-…-4096"), so that
    /// a long chain of forks does not grow its names with its length.
    pub(crate) fn child_name(&self, parent: usize, id: usize) -> String {
        let name = &self.sched.tasks[parent].name;
        if name.len() < MAX_INHERITED_NAME_LEN {
            format!("{name}-{id}")
        } else {
            format!("{}-…-{id}", self.sched.tasks[self.sched.tasks[parent].root].name)
        }
    }

    /// A fork past [`crate::sched::task::MAX_TASKS`]: the run stops at the end of this event with an
    /// error that says who forked. The task goes on as if the fork had failed.
    pub(crate) fn refuse_fork(&mut self, task: usize) {
        if self.run.failure.is_some() {
            return;
        }
        let name = &self.sched.tasks[task].name;
        let root = &self.sched.tasks[self.sched.tasks[task].root].name;
        self.run.failure = Some(crate::error::SimError::config(
            format!("workload '{}'", self.work.workload_name),
            "tasks",
            format!(
                "task '{name}' (of '{root}') forked past the limit of {} tasks a run may have alive at once, at {:.3} ms \
                 simulated: does a task fork without end?",
                crate::sched::task::MAX_TASKS,
                self.q.now() as f64 * 1e-6
            ),
        ));
    }
}
