/*
 * A TCP request/response pair over loopback with a vCPU a side, as netperf TCP_RR's pair runs
 * on the 2-CPU guest: the client on CPU 1, the server on CPU 0, one byte each way. Every
 * wake-up comes from the loopback receive softirq on the sender's CPU and sends an IPI to the
 * other, halted vCPU; a tick that lands in that softirq hands what it raised to ksoftirqd
 * (docs/model.md, "Kernel threads the benchmarks drive"). It prints the round trips a second;
 * a trace taken with `dvfslab record` gives ksoftirqd's wake-ups and whom they preempt:
 *
 *   cc -O2 -o tcp-rr-vcpus tcp-rr-vcpus.c
 *   sudo dvfslab record -o rr.txt -- ./tcp-rr-vcpus 60000
 *   grep 'next_comm=ksoftirqd' rr.txt | grep -c 'prev_comm=tcp-rr-vcpus.*prev_state=R'
 */
#include "probe.h"
#include "tcp.h"
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

int main(int argc, char **argv)
{
	if (argc != 2) {
		fprintf(stderr, "usage: %s ROUND_TRIPS\n", argv[0]);
		return 2;
	}
	int trips = atoi(argv[1]);
	char byte = 'x';
	struct sockaddr_in a;
	int ls = loopback_listener(&a);
	if (ls < 0) {
		perror("setup");
		return 1;
	}
	if (fork() == 0) {
		if (pin_to_cpu(0))
			_exit(1);
		int s = accept(ls, NULL, NULL);
		no_delay(s);
		while (!full(s, &byte, 1, 1))
			if (full(s, &byte, 1, 0))
				_exit(1);
		_exit(0);
	}
	if (pin_to_cpu1())
		return 1;
	int c = socket(AF_INET, SOCK_STREAM, 0);
	if (connect(c, (struct sockaddr *)&a, sizeof a)) {
		perror("connect");
		return 1;
	}
	no_delay(c);
	double start = now_us();
	for (int i = 0; i < trips; i++)
		if (full(c, &byte, 1, 0) || full(c, &byte, 1, 1))
			return 1;
	double us = now_us() - start;
	close(c);
	wait(NULL);
	printf("%d round trips in %.3f s: %.0f a second\n", trips, us / 1e6, trips / (us / 1e6));
	return 0;
}
