"""scripts/wakeup-lag: the kernel type information it reads a structure's layout from, and what
it makes of the vruntimes its BPF probe records (the probe itself needs root and a kernel)."""

from __future__ import annotations

import struct

import pytest

from script_helpers import load_script


def btf_blob() -> bytes:
    """A small BTF: task_struct { ...32 bytes; se_t se; } with se_t a typedef of sched_entity
    { u64 a; union { u64 vlag; u64 vprot; }; u64 vruntime; }."""
    names = b"\0u64\0sched_entity\0a\0vlag\0vprot\0vruntime\0se_t\0task_struct\0se\0"
    words = ("u64", "sched_entity", "a", "vlag", "vprot", "vruntime", "se_t", "task_struct", "se")
    off = {w: names.index(w.encode() + b"\0") for w in words}

    def t(name: int, kind: int, vlen: int, size: int) -> bytes:
        return struct.pack("<III", name, (kind << 24) | vlen, size)

    def member(name: int, type_id: int, bits: int) -> bytes:
        return struct.pack("<III", name, type_id, bits)

    types = t(off["u64"], 1, 0, 8) + struct.pack("<I", 64)  # 1: u64
    types += t(0, 5, 2, 8) + member(off["vlag"], 1, 0) + member(off["vprot"], 1, 0)  # 2: union
    types += t(off["sched_entity"], 4, 3, 24)  # 3
    types += member(off["a"], 1, 0) + member(0, 2, 64) + member(off["vruntime"], 1, 128)
    types += t(off["se_t"], 8, 0, 3)  # 4: typedef
    types += t(off["task_struct"], 4, 1, 56) + member(off["se"], 4, 256)  # 5
    header = struct.pack("<HBBIIIII", 0xEB9F, 1, 0, 24, 0, len(types), len(types), len(names))
    return header + types + names


def test_btf_offsets_go_through_typedefs_and_anonymous_unions() -> None:
    btf = load_script("wakeup-lag").Btf(btf_blob())
    assert btf.offset("task_struct", "se") == 32
    assert btf.offset("sched_entity", "vprot") == 8
    assert btf.offset("sched_entity", "vruntime") == 16
    assert btf.offset("task_struct", "se.vruntime") == 48
    with pytest.raises(KeyError):
        btf.offset("sched_entity", "deadline")
    with pytest.raises(ValueError, match="not BTF"):
        load_script("wakeup-lag").Btf(b"\0" * 24)


def test_placements_are_read_left_of_the_running_task_across_the_counters_wrap() -> None:
    script = load_script("wakeup-lag")
    assert script.left_of_running_us(1_000_000, 2_600_000) == 1600.0
    assert script.left_of_running_us(2**64 - 500_000, 1_100_000) == 1600.0
    assert script.left_of_running_us(3_000_000, 2_000_000) == -1000.0
    rows = [
        (1, 24, 7, 1_000_000, 2_600_000, 1, 1),
        (2, 24, 7, 2_000_000, 2_500_000, 1, 1),
        (3, 24, 0, 5, 2**63, 1, 1),  # beside the idle task: left out
        (4, 24, 8, 5, 2**62, 1, 0),  # made on another CPU, beside its task: left out
        (5, 14, 9, 3_000_000, 2_000_000, 0, 0),
    ]
    assert script.summary(rows) == [
        "pid 14: 1 wake-ups beside a running task, left of it at 0; first -1000.0 µs, "
        "median -1000.0, min -1000.0, max -1000.0",
        "pid 24: 2 wake-ups beside a running task, left of it at 2; first 1600.0 µs, "
        "median 1050.0, min 500.0, max 1600.0",
    ]
