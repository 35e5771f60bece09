/*
 * What a loopback TCP send costs its sender for the wake-up of a receiver blocked on the
 * socket: the same 100-byte send() timed with the TSC when the receiver waits in recv() on
 * the socket (mode 1: the send's receive softirq wakes it) and when it waits elsewhere, on a
 * pipe the sender writes after the send (mode 0: the data only queues). Both processes share
 * CPU 1, as tbench's pairs do; the receiver runs at nice 19 so that the wake-up does not
 * preempt the sender before its send returns (which would put the receiver's run inside the
 * timed call). Before each send the sender sleeps 20 us, so that the receiver, which its
 * reply's wake-up left runnable, reaches its wait (both modes alike: the caches are those after
 * a short idle). Mode 1 less mode 0 is the wake-up's own share of a send (try_to_wake_up and,
 * under the recorder, its two events), which a send to a receiver that is not waiting skips
 * (docs/workloads-net.md, tbench).
 *
 *   cc -O2 -o loopback-wake loopback-wake.c
 *   for mode in 0 1; do ./loopback-wake $mode 20000; done
 *   sudo dvfslab record -o lw.txt -- ./loopback-wake 1 20000   # under the recorder
 *
 * The counts are TSC cycles: on the 2-CPU KVM guest the TSC runs at the modelled 2.6 GHz.
 */
#include "probe.h"
#include "tcp.h"
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>
#include <x86intrin.h>

#define MESSAGE 100

static int by_value(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return (x > y) - (x < y);
}

int main(int argc, char **argv)
{
	if (argc != 3 || (strcmp(argv[1], "0") && strcmp(argv[1], "1"))) {
		fprintf(stderr, "usage: %s MODE(0: receiver waits on a pipe | 1: in recv) SENDS\n", argv[0]);
		return 2;
	}
	int on_socket = atoi(argv[1]), sends = atoi(argv[2]);
	char buf[MESSAGE] = { 0 };
	int kick[2], ls;
	/* Whether the receiver ran before the timed send returned (its reading of message i). */
	volatile long *received = mmap(0, 4096, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	double *cycles = calloc(sends, sizeof *cycles);
	struct sockaddr_in a;
	if (pin_to_cpu1())
		return 1;
	if (!cycles || received == MAP_FAILED || pipe(kick) ||
	    (ls = loopback_listener(&a)) < 0) {
		perror("setup");
		return 1;
	}
	if (fork() == 0) {
		int s = accept(ls, NULL, NULL);
		no_delay(s);
		setpriority(PRIO_PROCESS, 0, 19);
		for (int i = 0; i < sends; i++) {
			char k;
			if (!on_socket && read(kick[0], &k, 1) != 1)
				_exit(1);
			if (full(s, buf, MESSAGE, 1))
				_exit(1);
			*received = i + 1;
			if (full(s, buf, MESSAGE, 0))
				_exit(1);
		}
		_exit(0);
	}
	int c = socket(AF_INET, SOCK_STREAM, 0);
	if (connect(c, (struct sockaddr *)&a, sizeof a)) {
		perror("connect");
		return 1;
	}
	no_delay(c);
	int receiver_first = 0;
	for (int i = 0; i < sends; i++) {
		usleep(20);
		unsigned long long t0 = __rdtsc();
		if (full(c, buf, MESSAGE, 0))
			return 1;
		cycles[i] = (double)(__rdtsc() - t0);
		if (*received == i + 1)
			receiver_first++;
		if (!on_socket && write(kick[1], "k", 1) != 1)
			return 1;
		if (full(c, buf, MESSAGE, 1))
			return 1;
	}
	wait(NULL);
	/* The first tenth warms the caches and the receiver's placement. */
	int skip = sends / 10, n = sends - skip;
	double sum = 0;
	for (int i = skip; i < sends; i++)
		sum += cycles[i];
	qsort(cycles + skip, n, sizeof *cycles, by_value);
	printf("receiver waiting %s: send of %d bytes, TSC cycles: median %.0f, p10 %.0f, p90 %.0f, mean %.0f "
	       "(%d sends); the receiver ran inside %d of them\n",
	       on_socket ? "in recv (woken)" : "on a pipe (not woken)", MESSAGE, cycles[skip + n / 2],
	       cycles[skip + n / 10], cycles[skip + 9 * n / 10], sum / n, n, receiver_first);
	return 0;
}
