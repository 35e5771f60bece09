/*
 * A TCP request/response pair over loopback, both processes pinned to one CPU, each working a
 * set time per message: the wake-up of the receiver comes from the loopback receive softirq
 * that the sender's send runs, as in tbench and netperf TCP_RR when their sides share a CPU.
 * It prints how often the server ran before the client's send() returned; a trace taken with
 * `dvfslab record` gives both sides' switch-outs.
 *
 *   cc -O2 -o tcp-pingpong tcp-pingpong.c
 *   dvfslab record -o tcp.txt -- ./tcp-pingpong 5000 10 5 100   # round trips, client us,
 *                                                               # server us, bytes
 */
#include "probe.h"
#include "tcp.h"
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

int main(int argc, char **argv)
{
	if (argc != 5) {
		fprintf(stderr, "usage: %s ROUND_TRIPS CLIENT_US SERVER_US BYTES\n", argv[0]);
		return 2;
	}
	int trips = atoi(argv[1]), bytes = atoi(argv[4]);
	double c_us = atof(argv[2]), s_us = atof(argv[3]);
	char *buf = calloc(1, bytes);
	volatile long *served = mmap(0, 4096, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	struct sockaddr_in a;
	int ls;
	if (pin_to_cpu1())
		return 1;
	if (!buf || served == MAP_FAILED ||
	    (ls = loopback_listener(&a)) < 0) {
		perror("setup");
		return 1;
	}
	if (fork() == 0) {
		int s = accept(ls, NULL, NULL);
		no_delay(s);
		for (int i = 0; i < trips; i++) {
			if (full(s, buf, bytes, 1))
				_exit(1);
			*served = i + 1;
			work(s_us);
			if (full(s, buf, bytes, 0))
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
	int server_first = 0;
	for (int i = 0; i < trips; i++) {
		work(c_us);
		if (full(c, buf, bytes, 0))
			return 1;
		if (*served == i + 1)
			server_first++;
		if (full(c, buf, bytes, 1))
			return 1;
	}
	wait(NULL);
	printf("client %.0f us, server %.0f us a message of %d bytes: the server ran before the client's send returned in %d of %d round trips\n",
	       c_us, s_us, bytes, server_first, trips);
	return 0;
}
