/*
 * When a wake-up from one vCPU preempts the task running on another, how long that task still
 * makes progress: a spinner on CPU 0 records every gap of more than 3 us in its loop, a sleeper
 * pinned beside it is woken from CPU 1 every millisecond (a pipe write) and preempts it. Per
 * wake-up: when the spinner's last gap before the sleeper ran began, and when the sleeper ran,
 * both from the write. With the spinner in user mode the gap opens when the reschedule IPI
 * reaches it; with `syscalls` (a getppid() each turn) at its first return from a system call
 * after the waker set its need_resched flag. Between the gap's start and the sleeper's run the
 * vCPU runs neither: on the 2-vCPU guest of an AMD EPYC host, its last progress 12 us after the
 * write and the sleeper at 25 (medians) in user mode, 4 and 29 with system calls
 * (docs/recording.md).
 *
 *   cc -O2 -pthread -o resched-stall resched-stall.c
 *   ./resched-stall 2000 user         # wake-ups, the spinner's mode: user or syscalls
 */
#include "probe.h"
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#define MAX_GAPS 1000000

static int fds[2], wakeups, syscalls;
static atomic_int stop;
static double *woke_at, *ran_at, *gap_start, *gap_end;
static int gaps;

static void *spinner(void *arg)
{
	if (pin_to_cpu(0))
		exit(1);
	double last = now_us();
	while (!atomic_load(&stop)) {
		if (syscalls)
			syscall(SYS_getppid);
		double t = now_us();
		if (t - last > 3 && gaps < MAX_GAPS) {
			gap_start[gaps] = last;
			gap_end[gaps++] = t;
		}
		last = t;
	}
	return arg;
}

static void *sleeper(void *arg)
{
	if (pin_to_cpu(0))
		exit(1);
	char c;
	for (int i = 0; i < wakeups; i++) {
		if (read(fds[0], &c, 1) != 1)
			break;
		ran_at[i] = now_us();
	}
	return arg;
}

static int by_value(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return (x > y) - (x < y);
}

static void quantiles(const char *what, double *v, int n)
{
	qsort(v, n, sizeof *v, by_value);
	printf("  %s: p10 %.1f, p50 %.1f, p90 %.1f us\n", what, v[n / 10], v[n / 2], v[9 * n / 10]);
}

int main(int argc, char **argv)
{
	if (argc != 3 || (strcmp(argv[2], "user") && strcmp(argv[2], "syscalls"))) {
		fprintf(stderr, "usage: %s WAKEUPS user|syscalls\n", argv[0]);
		return 2;
	}
	wakeups = atoi(argv[1]);
	syscalls = !strcmp(argv[2], "syscalls");
	woke_at = calloc(wakeups, sizeof *woke_at);
	ran_at = calloc(wakeups, sizeof *ran_at);
	gap_start = calloc(MAX_GAPS, sizeof *gap_start);
	gap_end = calloc(MAX_GAPS, sizeof *gap_end);
	if (wakeups < 10 || !woke_at || !ran_at || !gap_start || !gap_end || pipe(fds)) {
		fprintf(stderr, "%s: expected at least 10 wake-ups, and memory and a pipe\n", argv[0]);
		return 1;
	}
	pthread_t s, z;
	pthread_create(&s, 0, spinner, 0);
	pthread_create(&z, 0, sleeper, 0);
	if (pin_to_cpu(1))
		return 1;
	usleep(100000);
	for (int i = 0; i < wakeups; i++) {
		usleep(1000);
		woke_at[i] = now_us();
		if (write(fds[1], "x", 1) != 1)
			return 1;
	}
	usleep(10000);
	atomic_store(&stop, 1);
	pthread_join(s, 0);
	pthread_join(z, 0);
	double *stopped = calloc(wakeups, sizeof *stopped), *ran = calloc(wakeups, sizeof *ran);
	int n = 0;
	for (int i = 0, g = 0; i < wakeups; i++) {
		while (g < gaps && gap_end[g] < ran_at[i])
			g++;
		if (g < gaps && gap_start[g] <= ran_at[i]) {
			stopped[n] = gap_start[g] - woke_at[i];
			ran[n++] = ran_at[i] - woke_at[i];
		}
	}
	if (n < 10) {
		fprintf(stderr, "%s: only %d wake-ups preempted the spinner\n", argv[0], n);
		return 1;
	}
	printf("%d of %d wake-ups preempted the spinner (%s):\n", n, wakeups, argv[2]);
	quantiles("its last progress after the write", stopped, n);
	quantiles("the sleeper running after the write", ran, n);
	return 0;
}
