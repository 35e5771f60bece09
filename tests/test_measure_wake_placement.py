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
