//! `Op::TcpSend` and `Op::TcpAck`: the loopback TCP streams of `sched/tcp_stream.rs` in a run.
//! A segment sent is received in the NET_RX softirq on the sending CPU, which wakes a
//! sleeping reader from there, sync (`sock_def_readable`), as `Op::Loopback` does; the
//! reader takes the stream's messages from its data channel.

use crate::sched::objects::slot;
use crate::sched::task::TaskState;
use crate::sched::tcp_stream::LOOPBACK_MSS;
use crate::sim::Sim;

impl Sim {
    /// `task` on `cpu` writes a message of `bytes` on the stream whose data channel is `ch`.
    pub(crate) fn tcp_send(&mut self, ch: u32, bytes: u32, task: usize, cpu: usize) {
        let stream = slot(&mut self.work.objects.tcp_streams, ch);
        stream.writer = Some((task, bytes));
        let out = stream.write(u64::from(bytes));
        self.deliver(ch, bytes, out, cpu);
    }

    /// The reader on `cpu` ends a receive call of up to `call_bytes` on the stream whose data
    /// channel is `ch`: `tcp_cleanup_rbuf` acknowledges when the read drained the queue or
    /// the call took more than an MSS. A writer in the middle of its write finds the
    /// acknowledgement in its socket's backlog when the write ends (`release_sock`), and its
    /// next write sends what waits; a writer asleep has it processed in this softirq
    /// (`tcp_data_snd_check`), which sends what waits from here.
    pub(crate) fn tcp_ack(&mut self, ch: u32, call_bytes: u32, cpu: usize) {
        let drained = slot(&mut self.work.objects.channels, ch).tokens == 0;
        if !drained && u64::from(call_bytes) <= LOOPBACK_MSS {
            return;
        }
        let stream = slot(&mut self.work.objects.tcp_streams, ch);
        stream.ack();
        let Some((writer, bytes)) = stream.writer else { return };
        if stream.held() == 0 || self.sched.tasks[writer].state == TaskState::Runnable {
            return;
        }
        let out = slot(&mut self.work.objects.tcp_streams, ch).push();
        self.deliver(ch, bytes, out, cpu);
    }

    /// The messages of `bytes` each that the stream's last `out` bytes sent completed, posted
    /// to channel `ch` from the receive softirq on `cpu`.
    fn deliver(&mut self, ch: u32, bytes: u32, out: u64, cpu: usize) {
        let after = slot(&mut self.work.objects.tcp_streams, ch).sent;
        let before = after - out;
        let size = u64::from(bytes.max(1));
        for _ in 0..after / size - before / size {
            self.loopback_post(ch, cpu, true);
        }
    }
}
