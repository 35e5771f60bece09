//! uibench: the Android UI frame pipeline of UiBench / Jankbench (campaign
//! margins-pixel6).
//!
//! At each vsync the UI thread runs input, animation and layout and records a display list,
//! then hands the frame to RenderThread and waits only until RenderThread has taken it
//! (`DrawFrameTask::postAndWait`, released by `unblockUiThread` after `syncFrameState`):
//! RenderThread draws and swaps the frame while the UI thread waits for the next vsync, and
//! surfaceflinger composes at the vsync after that. A frame lasts from its vsync to
//! RenderThread's end (FrameMetrics' total duration).
//!
//! ```text
//!   UI: at vsync: cpu(u ~ lognormal); hand the frame to RT (sync wake-up); wait until RT takes it
//!   RT: take the frame; let UI go; cpu(r ~ lognormal); frame done; signal SF
//!   SF: at the next vsync: cpu(s)
//! ```
//!
//! The two threads are a pipeline: the UI thread builds frame n + 1 while RenderThread draws
//! frame n, so a frame may take up to two vsync periods of their work without the display
//! losing its rate; a RenderThread still busy with the previous frame holds the UI thread
//! back until it takes the next.
//!
//! Work is given as time on the fastest core at its top frequency. `placement=0` keeps the
//! UI and RenderThread threads on the fastest cluster (standing in for what EAS and the top-app uclamp.min
//! achieve on Android), `1` leaves placement to the scheduler (EAS and misfit migration where
//! the platform and kernel have them). `uclamp_min` sets their uclamp.min request, which
//! schedutil and placement honour as far as the core implements uclamp.
//!
//! Metric: the share of janky frames in percent (lower is better), counted from each frame's
//! duration (the response times) as Jankbench counts them ([`janky_frames`]). A UI thread
//! that finishes after the next vsync starts its next frame at the vsync after, as
//! Choreographer does. Shortcomings: the sync step's own cost is part of RenderThread's work
//! (RenderThread lets the UI thread go as it takes the frame); no buffer queue (RenderThread
//! never waits for a free buffer); no GPU; the rest of the phone (other apps, system
//! services) is idle.

use super::estimates::uibench as est;
use super::{measure, pieces, sample, Better, Metric, RunStats, TaskSpec, Workload, WorkloadInfo};
use crate::hw::platform::Platform;
use crate::sched::task::{Amount, Mark, Op};
use crate::spec::{Knob, KnobValues};

pub const INFO: WorkloadInfo = WorkloadInfo {
    name: "uibench",
    description: "Android UI pipeline per vsync (UI thread, RenderThread, surfaceflinger): janky frames",
    metric: "jank",
    unit: "%",
    better: Better::Lower,
    knobs: &[
        Knob::new("fps", "Hz", 60.0, 10.0, 240.0, "display refresh rate"),
        Knob::new("frames", "frames", 300.0, 1.0, 1e7, "frames to render").integer(),
        Knob::new("uclamp_min", "util", 0.0, 0.0, 1024.0, "uclamp.min of UI thread and RenderThread (0 = unset)")
            .integer(),
        Knob::new("placement", "choice", 0.0, 0.0, 1.0, "0 fastest cluster (EAS-like), 1 any CPU").integer(),
        est::UI_MS,
        est::RT_MS,
    ],
    build: |k: &KnobValues| {
        Box::new(Uibench {
            fps: k.get("fps"),
            frames: k.get_u64("frames") as usize,
            uclamp_min: k.get_u64("uclamp_min") as u32,
            anywhere: k.get_u64("placement") == 1,
            ui_s: k.get(est::UI_MS.name) * 1e-3,
            rt_s: k.get(est::RT_MS.name) * 1e-3,
        })
    },
};

/// Bins of the UI and RenderThread work distributions.
const BINS: usize = 16;
/// Frames built at a time (see `pieces`): a longer run builds its frames as it reaches them.
const FRAMES_PER_PIECE: usize = 4096;
/// Channels: UI → RT (the frame, carrying its vsync), RT → UI (frame taken), RT → SF.
const RT_CH: u32 = 0;
const TAKEN_CH: u32 = 1;
const SF_CH: u32 = 2;

struct Uibench {
    fps: f64,
    frames: usize,
    uclamp_min: u32,
    anywhere: bool,
    /// Median work per frame of the UI thread and RenderThread (s on the fastest core at top).
    ui_s: f64,
    rt_s: f64,
}

impl Uibench {
    fn vsync_ns(&self) -> u64 {
        (1e9 / self.fps).round() as u64
    }
    /// Jankbench's frame period: whole milliseconds, rounded down (16 at 60 Hz).
    fn frame_period_ms(&self) -> u64 {
        (1000.0 / self.fps).floor() as u64
    }
}

fn run(cycles: Amount) -> Op {
    Op::Run { cycles, mem_frac: 0.0 }
}

impl Workload for Uibench {
    fn tasks(&self, plat: &Platform) -> Vec<TaskSpec> {
        let fastest = measure::fastest_cpus(plat);
        let ns = 1e9 * measure::top_cycles_per_ns(plat, fastest[0]);
        let ui_work = sample::lognormal(BINS, self.ui_s * ns, est::UI_SIGMA_LOG);
        let rt_work = sample::lognormal(BINS, self.rt_s * ns, est::RT_SIGMA_LOG);
        let vsync = Op::WaitPeriod { period_ns: self.vsync_ns() };
        let sf_work = Amount::Uniform(est::SF_S.0 * ns, est::SF_S.1 * ns);
        let n = self.frames;
        let ui_vsync = vsync.clone();
        let ui = pieces::program(n, FRAMES_PER_PIECE, vec![Op::Exit], move |piece, frames, p| {
            for b in sample::layout(frames.len(), BINS, pieces::salt(400, piece)) {
                p.extend([
                    ui_vsync.clone(),
                    run(ui_work[b]),
                    Op::PostRelease { ch: RT_CH, sync: true },
                    Op::Wait { ch: TAKEN_CH },
                ]);
            }
        });
        let rt = pieces::program(n, FRAMES_PER_PIECE, vec![Op::Exit], move |piece, frames, p| {
            for b in sample::layout(frames.len(), BINS, pieces::salt(401, piece)) {
                p.extend([
                    Op::Wait { ch: RT_CH },
                    Op::Post { ch: TAKEN_CH, sync: false },
                    run(rt_work[b]),
                    Op::Mark(Mark::ActivationDone),
                    Op::Post { ch: SF_CH, sync: false },
                ]);
            }
        });
        let sf = pieces::program(n, FRAMES_PER_PIECE, vec![Op::Exit], move |_, frames, p| {
            for _ in frames {
                p.extend([Op::Wait { ch: SF_CH }, vsync.clone(), run(sf_work)]);
            }
        });
        let foreground = |t: TaskSpec| {
            let t = if self.anywhere { t } else { t.pinned(fastest.clone()) };
            if self.uclamp_min > 0 {
                t.uclamp(Some(self.uclamp_min), None)
            } else {
                t
            }
        };
        vec![
            foreground(TaskSpec::new("droid.benchmark", ui)),
            foreground(TaskSpec::new("RenderThread", rt)),
            TaskSpec::new("surfaceflinger", sf),
        ]
    }

    fn default_duration_ns(&self) -> u64 {
        // A cap: the run ends after the last frame.
        3_600_000_000_000
    }

    fn metric(&self, stats: &RunStats) -> Metric {
        let frames = &stats.responses_ns;
        let janky = janky_frames(frames, self.frame_period_ms());
        let pct = if frames.is_empty() { 0.0 } else { 100.0 * janky as f64 / frames.len() as f64 };
        measure::metric(&INFO, pct)
    }
}

/// How many of `durations_ns` (each frame's, in order) Jankbench counts janky
/// (`UiBenchmarkResult.getSortedJankFrameIndices` in AOSP's JankBench, which fills its
/// results' `jank_frame` column). A frame longer than the period is janky and the display
/// then runs a frame behind (triple buffered): from there only a frame longer than two
/// periods is janky, and it ends that state. A run of frames between one and two periods
/// long is one janky frame, not many: the queued buffer hides the rest.
fn janky_frames(durations_ns: &[u64], period_ms: u64) -> usize {
    let mut behind = false;
    let mut janky = 0;
    for &d in durations_ns {
        let limit = if behind { 2 * period_ms } else { period_ms };
        if d as f64 / 1e6 > limit as f64 {
            janky += 1;
            behind = !behind;
        }
    }
    janky
}

#[cfg(test)]
mod tests {
    use super::janky_frames;

    const MS: u64 = 1_000_000;

    #[test]
    fn a_late_frame_puts_the_display_a_frame_behind_until_one_is_twice_late() {
        // 20 ms: janky, a frame behind; 20 and 30 ms: hidden; 40 ms: janky, caught up;
        // 17 ms: janky again; 10 ms: on time.
        let frames = [10 * MS, 20 * MS, 20 * MS, 30 * MS, 40 * MS, 17 * MS, 10 * MS];
        assert_eq!(janky_frames(&frames, 16), 3);
        // The comparison is strict and in milliseconds: 16 ms exactly is on time.
        assert_eq!(janky_frames(&[16 * MS, 16 * MS], 16), 0);
        assert_eq!(janky_frames(&[16 * MS + 1], 16), 1);
        assert_eq!(janky_frames(&[], 16), 0);
    }
}
