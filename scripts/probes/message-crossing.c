/*
 * What a 100-byte message costs its sender and its reader when they share a CPU and when they
 * do not: the writer sends a batch of messages in a row over an AF_UNIX stream socketpair (or
 * a pipe), then hands a token to the reader, which reads the whole batch and hands one back,
 * so that the two never run at once. Each side's CPU time per message
 * (CLOCK_THREAD_CPUTIME_ID) after the first tenth of the rounds. Across CPUs the difference is
 * the message's cache lines moving between the CPUs' caches, the estimate behind
 * `UNIX_SEND_CROSSING` and `UNIX_RECV_CROSSING` (crates/dvfslab-sim/src/workload/estimates.rs).
 *
 *   cc -O2 -o message-crossing message-crossing.c
 *   ./message-crossing 1 1 200 3000 unix     # writer's CPU, reader's CPU, batch, rounds
 *   ./message-crossing 0 1 200 3000 unix
 *   ./message-crossing 0 1 200 3000 pipe
 *
 * The batch stays below what the socket holds (278 messages of 100 bytes with the default
 * 212,992-byte send buffer) so that the writer never blocks.
 */
#include "probe.h"
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#define MESSAGE 100

static int read_message(int fd, char *buf)
{
	int got = 0;
	while (got < MESSAGE) {
		int n = read(fd, buf + got, MESSAGE - got);
		if (n <= 0)
			return -1;
		got += n;
	}
	return 0;
}

int main(int argc, char **argv)
{
	if (argc != 6 || (strcmp(argv[5], "unix") && strcmp(argv[5], "pipe"))) {
		fprintf(stderr, "usage: %s WRITER_CPU READER_CPU BATCH ROUNDS unix|pipe\n", argv[0]);
		return 2;
	}
	int writer_cpu = atoi(argv[1]), reader_cpu = atoi(argv[2]);
	int batch = atoi(argv[3]), rounds = atoi(argv[4]);
	int data[2], go[2], back[2], result[2];
	int made = strcmp(argv[5], "pipe") ? socketpair(AF_UNIX, SOCK_STREAM, 0, data) : pipe(data);
	if (made || pipe(go) || pipe(back) || pipe(result)) {
		perror("socketpair/pipe");
		return 1;
	}
	char token = 0;
	pid_t child = fork();
	if (child == 0) {
		char buf[MESSAGE];
		double since = 0;
		if (pin_to_cpu(reader_cpu))
			_exit(1);
		for (int i = 0; i < rounds; i++) {
			if (i == rounds / 10)
				since = thread_cpu_ns();
			if (read(go[0], &token, 1) != 1)
				_exit(1);
			for (int j = 0; j < batch; j++)
				if (read_message(data[0], buf))
					_exit(1);
			if (write(back[1], &token, 1) != 1)
				_exit(1);
		}
		double spent = thread_cpu_ns() - since;
		_exit(write(result[1], &spent, sizeof spent) == sizeof spent ? 0 : 1);
	}
	if (pin_to_cpu(writer_cpu))
		return 1;
	char msg[MESSAGE];
	memset(msg, 1, sizeof msg);
	double since = 0;
	for (int i = 0; i < rounds; i++) {
		if (i == rounds / 10)
			since = thread_cpu_ns();
		for (int j = 0; j < batch; j++)
			if (write(data[1], msg, MESSAGE) != MESSAGE)
				return 1;
		if (write(go[1], &token, 1) != 1 || read(back[0], &token, 1) != 1)
			return 1;
	}
	double writer = thread_cpu_ns() - since, reader = 0;
	if (read(result[0], &reader, sizeof reader) != sizeof reader)
		return 1;
	waitpid(child, NULL, 0);
	double messages = (double)(rounds - rounds / 10) * batch;
	printf("%s, writer on CPU %d, reader on CPU %d: writer %.0f ns, reader %.0f ns a message\n",
	       argv[5], writer_cpu, reader_cpu, writer / messages, reader / messages);
	return 0;
}
