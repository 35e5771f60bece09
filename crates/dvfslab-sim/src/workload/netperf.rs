//! netperf over loopback: one netperf/netserver pair, no affinity (docs/workloads-net.md;
//! MMTests `config-network-netperf-{rr,stream}-ipv4-unbound`).
//!
//! - **UDP_RR, TCP_RR**: the canonical two-task ping-pong. The client sends a request (send
//!   syscall, protocol tx and the loopback receive in the NET_RX softirq on its own CPU, which
//!   wakes the server from there, synchronously: `Op::Loopback`), and its next receive blocks;
//!   the server receives, sends the response the same way and blocks. One transaction in
//!   flight; whether the woken side preempts the sender before it blocks is the scheduler's
//!   wake-up rule (EEVDF's from 6.6).
//! - **TCP_STREAM**: the sender loops send(m) as fast as it can, doing the whole loopback
//!   stack, its segments as Linux cuts them (Nagle's algorithm, `sched/tcp_stream.rs`); the
//!   receiver copies out what is queued, up to its receive size, and acknowledges. The sender
//!   blocks when a window's worth of data is in flight (credits returned by the receiver's
//!   reads, whose window update wakes the sender from the receiver's softirq without the sync
//!   hint: `sk_stream_write_space`).
//! - **UDP_STREAM**: the sender never blocks: each datagram goes through the loopback stack on
//!   its CPU into the receiver's socket buffer, and is dropped when the buffer is full. The
//!   metric counts received bytes, the receiver's rate when it falls behind: the recv rows of
//!   MMTests' report (its send rows hold the sender's rate; docs/validation.md).
//!
//! Every data arrival wakes its receiver as Linux's `sock_def_readable` does: from the
//! sender's softirq, with the sync hint.
//!
//! Costs are `estimates::netperf`, the STREAM tests' knobs, and `estimates::loopback` (TCP_RR,
//! recorded).
//! Metric, as netperf reports it: transactions per second for
//! RR, received megabits per second for STREAM (both higher is better).

use std::rc::Rc;

use super::estimates::{ipc, loopback, netperf, ns_cycles, us_cycles};
use super::{measure, Better, Metric, Operations, RunStats, TaskSpec, Workload, WorkloadInfo};
use crate::hw::platform::Platform;
use crate::sched::task::{Amount, Mark, Op};
use crate::spec::{Knob, KnobValues};

pub const INFO: WorkloadInfo = WorkloadInfo {
    name: "netperf",
    description: "netperf/netserver pair on loopback: UDP_RR, TCP_RR, TCP_STREAM or UDP_STREAM",
    metric: "throughput",
    unit: "trans/s (rr) or Mbit/s (stream)",
    better: Better::Higher,
    knobs: &[
        Knob::new(
            "test",
            "test",
            1.0,
            0.0,
            3.0,
            "0 = udp-rr (UDP_RR), 1 = tcp-rr (TCP_RR), 2 = tcp-stream (TCP_STREAM), 3 = udp-stream (UDP_STREAM)",
        )
        .choices(&[("udp-rr", 0.0), ("tcp-rr", 1.0), ("tcp-stream", 2.0), ("udp-stream", 3.0)]),
        Knob::new(
            "size",
            "bytes",
            0.0,
            0.0,
            65536.0,
            "request/response (RR) or send (STREAM) size; 0 = 1 (RR) or 16384 (STREAM)",
        )
        .integer(),
        Knob::new(
            "recv_size",
            "bytes",
            0.0,
            0.0,
            1_048_576.0,
            "TCP_STREAM receive size (netperf's -M): one recv takes what is queued up to it; 0 = the send size, as MMTests passes it",
        )
        .integer(),
        netperf::UDP_SEND_US,
        netperf::UDP_SOFTIRQ_US,
        netperf::UDP_RECV_US,
        netperf::COPY_NS_PER_BYTE,
        netperf::STREAM_SEND_US,
        netperf::STREAM_SEGMENT_NS_PER_BYTE,
        netperf::STREAM_RECV_US,
        netperf::STREAM_WINDOW_KB,
    ],
    build: |k: &KnobValues| {
        let test = match k.get_u64("test") {
            0 => Test::UdpRr,
            1 => Test::TcpRr,
            2 => Test::TcpStream,
            _ => Test::UdpStream,
        };
        let size = match (k.get_u64("size") as u32, test) {
            (0, Test::TcpStream | Test::UdpStream) => 16384,
            (0, _) => 1,
            (s, _) => s,
        };
        // A receive smaller than a message still takes one message a call.
        let recv_messages = match k.get_u64("recv_size") as u32 {
            0 => 1,
            r => (r / size).clamp(1, MAX_MESSAGES_PER_RECV),
        };
        let us = |knob: &Knob| us_cycles(k.get(knob.name));
        let costs = Costs {
            udp_send: us(&netperf::UDP_SEND_US),
            udp_softirq: us(&netperf::UDP_SOFTIRQ_US),
            udp_recv: us(&netperf::UDP_RECV_US),
            copy_per_byte: ns_cycles(k.get(netperf::COPY_NS_PER_BYTE.name)),
            stream_send: us(&netperf::STREAM_SEND_US),
            stream_segment_per_byte: ns_cycles(k.get(netperf::STREAM_SEGMENT_NS_PER_BYTE.name)),
            stream_recv: us(&netperf::STREAM_RECV_US),
        };
        let window_bytes = (k.get_u64(netperf::STREAM_WINDOW_KB.name) as u32).saturating_mul(1024);
        Box::new(Netperf { test, size, recv_messages, window_bytes, costs })
    },
};

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Test {
    UdpRr,
    TcpRr,
    TcpStream,
    /// The sender never waits; a full receive buffer drops datagrams.
    UdpStream,
}

/// Counter of completed transactions (RR) or received bytes (STREAM).
const DONE: u16 = 0;
/// Channels: request (RR) or data (STREAM); response (RR) or window credit (STREAM).
const FORWARD: u32 = 0;
const BACK: u32 = 1;

/// The most messages one TCP_STREAM receive takes in the model: a receive size of more
/// messages (netserver's default, its socket buffer, at a small send size) takes this many a
/// call, paying the call's fixed part once more for each such batch.
const MAX_MESSAGES_PER_RECV: u32 = 64;

struct Netperf {
    test: Test,
    size: u32,
    /// TCP_STREAM: the messages one receive call takes at most (its size over the send size).
    recv_messages: u32,
    /// TCP_STREAM: bytes in flight before the sender waits.
    window_bytes: u32,
    costs: Costs,
}

/// The knobs' costs, in cycles (per byte for the copy and the TCP segments).
struct Costs {
    udp_send: f64,
    udp_softirq: f64,
    udp_recv: f64,
    copy_per_byte: f64,
    stream_send: f64,
    stream_segment_per_byte: f64,
    stream_recv: f64,
}

impl Costs {
    /// The knobs' defaults.
    #[cfg(test)]
    const DEFAULT: Costs = Costs {
        udp_send: us_cycles(netperf::UDP_SEND_US.default),
        udp_softirq: us_cycles(netperf::UDP_SOFTIRQ_US.default),
        udp_recv: us_cycles(netperf::UDP_RECV_US.default),
        copy_per_byte: ns_cycles(netperf::COPY_NS_PER_BYTE.default),
        stream_send: us_cycles(netperf::STREAM_SEND_US.default),
        stream_segment_per_byte: ns_cycles(netperf::STREAM_SEGMENT_NS_PER_BYTE.default),
        stream_recv: us_cycles(netperf::STREAM_RECV_US.default),
    };
}

fn run(cycles: f64) -> Op {
    Op::Run { cycles: Amount::Fixed(cycles), mem_frac: ipc::MEM_FRAC }
}

impl Netperf {
    /// Work of one RR message on each side: (sender up to the receiver's wake-up, what
    /// follows it on the sender's CPU, receiver), with the payload copied once on each side.
    fn rr_costs(&self) -> (f64, f64, f64) {
        let (c, copy) = (&self.costs, self.size as f64 * self.costs.copy_per_byte);
        match self.test {
            Test::UdpRr => {
                let send = c.udp_send + c.udp_softirq + copy;
                let tail = netperf::UDP_WAKE_TAIL_CYCLES.min(send);
                (send - tail, tail, c.udp_recv + copy)
            }
            _ => (loopback::TCP_SEND_CYCLES + copy, loopback::TCP_WAKE_TAIL_CYCLES, loopback::TCP_RECV_CYCLES + copy),
        }
    }

    fn rr(&self) -> Vec<TaskSpec> {
        let (send, tail, recv) = self.rr_costs();
        // Each side's burst receives the previous message and sends the next one, whose
        // loopback receive wakes the other side; what follows the wake-up runs after.
        let client: Rc<[Op]> = vec![
            run(recv + send),
            Op::Loopback { ch: FORWARD, sync: true },
            run(tail),
            Op::Wait { ch: BACK },
            Op::Mark(Mark::Add { counter: DONE, amount: 1 }),
            Op::Jump { to: 0 },
        ]
        .into();
        let server: Rc<[Op]> = vec![
            Op::Wait { ch: FORWARD },
            run(recv + send),
            Op::Loopback { ch: BACK, sync: true },
            run(tail),
            Op::Jump { to: 0 },
        ]
        .into();
        vec![TaskSpec::new("netperf", client), TaskSpec::new("netserver", server).own_session()]
    }

    fn stream(&self) -> Vec<TaskSpec> {
        if self.test == Test::UdpStream {
            return self.udp_stream();
        }
        let (c, copy) = (&self.costs, self.size as f64 * self.costs.copy_per_byte);
        // The send also carries its share of the loopback segments it transmits and receives.
        let send = c.stream_send + copy + self.size as f64 * c.stream_segment_per_byte;
        let window_msgs = (self.window_bytes / self.size.max(1)).clamp(1, netperf::STREAM_MAX_INFLIGHT_MSGS) as usize;
        // The sender starts with a window of credits, then spends one per send.
        let mut sender: Vec<Op> = vec![Op::Post { ch: BACK, sync: false }; window_msgs];
        let top = sender.len();
        sender.extend([
            Op::Wait { ch: BACK },
            run(send),
            Op::TcpSend { ch: FORWARD, bytes: self.size },
            Op::Jump { to: top },
        ]);
        // A receive sleeps for its first message and then copies every message that is queued,
        // up to its size, before it returns (`tcp_recvmsg`), acknowledging at its end when it
        // drained the queue or took more than a segment; each message read returns its window
        // credit.
        let done = || Op::Mark(Mark::Add { counter: DONE, amount: self.size as u64 });
        let credit = || Op::Loopback { ch: BACK, sync: false };
        // Four operations a message, then the call's end.
        let call_end = 4 * self.recv_messages as usize;
        let mut receiver = vec![Op::Wait { ch: FORWARD }, run(c.stream_recv + copy), done(), credit()];
        for _ in 1..self.recv_messages {
            receiver.extend([Op::Poll { ch: FORWARD, empty: call_end }, run(copy), done(), credit()]);
        }
        let call_bytes = self.size.saturating_mul(self.recv_messages);
        receiver.extend([Op::TcpAck { ch: FORWARD, call_bytes }, Op::Jump { to: 0 }]);
        let receiver: Rc<[Op]> = receiver.into();
        vec![TaskSpec::new("netperf", sender.into()), TaskSpec::new("netserver", receiver).own_session()]
    }

    fn udp_stream(&self) -> Vec<TaskSpec> {
        let (c, copy) = (&self.costs, self.size as f64 * self.costs.copy_per_byte);
        // The receive buffer is charged each datagram's truesize, not its payload, and a
        // datagram is queued while what is already queued does not exceed the buffer: one
        // more than fit whole.
        let buffered = netperf::UDP_RCVBUF_BYTES / netperf::skb_truesize(self.size) + 1;
        let sender: Rc<[Op]> = vec![
            run(c.udp_send + c.udp_softirq + copy),
            Op::Offer { ch: FORWARD, capacity: buffered },
            Op::Jump { to: 0 },
        ]
        .into();
        let receiver: Rc<[Op]> = vec![
            Op::Wait { ch: FORWARD },
            run(c.udp_recv + copy),
            Op::Mark(Mark::Add { counter: DONE, amount: self.size as u64 }),
            Op::Jump { to: 0 },
        ]
        .into();
        vec![TaskSpec::new("netperf", sender), TaskSpec::new("netserver", receiver).own_session()]
    }
}

impl Workload for Netperf {
    fn tasks(&self, _plat: &Platform) -> Vec<TaskSpec> {
        match self.test {
            Test::TcpStream | Test::UdpStream => self.stream(),
            _ => self.rr(),
        }
    }

    fn default_duration_ns(&self) -> u64 {
        500_000_000
    }

    fn metric(&self, stats: &RunStats) -> Metric {
        let rate = measure::per_second(stats, DONE);
        // The unit depends on the test, so it is not INFO's.
        let (value, unit) = match self.test {
            Test::TcpStream | Test::UdpStream => (rate * 8.0 / 1e6, "Mbit/s"),
            _ => (rate, "trans/s"),
        };
        Metric { unit: unit.into(), ..measure::metric(&INFO, value) }
    }

    /// RR: transactions; STREAM: bytes received.
    fn operations(&self, stats: &RunStats) -> Option<Operations> {
        let unit = match self.test {
            Test::TcpStream | Test::UdpStream => "bytes",
            _ => "transactions",
        };
        Operations::counted(stats, DONE, unit)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn offered_capacity(size: u32) -> u32 {
        let tasks = Netperf { test: Test::UdpStream, size, recv_messages: 1, window_bytes: 0, costs: Costs::DEFAULT }
            .udp_stream();
        match tasks[0].program.iter().find(|op| matches!(op, Op::Offer { .. })) {
            Some(Op::Offer { capacity, .. }) => *capacity,
            _ => panic!("the UDP_STREAM sender offers its datagrams"),
        }
    }

    #[test]
    fn the_receive_buffer_counts_each_datagram_at_its_truesize() {
        // 64 bytes: a 512-byte buffer (payload + 426 of headers and shared info, rounded up to
        // a power of two) and the 256-byte sk_buff make 768; 212,992 / 768 = 277.3, so 277
        // datagrams fit whole and a 278th is still let in.
        assert_eq!(netperf::skb_truesize(64), 768);
        assert_eq!(offered_capacity(64), 278);
        // 1,024 bytes: 2,048 + 256 = 2,304, so 92 + 1 datagrams.
        assert_eq!(netperf::skb_truesize(1024), 2304);
        assert_eq!(offered_capacity(1024), 93);
        // 16,384 bytes: a 32 KiB buffer and the sk_buff, 33,024: six fit whole (198,144
        // queued, under 212,992) and a seventh is let in.
        assert_eq!(offered_capacity(16384), 7);
        // 65,536 bytes: 131,072 + 256 = 131,328, so 1 + 1.
        assert_eq!(offered_capacity(65536), 2);
    }
}
