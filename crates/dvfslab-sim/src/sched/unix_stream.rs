//! An `AF_UNIX` stream socket's send accounting, as net/unix/af_unix.c and net/core/sock.c
//! keep it: each message's skb charges its truesize to the sending socket's `sk_wmem_alloc`;
//! a sender allocates while that is below `sk_sndbuf` (`sock_alloc_send_pskb`), else sleeps
//! (`sock_wait_for_wmem`, a wait every blocked sender shares); each skb the reader frees hands
//! its truesize back at once (`sock_wfree`) and calls `unix_write_space`, which wakes every
//! blocked sender once the charge is down to a quarter of `sk_sndbuf`. A send wakes a sleeping
//! reader (`sk_data_ready`). Every wake-up is sync. The operations that sleep and wake are in
//! sim/unix_stream.rs.

use std::collections::VecDeque;

use crate::sched::message_cpus::MessageCpus;

/// `net.core.wmem_default`, every socket's `sk_sndbuf` unless set: 212,992 bytes.
pub const SNDBUF_BYTES: u32 = 212_992;

/// A send's outcome.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Send {
    /// Queued; wake the reader if it sleeps.
    Done,
    /// The charge is at `sk_sndbuf`: the sender sleeps until woken, then tries again.
    Full,
}

/// A receive's outcome.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Recv {
    /// One message read; `wake_senders`: wake every blocked sender.
    Done { wake_senders: bool },
    /// Nothing queued: the reader sleeps until a send wakes it, then tries again.
    Empty,
}

/// One socket: its queued messages, all of one truesize, and its sleepers.
#[derive(Default)]
pub(crate) struct UnixStream {
    queued: u32,
    pub(crate) readers: VecDeque<usize>,
    pub(crate) senders: VecDeque<usize>,
    /// Where its messages were written and where it was last read.
    pub(crate) cpus: MessageCpus,
}

impl UnixStream {
    /// `sock_alloc_send_pskb` for a message of `truesize` bytes: room while the queued
    /// messages' charge (`sk_wmem_alloc_get`) is below `sk_sndbuf`.
    pub(crate) fn send(&mut self, truesize: u32) -> Send {
        if u64::from(self.queued) * u64::from(truesize) >= u64::from(SNDBUF_BYTES) {
            return Send::Full;
        }
        self.queued += 1;
        Send::Done
    }

    /// A read of one message whose skb, of `truesize` bytes, is freed: `unix_write_space`
    /// finds the socket writable once four times `sk_wmem_alloc` is at most `sk_sndbuf`, the
    /// count then being its base reference, the one `sock_wfree` keeps over the call, and
    /// the messages still queued.
    pub(crate) fn recv(&mut self, truesize: u32) -> Recv {
        if self.queued == 0 {
            return Recv::Empty;
        }
        self.queued -= 1;
        let wmem = 2 + u64::from(self.queued) * u64::from(truesize);
        Recv::Done { wake_senders: 4 * wmem <= u64::from(SNDBUF_BYTES) && !self.senders.is_empty() }
    }

    #[cfg(test)]
    fn queued(&self) -> u32 {
        self.queued
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// What a 100-byte message charges (`workload::estimates::ipc::UNIX_SKB_TRUESIZE_BYTES`).
    const TRUESIZE: u32 = 768;

    #[test]
    fn a_socket_takes_sends_while_its_charge_is_below_sndbuf() {
        let mut s = UnixStream::default();
        // 277 × 768 = 212,736 < 212,992: the 278th is allocated; then 213,504 is not below.
        for _ in 0..278 {
            assert_eq!(s.send(TRUESIZE), Send::Done);
        }
        assert_eq!(s.send(TRUESIZE), Send::Full);
        assert_eq!(s.queued(), 278);
        // Each read hands its charge back at once: a running sender finds room again.
        s.recv(TRUESIZE);
        assert_eq!(s.send(TRUESIZE), Send::Done);
    }

    #[test]
    fn blocked_senders_wake_once_the_charge_is_down_to_a_quarter() {
        let mut s = UnixStream::default();
        for _ in 0..278 {
            s.send(TRUESIZE);
        }
        s.senders.push_back(7);
        // 4 × (2 + 768 q) ≤ 212,992 from q = 69: 209 reads.
        for read in 1..209 {
            assert_eq!(s.recv(TRUESIZE), Recv::Done { wake_senders: false }, "read {read}");
        }
        assert_eq!(s.recv(TRUESIZE), Recv::Done { wake_senders: true });
        assert_eq!(s.queued(), 69);
        // Below the mark every read wakes the sleepers again, as long as there are some.
        assert_eq!(s.recv(TRUESIZE), Recv::Done { wake_senders: true });
        s.senders.clear();
        assert_eq!(s.recv(TRUESIZE), Recv::Done { wake_senders: false });
        for _ in 0..67 {
            s.recv(TRUESIZE);
        }
        assert_eq!(s.recv(TRUESIZE), Recv::Empty);
    }
}
