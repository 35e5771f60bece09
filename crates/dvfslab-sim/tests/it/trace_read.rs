//! What the ftrace reader refuses and what it counts: timestamps that are not times, time going
//! back on a CPU, CPUs past the kernel's limit, unknown task states, `[LOST N EVENTS]` lines
//! and raw TSC clocks.

use dvfslab_sim::trace::read::{read_ftrace, read_ftrace_with, ReadOptions, MAX_CPUS};

fn switch(cpu: u32, stamp: &str, state: &str) -> String {
    format!(
        "  a-1 [{cpu:03}] {stamp}: sched_switch: prev_comm=a prev_pid=1 prev_prio=120 prev_state={state} ==> \
         next_comm=b next_pid=2 next_prio=120\n"
    )
}

fn error(text: &str) -> String {
    read_ftrace(text, "t.txt").unwrap_err().to_string()
}

#[test]
fn timestamps_that_are_not_times_are_named_with_their_line() {
    for stamp in ["nan", "inf", "-inf", "1e300", "-1.0", "+5.0", "1.5e3", "0x10", "5."] {
        let e = error(&format!("{}{}", switch(0, "1.000000", "S"), switch(0, stamp, "S")));
        assert!(e.starts_with("t.txt:2: timestamp: "), "{stamp}: {e}");
        assert!(e.contains("expected seconds as the kernel prints them"), "{stamp}: {e}");
    }
    let e = error(&switch(0, "99999999999.000000", "S"));
    assert!(e.starts_with("t.txt:1: timestamp: 99999999999.000000: ") && e.contains("is not a time"), "{e}");
}

#[test]
fn time_may_not_go_back_on_a_cpu_but_may_between_cpus() {
    // trace_pipe hands out each CPU's buffer in order, the CPUs interleaved as they come.
    let text = switch(0, "5.000200", "S") + &switch(1, "5.000100", "S") + &switch(0, "5.000200", "R");
    let t = read_ftrace(&text, "t.txt").unwrap();
    assert_eq!(t.switches.time_s, [5.0002, 5.0001, 5.0002]);
    let e = error(&(text + &switch(1, "5.000099", "S")));
    assert!(e.starts_with("t.txt:4: timestamp: 5.000099 on CPU 1 is before 5.0001 on line 2"), "{e}");
}

#[test]
fn cpus_past_the_kernels_limit_are_refused() {
    let e = error(&switch(99_999_999, "1.000000", "S"));
    assert!(e.starts_with("t.txt:1: CPU: [99999999]: expected a CPU below 8192"), "{e}");
    let e = error(&format!("cpus=4000000000\n{}", switch(0, "1.0", "S")));
    assert!(e.starts_with("t.txt:1: cpus: 4000000000 CPUs: at most 8192"), "{e}");
    let e = error("  a-1 [000] 1.0: cpu_frequency: state=450000 cpu_id=4294967295\n");
    assert!(
        e.starts_with("t.txt:1: cpu_frequency: cannot read its fields (CPU 4294967295: expected 0 to 8191)"),
        "{e}"
    );
    let last = MAX_CPUS - 1;
    assert_eq!(read_ftrace(&switch(last, "1.0", "S"), "t.txt").unwrap().switches.cpu, [last]);
}

#[test]
fn task_states_are_the_kernels() {
    for state in ["R", "R+", "S", "D", "D|K", "T", "t", "X", "Z", "I", "P", "W", "x", "S|W", "0", "64", "256"] {
        assert!(read_ftrace(&switch(0, "1.0", state), "t.txt").is_ok(), "{state}");
    }
    for state in ["ZZZZ", "Q", "", "R|", "+", "SD", "r"] {
        let e = error(&switch(0, "1.0", state));
        assert!(e.starts_with("t.txt:1: sched_switch: cannot read its fields (prev_state="), "{state}: {e}");
    }
}

#[test]
fn lost_events_lines_are_counted_not_fatal() {
    let text = switch(0, "1.0", "S")
        + "CPU:2 [LOST 1234 EVENTS]\n"
        + "[LOST 7 EVENTS]\n"
        + "CPU:1 [LOST EVENTS]\n"
        + "CPU:3 [56 EVENTS DROPPED]\n"
        + &switch(0, "2.0", "S");
    let t = read_ftrace(&text, "t.txt").unwrap();
    assert_eq!(t.switches.time_s.len(), 2);
    assert_eq!(t.lost.line, [2, 3, 4, 5]);
    assert_eq!(t.lost.cpu, [2, -1, 1, 3]);
    assert_eq!(t.lost.events, [1234, 7, -1, 56]);
}

#[test]
fn a_raw_tsc_clock_is_read_given_its_rate() {
    let text = switch(0, "2000000000", "S") + &switch(0, "2000500000", "S");
    let e = error(&text);
    assert!(e.starts_with("t.txt:1: timestamp: 2000000000 is a raw clock count, not seconds"), "{e}");
    assert!(e.contains("--tsc-khz") && e.contains("# tsc_khz=N"), "{e}");
    // 2 GHz: 2e9 cycles are 1 s.
    let t = read_ftrace_with(&text, "t.txt", ReadOptions { tsc_khz: Some(2e6) }).unwrap();
    assert_eq!(t.switches.time_s, [1.0, 1.00025]);
    assert_eq!(t.tsc_khz, Some(2e6));
    let t = read_ftrace(&format!("# tsc_khz=2000000\n{text}"), "t.txt").unwrap();
    assert_eq!((t.switches.time_s[1], t.tsc_khz), (1.00025, Some(2e6)));
    let e = error(&format!("# tsc_khz=fast\n{text}"));
    assert!(e.starts_with("t.txt:1: tsc_khz: expected the clock's rate in kHz"), "{e}");
    // One clock throughout; a rate given for seconds is a mistake.
    let e = error(&format!("# tsc_khz=2000000\n{text}{}", switch(0, "3.000000", "S")));
    assert!(e.starts_with("t.txt:4: timestamp: 3.000000 is seconds where the lines before gave raw counts"), "{e}");
    let seconds = switch(0, "1.000000", "S");
    let e = read_ftrace_with(&seconds, "t.txt", ReadOptions { tsc_khz: Some(2e6) }).unwrap_err().to_string();
    assert!(e.contains("a TSC rate applies to raw clock counts only"), "{e}");
    assert_eq!(read_ftrace(&seconds, "t.txt").unwrap().tsc_khz, None);
}

#[test]
fn a_text_without_events_is_an_error() {
    for text in ["", "# tracer: nop\n#\n", "CPU:0 [LOST 3 EVENTS]\n"] {
        let e = error(text);
        assert!(
            e.starts_with("t.txt: no ftrace event: expected lines 'COMM-PID [CPU] TIMESTAMP: EVENT: FIELDS'"),
            "{e}"
        );
    }
}
