//! Reading ftrace text — `trace-cmd report` output and the kernel's `trace` / `trace_pipe`
//! files — into columns, one table per event kind a frequency study needs (docs/traces.md).
//!
//! An event line is `COMM-PID [CPU] [FLAGS] TIMESTAMP: EVENT: FIELDS`: the kernel's files add
//! a flags column (`d..2`) and may add `(TGID)` after PID; `trace-cmd report` prints neither by
//! default. Events other than the ones below are counted and skipped. A line that is neither an
//! event nor a header, or a known event whose fields do not parse, is an error naming the file
//! and the line.

use crate::error::{Result, SimError};

/// cpu_idle's state when a CPU leaves idle (PWR_EVENT_EXIT, `(u32)-1`).
const CPU_IDLE_EXIT: i64 = 4_294_967_295;

/// The trace's tables, as columns.
#[derive(Debug, Default)]
pub struct FtraceTables {
    /// `cpus=N` from the header (trace-cmd report), 0 when absent.
    pub cpus_header: u32,
    /// Every event's name with its count, in the order first seen.
    pub counts: Vec<(String, u64)>,
    pub switches: Switches,
    pub wakeups: Wakeups,
    pub frequency: CpuStates,
    pub idle: CpuStates,
    pub markers: Markers,
}

#[derive(Debug, Default)]
pub struct Switches {
    pub time_s: Vec<f64>,
    pub cpu: Vec<u32>,
    pub prev_comm: Vec<String>,
    pub prev_pid: Vec<i64>,
    pub prev_state: Vec<String>,
    pub next_comm: Vec<String>,
    pub next_pid: Vec<i64>,
}

#[derive(Debug, Default)]
pub struct Wakeups {
    pub time_s: Vec<f64>,
    pub cpu: Vec<u32>,
    pub comm: Vec<String>,
    pub pid: Vec<i64>,
    pub target_cpu: Vec<i64>,
    /// `sched_wakeup_new`: a forked task's first wake-up.
    pub new: Vec<bool>,
}

/// `cpu_frequency` (state in kHz) or `cpu_idle` (an idle state's index, -1 on exit): the CPU
/// the event was logged on and the CPU it is about.
#[derive(Debug, Default)]
pub struct CpuStates {
    pub time_s: Vec<f64>,
    pub logged_cpu: Vec<u32>,
    pub cpu: Vec<i64>,
    pub state: Vec<i64>,
}

#[derive(Debug, Default)]
pub struct Markers {
    pub time_s: Vec<f64>,
    pub cpu: Vec<u32>,
    pub pid: Vec<i64>,
    pub text: Vec<String>,
}

/// Read ftrace `text`; `source` names it in errors.
pub fn read_ftrace(text: &str, source: &str) -> Result<FtraceTables> {
    let mut t = FtraceTables::default();
    let mut index: std::collections::HashMap<String, usize> = std::collections::HashMap::new();
    for (i, line) in text.lines().enumerate() {
        let at = || format!("{source}:{}", i + 1);
        let Some(ev) = event_line(line) else {
            if let Some(n) = header(line) {
                t.cpus_header = n.max(t.cpus_header);
                continue;
            }
            if is_header(line) {
                continue;
            }
            let shown: String = line.trim().chars().take(120).collect();
            return Err(SimError::config(
                at(),
                "not an ftrace event line",
                format!("expected 'COMM-PID [CPU] TIMESTAMP: EVENT: FIELDS', got {shown:?}"),
            ));
        };
        match index.get(ev.event) {
            Some(&k) => t.counts[k].1 += 1,
            None => {
                index.insert(ev.event.to_string(), t.counts.len());
                t.counts.push((ev.event.to_string(), 1));
            }
        }
        t.add(&ev).map_err(|missing| {
            let shown: String = ev.body.trim().chars().take(120).collect();
            SimError::config(at(), ev.event, format!("cannot read its fields ({missing}): {shown:?}"))
        })?;
    }
    Ok(t)
}

/// One event line, split.
struct Event<'a> {
    pid: i64,
    cpu: u32,
    time_s: f64,
    event: &'a str,
    body: &'a str,
}

impl FtraceTables {
    /// Add `ev` to its table; Err names the field that is missing or not a number.
    fn add(&mut self, ev: &Event) -> std::result::Result<(), String> {
        let f = |key: &str| field(ev.body, key).ok_or_else(|| format!("no {key}"));
        let int = |key: &str| -> std::result::Result<i64, String> {
            f(key)?.parse::<i64>().map_err(|_| format!("{key} is not an integer"))
        };
        match ev.event {
            "sched_switch" => {
                let s = &mut self.switches;
                let row = (f("prev_comm")?, int("prev_pid")?, f("prev_state")?, f("next_comm")?, int("next_pid")?);
                s.time_s.push(ev.time_s);
                s.cpu.push(ev.cpu);
                s.prev_comm.push(row.0.to_string());
                s.prev_pid.push(row.1);
                s.prev_state.push(row.2.to_string());
                s.next_comm.push(row.3.to_string());
                s.next_pid.push(row.4);
            }
            "sched_wakeup" | "sched_wakeup_new" => {
                let w = &mut self.wakeups;
                // target_cpu since 3.x; older kernels print cpu=.
                let target = int("target_cpu").or_else(|_| int("cpu")).unwrap_or(-1);
                let row = (f("comm")?, int("pid")?);
                w.time_s.push(ev.time_s);
                w.cpu.push(ev.cpu);
                w.comm.push(row.0.to_string());
                w.pid.push(row.1);
                w.target_cpu.push(target);
                w.new.push(ev.event == "sched_wakeup_new");
            }
            "cpu_frequency" | "cpu_idle" => {
                let (cpu, state) = (int("cpu_id")?, int("state")?);
                let table = if ev.event == "cpu_idle" { &mut self.idle } else { &mut self.frequency };
                table.time_s.push(ev.time_s);
                table.logged_cpu.push(ev.cpu);
                table.cpu.push(cpu);
                table.state.push(if ev.event == "cpu_idle" && state == CPU_IDLE_EXIT { -1 } else { state });
            }
            "print" | "tracing_mark_write" => {
                let m = &mut self.markers;
                m.time_s.push(ev.time_s);
                m.cpu.push(ev.cpu);
                m.pid.push(ev.pid);
                m.text.push(marker_text(ev.body).to_string());
            }
            _ => {}
        }
        Ok(())
    }
}

/// The value of `key=` among the body's space-separated `key=value` tokens.
fn field<'a>(body: &'a str, key: &str) -> Option<&'a str> {
    body.split_ascii_whitespace().find_map(|tok| tok.strip_prefix(key).and_then(|rest| rest.strip_prefix('=')))
}

/// What user space wrote: trace-cmd prints `print: <ip>s: text`, the kernel's file
/// `tracing_mark_write: text`.
fn marker_text(body: &str) -> &str {
    let mut text = body.trim_start();
    if let Some(rest) = text.strip_prefix("0x") {
        if let Some(colon) = rest.find(':') {
            if rest[..colon].trim_end_matches('s').bytes().all(|b| b.is_ascii_hexdigit()) {
                text = rest[colon + 1..].trim_start();
            }
        }
    }
    text.strip_prefix("tracing_mark_write:").unwrap_or(text).trim()
}

/// Split an event line, or None when the line is not one.
fn event_line(line: &str) -> Option<Event<'_>> {
    // The CPU column is the first `[digits]` after the task: comm itself may hold anything but
    // is followed by `-PID`.
    let open = find_cpu_column(line)?;
    let close = open + line[open..].find(']')?;
    let cpu: u32 = line[open + 1..close].parse().ok()?;
    let task = line[..open].trim_end();
    // An optional `(TGID)` column after PID.
    let task = match task.strip_suffix(')') {
        Some(t) => t[..t.rfind('(')?].trim_end(),
        None => task,
    };
    let dash = task.rfind('-')?;
    let pid: i64 = task[dash + 1..].parse().ok()?;
    let mut rest = line[close + 1..].trim_start();
    // An optional flags column: a token that does not end in ':' and is not the timestamp.
    let first = rest.split_ascii_whitespace().next()?;
    if !first.ends_with(':') {
        rest = rest[first.len()..].trim_start();
    }
    let ts_end = rest.find(':')?;
    let time_s: f64 = rest[..ts_end].parse().ok()?;
    rest = rest[ts_end + 1..].trim_start();
    let ev_end = rest.find(':')?;
    let event = &rest[..ev_end];
    if event.is_empty() || !event.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_') {
        return None;
    }
    Some(Event { pid, cpu, time_s, event, body: &rest[ev_end + 1..] })
}

fn find_cpu_column(line: &str) -> Option<usize> {
    let bytes = line.as_bytes();
    let mut from = 0;
    while let Some(k) = line[from..].find('[') {
        let open = from + k;
        let digits = bytes[open + 1..].iter().take_while(|b| b.is_ascii_digit()).count();
        if digits > 0 && bytes.get(open + 1 + digits) == Some(&b']') {
            return Some(open);
        }
        from = open + 1;
    }
    None
}

/// `cpus=N` (trace-cmd report's header).
fn header(line: &str) -> Option<u32> {
    let rest = line.trim().strip_prefix("cpus")?.trim_start().strip_prefix('=')?;
    rest.trim().parse().ok()
}

/// Comment, version and empty-CPU lines, and blank ones.
fn is_header(line: &str) -> bool {
    let t = line.trim();
    t.is_empty()
        || t.starts_with('#')
        || t.strip_prefix("version").is_some_and(|r| r.trim_start().starts_with('='))
        || (t.starts_with("CPU ") && t.ends_with(" is empty"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn trace_cmd_and_kernel_lines_split_alike() {
        let text = "cpus=4\n\
            # tracer: nop\n\
            \x20  kworker/u12:1-46    [002]    76.211715: sched_switch:          prev_comm=kworker/u12:1 prev_pid=46 prev_prio=120 prev_state=1 next_comm=sh next_pid=1642 next_prio=120\n\
            \x20  <idle>-0       (-------) [003] d..2.  5.000100: cpu_idle: state=4294967295 cpu_id=3\n\
            \x20  bash-42      [001] ....  5.000300: tracing_mark_write: hello world\n\
            \x20  sh-1702  [000]    76.368433: print:                0xffff00000819ff24s: TRACE_MARKER_START\n\
            \x20  <idle>-0     [001]    76.402065: sched_overutilized:    overutilized=1\n";
        let t = read_ftrace(text, "t.txt").unwrap();
        assert_eq!(t.cpus_header, 4);
        assert_eq!(t.switches.prev_comm, ["kworker/u12:1"]);
        assert_eq!((t.switches.cpu[0], t.switches.next_pid[0], t.switches.time_s[0]), (2, 1642, 76.211715));
        assert_eq!((t.idle.cpu[0], t.idle.state[0], t.idle.logged_cpu[0]), (3, -1, 3));
        assert_eq!(t.markers.text, ["hello world", "TRACE_MARKER_START"]);
        assert_eq!(t.markers.pid, [42, 1702]);
        assert_eq!(t.counts.last().unwrap(), &("sched_overutilized".to_string(), 1));
    }

    #[test]
    fn bad_lines_are_named_by_file_and_line() {
        let e = read_ftrace("# x\nnot a trace\n", "t.txt").unwrap_err().to_string();
        assert!(e.starts_with("t.txt:2: not an ftrace event line"), "{e}");
        let e = read_ftrace("  a-1 [000] 1.0: cpu_frequency: state=fast cpu_id=0\n", "t.txt").unwrap_err().to_string();
        assert!(e.starts_with("t.txt:1: cpu_frequency: cannot read its fields (state is not an integer)"), "{e}");
    }
}
