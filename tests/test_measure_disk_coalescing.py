"""scripts/measure-disk-coalescing's reading of a trace: which requests in flight together end
in one completion."""

from __future__ import annotations

from script_helpers import load_script


def issue(cpu: int, t: float, rwbs: str, size: int, sector: int, count: int) -> str:
    return (
        f"dbench-7 [{cpu:03d}] ..... {t:.6f}: block_rq_issue: 254,0 {rwbs} {size} () "
        f"{sector} + {count} be,0,4 [dbench]"
    )


def complete(t: float, rwbs: str, sector: int, count: int) -> str:
    return (
        f"<idle>-0 [001] ..s1. {t:.6f}: block_rq_complete: 254,0 {rwbs} () {sector} + {count} "
        "be,0,4 [0]"
    )


def test_pairs_in_flight_together_and_whether_one_softirq_ended_them() -> None:
    script = load_script("measure-disk-coalescing")
    trace = "\n".join(
        [
            # Alone: 30 µs.
            issue(0, 1.000000, "WS", 4096, 100, 8),
            complete(1.000030, "WS", 100, 8),
            # A pair ended together: the later one (a flush, whose completion names another
            # sector) 40 µs after its issue, the earlier one 2 µs before it.
            issue(0, 1.001000, "WSM", 4096, 200, 8),
            issue(1, 1.001010, "FF", 0, 0, 0),
            complete(1.001048, "WSM", 200, 8),
            complete(1.001050, "FF", 18446744073709551615, 0),
            # A pair ended apart: 20 µs between the completions.
            issue(0, 1.002000, "WS", 4096, 300, 8),
            issue(1, 1.002005, "WS", 4096, 400, 8),
            complete(1.002030, "WS", 300, 8),
            complete(1.002050, "WS", 400, 8),
        ]
    )
    done = script.requests(trace)
    assert len(done) == 5
    together, later, alone = script.pairs(done)
    assert together == [True, False]
    assert [round(x) for x in later] == [40, 45]
    assert [round(x) for x in alone] == [30]
