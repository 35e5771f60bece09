/*
 * N processes that each work RUN_US and sleep SLEEP_US in turn for SECONDS: with more tasks
 * than CPUs, a CPU whose task sleeps often finds another waiting on a busy CPU, the moment of
 * new-idle balancing (docs/recording.md, "going idle, takes a waiting task"). The same load as
 * rt-app `{"instance": N, "run": RUN_US, "sleep": SLEEP_US}`.
 *
 *   cc -O2 -o spin-sleep spin-sleep.c
 *   dvfslab record -o ss.txt -- ./spin-sleep 3 2000 300 2
 */
#include "probe.h"
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

int main(int argc, char **argv)
{
	if (argc != 5) {
		fprintf(stderr, "usage: %s TASKS RUN_US SLEEP_US SECONDS\n", argv[0]);
		return 2;
	}
	int tasks = atoi(argv[1]);
	double run_us = atof(argv[2]), seconds = atof(argv[4]);
	struct timespec nap = { 0, (long)(atof(argv[3]) * 1000) };
	for (int i = 0; i < tasks; i++) {
		if (fork() == 0) {
			double stop = now_us() + seconds * 1e6;
			while (now_us() < stop) {
				work(run_us);
				nanosleep(&nap, NULL);
			}
			_exit(0);
		}
	}
	while (wait(NULL) > 0)
		;
	return 0;
}
