/*
 * What the probes share: a monotonic clock in microseconds, the thread's CPU time, work that
 * spins for a set time, and pinning the process (and the children it forks) to a CPU.
 */
#ifndef PROBE_H
#define PROBE_H

#define _GNU_SOURCE
#include <sched.h>
#include <stdio.h>
#include <time.h>

static inline double now_us(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec * 1e6 + t.tv_nsec / 1e3;
}

/* The calling thread's CPU time in nanoseconds (kernel time included). */
static inline double thread_cpu_ns(void)
{
	struct timespec t;
	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
	return t.tv_sec * 1e9 + t.tv_nsec;
}

static inline void work(double us)
{
	double end = now_us() + us;
	while (now_us() < end)
		;
}

/* Pin the process (and the children it forks) to `cpu`: 0, or -1 with the reason printed. */
static inline int pin_to_cpu(int cpu)
{
	cpu_set_t one;
	CPU_ZERO(&one);
	CPU_SET(cpu, &one);
	if (sched_setaffinity(0, sizeof one, &one)) {
		perror("sched_setaffinity");
		return -1;
	}
	return 0;
}

static inline int pin_to_cpu1(void)
{
	return pin_to_cpu(1);
}

#endif
