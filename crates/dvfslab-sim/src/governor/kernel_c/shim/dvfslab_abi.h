/*
 * The interface between dvfslab's kernel shim (shim.c) and the simulator (kernel_c/ffi.rs).
 * Written for dvfslab; no kernel code. Keep in step with ffi.rs: DVFSLAB_ABI names the
 * layout, and the simulator refuses a library built for another.
 */
#ifndef DVFSLAB_ABI_H
#define DVFSLAB_ABI_H

#define DVFSLAB_ABI 1

/* What the scheduler reports of one CPU (CpuSignals in context.rs). */
struct dvfslab_signals {
	unsigned long long util_avg;
	unsigned long long util_est;
	unsigned long long runnable_avg;
	unsigned long long cap_orig;
	unsigned long long idle_calls;
	unsigned long long uclamp_min;
	unsigned long long uclamp_max;
	int rt_runnable;
	int uclamp_used;
};

/* The simulator's side: the calls the shim makes into the running simulation. */
struct dvfslab_host {
	void *ctx;
	void (*signals)(void *ctx, int cpu, struct dvfslab_signals *out);
	/* The cpufreq core and driver: policy->cur after asking for khz with relation. */
	unsigned int (*target)(void *ctx, unsigned int khz, unsigned int relation);
	/* cpufreq_driver_resolve_freq: the table entry (or clamped kHz) a request selects. */
	unsigned int (*resolve)(void *ctx, unsigned int khz);
	/* A message of the governor (pr_err, WARN): level 0 error, 1 warning, 2 info. */
	void (*log)(void *ctx, int level, const char *text);
	/* Arm the policy's governor timer delay_ns from now (delayed work, DBS governors). */
	void (*arm_timer)(void *ctx, unsigned long long delay_ns);
	/* Time now (ns), as the governor's clock reads it. */
	unsigned long long (*now_ns)(void *ctx);
	/* Busy and iowait time of a CPU so far (ns), for get_cpu_idle_time. */
	void (*cpu_times)(void *ctx, int cpu, unsigned long long *busy_ns, unsigned long long *iowait_ns);
};

/* One cpufreq policy as the core sets it up before its governor's init. */
struct dvfslab_policy_desc {
	int ncpus;
	const int *cpus;
	unsigned int min_khz, max_khz, cur_khz;
	unsigned int cpuinfo_min_khz, cpuinfo_max_khz;
	unsigned int transition_latency_ns;
	/* cpufreq_policy_transition_delay_us, as the core of the simulated kernel derives it. */
	unsigned int transition_delay_us;
	/* arch_scale_freq_ref of the policy's CPUs (kHz; 0 where the architecture has none). */
	unsigned int freq_ref_khz;
	int fast_switch_possible;
	int dvfs_possible_from_any_cpu;
	/* The driver's flags (CPUFREQ_NEED_UPDATE_LIMITS, CPUFREQ_HAVE_GOVERNOR_PER_POLICY...). */
	unsigned int driver_flags;
	/* The frequency table, ascending (kHz), and its length. */
	const unsigned int *table_khz;
	int table_len;
};

#endif
