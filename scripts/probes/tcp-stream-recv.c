/*
 * What a TCP_STREAM receiver spends per byte it reads: a sender on one CPU writes SEND-byte
 * messages over loopback TCP as fast as it can (as netperf does), a reader on another CPU
 * waits in poll() and then reads what is queued, RECV bytes at most a call, without blocking,
 * until the socket is empty. Each read's CPU time (CLOCK_THREAD_CPUTIME_ID) against the bytes
 * it returned, after the first tenth of the run, fitted with a line: its slope is the copy to
 * user space per byte (the skbs' pages written by the other CPU), its intercept the read's
 * fixed part. Also the sender's CPU time per byte (its copy, the segments it transmits and
 * the loopback receive its softirq runs) and the bytes a wake-up finds queued. The estimates
 * behind netperf's `COPY_NS_PER_BYTE` on this machine (docs/workloads-net.md).
 *
 *   cc -O2 -o tcp-stream-recv tcp-stream-recv.c
 *   ./tcp-stream-recv 0 1 16384 131072 5      # sender's CPU, reader's CPU, SEND, RECV, seconds
 */
#include "probe.h"
#include "tcp.h"
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

/* Sums for the least-squares line through (bytes, ns) points. */
struct fit {
	double n, x, y, xx, xy;
};

static void add(struct fit *f, double x, double y)
{
	f->n += 1, f->x += x, f->y += y, f->xx += x * x, f->xy += x * y;
}

static int compare(const void *a, const void *b)
{
	double d = *(const double *)a - *(const double *)b;
	return (d > 0) - (d < 0);
}

int main(int argc, char **argv)
{
	if (argc != 6) {
		fprintf(stderr, "usage: %s SENDER_CPU READER_CPU SEND_BYTES RECV_BYTES SECONDS\n", argv[0]);
		return 2;
	}
	int sender_cpu = atoi(argv[1]), reader_cpu = atoi(argv[2]);
	int send_size = atoi(argv[3]), recv_size = atoi(argv[4]);
	double seconds = atof(argv[5]);
	struct sockaddr_in a;
	int ls = loopback_listener(&a);
	if (ls < 0 || send_size <= 0 || recv_size <= 0 || seconds <= 0) {
		perror("listener (or bad sizes)");
		return 1;
	}
	int result[2];
	if (pipe(result)) {
		perror("pipe");
		return 1;
	}
	pid_t child = fork();
	if (child == 0) {
		/* The sender: connect and write until the reader closes. */
		int fd = socket(AF_INET, SOCK_STREAM, 0);
		char *msg = malloc(send_size);
		if (pin_to_cpu(sender_cpu) || !msg || connect(fd, (struct sockaddr *)&a, sizeof a))
			_exit(1);
		memset(msg, 1, send_size);
		signal(SIGPIPE, SIG_IGN);
		double sent = 0, since = 0, start = now_us();
		while (full(fd, msg, send_size, 0) == 0) {
			sent += send_size;
			if (since == 0 && now_us() - start > 1e5 * seconds)
				since = thread_cpu_ns(), sent = 0;
		}
		double per_byte = since > 0 && sent > 0 ? (thread_cpu_ns() - since) / sent : 0;
		_exit(write(result[1], &per_byte, sizeof per_byte) == sizeof per_byte ? 0 : 1);
	}
	int fd = accept(ls, NULL, NULL);
	char *buf = malloc(recv_size);
	if (fd < 0 || !buf || pin_to_cpu(reader_cpu))
		return 1;
	struct fit f = { 0 };
	int wakes = 0, cap = 1 << 20;
	double *queued = malloc(cap * sizeof *queued);
	double start = now_us(), warm = start + 1e5 * seconds, end = start + 1e6 * seconds;
	while (now_us() < end) {
		struct pollfd p = { .fd = fd, .events = POLLIN };
		if (poll(&p, 1, -1) != 1)
			return 1;
		double found = 0;
		for (;;) {
			double before = thread_cpu_ns();
			int n = recv(fd, buf, recv_size, MSG_DONTWAIT);
			double spent = thread_cpu_ns() - before;
			if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
				break;
			if (n <= 0)
				return 1;
			found += n;
			if (now_us() > warm)
				add(&f, n, spent);
		}
		if (now_us() > warm && wakes < cap)
			queued[wakes++] = found;
	}
	close(fd);
	double sender = 0;
	if (read(result[0], &sender, sizeof sender) != sizeof sender)
		sender = 0;
	waitpid(child, NULL, 0);
	if (f.n < 2 || wakes == 0) {
		fprintf(stderr, "too short a run: %.0f reads, %d wake-ups\n", f.n, wakes);
		return 1;
	}
	double slope = (f.n * f.xy - f.x * f.y) / (f.n * f.xx - f.x * f.x);
	double intercept = (f.y - slope * f.x) / f.n;
	qsort(queued, wakes, sizeof *queued, compare);
	printf("sender on CPU %d, reader on CPU %d, send %d, recv %d bytes: %.0f reads, "
	       "%.1f us + %.3f ns/byte a read (mean %.0f bytes in %.2f us); sender %.3f ns/byte; "
	       "%d wake-ups find %.0f bytes queued (p50; p10 %.0f, p90 %.0f)\n",
	       sender_cpu, reader_cpu, send_size, recv_size, f.n, intercept / 1e3, slope, f.x / f.n, f.y / f.n / 1e3, sender, wakes,
	       queued[wakes / 2], queued[wakes / 10], queued[wakes * 9 / 10]);
	return 0;
}
