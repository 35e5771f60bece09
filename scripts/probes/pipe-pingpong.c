/*
 * A pipe ping-pong of two processes pinned to one CPU, each working a set time at each stop:
 * whether the wake-up of a write lets the woken side run before the writer's write() returns.
 * The scheduler's wake-up preemption on a real kernel, to compare with
 * `pipe-test:one_cpu=1,work_us=A,b_work_us=B` (tests/it/eevdf.rs).
 *
 *   cc -O2 -o pipe-pingpong pipe-pingpong.c
 *   dvfslab record -o pp.txt -- ./pipe-pingpong 2000 25 20    # round trips, A's and B's us
 *
 * It prints how often B ran before A's write returned; the trace's switch-outs in state R
 * count both sides' preemptions.
 */
#include "probe.h"
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

int main(int argc, char **argv)
{
	if (argc != 4) {
		fprintf(stderr, "usage: %s ROUND_TRIPS A_US B_US\n", argv[0]);
		return 2;
	}
	int trips = atoi(argv[1]);
	double a_us = atof(argv[2]), b_us = atof(argv[3]);
	if (pin_to_cpu1())
		return 1;
	volatile long *b_seen = mmap(0, 4096, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	int to_b[2], to_a[2];
	char token = 0;
	if (b_seen == MAP_FAILED || pipe(to_b) || pipe(to_a)) {
		perror("setup");
		return 1;
	}
	if (fork() == 0) {
		for (int i = 0; i < trips; i++) {
			if (read(to_b[0], &token, 1) != 1)
				_exit(1);
			*b_seen = i + 1;
			work(b_us);
			if (write(to_a[1], &token, 1) != 1)
				_exit(1);
		}
		_exit(0);
	}
	int b_first = 0;
	for (int i = 0; i < trips; i++) {
		work(a_us);
		if (write(to_b[1], &token, 1) != 1)
			return 1;
		if (*b_seen == i + 1)
			b_first++;
		if (read(to_a[0], &token, 1) != 1)
			return 1;
	}
	wait(NULL);
	printf("A %.0f us, B %.0f us a stop: B ran before A's write returned in %d of %d round trips\n",
	       a_us, b_us, b_first, trips);
	return 0;
}
