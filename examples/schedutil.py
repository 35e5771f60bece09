"""schedutil and ondemand written as Python governors, from the inputs `dvfslab.Governor` sees:
each decides as the built-in one does, decision for decision, at kernel 6.8 and later (the
default, 6.18). Run it to compare them on pixel6:

    python examples/schedutil.py

`Schedutil` declares itself a schedutil variant (`enables`), so the run keeps energy-aware
placement, as Linux keeps it under a patched schedutil. Its own rate limit is counted here, as
kernel/sched/cpufreq_schedutil.c counts it: the class's `rate_limit_us` stays 0 so `update` sees
every scheduler callback, those within the rate limit included (an I/O wake-up boosts there).
"""

from __future__ import annotations

import dvfslab

CAPACITY_SCALE = 1024
IOWAIT_BOOST_MIN = CAPACITY_SCALE // 8


def _kernel(policy: dvfslab.Policy) -> tuple[int, int]:
    major, minor = policy.kernel.split(".")[:2]
    return int(major), int(minor)


def closest(table: list[int], khz: int) -> int:
    """CPUFREQ_RELATION_C: the closest entry, a tie going to the lower."""
    lo = max((f for f in table if f <= khz), default=table[0])
    hi = min((f for f in table if f >= khz), default=table[-1])
    return lo if abs(khz - lo) <= abs(hi - khz) else hi


class Schedutil(dvfslab.Governor):
    """schedutil as of Linux 6.8+: perf = 1.25 x max(util_avg, util_est, runnable_avg), capped
    by the capacity and clamped by uclamp, an I/O wake-up boost that doubles from 1024/8, the
    busy hold of a single-CPU policy, a rate limit counted from the last change."""

    trigger = "scheduler"
    enables = ("eas", "fast_switch")
    rate_limit = -1
    """schedutil's rate_limit_us (us); -1 = cpufreq's default transition delay."""

    def start(self, policy: dvfslab.Policy) -> None:
        if _kernel(policy) < (6, 8):
            raise ValueError(f"this copy of schedutil follows kernels 6.8+, not {policy.kernel}")
        us = policy.transition_delay_us if self.rate_limit < 0 else self.rate_limit
        self.delay_ns = int(us) * 1000
        self.last_freq_update_ns: int | None = None
        self.next_freq = 0
        self.cached_raw = 0
        self.need_freq_update = True
        n = len(policy.cpus)
        self.boost = [0] * n
        self.boost_pending = [False] * n
        self.last_update = [0] * n
        self.saved_idle_calls = [0] * n

    def update(self, policy: dvfslab.Policy) -> int | None:
        if policy.cpu is None or policy.cpu not in policy.cpus:
            return None
        now = policy.now_ns
        i = policy.cpus.index(policy.cpu)
        self._iowait_boost(i, now, policy.iowait, policy.tick_ns)
        self.last_update[i] = now
        if not policy.can_update or not self._should_update(now):
            return None
        shared = len(policy.cpus) > 1
        perf, own_util = 0, 0
        for j in range(len(policy.cpus)) if shared else [i]:
            cap = policy.capacity[j]
            boost = self._iowait_apply(j, now, cap, policy.tick_ns)
            util = max(policy.util_avg[j], policy.util_est[j], policy.runnable_avg[j])
            clamp = policy.uclamp[j]
            # A runnable RT task asks for the top, unless uclamp is in use.
            util = cap if policy.rt_runnable[j] and clamp is None else min(util, cap)
            actual = max(util, boost)
            p = min(actual + (actual >> 2), cap)  # sugov_effective_cpu_perf
            if clamp is not None:
                p = max(min(p, min(clamp[1], cap)), clamp[0])
            if p >= perf:
                perf = p
        cap = policy.capacity[i]
        own_util = max(policy.util_avg[i], policy.util_est[i])
        reference = policy.cpuinfo_max_khz if policy.invariant else policy.cur_khz * 5 // 4
        raw = reference * perf // cap
        saved = self.cached_raw
        if raw == self.cached_raw and not self.need_freq_update and self.next_freq != 0:
            freq = self.next_freq
        else:
            self.cached_raw = raw
            freq = policy.resolve_khz(raw)  # a table entry, or the kHz on intel_cpufreq
        held = False
        if not shared:
            # No idle entry since the last evaluation: keep the frequency (sugov_hold_freq),
            # unless uclamp_max holds the run-queue down.
            busy = policy.idle_calls[i] == self.saved_idle_calls[i]
            self.saved_idle_calls[i] = policy.idle_calls[i]
            clamp = policy.uclamp[i]
            capped = clamp is not None and clamp[1] < CAPACITY_SCALE and own_util >= clamp[1]
            if busy and not capped and freq < self.next_freq and not self.need_freq_update:
                freq, held = self.next_freq, True
                self.cached_raw = saved
        if self.need_freq_update:
            self.need_freq_update = False
        elif self.next_freq == freq:
            return None
        self.next_freq = freq
        self.last_freq_update_ns = now
        return freq if held else max(raw, 1)

    def _should_update(self, now: int) -> bool:
        if self.need_freq_update or self.last_freq_update_ns is None:
            return True
        return now - self.last_freq_update_ns >= self.delay_ns

    def _iowait_boost(self, i: int, now: int, io: bool, tick_ns: int) -> None:
        """sugov_iowait_boost: at every callback, before the rate limit."""
        if self.boost[i] and now - self.last_update[i] > tick_ns:
            self.boost[i] = IOWAIT_BOOST_MIN if io else 0
            self.boost_pending[i] = io
            return
        if not io or self.boost_pending[i]:
            return
        self.boost_pending[i] = True
        self.boost[i] = (
            min(self.boost[i] * 2, CAPACITY_SCALE) if self.boost[i] else IOWAIT_BOOST_MIN
        )

    def _iowait_apply(self, j: int, now: int, cap: int, tick_ns: int) -> int:
        """sugov_iowait_apply: halve without a new I/O wake-up, gone below the floor."""
        if not self.boost[j]:
            return 0
        if now - self.last_update[j] > tick_ns:
            self.boost[j], self.boost_pending[j] = 0, False
            return 0
        if not self.boost_pending[j]:
            self.boost[j] >>= 1
            if self.boost[j] < IOWAIT_BOOST_MIN:
                self.boost[j] = 0
                return 0
        self.boost_pending[j] = False
        return (self.boost[j] * cap) >> 10


class Ondemand(dvfslab.Governor):
    """ondemand as of Linux 4.15+, with its defaults on a CPU that counts I/O wait as idle
    (every non-Intel one): the busiest CPU's load since the last sample; above up_threshold
    the maximum, else in proportion between the hardware's limits (closest entry)."""

    trigger = "scheduler"
    up_threshold = 95
    sampling_down_factor = 1

    def start(self, policy: dvfslab.Policy) -> None:
        # The default sampling rate: two ticks, or the transition delay if longer.
        self.rate_us = max(2 * policy.tick_ns // 1000, policy.transition_delay_us)
        self.rate_mult = 1
        self.last_sample_ns = 0
        self.delay_ns = 0
        now_us = policy.now_ns // 1000
        self.prev_update_us = [now_us] * len(policy.cpus)
        self.prev_idle_us = [self._idle_us(policy, j) for j in range(len(policy.cpus))]
        self.prev_load = [0] * len(policy.cpus)

    @staticmethod
    def _idle_us(policy: dvfslab.Policy, j: int) -> int:
        return (policy.now_ns - policy.busy_ns[j]) // 1000

    def update(self, policy: dvfslab.Policy) -> int | None:
        # Samples are taken in scheduler callbacks, once the delay asked for has passed.
        if policy.cpu is None or not policy.can_update:
            return None
        if max(policy.now_ns - self.last_sample_ns, 0) < self.delay_ns:
            return None
        self.last_sample_ns = policy.now_ns
        load = self._load(policy)
        cur, top = policy.cur_khz, policy.max_khz
        target: int | None
        if load > self.up_threshold:
            if cur < top:
                self.rate_mult = self.sampling_down_factor
            target = None if cur == top else top
        else:
            table = policy.table_khz
            f = table[0] + load * (policy.cpuinfo_max_khz - table[0]) // 100
            self.rate_mult = 1
            target = closest(table, min(max(f, policy.min_khz), policy.max_khz))
        self.delay_ns = self.rate_us * self.rate_mult * 1000
        return target

    def _load(self, policy: dvfslab.Policy) -> int:
        """dbs_update: the busiest CPU's busy share (%) since its last sample."""
        sampling_us = self.rate_us * self.rate_mult
        now_us = policy.now_ns // 1000
        top = 0
        for j in range(len(policy.cpus)):
            idle_now = self._idle_us(policy, j)
            elapsed = now_us - self.prev_update_us[j]
            idle = max(idle_now - self.prev_idle_us[j], 0)
            self.prev_update_us[j], self.prev_idle_us[j] = now_us, idle_now
            if elapsed == 0:
                load = self.prev_load[j]
            elif idle > 2 * sampling_us and self.prev_load[j]:
                load, self.prev_load[j] = self.prev_load[j], 0
            else:
                load = 100 * (elapsed - idle) // elapsed if elapsed > idle else 0
                self.prev_load[j] = load
            top = max(top, load)
        return top


if __name__ == "__main__":
    for python_gov, builtin in ((Schedutil(), "schedutil"), (Ondemand(), "ondemand")):
        for name, gov in ((type(python_gov).__name__, python_gov), (builtin, builtin)):
            r = dvfslab.simulate("pixel6", gov, "uibench:uclamp_min=512", duration_s=2, seed=1)
            print(f"{name:10} energy {r.energy_j:.6f} J  {r.metric}")
