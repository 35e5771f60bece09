"""A governor written in Python (docs/research.md): one OPP up when a CPU of the policy was busy
over `up` of the last period, one down under half of it.

    dvfslab compare -p pixel6 -g schedutil -g python:examples/stepper.py:Stepper -w hackbench
    dvfslab run -p pixel6 -g python:examples/stepper.py:Stepper,up=0.6 -w periodic:threads=4
"""

import dvfslab


class Stepper(dvfslab.Governor):
    """One OPP up when a CPU was busy over 80% of the last period, one down under 40%."""

    trigger = "sampling"  # every sampling_ms, as ondemand; "scheduler": where schedutil runs
    sampling_ms = 10
    up = 0.8  # a tunable: any class attribute

    def update(self, policy):
        busy = max(b / (b + i) if b + i else 0 for b, i in zip(policy.busy_s, policy.idle_s))
        i = policy.table_khz.index(policy.cur_khz)
        if busy > self.up:
            i = min(i + 1, len(policy.table_khz) - 1)
        elif busy < self.up / 2:
            i = max(i - 1, 0)
        return policy.table_khz[i]  # kHz; None leaves the frequency as it is
