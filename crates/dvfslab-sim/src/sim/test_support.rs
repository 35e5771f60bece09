//! What the simulator's unit tests share: a workload of fixed tasks, and a run of it on the
//! 2-CPU KVM guest to the end, whose state the test then reads.

use std::rc::Rc;

use crate::hw::platform::Platform;
use crate::sched::task::{Amount, Op};
use crate::sim::{Advance, Sim, SimConfig};
use crate::workload::{Better, DeviceSpec, Metric, RunStats, TaskSpec, Workload};

/// `tasks` started at once, the `programs` they spawn by index, and the I/O `devices` their
/// ops address by index.
pub(crate) struct Tasks {
    pub tasks: Vec<TaskSpec>,
    pub programs: Vec<Rc<[Op]>>,
    pub devices: Vec<DeviceSpec>,
}

impl Workload for Tasks {
    fn tasks(&self, _: &Platform) -> Vec<TaskSpec> {
        self.tasks.clone()
    }
    fn programs(&self, _: &Platform) -> Vec<Rc<[Op]>> {
        self.programs.clone()
    }
    fn devices(&self) -> Vec<DeviceSpec> {
        self.devices.clone()
    }
    fn default_duration_ns(&self) -> u64 {
        20_000_000
    }
    fn metric(&self, _: &RunStats) -> Metric {
        Metric { name: "none".into(), value: 0.0, unit: "".into(), better: Better::Higher }
    }
}

/// `cycles` of work.
pub(crate) fn run(cycles: f64) -> Op {
    Op::Run { cycles: Amount::Fixed(cycles), mem_frac: 0.0 }
}

/// `workload` run under `cfg` on the 2-CPU KVM guest to the end of the run.
pub(crate) fn run_on_kvm_guest(cfg: &SimConfig, workload: Tasks) -> Sim {
    let json = include_str!("../../../../python/dvfslab/data/platforms/kvm-guest-2cpu.json");
    let plat = Platform::from_json(json, "kvm").unwrap();
    let mut sim = Sim::with_workload(plat, cfg, Box::new(workload), "test".into()).unwrap();
    sim.begin();
    while sim.advance(&mut |_| std::ops::ControlFlow::Continue(())).unwrap() == Advance::Paused {}
    sim
}
