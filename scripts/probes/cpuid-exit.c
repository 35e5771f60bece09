/*
 * What one CPUID instruction costs: on bare metal a few hundred cycles, on a virtual machine a
 * trap to the hypervisor, which emulates it. Times a loop of CPUIDs of leaf 4 (the cache
 * parameters, walked by subleaf) and of leaf 2 (the cache descriptors), the two the C library
 * runs most at a program's start. The estimate behind a preset's `vm_exits.cpuid_us`
 * (docs/platform-format.md).
 *
 *   cc -O2 -o cpuid-exit cpuid-exit.c
 *   ./cpuid-exit 20000        # CPUIDs of each leaf
 */
#include "probe.h"
#include <cpuid.h>
#include <stdlib.h>

int main(int argc, char **argv)
{
	int n = argc > 1 ? atoi(argv[1]) : 20000;
	unsigned a, b, c, d;
	if (n <= 0) {
		fprintf(stderr, "usage: %s [CPUIDS]\n", argv[0]);
		return 2;
	}
	double t0 = now_us();
	for (int i = 0; i < n; i++)
		__cpuid_count(4, i & 3, a, b, c, d);
	double t1 = now_us();
	for (int i = 0; i < n; i++)
		__cpuid(2, a, b, c, d);
	double t2 = now_us();
	printf("cpuid leaf 4: %.2f us each\ncpuid leaf 2: %.2f us each\n", (t1 - t0) / n, (t2 - t1) / n);
	return 0;
}
