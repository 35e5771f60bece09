/*
 * A parent pinned to one CPU works, forks a child that inherits the pin, and checks whether the
 * child ran before fork() returned to it: whether a fork's wake-up preempts the parent. Mainline
 * 6.18's wake-up check lets the child preempt a parent past its protected slice; the 6.18 stable
 * series from 6.18.33 never does (docs/kernel-versions.md).
 *
 *   cc -O2 -o fork-preempt fork-preempt.c
 *   ./fork-preempt 200 3000      # forks, the parent's work before each in us
 */
#include "probe.h"
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

int main(int argc, char **argv)
{
	if (argc != 3) {
		fprintf(stderr, "usage: %s FORKS WORK_US\n", argv[0]);
		return 2;
	}
	int forks = atoi(argv[1]);
	double work_us = atof(argv[2]);
	if (pin_to_cpu1())
		return 1;
	volatile double *child_ran = mmap(0, 4096, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (child_ran == MAP_FAILED) {
		perror("mmap");
		return 1;
	}
	int first = 0;
	double waited = 0;
	for (int i = 0; i < forks; i++) {
		work(work_us);
		*child_ran = 0;
		double forked = now_us();
		pid_t child = fork();
		if (child == 0) {
			*child_ran = now_us();
			_exit(0);
		}
		if (*child_ran != 0)
			first++;
		while (*child_ran == 0)
			;
		waited += *child_ran - forked;
		waitpid(child, NULL, 0);
		usleep(2000);
	}
	printf("the child ran before fork returned in %d of %d forks; it first ran %.0f us after the fork on average\n",
	       first, forks, waited / forks);
	return 0;
}
