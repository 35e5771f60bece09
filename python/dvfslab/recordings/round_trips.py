"""A request/response benchmark's operations counted in its trace: its round trips.

A benchmark's own report gives its rate untraced; tracing slows it (tbench and netperf's
TCP_RR on the recording machine did 11-16% fewer operations in their traced windows than their
untraced rates say), so a per-operation statistic over a traced window divided by the untraced
count is low by as much. Where one operation is one synchronous round trip between a requester
and its responder (tbench's client and its tbench_srv, netperf's TCP_RR and netserver), the
window's own count is in the trace, and the same count taken from the model's trace makes both
sides count alike.

One request in flight per pair makes the two sides take turns: the requester runs until its
request is sent and it waits, the responder runs until the response is sent and it waits, then
the requester again. Each run ends with a switch-out of its task (it sleeps, or is preempted by
the side it has just woken, as EEVDF's wake-up preemption does when the pair shares a CPU), so
a round trip is the responder's first switch-out after one of its requester's. Extra switch-
outs within a turn (a tick, another task waking) add no turn. Switch-outs are used rather than
switch-ins, which a KVM guest's vCPU can lose when it leaves idle (docs/recording.md). The count
is low when a pair runs on two CPUs at once without either waiting (not in these benchmarks: a
wake-up across vCPUs takes tens of µs), and high by one for a requester preempted between a
response and its next request while its responder is still runnable.
"""

from __future__ import annotations

import re
from collections import Counter

from dvfslab.recordings.behaviour import pid_roles
from dvfslab.traces.read import Trace


def round_trips(
    trace: Trace,
    roles: dict[str, str],
    requester: str,
    responder: str,
    window: tuple[float, float],
) -> int:
    """The round trips between the tasks of role `requester` and those of role `responder`
    that complete within `window` (trace seconds), summed over the pairs."""
    pid_role = pid_roles(trace, {role: re.compile(p) for role, p in roles.items()})
    pairs = _pairs(trace, pid_role, requester, responder)
    side: dict[int, tuple[int, bool]] = {}  # pid -> (its pair's requester, is the responder)
    for req, resp in pairs.items():
        side[req] = (req, False)
        side[resp] = (req, True)
    start, end = window
    last: dict[int, bool] = {}  # pair -> whether its latest switch-out was the responder's
    count = 0
    sw = trace.switches
    for t, prev in zip(sw["time_s"], sw["prev_pid"]):
        entry = side.get(int(prev))
        if entry is None:
            continue
        pair, is_responder = entry
        if is_responder and last.get(pair) is False and start <= float(t) <= end:
            count += 1
        last[pair] = is_responder
    return count


def _pairs(
    trace: Trace, pid_role: dict[int, str], requester: str, responder: str
) -> dict[int, int]:
    """Each requester's responder: the one it wakes, or is woken by, most often (sched_waking's
    waker is the task current on the waker's CPU, the sender in a loopback softirq). Each task
    is in one pair at most."""
    together: Counter[tuple[int, int]] = Counter()
    wg = trace.wakings
    for pid, waker in zip(wg["pid"], wg["waker_pid"]):
        a, b = int(pid), int(waker)
        ra, rb = pid_role.get(a), pid_role.get(b)
        if ra == requester and rb == responder:
            together[(a, b)] += 1
        elif ra == responder and rb == requester:
            together[(b, a)] += 1
    pairs: dict[int, int] = {}
    taken: set[int] = set()
    for (req, resp), _ in sorted(together.items(), key=lambda kv: (-kv[1], kv[0])):
        if req not in pairs and resp not in taken:
            pairs[req] = resp
            taken.add(resp)
    return pairs
