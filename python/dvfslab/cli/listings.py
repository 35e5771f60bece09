"""`dvfslab platforms`, `governors` and `workloads`: what the simulator has, from its registries."""

from __future__ import annotations

import argparse
import json
from collections.abc import Sequence
from typing import Any

from dvfslab import _core
from dvfslab.cli.output import json_value, mhz, print_json
from dvfslab.cli.parser import add_json_flag, command
from dvfslab.platforms import describe_platform, list_platforms
from dvfslab.report.printing import print_fields, print_table


def register(commands: Any) -> None:
    _add_platforms(commands)
    _add_governors(commands)
    _add_workloads(commands)


def _add_platforms(commands: Any) -> None:
    p = command(
        commands,
        "platforms",
        "List the platform presets, or describe one.",
        cmd_platforms,
        "  dvfslab platforms                       the shipped presets\n"
        "  dvfslab platforms pixel6                one preset: topology and policies\n"
        "  dvfslab platforms ./my-box.json --json  a preset file, as the simulator reads it",
    )
    p.add_argument(
        "name", nargs="?", metavar="NAME", help="a preset id or a preset file (.json) to describe"
    )
    add_json_flag(p)


def cmd_platforms(args: argparse.Namespace) -> int:
    if args.name is not None:
        info = describe_platform(args.name)
        if args.json:
            print_json(info)
        else:
            _show_platform(info)
        return 0
    platforms = list_platforms()
    if args.json:
        print_json(platforms)
    else:
        print_table(
            ["id", "cpus", "description"],
            [(p["id"], p["cpus"], p["description"]) for p in platforms],
            right={"cpus"},
        )
    return 0


def _add_governors(commands: Any) -> None:
    p = command(
        commands,
        "governors",
        "List the governors and their tunables.",
        cmd_governors,
        "  dvfslab governors\n"
        "  dvfslab governors --json\n"
        "  dvfslab run -p pixel6 -g userspace:scaling_setspeed=1803000 -w cpu-bound",
    )
    add_json_flag(p)


def cmd_governors(args: argparse.Namespace) -> int:
    governors = json.loads(_core.governors())
    settings = json.loads(_core.system_tunables())
    if args.json:
        print_json({"governors": governors, "system_settings": settings})
        return 0
    for governor in governors:
        print(f"{governor['name']}: {governor['description']}")
        _show_parameters("tunable", governor["tunables"])
        print()
    print("every governor spec also accepts these system settings:")
    _show_parameters("setting", settings)
    return 0


def _add_workloads(commands: Any) -> None:
    p = command(
        commands,
        "workloads",
        "List the workloads, their metric and knobs.",
        cmd_workloads,
        "  dvfslab workloads\n"
        "  dvfslab workloads --json\n"
        "  dvfslab run -p pixel6 -g performance "
        "-w periodic:threads=4,run_us=2000,period_us=10000",
    )
    add_json_flag(p)


def cmd_workloads(args: argparse.Namespace) -> int:
    workloads = json.loads(_core.workloads())
    common = json.loads(_core.common_workload_knobs())
    if args.json:
        print_json({"workloads": workloads, "common_knobs": common})
        return 0
    for workload in workloads:
        print(f"{workload['name']}: {workload['description']}")
        print(
            f"  metric: {workload['metric']} [{workload['unit']}], {workload['better']} is better"
        )
        _show_parameters("knob", workload["knobs"])
        print()
    print("every workload spec also accepts these knobs:")
    _show_parameters("knob", common)
    return 0


def _show_platform(info: dict[str, Any]) -> None:
    print(f"{info['id']}: {info['name']}")
    print(info["description"])
    print()
    print_fields(
        [
            (key, value)
            for key, value in info.items()
            if key not in ("id", "name", "description") and not isinstance(value, (dict, list))
        ]
    )
    print()
    print_table(
        ["cpus", "cluster", "capacity", "min MHz", "base MHz", "max MHz"],
        [
            (
                _cpu_ranges(p["cpus"]),
                p.get("cluster", "-"),
                p.get("capacity", "-"),
                mhz(p["min_khz"]),
                mhz(p["base_khz"]),
                mhz(p["max_khz"]),
            )
            for p in info["policies"]
        ],
        right={"capacity", "min MHz", "base MHz", "max MHz"},
        title="cpufreq policies",
    )
    print()
    print_table(
        [
            "cluster",
            "state",
            "exit us",
            "wake us",
            "wake us, package awake",
            "target residency us",
            "power",
        ],
        [
            (
                cluster["id"],
                state["name"],
                json_value(state["exit_latency_us"]),
                json_value(state.get("wake_latency_us") or state["exit_latency_us"]),
                json_value(
                    state["exit_latency_pkg_awake_us"]
                    or state.get("wake_latency_us")
                    or state["exit_latency_us"]
                ),
                json_value(state["target_residency_us"]),
                state["power"],
            )
            for cluster in info["clusters"]
            for state in cluster["idle_states"]
        ],
        right={"exit us", "wake us", "wake us, package awake", "target residency us"},
        title="idle states (menu chooses by the table's exit; a core pays the wake cost, the "
        "smaller one while its package stays awake)",
    )
    _show_uncertain(info["uncertain"])


SOURCE_WIDTH = 70
"""Characters of a declared constant's source shown in the text view (`--json` has it all)."""


def _show_uncertain(constants: list[dict[str, Any]]) -> None:
    """The preset's declared constants: what a model variant may draw each from, and why."""
    if not constants:
        return
    print()
    print_table(
        ["constant", "value", "range", "source"],
        [
            (
                c["path"],
                json_value(c["value"]),
                f"{json_value(c['range'][0])}..{json_value(c['range'][1])}",
                _truncated(c["source"], SOURCE_WIDTH),
            )
            for c in constants
        ],
        right={"value", "range"},
        title="Uncertain constants (declared ranges; full sources with --json)",
    )


def _truncated(text: str, width: int) -> str:
    return text if len(text) <= width else text[: width - 3] + "..."


def _show_parameters(kind: str, parameters: list[dict[str, Any]]) -> None:
    if not parameters:
        return
    # Knobs standing for uncertain constants show the range their value is believed to lie in.
    if any(p.get("range") for p in parameters):
        print_table(
            [kind, "unit", "default", "range", "description"],
            [
                (
                    p["name"],
                    p["unit"] or "",
                    json_value(p["default"]),
                    _range(p.get("range")),
                    p["description"],
                )
                for p in parameters
            ],
        )
        return
    print_table(
        [kind, "unit", "default", "description"],
        [
            (p["name"], p["unit"] or "", json_value(p["default"]), p["description"])
            for p in parameters
        ],
    )


def _range(bounds: list[float] | None) -> str:
    """An uncertain knob's range as `lo..hi`, "" for a knob without one."""
    return f"{json_value(bounds[0])}..{json_value(bounds[1])}" if bounds else ""


def _cpu_ranges(cpus: Sequence[int]) -> str:
    """[0, 1, 2, 3, 8] -> "0-3,8", as the kernel prints CPU lists."""
    spans: list[list[int]] = []
    for cpu in sorted(cpus):
        if spans and cpu == spans[-1][1] + 1:
            spans[-1][1] = cpu
        else:
            spans.append([cpu, cpu])
    return ",".join(str(a) if a == b else f"{a}-{b}" for a, b in spans)
