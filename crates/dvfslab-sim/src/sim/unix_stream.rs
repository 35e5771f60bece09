//! `Op::UnixSend` and `Op::UnixRecv`: the `AF_UNIX` stream sockets of `sched/unix_stream.rs`
//! in a run. A task that finds no room (no message) sleeps on the socket and, woken, does the
//! same operation again, as `sock_alloc_send_pskb` (`unix_stream_read_generic`) loops after
//! its wait; every wake-up is sync (`sock_def_readable`, `unix_write_space`), and wakes every
//! sleeper on that side (the waits are not exclusive).

use crate::sched::objects::{slot, Outcome};
use crate::sched::task::CrossingCycles;
use crate::sched::unix_stream::{Recv, Send};
use crate::sim::Sim;

impl Sim {
    /// `task` on `cpu` sends one message charging `truesize` bytes on socket `id`,
    /// `crossing` more where its cache lines come from another CPU.
    pub(crate) fn unix_send(
        &mut self,
        id: u32,
        truesize: u32,
        crossing: CrossingCycles,
        task: usize,
        cpu: usize,
    ) -> Outcome {
        let sock = slot(&mut self.work.objects.unix_streams, id);
        match sock.send(truesize) {
            Send::Full => {
                sock.senders.push_back(task);
                self.sleep_to_repeat(task)
            }
            Send::Done => {
                self.sched.tasks[task].crossing_cycles += f64::from(sock.cpus.written(cpu, crossing));
                let woken: Vec<usize> = sock.readers.drain(..).collect();
                self.wake_sync(woken, cpu);
                Outcome::Continue
            }
        }
    }

    /// `task` on `cpu` reads one message charging `truesize` bytes from socket `id`,
    /// `crossing` more where its cache lines come from another CPU.
    pub(crate) fn unix_recv(
        &mut self,
        id: u32,
        truesize: u32,
        crossing: CrossingCycles,
        task: usize,
        cpu: usize,
    ) -> Outcome {
        let sock = slot(&mut self.work.objects.unix_streams, id);
        match sock.recv(truesize) {
            Recv::Empty => {
                sock.readers.push_back(task);
                self.sleep_to_repeat(task)
            }
            Recv::Done { wake_senders } => {
                self.sched.tasks[task].crossing_cycles += f64::from(sock.cpus.read(cpu, crossing));
                if wake_senders {
                    let woken: Vec<usize> = sock.senders.drain(..).collect();
                    self.wake_sync(woken, cpu);
                }
                Outcome::Continue
            }
        }
    }
}
