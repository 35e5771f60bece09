/*
 * What a pipe's or a socket's shared lines cost when its users take turns from two CPUs.
 * Process A (CPU 0) and process B (CPU 1) write 100-byte messages into one AF_UNIX stream
 * socketpair (or pipe), then B reads the batch; the writers spin on a shared turn counter, so
 * neither ever sleeps. Each write and read is timed with the TSC, inside the call only.
 * Three modes: 0, A writes every message (each crosses to B's CPU); 1, B writes every message
 * (nothing crosses); 2, A and B write in turns, so each write finds the object last used on
 * the other CPU. A's write in mode 2 less its write in mode 0, and B's in mode 2 less B's in
 * mode 1, is what the object's shared lines cost a write taken in turns: the estimate behind
 * `UNIX_SHARED_LINES_CYCLES` (crates/dvfslab-sim/src/workload/estimates.rs), beside
 * message-crossing.c's.
 *
 *   cc -O2 -o message-turns message-turns.c
 *   for mode in 0 1 2; do ./message-turns $mode 200 3000 unix; done
 *
 * The counts are TSC cycles: on the 2-CPU KVM guest the TSC runs at the modelled 2.6 GHz.
 * Run each a few times: a shared host moves them by a third from run to run.
 */
#include "probe.h"
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>
#include <x86intrin.h>

#define MESSAGE 100

struct shared {
	volatile long turn; /* operations done: each round is BATCH writes and the read */
	double a_write, b_write, b_read;
	long a_writes, b_writes, b_reads;
};

int main(int argc, char **argv)
{
	if (argc != 5 || (strcmp(argv[4], "unix") && strcmp(argv[4], "pipe"))) {
		fprintf(stderr, "usage: %s MODE(0|1|2) BATCH ROUNDS unix|pipe\n", argv[0]);
		return 2;
	}
	int mode = atoi(argv[1]), batch = atoi(argv[2]), rounds = atoi(argv[3]);
	int data[2];
	if (strcmp(argv[4], "pipe") ? socketpair(AF_UNIX, SOCK_STREAM, 0, data) : pipe(data)) {
		perror("socketpair/pipe");
		return 1;
	}
	struct shared *sh = mmap(NULL, sizeof *sh, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (sh == MAP_FAILED) {
		perror("mmap");
		return 1;
	}
	char msg[MESSAGE], buf[MESSAGE];
	memset(msg, 1, sizeof msg);
	pid_t child = fork();
	int me = child == 0; /* 0: A, 1: B */
	if (pin_to_cpu(me))
		return 1;
	long per_round = batch + 1;
	for (int r = 0; r < rounds; r++) {
		int counted = r >= rounds / 10;
		for (int i = 0; i < batch; i++) {
			int writer = mode == 2 ? (i & 1) : mode;
			if (writer != me)
				continue;
			while (sh->turn != r * per_round + i)
				;
			unsigned long long t0 = __rdtsc();
			if (write(data[1], msg, MESSAGE) != MESSAGE)
				exit(1);
			unsigned long long spent = __rdtsc() - t0;
			if (counted && me) {
				sh->b_write += spent;
				sh->b_writes++;
			} else if (counted) {
				sh->a_write += spent;
				sh->a_writes++;
			}
			sh->turn++;
		}
		if (!me) {
			while (sh->turn < (r + 1) * per_round)
				;
			continue;
		}
		while (sh->turn != r * per_round + batch)
			;
		for (int i = 0; i < batch; i++) {
			unsigned long long t0 = __rdtsc();
			for (int got = 0; got < MESSAGE;) {
				int n = read(data[0], buf + got, MESSAGE - got);
				if (n <= 0)
					exit(1);
				got += n;
			}
			if (counted) {
				sh->b_read += __rdtsc() - t0;
				sh->b_reads++;
			}
		}
		sh->turn++;
	}
	if (child == 0)
		_exit(0);
	waitpid(child, NULL, 0);
	printf("%s, mode %d: A's write %.0f, B's write %.0f, B's read %.0f TSC cycles\n", argv[4], mode,
	       sh->a_writes ? sh->a_write / sh->a_writes : 0.0, sh->b_writes ? sh->b_write / sh->b_writes : 0.0,
	       sh->b_read / sh->b_reads);
	return 0;
}
