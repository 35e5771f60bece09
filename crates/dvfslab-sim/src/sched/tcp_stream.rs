//! A loopback TCP stream's sending side as Linux sends it: Nagle's algorithm with Minshall's
//! check (`tcp_nagle_check`, `tcp_minshall_check` in net/ipv4/tcp_output.c): what is written
//! goes out in segments of at most an MSS; a full one goes at once, a shorter one waits while
//! an earlier short segment is still unacknowledged. The receiver's acknowledgement lets what
//! waits go: `tcp_cleanup_rbuf` acknowledges a read that drained the receive queue after a
//! short segment, or one that read more than an MSS. The writes, reads and wake-ups are in
//! sim/tcp_stream.rs.

/// The loopback device's MSS: its 65,536-byte MTU less the IP and TCP headers and the
/// timestamp option, the length of every full segment in a loopback trace
/// (`tcp:tcp_probe`'s `data_len`, `net:net_dev_xmit` on `lo` 66 bytes more).
pub const LOOPBACK_MSS: u64 = 65_483;

/// One stream's sending side.
#[derive(Default)]
pub(crate) struct TcpStream {
    /// Written and not sent yet: held by Nagle's algorithm.
    held: u64,
    /// Sent so far; the receiver's messages are whole at their boundaries.
    pub(crate) sent: u64,
    /// A short segment is out and unacknowledged (`snd_sml` after `snd_una`).
    short_unacked: bool,
    /// The writing task, and the size of its messages.
    pub(crate) writer: Option<(usize, u32)>,
}

impl TcpStream {
    /// A write of `bytes` (`tcp_sendmsg`'s push at its end): what goes out.
    pub(crate) fn write(&mut self, bytes: u64) -> u64 {
        self.held += bytes;
        self.push()
    }

    /// `tcp_write_xmit`: the full segments go; the short rest goes unless a short segment is
    /// unacknowledged. What went out, in bytes.
    pub(crate) fn push(&mut self) -> u64 {
        let mut out = self.held / LOOPBACK_MSS * LOOPBACK_MSS;
        self.held -= out;
        if self.held > 0 && !self.short_unacked {
            out += self.held;
            self.held = 0;
            self.short_unacked = true;
        }
        self.sent += out;
        out
    }

    /// The receiver acknowledged everything sent.
    pub(crate) fn ack(&mut self) {
        self.short_unacked = false;
    }

    pub(crate) fn held(&self) -> u64 {
        self.held
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn short_writes_wait_for_the_first_ones_acknowledgement_or_a_full_segment() {
        let mut s = TcpStream::default();
        // The first 16 KiB write goes at once; the next three wait behind it, unacknowledged.
        assert_eq!(s.write(16_384), 16_384);
        assert_eq!(s.write(16_384), 0);
        assert_eq!(s.write(16_384), 0);
        assert_eq!(s.write(16_384), 0);
        assert_eq!(s.held(), 49_152);
        // A fourth fills a segment: 65,483 bytes go, the 53 left over wait.
        assert_eq!(s.write(16_384), LOOPBACK_MSS);
        assert_eq!(s.held(), 53);
        // The acknowledgement lets the rest go with the next write, as one short segment,
        // which waits for the next acknowledgement in turn.
        s.ack();
        assert_eq!(s.write(16_384), 16_437);
        assert_eq!(s.write(16_384), 0);
        assert_eq!(s.sent, 16_384 + LOOPBACK_MSS + 16_437);
        // A write of more than a segment sends its full segments at once.
        let mut big = TcpStream::default();
        assert_eq!(big.write(3 * LOOPBACK_MSS + 10), 3 * LOOPBACK_MSS + 10);
        assert_eq!(big.write(100), 0);
        big.ack();
        assert_eq!(big.push(), 100);
    }
}
