/*
 * dvfslab's kernel shim: the cpufreq core, the scheduler's hook registry and the sysfs
 * attribute plumbing a governor file links against, and the entry points the simulator calls
 * (dvfslab_*). Written for dvfslab; no kernel code.
 *
 * One loaded copy of the library serves one simulation: its globals (the per-CPU hooks, the
 * governor file's own statics) belong to that run alone.
 */
#include "dvfslab_kernel.h"

#include <stdarg.h>
#include <stdlib.h>

#define DVFSLAB_MAX_POLICIES NR_CPUS

static const struct dvfslab_host *host;
unsigned long long dvfslab_tick_nsec = 4000000;
bool dvfslab_freq_invariant;
unsigned int dvfslab_freq_ref_khz[NR_CPUS];
struct rq dvfslab_runqueues[NR_CPUS];
int dvfslab_this_cpu;
int dvfslab_nr_cpus = 1;
struct kernel_cpustat dvfslab_kcpustat[NR_CPUS];

static struct cpufreq_policy *policies[DVFSLAB_MAX_POLICIES];
static struct gov_attr_set *policy_attr_set[DVFSLAB_MAX_POLICIES];
static unsigned int driver_flags;
static int current_policy = -1;
static bool remote_call;
static struct update_util_data *hooks[NR_CPUS];
static struct task_struct worker_thread;

struct cpufreq_governor *dvfslab_registered_governor(void);
static void new_reading(void);

/* ---- Entry points the simulator calls ------------------------------------------------------ */

int dvfslab_abi(void) { return DVFSLAB_ABI; }

int dvfslab_kernel_version(void) { return LINUX_VERSION_CODE; }

void dvfslab_set_host(const struct dvfslab_host *h, int invariant, unsigned long long tick_ns)
{
	host = h;
	dvfslab_freq_invariant = invariant != 0;
	dvfslab_tick_nsec = tick_ns;
	for (int cpu = 0; cpu < NR_CPUS; cpu++)
		dvfslab_runqueues[cpu].cpu = cpu;
}

/* The machine's CPU count (nr_cpu_ids, every CPU online). */
void dvfslab_set_cpus(int ncpus) { dvfslab_nr_cpus = ncpus > 0 && ncpus <= NR_CPUS ? ncpus : 1; }

const char *dvfslab_governor_name(void) { return dvfslab_registered_governor()->name; }

/* cpufreq_init_policy + the governor's ->init: policy number @p gets its cpufreq_policy. */
int dvfslab_policy_init(int p, const struct dvfslab_policy_desc *d)
{
	struct cpufreq_governor *gov = dvfslab_registered_governor();
	struct cpufreq_policy *policy;
	int ret;

	if (p < 0 || p >= DVFSLAB_MAX_POLICIES || policies[p])
		return -EINVAL;
	policy = calloc(1, sizeof(*policy));
	if (!policy)
		return -ENOMEM;
	for (int i = 0; i < d->ncpus; i++) {
		cpumask_set_cpu(d->cpus[i], policy->cpus);
		cpumask_set_cpu(d->cpus[i], policy->related_cpus);
		cpumask_set_cpu(d->cpus[i], policy->real_cpus);
		dvfslab_freq_ref_khz[d->cpus[i]] = d->freq_ref_khz;
	}
	policy->cpu = d->cpus[0];
	policy->min = d->min_khz;
	policy->max = d->max_khz;
	policy->cur = d->cur_khz;
	policy->cpuinfo.min_freq = d->cpuinfo_min_khz;
	policy->cpuinfo.max_freq = d->cpuinfo_max_khz;
	policy->cpuinfo.transition_latency = d->transition_latency_ns;
	policy->transition_delay_us = d->transition_delay_us;
	policy->fast_switch_possible = d->fast_switch_possible != 0;
	policy->dvfs_possible_from_any_cpu = d->dvfs_possible_from_any_cpu != 0;
	policy->freq_table = calloc((size_t)d->table_len + 1, sizeof(*policy->freq_table));
	if (!policy->freq_table) {
		free(policy);
		return -ENOMEM;
	}
	for (int i = 0; i < d->table_len; i++)
		policy->freq_table[i].frequency = d->table_khz[i];
	policy->freq_table[d->table_len].frequency = CPUFREQ_TABLE_END;
	INIT_LIST_HEAD(&policy->policy_list);
	driver_flags = d->driver_flags;
	policy->governor = gov;
	policies[p] = policy;
	current_policy = p;
	ret = gov->init ? gov->init(policy) : 0;
	current_policy = -1;
	if (ret) {
		policies[p] = NULL;
		free(policy->freq_table);
		free(policy);
	}
	return ret;
}

/* cpufreq_start_governor: ->start, then ->limits. */
static struct cpufreq_policy *policy_of(int p)
{
	return p >= 0 && p < DVFSLAB_MAX_POLICIES ? policies[p] : NULL;
}

int dvfslab_policy_start(int p)
{
	struct cpufreq_policy *policy = policy_of(p);
	int ret = 0;

	if (!policy)
		return -EINVAL;
	new_reading();
	current_policy = p;
	if (policy->governor->start)
		ret = policy->governor->start(policy);
	if (!ret && policy->governor->limits)
		policy->governor->limits(policy);
	current_policy = -1;
	return ret;
}

/* cpufreq_governor_limits: the policy's limits changed. */
void dvfslab_policy_limits(int p)
{
	struct cpufreq_policy *policy = policy_of(p);

	if (!policy)
		return;
	new_reading();
	current_policy = p;
	if (policy->governor->limits)
		policy->governor->limits(policy);
	current_policy = -1;
}

/* cpufreq_stop_governor and cpufreq_exit_governor. */
void dvfslab_policy_exit(int p)
{
	struct cpufreq_policy *policy = policy_of(p);

	if (!policy)
		return;
	current_policy = p;
	if (policy->governor->stop)
		policy->governor->stop(policy);
	if (policy->governor->exit)
		policy->governor->exit(policy);
	current_policy = -1;
	policies[p] = NULL;
	free(policy->freq_table);
	free(policy);
}

/* The policy's frequency and limits as the simulator has them now. */
void dvfslab_policy_sync(int p, unsigned int cur, unsigned int min_khz, unsigned int max_khz)
{
	struct cpufreq_policy *policy = policy_of(p);

	if (!policy)
		return;
	policy->cur = cur;
	policy->min = min_khz;
	policy->max = max_khz;
}

/* cpufreq_update_util: the scheduler's callback for @cpu, where the kernel calls it. */
void dvfslab_update(int cpu, unsigned long long time, unsigned int flags, int remote)
{
	struct update_util_data *data = cpu >= 0 && cpu < NR_CPUS ? hooks[cpu] : NULL;

	if (!data)
		return;
	new_reading();
	remote_call = remote != 0;
	dvfslab_this_cpu = cpu;
	data->func(data, time, flags);
	remote_call = false;
}

/* ---- sysfs, as `echo VALUE > .../<governor>/NAME` and `cat` ----------------------------- */

static struct governor_attr *find_attr(struct gov_attr_set *set, const char *name)
{
	const struct kobj_type *kt = set->kobj.ktype;
	struct attribute **attrs;

	if (!kt)
		return NULL;
	if (kt->default_attrs)
		for (attrs = kt->default_attrs; *attrs; attrs++)
			if (!strcmp((*attrs)->name, name))
				return container_of(*attrs, struct governor_attr, attr);
	if (kt->default_groups)
		for (const struct attribute_group **g = kt->default_groups; *g; g++)
			for (attrs = (*g)->attrs; *attrs; attrs++)
				if (!strcmp((*attrs)->name, name))
					return container_of(*attrs, struct governor_attr, attr);
	return NULL;
}

/* The names of policy @p's tunables, comma-separated, into @buf (of @len bytes). */
int dvfslab_attr_names(int p, char *buf, int len)
{
	struct gov_attr_set *set = policy_of(p) ? policy_attr_set[p] : NULL;
	const struct kobj_type *kt;
	struct attribute **attrs;
	int n = 0;

	buf[0] = 0;
	if (!set || !(kt = set->kobj.ktype))
		return 0;
	if (kt->default_attrs)
		for (attrs = kt->default_attrs; *attrs; attrs++)
			n += snprintf(buf + n, n < len ? (size_t)(len - n) : 0, "%s%s", n ? "," : "", (*attrs)->name);
	if (kt->default_groups)
		for (const struct attribute_group **g = kt->default_groups; *g; g++)
			for (attrs = (*g)->attrs; *attrs; attrs++)
				n += snprintf(buf + n, n < len ? (size_t)(len - n) : 0, "%s%s", n ? "," : "",
					      (*attrs)->name);
	return n;
}

/* Write @value to policy @p's tunable @name: the store's return (bytes, or -errno);
 * -ENOENT for no such tunable, -EACCES for a read-only one, -ENODEV for no tunables. */
long dvfslab_attr_store(int p, const char *name, const char *value)
{
	struct gov_attr_set *set = policy_of(p) ? policy_attr_set[p] : NULL;
	struct governor_attr *attr;
	char buf[PAGE_SIZE];
	long ret;

	if (!set)
		return -ENODEV;
	attr = find_attr(set, name);
	if (!attr)
		return -ENOENT;
	if (!attr->store)
		return -EACCES;
	snprintf(buf, sizeof(buf), "%s\n", value);
	new_reading();
	current_policy = p;
	ret = set->kobj.ktype->sysfs_ops->store(&set->kobj, &attr->attr, buf, strlen(buf));
	current_policy = -1;
	return ret;
}

/* Read policy @p's tunable @name into @buf (PAGE_SIZE bytes): bytes, or -errno as above. */
long dvfslab_attr_show(int p, const char *name, char *buf)
{
	struct gov_attr_set *set = policy_of(p) ? policy_attr_set[p] : NULL;
	struct governor_attr *attr;

	if (!set)
		return -ENODEV;
	attr = find_attr(set, name);
	if (!attr)
		return -ENOENT;
	if (!attr->show)
		return -EACCES;
	return set->kobj.ktype->sysfs_ops->show(&set->kobj, &attr->attr, buf);
}

/* ---- Messages and memory ------------------------------------------------------------------- */

void dvfslab_printk(int level, const char *fmt, ...)
{
	char text[512];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(text, sizeof(text), fmt, ap);
	va_end(ap);
	if (host)
		host->log(host->ctx, level, text);
}

bool dvfslab_warn(bool cond, const char *file, int line, const char *what)
{
	if (cond)
		dvfslab_printk(1, "WARNING at %s:%d: %s", file, line, what);
	return cond;
}

void *kzalloc(size_t size, gfp_t flags) { (void)flags; return calloc(1, size); }
void *kmalloc(size_t size, gfp_t flags) { (void)flags; return malloc(size); }
void *kcalloc(size_t n, size_t size, gfp_t flags) { (void)flags; return calloc(n, size); }
void kfree(const void *p) { free((void *)p); }

struct task_struct *dvfslab_kthread(void) { return &worker_thread; }
int kthread_worker_fn(void *worker) { (void)worker; return 0; }

/* ---- The scheduler's side ---------------------------------------------------------------- */

/*
 * A CPU's signals are read once per call into the library: the scheduler does not run while
 * the governor does, so they cannot change within a call, except through the frequency the
 * governor sets (host_target starts a new reading).
 */
static unsigned long long reading = 1;
static struct {
	unsigned long long reading;
	struct dvfslab_signals s;
} signals_read[NR_CPUS];

static void new_reading(void) { reading++; }

struct dvfslab_signals dvfslab_cpu_signals(int cpu)
{
	struct dvfslab_signals s = { 0 };

	if (cpu < 0 || cpu >= NR_CPUS || !host)
		return s;
	if (signals_read[cpu].reading == reading)
		return signals_read[cpu].s;
	host->signals(host->ctx, cpu, &s);
	signals_read[cpu].reading = reading;
	signals_read[cpu].s = s;
	return s;
}

bool dvfslab_uclamp_used(void)
{
	/* sched_uclamp_used: on once any task asked for a clamp; the simulator reports it per CPU
	 * with the signals, the same for every CPU. */
	return dvfslab_cpu_signals(0).uclamp_used != 0;
}

void cpufreq_add_update_util_hook(int cpu, struct update_util_data *data,
				  void (*func)(struct update_util_data *data, u64 time, unsigned int flags))
{
	data->func = func;
	hooks[cpu] = data;
}

void cpufreq_remove_update_util_hook(int cpu) { hooks[cpu] = NULL; }

/* ---- The cpufreq core ---------------------------------------------------------------------- */

void cpufreq_enable_fast_switch(struct cpufreq_policy *policy)
{
	if (policy->fast_switch_possible)
		policy->fast_switch_enabled = true;
}

void cpufreq_disable_fast_switch(struct cpufreq_policy *policy) { policy->fast_switch_enabled = false; }

/* The simulator's core and driver take the request: the limits, the table, the hardware. */
static unsigned int host_target(struct cpufreq_policy *policy, unsigned int khz, unsigned int relation)
{
	if (!host)
		return policy->cur;
	policy->cur = host->target(host->ctx, khz, relation & ~CPUFREQ_RELATION_E);
	new_reading();
	return policy->cur;
}

unsigned int cpufreq_driver_fast_switch(struct cpufreq_policy *policy, unsigned int target_freq)
{
	target_freq = clamp_val(target_freq, policy->min, policy->max);
	return host_target(policy, target_freq, CPUFREQ_RELATION_L);
}

int __cpufreq_driver_target(struct cpufreq_policy *policy, unsigned int target_freq, unsigned int relation)
{
	host_target(policy, target_freq, relation);
	return 0;
}

int cpufreq_driver_target(struct cpufreq_policy *policy, unsigned int target_freq, unsigned int relation)
{
	return __cpufreq_driver_target(policy, target_freq, relation);
}

unsigned int cpufreq_driver_resolve_freq(struct cpufreq_policy *policy, unsigned int target_freq)
{
	if (!host)
		return clamp_val(target_freq, policy->min, policy->max);
	return host->resolve(host->ctx, target_freq);
}

bool cpufreq_driver_test_flags(unsigned int flags) { return (driver_flags & flags) != 0; }

/* No simulated driver has ->adjust_perf (intel_cpufreq with HWP is not modelled). */
bool cpufreq_driver_has_adjust_perf(void) { return false; }

void cpufreq_driver_adjust_perf(unsigned int cpu, unsigned long min_perf, unsigned long target_perf,
				unsigned long capacity)
{
	(void)cpu;
	(void)min_perf;
	(void)target_perf;
	(void)capacity;
}

unsigned int cpufreq_policy_transition_delay_us(struct cpufreq_policy *policy)
{
	return policy->transition_delay_us;
}

bool have_governor_per_policy(void) { return (driver_flags & CPUFREQ_HAVE_GOVERNOR_PER_POLICY) != 0; }

struct kobject *get_governor_parent_kobj(struct cpufreq_policy *policy)
{
	(void)policy;
	return NULL;
}

void cpufreq_policy_apply_limits(struct cpufreq_policy *policy)
{
	if (policy->max < policy->cur)
		__cpufreq_driver_target(policy, policy->max, CPUFREQ_RELATION_HE);
	else if (policy->min > policy->cur)
		__cpufreq_driver_target(policy, policy->min, CPUFREQ_RELATION_LE);
}

/* A callback from a CPU outside the policy may act only if the driver lets any CPU change
 * the frequency (dvfs_possible_from_any_cpu). */
bool cpufreq_this_cpu_can_update(struct cpufreq_policy *policy)
{
	return !remote_call || policy->dvfs_possible_from_any_cpu;
}

struct cpufreq_policy *cpufreq_cpu_get_raw(unsigned int cpu)
{
	for (int p = 0; p < DVFSLAB_MAX_POLICIES; p++)
		if (policies[p] && cpumask_test_cpu((int)cpu, policies[p]->cpus))
			return policies[p];
	return NULL;
}

/*
 * The entry of the policy's table (ascending, as every simulated driver builds it) that a
 * relation picks among those within the limits: L the lowest at or above the target (else the
 * highest), H the highest at or below it (else the lowest), C the closest (a tie to the lower).
 */
static int table_find_within(struct cpufreq_policy *policy, unsigned int target, unsigned int min_khz,
			     unsigned int max_khz, unsigned int relation)
{
	struct cpufreq_frequency_table *t = policy->freq_table;
	int below = -1, above = -1, lowest = -1, highest = -1;

	for (int i = 0; t[i].frequency != CPUFREQ_TABLE_END; i++) {
		unsigned int f = t[i].frequency;

		if (f < min_khz || f > max_khz)
			continue;
		if (lowest < 0)
			lowest = i;
		highest = i;
		if (f <= target)
			below = i;
		if (f >= target && above < 0)
			above = i;
	}
	switch (relation) {
	case CPUFREQ_RELATION_L:
		return above >= 0 ? above : highest;
	case CPUFREQ_RELATION_H:
		return below >= 0 ? below : lowest;
	default:
		if (below < 0)
			return above;
		if (above < 0)
			return below;
		return target - t[below].frequency <= t[above].frequency - target ? below : above;
	}
}

static int table_find(struct cpufreq_policy *policy, unsigned int target, unsigned int relation)
{
	return table_find_within(policy, target, policy->min, policy->max, relation);
}

int dvfslab_table_find_index_l(struct cpufreq_policy *policy, unsigned int target_freq, bool efficiencies)
{
	(void)efficiencies;
	return table_find(policy, target_freq, CPUFREQ_RELATION_L);
}

int dvfslab_table_find_index_h(struct cpufreq_policy *policy, unsigned int target_freq, bool efficiencies)
{
	(void)efficiencies;
	return table_find(policy, target_freq, CPUFREQ_RELATION_H);
}

int dvfslab_table_find_index_c(struct cpufreq_policy *policy, unsigned int target_freq, bool efficiencies)
{
	(void)efficiencies;
	return table_find(policy, target_freq, CPUFREQ_RELATION_C);
}

int dvfslab_table_target(struct cpufreq_policy *policy, unsigned int target_freq, unsigned int min_khz,
			 unsigned int max_khz, unsigned int relation)
{
	return table_find_within(policy, target_freq, min_khz, max_khz, relation & ~CPUFREQ_RELATION_E);
}

/* ---- Idle time, as the tick's idle accounting keeps it (in µs) ----------------------------- */

static void cpu_times(int cpu, u64 *now_ns, u64 *busy_ns, u64 *iowait_ns)
{
	unsigned long long now = 0, busy = 0, iowait = 0;

	if (host) {
		now = host->now_ns(host->ctx);
		host->cpu_times(host->ctx, cpu, &busy, &iowait);
	}
	*now_ns = now;
	*busy_ns = busy;
	*iowait_ns = iowait;
}

/* Idle time without iowait, and @last_update_time now (µs). */
u64 get_cpu_idle_time_us(int cpu, u64 *last_update_time)
{
	u64 now, busy, iowait;

	cpu_times(cpu, &now, &busy, &iowait);
	if (last_update_time)
		*last_update_time = now / NSEC_PER_USEC;
	return (now - busy - iowait) / NSEC_PER_USEC;
}

u64 get_cpu_iowait_time_us(int cpu, u64 *last_update_time)
{
	u64 now, busy, iowait;

	cpu_times(cpu, &now, &busy, &iowait);
	if (last_update_time)
		*last_update_time = now / NSEC_PER_USEC;
	return iowait / NSEC_PER_USEC;
}

/* cpufreq's get_cpu_idle_time: iowait counts as idle unless @io_busy. */
u64 get_cpu_idle_time(unsigned int cpu, u64 *wall, int io_busy)
{
	u64 idle = get_cpu_idle_time_us((int)cpu, io_busy ? wall : NULL);

	if (!io_busy)
		idle += get_cpu_iowait_time_us((int)cpu, wall);
	return idle;
}

/* ---- Governor tunables in sysfs (the attribute-set bookkeeping) --------------------------- */

static ssize_t governor_show(struct kobject *kobj, struct attribute *attr, char *buf)
{
	struct gov_attr_set *set = to_gov_attr_set(kobj);
	struct governor_attr *gattr = container_of(attr, struct governor_attr, attr);

	return gattr->show(set, buf);
}

static ssize_t governor_store(struct kobject *kobj, struct attribute *attr, const char *buf, size_t count)
{
	struct gov_attr_set *set = to_gov_attr_set(kobj);
	struct governor_attr *gattr = container_of(attr, struct governor_attr, attr);
	ssize_t ret;

	mutex_lock(&set->update_lock);
	ret = set->usage_count ? gattr->store(set, buf, count) : -EBUSY;
	mutex_unlock(&set->update_lock);
	return ret;
}

const struct sysfs_ops governor_sysfs_ops = {
	.show = governor_show,
	.store = governor_store,
};

void gov_attr_set_init(struct gov_attr_set *attr_set, struct list_head *list_node)
{
	INIT_LIST_HEAD(&attr_set->policy_list);
	mutex_init(&attr_set->update_lock);
	attr_set->usage_count = 1;
	list_add(list_node, &attr_set->policy_list);
	if (current_policy >= 0)
		policy_attr_set[current_policy] = attr_set;
}

void gov_attr_set_get(struct gov_attr_set *attr_set, struct list_head *list_node)
{
	attr_set->usage_count++;
	list_add(list_node, &attr_set->policy_list);
	if (current_policy >= 0)
		policy_attr_set[current_policy] = attr_set;
}

unsigned int gov_attr_set_put(struct gov_attr_set *attr_set, struct list_head *list_node)
{
	unsigned int count;

	list_del(list_node);
	count = --attr_set->usage_count;
	if (current_policy >= 0)
		policy_attr_set[current_policy] = NULL;
	if (count)
		return count;
	kobject_put(&attr_set->kobj);
	return 0;
}

int kobject_init_and_add(struct kobject *kobj, const struct kobj_type *ktype, struct kobject *parent,
			 const char *fmt, ...)
{
	(void)parent;
	(void)fmt;
	kobj->ktype = ktype;
	return 0;
}

void kobject_put(struct kobject *kobj)
{
	if (kobj->ktype && kobj->ktype->release)
		kobj->ktype->release(kobj);
}

/* ---- Number parsing, as the kernel's kstrto* (a trailing newline is allowed) -------------- */

static int parse_ull(const char *s, unsigned int base, unsigned long long *res)
{
	char *end;

	if (*s == '+')
		s++;
	if (*s < '0' || *s > '9') {
		if (!(base == 0 || base == 16) || *s == 0)
			return -EINVAL;
	}
	errno = 0;
	*res = strtoull(s, &end, (int)base);
	if (end == s)
		return -EINVAL;
	if (errno == ERANGE)
		return -ERANGE;
	if (*end == '\n')
		end++;
	return *end ? -EINVAL : 0;
}

int kstrtoul(const char *s, unsigned int base, unsigned long *res)
{
	unsigned long long v;
	int ret = *s == '-' ? -EINVAL : parse_ull(s, base, &v);

	if (!ret)
		*res = (unsigned long)v;
	return ret;
}

int kstrtouint(const char *s, unsigned int base, unsigned int *res)
{
	unsigned long long v;
	int ret = *s == '-' ? -EINVAL : parse_ull(s, base, &v);

	if (ret)
		return ret;
	if (v > 0xffffffffULL)
		return -ERANGE;
	*res = (unsigned int)v;
	return 0;
}

int kstrtoint(const char *s, unsigned int base, int *res)
{
	unsigned long long v;
	bool negative = *s == '-';
	int ret = parse_ull(negative ? s + 1 : s, base, &v);

	if (ret)
		return ret;
	if (v > (negative ? 0x80000000ULL : 0x7fffffffULL))
		return -ERANGE;
	*res = negative ? (int)(-(long long)v) : (int)v;
	return 0;
}

int kstrtobool(const char *s, bool *res)
{
	switch (s[0]) {
	case 'y': case 'Y': case 't': case 'T': case '1':
		*res = true;
		return 0;
	case 'n': case 'N': case 'f': case 'F': case '0':
		*res = false;
		return 0;
	case 'o': case 'O':
		if (s[1] == 'n' || s[1] == 'N') {
			*res = true;
			return 0;
		}
		if (s[1] == 'f' || s[1] == 'F') {
			*res = false;
			return 0;
		}
		return -EINVAL;
	default:
		return -EINVAL;
	}
}
