/*
 * How many CPUID instructions a program runs, by single-stepping it under ptrace and reading
 * each instruction before it executes (CPUID is 0F A2). A program that does nothing counts
 * what its C library's start-up runs: 68 with Debian 12's glibc 2.36 on an Intel Xeon guest,
 * static or dynamic, the estimate behind `estimates::kernel::EXEC_STARTUP_CPUIDS`. Slow (a
 * trap per instruction): a do-nothing program takes seconds.
 *
 *   echo 'int main(void) { return 0; }' > null.c
 *   cc -O2 -static -o null-static null.c && cc -O2 -o null-dyn null.c
 *   cc -O2 -o count-cpuid count-cpuid.c
 *   ./count-cpuid ./null-static && ./count-cpuid ./null-dyn
 */
#include <errno.h>
#include <stdio.h>
#include <sys/ptrace.h>
#include <sys/user.h>
#include <sys/wait.h>
#include <unistd.h>

int main(int argc, char **argv)
{
	if (argc < 2) {
		fprintf(stderr, "usage: %s PROGRAM [ARGS...]\n", argv[0]);
		return 2;
	}
	pid_t child = fork();
	if (child == 0) {
		ptrace(PTRACE_TRACEME, 0, 0, 0);
		execv(argv[1], argv + 1);
		perror(argv[1]);
		_exit(127);
	}
	int status;
	waitpid(child, &status, 0); /* stopped at the exec */
	long steps = 0, cpuids = 0;
	while (WIFSTOPPED(status)) {
		struct user_regs_struct regs;
		ptrace(PTRACE_GETREGS, child, 0, &regs);
		errno = 0;
		long word = ptrace(PTRACE_PEEKTEXT, child, (void *)regs.rip, 0);
		if (errno == 0 && (word & 0xffff) == 0xa20f)
			cpuids++;
		if (ptrace(PTRACE_SINGLESTEP, child, 0, 0) < 0 || waitpid(child, &status, 0) < 0)
			break;
		steps++;
	}
	printf("%s: %ld instructions, %ld CPUID\n", argv[1], steps, cpuids);
	return 0;
}
