//! ffmpeg: a multi-threaded encode of a fixed clip, timed (Phoronix `pts/ffmpeg`).
//!
//! Frame-parallel encoding is a chain of dependent work items: item `t` needs item `t−1`
//! (the reference frame's progress), and consecutive items run on consecutive worker
//! threads, each woken on whatever CPU is idle. The total demand is ~1–2 CPUs, spread over
//! `threads` CPUs, so each CPU's utilisation is about 1/threads while the throughput depends
//! on the frequency: the "migrating single thread" pathology. Each item also hands side work
//! (slices, lookahead) to a helper.
//!
//! ```text
//!   worker i (i = t mod k): wait token t; cpu(b); pass token t+1 to worker (i+1) mod k;
//!                           give side work (0.6·b) to helper i
//!   one frame = 4 tokens
//! ```
//!
//! Metric: Elapsed in seconds (lower is better) for `frames` frames; FPS = frames / elapsed.
//! The campaign (intel-pstate-load-based) reports time. `frames` scales the clip (the PTS
//! samples are a few thousand frames; 300 here). Shortcomings: a single dependency chain
//! (x264's row-level overlap between frame threads is not modelled), uniform token work.

use super::estimates::ffmpeg as est;
use super::{measure, pieces, sample, Better, Metric, RunStats, TaskSpec, Workload, WorkloadInfo};
use crate::hw::platform::Platform;
use crate::sched::task::{Amount, Mark, Op};
use crate::spec::{Knob, KnobValues};

pub const INFO: WorkloadInfo = WorkloadInfo {
    name: "ffmpeg",
    description: "ffmpeg/x264 encode: a dependency chain rotating over worker threads, plus side work",
    metric: "elapsed",
    unit: "s",
    better: Better::Lower,
    knobs: &[
        Knob::new("threads", "threads", 0.0, 0.0, 4096.0, "-threads (0 = number of CPUs)").integer(),
        Knob::new("frames", "frames", 300.0, 1.0, 1e7, "frames to encode").integer(),
    ],
    build: |k: &KnobValues| Box::new(Ffmpeg { threads: k.get_u64("threads") as usize, frames: k.get_u64("frames") }),
};

/// Counter 0: frames encoded.
const FRAMES: u16 = 0;
/// Tokens of a worker built at a time (see `pieces`).
const TOKENS_PER_PIECE: usize = 256;

struct Ffmpeg {
    threads: usize,
    frames: u64,
}

impl Workload for Ffmpeg {
    fn tasks(&self, plat: &Platform) -> Vec<TaskSpec> {
        let k = if self.threads == 0 { plat.ncpus() } else { self.threads };
        let m = est::TOKENS_PER_FRAME as usize;
        let tokens = self.frames as usize * m;
        let work = Amount::Uniform(est::TOKEN_CYCLES.0, est::TOKEN_CYCLES.1);
        let side = Op::Run { cycles: sample::scaled(work, est::SIDE_FRAC), mem_frac: est::MEM_FRAC };
        let side_ch = move |i: usize| (k + i) as u32;
        let mut tasks = Vec::new();
        for i in 0..k.min(tokens) {
            // Worker i carries tokens i, i + k, i + 2k, ...
            let count = (tokens - i).div_ceil(k);
            let worker = pieces::program(count, TOKENS_PER_PIECE, vec![Op::Exit], move |_, steps, w| {
                for t in steps.map(|j| i + j * k) {
                    if t > 0 {
                        w.push(Op::Wait { ch: i as u32 });
                    }
                    w.push(Op::Run { cycles: work, mem_frac: est::MEM_FRAC });
                    if t + 1 < tokens {
                        w.push(Op::Post { ch: ((t + 1) % k) as u32, sync: false });
                    }
                    w.push(Op::Post { ch: side_ch(i), sync: false });
                    if t % m == m - 1 {
                        w.push(Op::Mark(Mark::Add { counter: FRAMES, amount: 1 }));
                    }
                }
            });
            let side = side.clone();
            let helper = pieces::program(count, TOKENS_PER_PIECE, vec![Op::Exit], move |_, steps, h| {
                for _ in steps {
                    h.extend([Op::Wait { ch: side_ch(i) }, side.clone()]);
                }
            });
            tasks.push(TaskSpec::new(format!("x264-{i}"), worker));
            tasks.push(TaskSpec::new(format!("x264-side-{i}"), helper));
        }
        tasks
    }

    fn default_duration_ns(&self) -> u64 {
        // A cap: the run ends when the clip is encoded.
        3_600_000_000_000
    }

    fn metric(&self, stats: &RunStats) -> Metric {
        measure::metric(&INFO, measure::elapsed_s(stats, FRAMES as usize, self.frames))
    }
}
