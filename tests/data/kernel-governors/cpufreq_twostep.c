// SPDX-License-Identifier: MIT
/*
 * A small governor written for dvfslab's tests, in the shape of a kernel governor file: it
 * registers a scheduler hook per CPU, keeps a sysfs tunable, and asks for the policy's
 * highest frequency while a CPU's utilisation is above `up_util`, else for its lowest.
 * It uses the kernel interfaces a governor file uses, through dvfslab's shim.
 */

struct twostep_tunables {
	struct gov_attr_set attr_set;
	unsigned int up_util;
};

struct twostep_policy {
	struct cpufreq_policy *policy;
	struct twostep_tunables *tunables;
	struct list_head tunables_hook;
	unsigned int next_freq;
};

struct twostep_cpu {
	struct update_util_data update_util;
	struct twostep_policy *tp;
	unsigned int cpu;
};

static DEFINE_PER_CPU(struct twostep_cpu, twostep_cpu);

static void twostep_update(struct update_util_data *hook, u64 time, unsigned int flags)
{
	struct twostep_cpu *tc = container_of(hook, struct twostep_cpu, update_util);
	struct twostep_policy *tp = tc->tp;
	struct cpufreq_policy *policy = tp->policy;
	unsigned long util = 0;
	unsigned int cpu, next;

	if (!cpufreq_this_cpu_can_update(policy))
		return;
	for_each_cpu(cpu, policy->cpus)
		util = max(util, cpu_util_cfs(cpu));
	next = util > tp->tunables->up_util ? policy->max : policy->min;
	if (next == tp->next_freq)
		return;
	tp->next_freq = next;
	cpufreq_driver_fast_switch(policy, next);
}

static inline struct twostep_tunables *to_tunables(struct gov_attr_set *attr_set)
{
	return container_of(attr_set, struct twostep_tunables, attr_set);
}

static ssize_t up_util_show(struct gov_attr_set *attr_set, char *buf)
{
	return sprintf(buf, "%u\n", to_tunables(attr_set)->up_util);
}

static ssize_t up_util_store(struct gov_attr_set *attr_set, const char *buf, size_t count)
{
	unsigned int value;

	if (kstrtouint(buf, 10, &value) || value > SCHED_CAPACITY_SCALE)
		return -EINVAL;
	to_tunables(attr_set)->up_util = value;
	return count;
}

static struct governor_attr up_util = __ATTR_RW(up_util);

static struct attribute *twostep_attrs[] = {
	&up_util.attr,
	NULL
};
ATTRIBUTE_GROUPS(twostep);

static void twostep_tunables_free(struct kobject *kobj)
{
	kfree(to_tunables(to_gov_attr_set(kobj)));
}

static const struct kobj_type twostep_ktype = {
	.default_groups = twostep_groups,
	.sysfs_ops = &governor_sysfs_ops,
	.release = &twostep_tunables_free,
};

static struct twostep_tunables *global_tunables;

static int twostep_init(struct cpufreq_policy *policy)
{
	struct twostep_policy *tp = kzalloc(sizeof(*tp), GFP_KERNEL);

	if (!tp)
		return -ENOMEM;
	tp->policy = policy;
	cpufreq_enable_fast_switch(policy);
	if (global_tunables && !have_governor_per_policy()) {
		tp->tunables = global_tunables;
		gov_attr_set_get(&global_tunables->attr_set, &tp->tunables_hook);
	} else {
		tp->tunables = kzalloc(sizeof(*tp->tunables), GFP_KERNEL);
		if (!tp->tunables) {
			kfree(tp);
			return -ENOMEM;
		}
		gov_attr_set_init(&tp->tunables->attr_set, &tp->tunables_hook);
		tp->tunables->up_util = SCHED_CAPACITY_SCALE / 2;
		kobject_init_and_add(&tp->tunables->attr_set.kobj, &twostep_ktype,
				     get_governor_parent_kobj(policy), "twostep");
		if (!have_governor_per_policy())
			global_tunables = tp->tunables;
	}
	policy->governor_data = tp;
	return 0;
}

static void twostep_exit(struct cpufreq_policy *policy)
{
	struct twostep_policy *tp = policy->governor_data;

	if (!gov_attr_set_put(&tp->tunables->attr_set, &tp->tunables_hook))
		global_tunables = NULL;
	policy->governor_data = NULL;
	kfree(tp);
}

static int twostep_start(struct cpufreq_policy *policy)
{
	struct twostep_policy *tp = policy->governor_data;
	unsigned int cpu;

	tp->next_freq = 0;
	for_each_cpu(cpu, policy->cpus) {
		struct twostep_cpu *tc = &per_cpu(twostep_cpu, cpu);

		memset(tc, 0, sizeof(*tc));
		tc->cpu = cpu;
		tc->tp = tp;
		cpufreq_add_update_util_hook(cpu, &tc->update_util, twostep_update);
	}
	return 0;
}

static void twostep_stop(struct cpufreq_policy *policy)
{
	unsigned int cpu;

	for_each_cpu(cpu, policy->cpus)
		cpufreq_remove_update_util_hook(cpu);
}

struct cpufreq_governor twostep_gov = {
	.name = "twostep",
	.owner = THIS_MODULE,
	.init = twostep_init,
	.exit = twostep_exit,
	.start = twostep_start,
	.stop = twostep_stop,
};

cpufreq_governor_init(twostep_gov);
