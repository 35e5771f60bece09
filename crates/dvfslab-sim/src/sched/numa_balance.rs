//! Periodic balancing between NUMA nodes (the packages): the load balancer's NUMA level moves
//! a running task to a node with more idle CPUs.
//!
//! With no task waiting anywhere, the balancer of an idle node finds the busiest node running
//! more tasks on as many CPUs, and nothing it can pull: a lone task is running, so it fails,
//! and after more failures than the domain's `cache_nice_tries` (2 at the NUMA level) plus two
//! it moves the running task by active balance. The attempts follow the NUMA domain's interval
//! (its span weight in ms; a failure leaves it there). A pair of communicating tasks that
//! wake-affine keeps on one node is then pushed apart and pulled back at its next synchronous
//! wake-up; Linux 5.6 stopped the fight for low-utilisation nodes ("sched/fair: Allow a small
//! load imbalance between low utilisation SD_NUMA domains", whose changelog shows it on
//! netperf TCP_STREAM over loopback on a 2-socket Haswell):
//!
//! ```text
//!   balanced   if  idle(local) ≤ idle(busiest) + 1     (< 5.5 CPU_IDLE's test; since 5.5 the
//!                                                        imbalance, half the idle difference)
//!   tolerated  if  5.6–5.10:  running(busiest) ≤ 2
//!                  5.11–5.18: running(busiest) < node/4        and imbalance ≤ 2
//!                  5.19+:     running(busiest) ≤ imb_numa_nr   and imbalance ≤ 2
//!   imb_numa_nr = the node's LLCs when it has several, else max(1, node/8)
//! ```
//!
//! Which task moves is the kernel's choice as at the SMT level (`Sim::active_balance_source`):
//! before 5.5 the busiest run-queue skips a lone task whose load exceeds the imbalance, so of a
//! saturated task and a lighter partner the lighter one moves; since 5.5, the first busy CPU's.
//! Queued tasks are left to the new-idle and idle pulls (`Sim::push_to_idle`).

use crate::kernel::KernelVersion;
use crate::machine::Machine;
use crate::sched::Sched;

/// Failed balances before the active one: `cache_nice_tries` of the NUMA level (2) plus two.
pub(crate) const NUMA_FAILURES_BEFORE_ACTIVE: u32 = 4;

impl Sched {
    /// The CPU of `pkg` whose running task the NUMA balancer would move, and where to: `None`
    /// when the nodes count as balanced or `pkg` is not the busiest.
    pub(crate) fn numa_move(&self, machine: &Machine, pkg: usize) -> Option<(usize, usize)> {
        let nodes = &machine.plat.packages;
        let idle: Vec<usize> = nodes.iter().map(|n| n.cpus.iter().filter(|&&c| self.cpu_is_idle(c)).count()).collect();
        // `pkg` must be the busiest; the idlest other node is the first of equals.
        let local = (0..nodes.len()).filter(|&p| p != pkg).max_by_key(|&p| (idle[p], std::cmp::Reverse(p)))?;
        if idle.iter().any(|&n| n < idle[pkg]) || idle[local] <= idle[pkg] + 1 {
            return None;
        }
        let cpus = &nodes[pkg].cpus;
        // Tasks waiting in the busiest node are pulled as such, not by this path.
        if cpus.iter().any(|&c| self.nr_running(c) > 1) {
            return None;
        }
        if self.numa_imbalance_tolerated(machine, pkg, cpus.len() - idle[pkg], (idle[local] - idle[pkg]) / 2) {
            return None;
        }
        let local_cpus = &nodes[local].cpus;
        let local_group = (
            local_cpus.iter().map(|&c| machine.plat.cpus[c].cap_orig).sum::<u64>(),
            local_cpus.iter().map(|&c| self.runnable_load(c)).sum::<u64>(),
        );
        let src = self.active_balance_source(machine, cpus, self.all_cpus(machine), local_group)?;
        let task = self.cpus[src].curr?;
        let dst = self.find_idle_core(machine, task, local_cpus, local_cpus[0]);
        Some((src, dst.or_else(|| self.find_idle_cpu(task, local_cpus, local_cpus[0]))?))
    }

    /// Whether the kernel leaves node `pkg` as it is, running `running` tasks with an
    /// imbalance of `imbalance` tasks (half its idle-CPU deficit) against the idlest node.
    pub(crate) fn numa_imbalance_tolerated(
        &self,
        machine: &Machine,
        pkg: usize,
        running: usize,
        imbalance: usize,
    ) -> bool {
        let node_cpus = machine.plat.packages[pkg].cpus.len();
        let llcs = machine.plat.llcs.iter().filter(|l| machine.plat.cpus[l[0]].package == pkg).count();
        let imb_numa_nr = if llcs > 1 { llcs } else { (node_cpus / 8).max(1) };
        match machine.kernel {
            k if k < KernelVersion(5, 6, 0) => false,
            k if k < KernelVersion(5, 11, 0) => running <= 2,
            k if k < KernelVersion(5, 19, 0) => running < node_cpus / 4 && imbalance <= 2,
            _ => running <= imb_numa_nr && imbalance <= 2,
        }
    }
}
