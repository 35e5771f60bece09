"""scripts/measure-wake-placement's reading of a trace: where a wake-up whose previous vCPU
is busy with another task went."""

from __future__ import annotations

from script_helpers import load_script
from trace_data import switch, wakeup, waking

CLIENT, SERVER, DISTURBER = ("pair-client", 10), ("pair-server", 20), ("disturber", 30)


def test_counts_only_wake_ups_whose_previous_vcpu_runs_another_task() -> None:
    busy_previous = load_script("measure-wake-placement").busy_previous
    trace = "".join(
        [
            switch(0, "1.000000", ("swapper/0", 0, "R"), CLIENT),
            switch(1, "1.000000", ("swapper/1", 0, "R"), DISTURBER),
            # The server slept on CPU 1, which runs the disturber: kept there.
            waking(0, "1.100000", CLIENT, *SERVER, 1),
            wakeup(0, "1.100001", CLIENT, SERVER[1], 1),
            # Again, now moved to the waker's CPU.
            waking(0, "1.200000", CLIENT, *SERVER, 1),
            wakeup(0, "1.200001", CLIENT, SERVER[1], 0),
            # CPU 1 idle again: not counted.
            switch(1, "1.300000", (*DISTURBER, "S"), ("swapper/1", 0)),
            waking(0, "1.400000", CLIENT, *SERVER, 1),
            wakeup(0, "1.400001", CLIENT, SERVER[1], 1),
            # A wake-up on the previous CPU itself: not counted either.
            switch(1, "1.500000", ("swapper/1", 0, "R"), DISTURBER),
            waking(1, "1.600000", DISTURBER, *CLIENT, 1),
            wakeup(1, "1.600001", DISTURBER, CLIENT[1], 1),
        ]
    )
    assert busy_previous(trace) == {"previous": 1, "waker": 1}


def test_shares_give_each_tasks_part_of_each_vcpu() -> None:
    shares = load_script("measure-wake-placement").shares
    # Over the 1 s between the first and the last switch: CPU 0 runs the client for 0.25 s and
    # idles 0.75 s; CPU 1 runs the disturber 0.5 s, the server 0.49 s and idles 0.01 s (under 2%:
    # left out).
    trace = "".join(
        [
            switch(0, "1.000000", ("swapper/0", 0, "R"), CLIENT),
            switch(1, "1.000000", ("swapper/1", 0, "R"), DISTURBER),
            switch(0, "1.250000", (*CLIENT, "S"), ("swapper/0", 0)),
            switch(1, "1.500000", (*DISTURBER, "S"), SERVER),
            switch(1, "1.990000", (*SERVER, "S"), ("swapper/1", 0)),
            switch(1, "2.000000", ("swapper/1", 0, "R"), DISTURBER),
        ]
    )
    assert shares(trace) == ("disturber@1 50, pair-client@0 25, pair-server@1 49, swapper/0@0 75")
