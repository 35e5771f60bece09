/*
 * dvfslab's kernel shim: the kernel interfaces a cpufreq governor source file uses, written
 * for the simulator, answered from the simulated machine. Force-included before the user's
 * governor file; its own header names (sched.h, linux/...) resolve to empty files in
 * include/. No kernel code: each definition is written from the interface it stands for.
 *
 * DVFSLAB_KERNEL_MAJOR and DVFSLAB_KERNEL_MINOR give the version the file is built as; the
 * scheduler's functions whose meaning changed between versions follow that version.
 */
#ifndef DVFSLAB_KERNEL_H
#define DVFSLAB_KERNEL_H

#include <stddef.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>
#include <stdio.h>
#include <errno.h>
#include <sys/types.h>
#include <limits.h>

#include "dvfslab_abi.h"

#define KERNEL_VERSION(a, b, c) (((a) << 16) + ((b) << 8) + (c))
#define LINUX_VERSION_CODE KERNEL_VERSION(DVFSLAB_KERNEL_MAJOR, DVFSLAB_KERNEL_MINOR, 0)
#define DVFSLAB_AT_LEAST(a, b) (LINUX_VERSION_CODE >= KERNEL_VERSION(a, b, 0))

/* ---- Kernel configuration the governor files test ---------------------------------------- */
#define CONFIG_SMP 1
#define CONFIG_NO_HZ_COMMON 1
#define CONFIG_CPU_FREQ 1
#define CONFIG_UCLAMP_TASK 1
#define NR_CPUS 1024

/* ---- Types, attributes and helpers ------------------------------------------------------ */
typedef uint8_t u8;
typedef uint16_t u16;
typedef uint32_t u32;
typedef uint64_t u64;
typedef int8_t s8;
typedef int16_t s16;
typedef int32_t s32;
typedef int64_t s64;
typedef unsigned short umode_t;
typedef unsigned int gfp_t;

#define __init
#define __exit
#define __initdata
#define __read_mostly
#define __maybe_unused __attribute__((unused))
#ifndef __always_inline
#define __always_inline inline __attribute__((always_inline))
#endif
#define noinline __attribute__((noinline))
#define __must_check
#define __user
#define __rcu
#define __percpu
#define __cacheline_aligned
#define ____cacheline_aligned_in_smp

#define likely(x) __builtin_expect(!!(x), 1)
#define unlikely(x) __builtin_expect(!!(x), 0)
#define READ_ONCE(x) (x)
#define WRITE_ONCE(x, v) ((x) = (v))
#define smp_mb() __sync_synchronize()
#define smp_wmb() __sync_synchronize()
#define smp_rmb() __sync_synchronize()
#define barrier() __asm__ __volatile__("" ::: "memory")
#define BIT(n) (1UL << (n))
#define ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))
#define DIV_ROUND_UP(n, d) (((n) + (d) - 1) / (d))

#define container_of(ptr, type, member) ((type *)((char *)(ptr) - offsetof(type, member)))

#define min(a, b) ({ __typeof__(a) _a = (a); __typeof__(b) _b = (b); _a < _b ? _a : _b; })
#define max(a, b) ({ __typeof__(a) _a = (a); __typeof__(b) _b = (b); _a > _b ? _a : _b; })
#define min_t(t, a, b) ({ t _a = (a); t _b = (b); _a < _b ? _a : _b; })
#define max_t(t, a, b) ({ t _a = (a); t _b = (b); _a > _b ? _a : _b; })
#define clamp(v, lo, hi) min(max(v, lo), hi)
#define clamp_t(t, v, lo, hi) min_t(t, max_t(t, v, lo), hi)
#define clamp_val(v, lo, hi) clamp_t(__typeof__(v), v, lo, hi)

#define NSEC_PER_USEC 1000L
#define NSEC_PER_MSEC 1000000L
#define USEC_PER_MSEC 1000L
#define NSEC_PER_SEC 1000000000L
#define USEC_PER_SEC 1000000L

#define MAX_ERRNO 4095
#define IS_ERR_VALUE(x) unlikely((unsigned long)(void *)(x) >= (unsigned long)-MAX_ERRNO)
static inline void *ERR_PTR(long error) { return (void *)error; }
static inline long PTR_ERR(const void *ptr) { return (long)ptr; }
static inline bool IS_ERR(const void *ptr) { return IS_ERR_VALUE((unsigned long)ptr); }

/* Module and export markers mean nothing in one shared object. */
struct module;
#define THIS_MODULE ((struct module *)0)
#define EXPORT_SYMBOL(x) extern int dvfslab_export_marker
#define EXPORT_SYMBOL_GPL(x) extern int dvfslab_export_marker
#define MODULE_LICENSE(x) extern int dvfslab_export_marker
#define MODULE_AUTHOR(x) extern int dvfslab_export_marker
#define MODULE_DESCRIPTION(x) extern int dvfslab_export_marker
#define module_init(x) extern int dvfslab_export_marker
#define module_exit(x) extern int dvfslab_export_marker

/* ---- Messages ------------------------------------------------------------------------------ */
void dvfslab_printk(int level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
bool dvfslab_warn(bool cond, const char *file, int line, const char *what);
#define pr_err(fmt, ...) dvfslab_printk(0, fmt, ##__VA_ARGS__)
#define pr_warn(fmt, ...) dvfslab_printk(1, fmt, ##__VA_ARGS__)
#define pr_info(fmt, ...) dvfslab_printk(2, fmt, ##__VA_ARGS__)
#define pr_debug(fmt, ...) do { } while (0)
#define pr_err_once pr_err
#define pr_warn_once pr_warn
#define WARN_ON(cond) dvfslab_warn(!!(cond), __FILE__, __LINE__, #cond)
#define WARN_ON_ONCE(cond) WARN_ON(cond)
#define WARN(cond, fmt, ...) dvfslab_warn(!!(cond), __FILE__, __LINE__, fmt)
#define BUG_ON(cond) ((void)dvfslab_warn(!!(cond), __FILE__, __LINE__, #cond))
#define BUG() BUG_ON(1)

/* ---- Memory -------------------------------------------------------------------------------- */
#define GFP_KERNEL 0u
#define GFP_ATOMIC 0u
void *kzalloc(size_t size, gfp_t flags);
void *kmalloc(size_t size, gfp_t flags);
void *kcalloc(size_t n, size_t size, gfp_t flags);
void kfree(const void *p);

/* ---- Lists --------------------------------------------------------------------------------- */
struct list_head {
	struct list_head *next, *prev;
};
#define LIST_HEAD_INIT(name) { &(name), &(name) }
#define LIST_HEAD(name) struct list_head name = LIST_HEAD_INIT(name)
static inline void INIT_LIST_HEAD(struct list_head *l) { l->next = l; l->prev = l; }
static inline void list_add(struct list_head *n, struct list_head *head)
{
	n->next = head->next;
	n->prev = head;
	head->next->prev = n;
	head->next = n;
}
static inline void list_add_tail(struct list_head *n, struct list_head *head)
{
	n->prev = head->prev;
	n->next = head;
	head->prev->next = n;
	head->prev = n;
}
static inline void list_del(struct list_head *e)
{
	e->prev->next = e->next;
	e->next->prev = e->prev;
	e->next = e->prev = e;
}
static inline bool list_empty(const struct list_head *h) { return h->next == h; }
#define list_entry(ptr, type, member) container_of(ptr, type, member)
#define list_first_entry(ptr, type, member) list_entry((ptr)->next, type, member)
#define list_for_each_entry(pos, head, member)                                   \
	for (pos = list_entry((head)->next, __typeof__(*pos), member);           \
	     &pos->member != (head);                                             \
	     pos = list_entry(pos->member.next, __typeof__(*pos), member))

/* ---- Locks: a simulated policy is only ever run by one thread ------------------------------ */
typedef struct { int unused; } raw_spinlock_t;
typedef struct { int unused; } spinlock_t;
struct mutex { int unused; };
struct rw_semaphore { int unused; };
#define DEFINE_MUTEX(name) struct mutex name = { 0 }
#define DEFINE_SPINLOCK(name) spinlock_t name = { 0 }
#define raw_spin_lock_init(l) ((void)(l))
#define raw_spin_lock(l) ((void)(l))
#define raw_spin_unlock(l) ((void)(l))
#define raw_spin_lock_irqsave(l, f) ((void)(l), (f) = 0)
#define raw_spin_unlock_irqrestore(l, f) ((void)(l), (void)(f))
#define spin_lock_init(l) ((void)(l))
#define spin_lock(l) ((void)(l))
#define spin_unlock(l) ((void)(l))
#define spin_lock_irqsave(l, f) ((void)(l), (f) = 0)
#define spin_unlock_irqrestore(l, f) ((void)(l), (void)(f))
#define mutex_init(m) ((void)(m))
#define mutex_destroy(m) ((void)(m))
#define mutex_lock(m) ((void)(m))
#define mutex_unlock(m) ((void)(m))
#define down_write(s) ((void)(s))
#define up_write(s) ((void)(s))
#define lockdep_assert_held(l) ((void)(l))
static inline void dvfslab_guard_nothing(const void *lock) { (void)lock; }
#define guard(kind) dvfslab_guard_nothing
#define rcu_read_lock() do { } while (0)
#define rcu_read_unlock() do { } while (0)
#define synchronize_rcu() do { } while (0)
#define rcu_dereference_sched(p) (p)
#define rcu_assign_pointer(p, v) ((p) = (v))
#define local_irq_save(f) ((f) = 0)
#define local_irq_restore(f) ((void)(f))

/* ---- Per-CPU data and CPU masks ----------------------------------------------------------- */
#define DEFINE_PER_CPU(type, name) __typeof__(type) name[NR_CPUS]
#define DECLARE_PER_CPU(type, name) extern __typeof__(type) name[NR_CPUS]
#define per_cpu(var, cpu) ((var)[cpu])
#define per_cpu_ptr(ptr, cpu) (&(ptr)[cpu])

#define BITS_PER_LONG 64
struct cpumask {
	unsigned long bits[NR_CPUS / BITS_PER_LONG];
};
typedef struct cpumask cpumask_var_t[1];
typedef struct cpumask cpumask_t;
static inline bool cpumask_test_cpu(int cpu, const struct cpumask *m)
{
	return (m->bits[cpu / BITS_PER_LONG] >> (cpu % BITS_PER_LONG)) & 1;
}
static inline void cpumask_set_cpu(int cpu, struct cpumask *m)
{
	m->bits[cpu / BITS_PER_LONG] |= 1UL << (cpu % BITS_PER_LONG);
}
static inline int cpumask_next(int n, const struct cpumask *m)
{
	for (int cpu = n + 1; cpu < NR_CPUS; cpu++)
		if (cpumask_test_cpu(cpu, m))
			return cpu;
	return NR_CPUS;
}
static inline int cpumask_first(const struct cpumask *m) { return cpumask_next(-1, m); }
static inline unsigned int cpumask_weight(const struct cpumask *m)
{
	unsigned int n = 0;
	for (size_t i = 0; i < ARRAY_SIZE(m->bits); i++)
		n += __builtin_popcountl(m->bits[i]);
	return n;
}
static inline void cpumask_clear(struct cpumask *m) { memset(m, 0, sizeof(*m)); }
static inline void cpumask_or(struct cpumask *d, const struct cpumask *a, const struct cpumask *b)
{
	for (size_t i = 0; i < ARRAY_SIZE(d->bits); i++)
		d->bits[i] = a->bits[i] | b->bits[i];
}
static inline bool alloc_cpumask_var(cpumask_var_t *m, gfp_t flags) { (void)flags; cpumask_clear(*m); return true; }
static inline bool zalloc_cpumask_var(cpumask_var_t *m, gfp_t flags) { return alloc_cpumask_var(m, flags); }
static inline void free_cpumask_var(cpumask_var_t m) { (void)m; }
#define for_each_cpu(cpu, mask) \
	for ((cpu) = cpumask_first(mask); (cpu) < NR_CPUS; (cpu) = cpumask_next((cpu), (mask)))

/* ---- Atomics: one thread runs a simulated policy ------------------------------------------ */
typedef struct { int counter; } atomic_t;
static inline int atomic_read(const atomic_t *v) { return v->counter; }
static inline void atomic_set(atomic_t *v, int i) { v->counter = i; }
static inline void atomic_inc(atomic_t *v) { v->counter++; }
static inline void atomic_dec(atomic_t *v) { v->counter--; }
static inline bool atomic_add_unless(atomic_t *v, int a, int u)
{
	if (v->counter == u)
		return false;
	v->counter += a;
	return true;
}
static inline u64 div_u64(u64 dividend, u32 divisor) { return dividend / divisor; }

/* ---- CPUs: the one the governor runs on, and those online (every simulated CPU) ------------ */
extern int dvfslab_this_cpu;
extern int dvfslab_nr_cpus;
#define smp_processor_id() dvfslab_this_cpu
#define raw_smp_processor_id() dvfslab_this_cpu
#define get_cpu() dvfslab_this_cpu
#define put_cpu() do { } while (0)
#define cpus_read_lock() do { } while (0)
#define cpus_read_unlock() do { } while (0)
#define get_online_cpus() do { } while (0)
#define put_online_cpus() do { } while (0)
#define nr_cpu_ids dvfslab_nr_cpus
#define for_each_online_cpu(cpu) for ((cpu) = 0; (cpu) < dvfslab_nr_cpus; (cpu)++)
#define for_each_possible_cpu(cpu) for_each_online_cpu(cpu)

/* ---- Idle time (kernel/time/tick-sched.c) and CPU time statistics (kernel_stat.h) --------- */
u64 get_cpu_idle_time_us(int cpu, u64 *last_update_time);
u64 get_cpu_iowait_time_us(int cpu, u64 *last_update_time);
u64 get_cpu_idle_time(unsigned int cpu, u64 *wall, int io_busy);
enum cpu_usage_stat { CPUTIME_USER, CPUTIME_NICE, CPUTIME_SYSTEM, CPUTIME_SOFTIRQ, CPUTIME_IRQ,
		      CPUTIME_IDLE, CPUTIME_IOWAIT, CPUTIME_STEAL, CPUTIME_GUEST, CPUTIME_GUEST_NICE,
		      NR_STATS };
struct kernel_cpustat {
	u64 cpustat[NR_STATS];
};
/* The simulated tasks all run at nice 0: no CPU time is "nice" time. */
extern struct kernel_cpustat dvfslab_kcpustat[NR_CPUS];
#define kcpustat_cpu(cpu) (dvfslab_kcpustat[cpu])
static inline u64 kcpustat_field(struct kernel_cpustat *kcpustat, enum cpu_usage_stat usage, int cpu)
{
	(void)cpu;
	return kcpustat->cpustat[usage];
}

/* ---- Deferred work: run at once, as the simulator runs a governor's work ------------------- */
struct irq_work {
	void (*func)(struct irq_work *);
};
static inline void init_irq_work(struct irq_work *w, void (*f)(struct irq_work *)) { w->func = f; }
static inline bool irq_work_queue(struct irq_work *w) { w->func(w); return true; }
static inline void irq_work_sync(struct irq_work *w) { (void)w; }

struct kthread_work {
	void (*func)(struct kthread_work *);
};
struct kthread_worker {
	int unused;
};
struct task_struct {
	int pid;
};
struct sched_attr {
	u32 size;
	u32 sched_policy;
	u64 sched_flags;
	s32 sched_nice;
	u32 sched_priority;
	u64 sched_runtime;
	u64 sched_deadline;
	u64 sched_period;
	u32 sched_util_min;
	u32 sched_util_max;
};
#define SCHED_NORMAL 0
#define SCHED_FIFO 1
#define SCHED_DEADLINE 6
#define SCHED_FLAG_SUGOV 0x10000000
#define MAX_RT_PRIO 100
static inline void kthread_init_work(struct kthread_work *w, void (*f)(struct kthread_work *)) { w->func = f; }
static inline void kthread_init_worker(struct kthread_worker *w) { (void)w; }
static inline bool kthread_queue_work(struct kthread_worker *wk, struct kthread_work *w)
{
	(void)wk;
	w->func(w);
	return true;
}
static inline void kthread_flush_worker(struct kthread_worker *w) { (void)w; }
static inline bool kthread_cancel_work_sync(struct kthread_work *w) { (void)w; return false; }
int kthread_worker_fn(void *worker);
struct task_struct *dvfslab_kthread(void);
#define kthread_create(fn, data, fmt, ...) ((void)(fn), (void)(data), dvfslab_kthread())
static inline int kthread_stop(struct task_struct *t) { (void)t; return 0; }
static inline void kthread_bind_mask(struct task_struct *t, const struct cpumask *m) { (void)t; (void)m; }
static inline int wake_up_process(struct task_struct *t) { (void)t; return 1; }
static inline int sched_setattr_nocheck(struct task_struct *t, const struct sched_attr *a)
{
	(void)t;
	(void)a;
	return 0;
}
static inline int sched_setscheduler_nocheck(struct task_struct *t, int policy, const void *param)
{
	(void)t;
	(void)policy;
	(void)param;
	return 0;
}

struct work_struct {
	void (*func)(struct work_struct *);
};
#define DECLARE_WORK(name, f) struct work_struct name = { .func = (f) }
#define INIT_WORK(w, f) ((w)->func = (f))
static inline bool schedule_work(struct work_struct *w) { (void)w; return true; }
static inline bool schedule_work_on(int cpu, struct work_struct *w)
{
	(void)cpu;
	w->func(w);
	return true;
}
static inline bool cancel_work_sync(struct work_struct *w) { (void)w; return false; }

/* ---- Time ---------------------------------------------------------------------------------- */
extern unsigned long long dvfslab_tick_nsec;
#define TICK_NSEC dvfslab_tick_nsec

/* ---- sysfs: a governor's tunables --------------------------------------------------------- */
struct attribute {
	const char *name;
	umode_t mode;
};
struct attribute_group {
	const char *name;
	struct attribute **attrs;
};
struct kobject;
struct kobj_type;
struct sysfs_ops {
	ssize_t (*show)(struct kobject *, struct attribute *, char *);
	ssize_t (*store)(struct kobject *, struct attribute *, const char *, size_t);
};
struct kobj_type {
	void (*release)(struct kobject *kobj);
	const struct sysfs_ops *sysfs_ops;
	struct attribute **default_attrs;
	const struct attribute_group **default_groups;
};
struct kobject {
	const char *name;
	const struct kobj_type *ktype;
};
int kobject_init_and_add(struct kobject *kobj, const struct kobj_type *ktype, struct kobject *parent,
			 const char *fmt, ...);
void kobject_put(struct kobject *kobj);
#define __ATTR(_name, _mode, _show, _store) \
	{ .attr = { .name = #_name, .mode = (_mode) }, .show = _show, .store = _store }
#define __ATTR_RW(_name) __ATTR(_name, 0644, _name##_show, _name##_store)
#define __ATTR_RO(_name) { .attr = { .name = #_name, .mode = 0444 }, .show = _name##_show }
#define __ATTR_WO(_name) { .attr = { .name = #_name, .mode = 0200 }, .store = _name##_store }
#define ATTRIBUTE_GROUPS(_name)                                                         \
	static const struct attribute_group _name##_group = { .attrs = _name##_attrs }; \
	static const struct attribute_group *_name##_groups[] = { &_name##_group, NULL }
#define PAGE_SIZE 4096

int kstrtouint(const char *s, unsigned int base, unsigned int *res);
int kstrtoint(const char *s, unsigned int base, int *res);
int kstrtoul(const char *s, unsigned int base, unsigned long *res);
int kstrtobool(const char *s, bool *res);
#define sysfs_emit(buf, fmt, ...) sprintf(buf, fmt, ##__VA_ARGS__)

/* ---- The cpufreq core (include/linux/cpufreq.h) ------------------------------------------- */
#define CPUFREQ_RELATION_L 0
#define CPUFREQ_RELATION_H 1
#define CPUFREQ_RELATION_C 2
#define CPUFREQ_RELATION_E BIT(2)
#define CPUFREQ_RELATION_LE (CPUFREQ_RELATION_L | CPUFREQ_RELATION_E)
#define CPUFREQ_RELATION_HE (CPUFREQ_RELATION_H | CPUFREQ_RELATION_E)
#define CPUFREQ_RELATION_CE (CPUFREQ_RELATION_C | CPUFREQ_RELATION_E)
#define CPUFREQ_NEED_UPDATE_LIMITS BIT(0)
#define CPUFREQ_CONST_LOOPS BIT(1)
#define CPUFREQ_IS_SLOW BIT(2)
#define CPUFREQ_HAVE_GOVERNOR_PER_POLICY BIT(3)
#define CPUFREQ_GOV_DYNAMIC_SWITCHING BIT(0)
#define CPUFREQ_GOV_STRICT_TARGET BIT(1)
#define CPUFREQ_ETERNAL (-1)
#define CPUFREQ_NAME_LEN 16
#define CPUFREQ_TABLE_END (~1u)
#define CPUFREQ_ENTRY_INVALID (~0u)

struct cpufreq_cpuinfo {
	unsigned int max_freq;
	unsigned int min_freq;
	unsigned int transition_latency;
};
struct cpufreq_frequency_table {
	unsigned int flags;
	unsigned int driver_data;
	unsigned int frequency;
};
struct cpufreq_governor;
struct cpufreq_policy {
	cpumask_var_t cpus;
	cpumask_var_t related_cpus;
	cpumask_var_t real_cpus;
	unsigned int shared_type;
	unsigned int cpu;
	struct cpufreq_cpuinfo cpuinfo;
	unsigned int min;
	unsigned int max;
	unsigned int cur;
	unsigned int suspend_freq;
	unsigned int policy;
	unsigned int last_policy;
	struct cpufreq_governor *governor;
	void *governor_data;
	char last_governor[CPUFREQ_NAME_LEN];
	struct cpufreq_frequency_table *freq_table;
	struct list_head policy_list;
	struct kobject kobj;
	struct rw_semaphore rwsem;
	bool fast_switch_possible;
	bool fast_switch_enabled;
	bool strict_target;
	bool efficiencies_available;
	unsigned int transition_delay_us;
	bool dvfs_possible_from_any_cpu;
	bool boost_enabled;
	unsigned int cached_target_freq;
	unsigned int cached_resolved_idx;
	bool transition_ongoing;
	spinlock_t transition_lock;
	void *driver_data;
};
struct cpufreq_governor {
	char name[CPUFREQ_NAME_LEN];
	int (*init)(struct cpufreq_policy *policy);
	void (*exit)(struct cpufreq_policy *policy);
	int (*start)(struct cpufreq_policy *policy);
	void (*stop)(struct cpufreq_policy *policy);
	void (*limits)(struct cpufreq_policy *policy);
	ssize_t (*show_setspeed)(struct cpufreq_policy *policy, char *buf);
	int (*store_setspeed)(struct cpufreq_policy *policy, unsigned int freq);
	struct list_head governor_list;
	struct module *owner;
	u8 flags;
};

/* The governor the file registers: what dvfslab runs. */
#define cpufreq_governor_init(__governor) \
	struct cpufreq_governor *dvfslab_registered_governor(void) { return &(__governor); }
#define cpufreq_governor_exit(__governor) extern int dvfslab_export_marker
static inline int cpufreq_register_governor(struct cpufreq_governor *g) { (void)g; return 0; }
static inline void cpufreq_unregister_governor(struct cpufreq_governor *g) { (void)g; }

void cpufreq_enable_fast_switch(struct cpufreq_policy *policy);
void cpufreq_disable_fast_switch(struct cpufreq_policy *policy);
unsigned int cpufreq_driver_fast_switch(struct cpufreq_policy *policy, unsigned int target_freq);
int __cpufreq_driver_target(struct cpufreq_policy *policy, unsigned int target_freq, unsigned int relation);
int cpufreq_driver_target(struct cpufreq_policy *policy, unsigned int target_freq, unsigned int relation);
unsigned int cpufreq_driver_resolve_freq(struct cpufreq_policy *policy, unsigned int target_freq);
bool cpufreq_driver_test_flags(unsigned int flags);
bool cpufreq_driver_has_adjust_perf(void);
void cpufreq_driver_adjust_perf(unsigned int cpu, unsigned long min_perf, unsigned long target_perf,
				unsigned long capacity);
unsigned int cpufreq_policy_transition_delay_us(struct cpufreq_policy *policy);
bool have_governor_per_policy(void);
struct kobject *get_governor_parent_kobj(struct cpufreq_policy *policy);
void cpufreq_policy_apply_limits(struct cpufreq_policy *policy);
bool cpufreq_this_cpu_can_update(struct cpufreq_policy *policy);
struct cpufreq_policy *cpufreq_cpu_get_raw(unsigned int cpu);
/* The table entry a relation picks within the policy's limits (freq_table.c), ascending table. */
int dvfslab_table_find_index_l(struct cpufreq_policy *policy, unsigned int target_freq, bool efficiencies);
int dvfslab_table_find_index_h(struct cpufreq_policy *policy, unsigned int target_freq, bool efficiencies);
int dvfslab_table_find_index_c(struct cpufreq_policy *policy, unsigned int target_freq, bool efficiencies);
/* The `efficiencies` argument came with CPUFREQ_RELATION_E in 5.16; callers before pass two. */
#if DVFSLAB_AT_LEAST(5, 16)
#define cpufreq_table_find_index_l(p, f, e) dvfslab_table_find_index_l((p), (f), (e))
#define cpufreq_table_find_index_h(p, f, e) dvfslab_table_find_index_h((p), (f), (e))
#define cpufreq_table_find_index_c(p, f, e) dvfslab_table_find_index_c((p), (f), (e))
#else
#define cpufreq_table_find_index_l(p, f) dvfslab_table_find_index_l((p), (f), false)
#define cpufreq_table_find_index_h(p, f) dvfslab_table_find_index_h((p), (f), false)
#define cpufreq_table_find_index_c(p, f) dvfslab_table_find_index_c((p), (f), false)
#endif
int dvfslab_table_target(struct cpufreq_policy *policy, unsigned int target_freq, unsigned int min_khz,
			 unsigned int max_khz, unsigned int relation);
/* (policy, target, relation) up to 5.19; (policy, target, min, max, relation) from 6.0. */
#define dvfslab_tt3(p, t, r) dvfslab_table_target((p), (t), (p)->min, (p)->max, (r))
#define dvfslab_tt5(p, t, lo, hi, r) dvfslab_table_target((p), (t), (lo), (hi), (r))
#define dvfslab_tt_pick(_1, _2, _3, _4, _5, name, ...) name
#define cpufreq_frequency_table_target(...) \
	dvfslab_tt_pick(__VA_ARGS__, dvfslab_tt5, _4, dvfslab_tt3, _2, _1)(__VA_ARGS__)
static inline bool policy_is_shared(struct cpufreq_policy *policy)
{
	return cpumask_weight(policy->cpus) > 1;
}

/* The governors' tunables in sysfs (drivers/cpufreq/cpufreq_governor_attr_set.c). */
struct gov_attr_set {
	struct kobject kobj;
	struct list_head policy_list;
	struct mutex update_lock;
	int usage_count;
};
struct governor_attr {
	struct attribute attr;
	ssize_t (*show)(struct gov_attr_set *attr_set, char *buf);
	ssize_t (*store)(struct gov_attr_set *attr_set, const char *buf, size_t count);
};
static inline struct gov_attr_set *to_gov_attr_set(struct kobject *kobj)
{
	return container_of(kobj, struct gov_attr_set, kobj);
}
extern const struct sysfs_ops governor_sysfs_ops;
void gov_attr_set_init(struct gov_attr_set *attr_set, struct list_head *list_node);
void gov_attr_set_get(struct gov_attr_set *attr_set, struct list_head *list_node);
unsigned int gov_attr_set_put(struct gov_attr_set *attr_set, struct list_head *list_node);

/* ---- The scheduler's hook and signals (kernel/sched/) ------------------------------------- */
#define SCHED_CPUFREQ_IOWAIT (1U << 0)
#define SCHED_CAPACITY_SHIFT 10
#define SCHED_CAPACITY_SCALE (1L << SCHED_CAPACITY_SHIFT)

struct update_util_data {
	void (*func)(struct update_util_data *data, u64 time, unsigned int flags);
};
void cpufreq_add_update_util_hook(int cpu, struct update_util_data *data,
				  void (*func)(struct update_util_data *data, u64 time, unsigned int flags));
void cpufreq_remove_update_util_hook(int cpu);

/* Before 5.14 the 1.25 headroom is in map_util_freq itself; from 5.14 schedutil adds it to
 * the utilisation first (map_util_perf) and map_util_freq only scales. */
static inline unsigned long map_util_freq(unsigned long util, unsigned long freq, unsigned long cap)
{
#if DVFSLAB_AT_LEAST(5, 14)
	return freq * util / cap;
#else
	return (freq + (freq >> 2)) * util / cap;
#endif
}
static inline unsigned long map_util_perf(unsigned long util) { return util + (util >> 2); }

struct rt_rq {
	int unused;
};
struct rq {
	int cpu;
	struct rt_rq rt;
};
extern struct rq dvfslab_runqueues[NR_CPUS];
#define cpu_rq(cpu) (&dvfslab_runqueues[(cpu)])
#define cpu_of(rq) ((rq)->cpu)

struct dvfslab_signals dvfslab_cpu_signals(int cpu);
extern bool dvfslab_freq_invariant;
extern unsigned int dvfslab_freq_ref_khz[NR_CPUS];

static inline bool arch_scale_freq_invariant(void) { return dvfslab_freq_invariant; }
static inline unsigned long arch_scale_cpu_capacity(int cpu)
{
	return (unsigned long)dvfslab_cpu_signals(cpu).cap_orig;
}
static inline unsigned long capacity_orig_of(int cpu) { return arch_scale_cpu_capacity(cpu); }
static inline unsigned int arch_scale_freq_ref(int cpu) { return dvfslab_freq_ref_khz[cpu]; }
static inline unsigned long tick_nohz_get_idle_calls_cpu(int cpu)
{
	return (unsigned long)dvfslab_cpu_signals(cpu).idle_calls;
}

/* The simulated scheduler has no RT, deadline or IRQ utilisation signals: they read 0. */
static inline unsigned long cpu_bw_dl(struct rq *rq) { (void)rq; return 0; }
static inline unsigned long cpu_util_dl(struct rq *rq) { (void)rq; return 0; }
static inline unsigned long cpu_util_rt(struct rq *rq) { (void)rq; return 0; }
static inline unsigned long cpu_util_irq(struct rq *rq) { (void)rq; return 0; }
static inline unsigned long scale_irq_capacity(unsigned long util, unsigned long irq, unsigned long max)
{
	util *= (max - irq);
	util /= max;
	return util;
}
static inline bool rt_rq_is_runnable(struct rt_rq *rt_rq)
{
	return dvfslab_cpu_signals(container_of(rt_rq, struct rq, rt)->cpu).rt_runnable;
}

/* uclamp: the run-queue's max-aggregated clamps, once some task asked for one. */
enum uclamp_id { UCLAMP_MIN = 0, UCLAMP_MAX, UCLAMP_CNT };
static inline unsigned long uclamp_rq_get(struct rq *rq, enum uclamp_id clamp_id)
{
	struct dvfslab_signals s = dvfslab_cpu_signals(rq->cpu);
	if (clamp_id == UCLAMP_MIN)
		return s.uclamp_used ? (unsigned long)s.uclamp_min : 0;
	return s.uclamp_used ? (unsigned long)s.uclamp_max : SCHED_CAPACITY_SCALE;
}
#define uclamp_is_used() dvfslab_uclamp_used()
bool dvfslab_uclamp_used(void);

/* uclamp_rq_util_with: @util within the run-queue's clamps; an inverted pair gives the floor. */
static inline unsigned long uclamp_rq_util_with(struct rq *rq, unsigned long util, struct task_struct *p)
{
	unsigned long lo, hi;

	(void)p;
	if (!uclamp_is_used())
		return util;
	lo = uclamp_rq_get(rq, UCLAMP_MIN);
	hi = uclamp_rq_get(rq, UCLAMP_MAX);
	if (lo >= hi)
		return lo;
	return clamp(util, lo, hi);
}

/*
 * cpu_util_cfs: the root cfs_rq's util_avg, at least its util_est. Up to 5.19 it takes the rq
 * and leaves the capacity cap to the caller; from 6.0 it takes the CPU and caps at its
 * capacity. The argument's type tells which the file calls.
 */
static inline unsigned long dvfslab_cfs_util(int cpu)
{
	struct dvfslab_signals s = dvfslab_cpu_signals(cpu);
	return (unsigned long)(s.util_avg > s.util_est ? s.util_avg : s.util_est);
}
static inline unsigned long dvfslab_cpu_util_cfs_rq(struct rq *rq) { return dvfslab_cfs_util(rq->cpu); }
static inline unsigned long dvfslab_cpu_util_cfs_cpu(int cpu)
{
	return min(dvfslab_cfs_util(cpu), capacity_orig_of(cpu));
}
#define cpu_util_cfs(x) \
	_Generic((x), struct rq *: dvfslab_cpu_util_cfs_rq, default: dvfslab_cpu_util_cfs_cpu)(x)

/* cpu_util_cfs_boost (6.5+): the runnable average counts as well, capped at the capacity. */
static inline unsigned long cpu_util_cfs_boost(int cpu)
{
	struct dvfslab_signals s = dvfslab_cpu_signals(cpu);
	unsigned long util = (unsigned long)max(s.util_avg, s.runnable_avg);
	util = max(util, (unsigned long)s.util_est);
	return min(util, (unsigned long)s.cap_orig);
}

/* uclamp_rq_is_capped: the run-queue's util reached a uclamp_max below the full scale. */
static inline bool uclamp_rq_is_capped(struct rq *rq)
{
	unsigned long hi;

	if (!uclamp_is_used())
		return false;
	hi = uclamp_rq_get(rq, UCLAMP_MAX);
	return hi != SCHED_CAPACITY_SCALE && cpu_util_cfs(rq->cpu) + cpu_util_rt(rq) >= hi;
}

/* sched_ext (6.12): no BPF scheduler is loaded. */
static inline unsigned long scx_cpuperf_target(int cpu) { (void)cpu; return 0; }
static inline bool scx_switched_all(void) { return false; }

/*
 * effective_cpu_util: what schedutil makes of a CPU's CFS utilisation with the other classes
 * and uclamp (kernel/sched/core.c, 5.11 - 6.7; named schedutil_cpu_util and kept in the
 * governor file up to 5.10, which then needs only the pieces above). 5.11 - 5.19 pass the
 * capacity; 6.0 - 6.7 read it; 6.8 on return the floor and the ceiling beside the util.
 */
enum cpu_util_type { FREQUENCY_UTIL, ENERGY_UTIL };
#define schedutil_type cpu_util_type

static inline unsigned long dvfslab_effective_util(int cpu, unsigned long util_cfs, unsigned long cap,
						   enum cpu_util_type type)
{
	struct rq *rq = cpu_rq(cpu);
	unsigned long util, irq;

	if (!uclamp_is_used() && type == FREQUENCY_UTIL && rt_rq_is_runnable(&rq->rt))
		return cap;
	irq = cpu_util_irq(rq);
	if (irq >= cap)
		return cap;
	util = util_cfs + cpu_util_rt(rq);
	if (type == FREQUENCY_UTIL)
		util = uclamp_rq_util_with(rq, util, NULL);
	if (util + cpu_util_dl(rq) >= cap)
		return cap;
	if (type == ENERGY_UTIL)
		util += cpu_util_dl(rq);
	util = scale_irq_capacity(util, irq, cap) + irq;
	if (type == FREQUENCY_UTIL)
		util += cpu_bw_dl(rq);
	return min(cap, util);
}

#if DVFSLAB_AT_LEAST(6, 8)
/* 6.8+: the floor (deadline bandwidth, uclamp_min, a runnable RT task without uclamp) and the
 * ceiling (uclamp_max, at most the capacity) go back to the caller, who applies them. */
static inline unsigned long effective_cpu_util(int cpu, unsigned long util_cfs, unsigned long *min,
					       unsigned long *max)
{
	struct rq *rq = cpu_rq(cpu);
	unsigned long cap = arch_scale_cpu_capacity(cpu);
	unsigned long util, irq = cpu_util_irq(rq);

	if (irq >= cap) {
		if (min)
			*min = cap;
		if (max)
			*max = cap;
		return cap;
	}
	if (min) {
		*min = max(irq + cpu_bw_dl(rq), uclamp_rq_get(rq, UCLAMP_MIN));
		if (!uclamp_is_used() && rt_rq_is_runnable(&rq->rt))
			*min = max(*min, cap);
	}
	util = util_cfs + cpu_util_rt(rq) + cpu_util_dl(rq);
	if (max)
		*max = min(cap, uclamp_rq_get(rq, UCLAMP_MAX));
	if (util >= cap)
		return cap;
	util = scale_irq_capacity(util, irq, cap) + irq;
	return min(cap, util);
}
#else
#define dvfslab_ecu4(cpu, util, type, p) \
	dvfslab_effective_util((cpu), (util), arch_scale_cpu_capacity(cpu), (type))
#define dvfslab_ecu5(cpu, util, cap, type, p) dvfslab_effective_util((cpu), (util), (cap), (type))
#define dvfslab_ecu_pick(_1, _2, _3, _4, _5, name, ...) name
#define effective_cpu_util(...) dvfslab_ecu_pick(__VA_ARGS__, dvfslab_ecu5, dvfslab_ecu4, _3, _2, _1)(__VA_ARGS__)
#endif

/* ---- Trace points: no trace is written ----------------------------------------------------- */
static inline bool trace_cpu_frequency_enabled(void) { return false; }
static inline void trace_cpu_frequency(unsigned int freq, unsigned int cpu) { (void)freq; (void)cpu; }

/* ---- Energy-aware scheduling's rebuild hook (CONFIG_ENERGY_MODEL is off) ------------------- */
static inline void rebuild_sched_domains_energy(void) { }

#endif /* DVFSLAB_KERNEL_H */
