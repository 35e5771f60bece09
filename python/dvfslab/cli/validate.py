"""`dvfslab validate`: a campaign with published measurements, run and compared cell by cell."""

from __future__ import annotations

import argparse
import dataclasses
from pathlib import Path
from typing import Any

from dvfslab._core import ConfigError
from dvfslab.campaign import Campaign, load_campaign, load_results, run_campaign
from dvfslab.cli.campaign_runs import (
    add_force,
    add_jobs,
    add_nominal,
    add_part,
    check_jobs,
    print_summary,
)
from dvfslab.cli.parser import command
from dvfslab.report import build_report


def register(commands: Any) -> None:
    p = command(
        commands,
        "validate",
        "Run a campaign with published measurements and compare every published cell.",
        cmd_validate,
        "  dvfslab validate intel-invariance\n"
        "  dvfslab validate intel-invariance --iterations 1 --json\n"
        "  dvfslab validate eas-juno-r2  (another publication: dvfslab campaign list)\n"
        "  dvfslab validate intel-invariance --markdown > agreement.md  (tables for a document)\n"
        "  dvfslab validate ./mine.toml --out results/mine  (named after published data)\n"
        "  dvfslab validate intel-invariance --fit-power  (fit the presets' power constants)\n"
        "  dvfslab validate intel-invariance --cross-validate  (leave one machine out)\n"
        "  dvfslab validate intel-invariance --nominal  (the fixed model, no variants)\n"
        "  dvfslab validate intel-invariance --benchmark pgbench-ro --platform skylake-e3-1240v5\n"
        "      (only those cells: a quick check after changing one benchmark model)\n"
        "  dvfslab validate intel-invariance --json > before.json; (change the model);\n"
        "  dvfslab validate intel-invariance --against before.json  (what the change moved)\n"
        "  dvfslab validate intel-invariance --cross-validate --fit-discrepancy\n"
        "      (its out-of-sample residuals into the model-discrepancy file)\n"
        "  dvfslab validate intel-invariance --no-discrepancy  (the model's intervals alone)\n\n"
        "Runs already in the results store (default results/<campaign name>) are reused. The\n"
        "published numbers ship in dvfslab/data/calibration/; docs/validation.md explains the\n"
        "scores.",
    )
    p.add_argument("campaign", metavar="NAME|FILE.toml", help="a shipped campaign or a file")
    view = p.add_mutually_exclusive_group()
    view.add_argument("--json", action="store_true", help="print the comparison as JSON")
    view.add_argument(
        "--markdown",
        action="store_true",
        help="print the scores and per machine the published and simulated cells as Markdown "
        "tables",
    )
    p.add_argument(
        "--iterations",
        type=int,
        metavar="N",
        help="runs per (platform, config, benchmark, parameter) instead of the campaign's",
    )
    p.add_argument(
        "--out", metavar="DIR", help="the results store (default: results/<campaign name>)"
    )
    add_force(p)
    p.add_argument(
        "--against",
        metavar="FILE.json",
        help="also compare with an earlier `validate --json` output of the same campaign: every "
        "score before and after, and the cells whose verdict changed or whose value moved by "
        "more than 2%%",
    )
    p.add_argument(
        "--fit-power",
        action="store_true",
        help="also fit each platform's package-power constants to the published watts",
    )
    p.add_argument(
        "--cross-validate",
        action="store_true",
        help="also score each machine with the constants fitted on the campaign refitted "
        "without it (the campaign's [cross_validate] table; leave one machine out)",
    )
    p.add_argument(
        "--no-discrepancy",
        action="store_true",
        help="score the model's intervals alone, without the model discrepancy "
        "(docs/validation.md)",
    )
    p.add_argument(
        "--discrepancy",
        metavar="FILE.toml",
        help="the discrepancy file to read (and with --fit-discrepancy update) instead of the "
        "shipped dvfslab/data/calibration/discrepancy.toml",
    )
    p.add_argument(
        "--fit-discrepancy",
        action="store_true",
        help="replace this publication's residuals in the discrepancy file by this run's "
        "out-of-sample ones (the cross-validated cells where the campaign fits constants on "
        "its cells: needs --cross-validate), then score with it",
    )
    add_part(p, "run and score only")
    add_nominal(p)
    add_jobs(p)
    p.add_argument("--quiet", action="store_true", help="no progress on stderr")


def cmd_validate(args: argparse.Namespace) -> int:
    import json

    from dvfslab.validate import (
        print_validation,
        print_validation_markdown,
        published_cells,
        published_power,
        validate_report,
    )
    from dvfslab.validate.diff import (
        compare,
        load_validation,
        print_comparison,
        print_comparison_markdown,
    )
    from dvfslab.validate.power_fit import fit_power, print_fits

    check_jobs(args.jobs)
    full = load_campaign(args.campaign)
    _check_discrepancy_options(args, full)
    campaign = full.restricted(args.benchmark, args.platform)
    published_cells(campaign.name)  # fail before running when nothing is published
    earlier = load_validation(args.against, campaign.name) if args.against else None
    if args.iterations is not None:
        if args.iterations < 1:
            raise ConfigError(f"--iterations must be >= 1 (got {args.iterations})")
        campaign = dataclasses.replace(
            campaign,
            iterations=args.iterations,
            benchmarks=tuple(dataclasses.replace(b, iterations=None) for b in campaign.benchmarks),
        )
    if args.nominal:
        campaign = dataclasses.replace(campaign, nominal=True)
    summary = run_campaign(
        campaign, args.out, jobs=args.jobs, progress=not args.quiet, force=args.force
    )
    results = load_results(summary.out_dir)
    if results.empty:
        raise ConfigError(f"{summary.out_dir}: no finished runs")
    report = build_report(results, campaign.baseline)
    folds = None
    if args.cross_validate:
        from dvfslab.validate.leave_one_out import run_folds

        def run_fold(fold: Campaign, store: Path) -> None:
            run_campaign(fold, store, jobs=args.jobs, progress=not args.quiet, force=args.force)

        where = summary.out_dir.with_name(f"{summary.out_dir.name}.cross-validate")
        folds = run_folds(campaign, where, run_fold)
    if args.fit_discrepancy:
        _fit_discrepancy(args, campaign, report, folds)
    discrepancy = None if args.no_discrepancy else _discrepancy(args, campaign)
    result = validate_report(
        campaign.name,
        report,
        benchmarks=args.benchmark,
        platforms=args.platform,
        discrepancy=discrepancy,
    )
    fits = fit_power(results, published_power(campaign.name)) if args.fit_power else None
    if fits is not None:
        result["power_fit"] = [f.to_dict() for f in fits]
    if folds is not None:
        from dvfslab.validate.leave_one_out import cross_validated_result

        result["cross_validated"] = cross_validated_result(folds, discrepancy)
    diff = compare(earlier, result, args.against) if earlier is not None else None
    if args.json:
        print(json.dumps(result | ({"against": diff} if diff is not None else {}), indent=2))
    elif args.markdown:
        print_validation_markdown(result)
        if diff is not None:
            print_comparison_markdown(diff)
    else:
        print_summary(summary, keep=True)
        print()
        print_validation(result)
        if fits is not None:
            print("\nPackage-power constants fitted to the published watts (docs/validation.md):")
            print_fits(fits)
        if diff is not None:
            print()
            print_comparison(diff)
    return 0


def _check_discrepancy_options(args: argparse.Namespace, campaign: Campaign) -> None:
    """--fit-discrepancy replaces the publication's residuals: only from a whole campaign run
    with model variants, and from the cross-validated cells where the campaign fits constants
    on its own cells."""
    if not args.fit_discrepancy:
        return
    clash = [
        option
        for option, given in (
            ("--nominal", args.nominal),
            ("--benchmark", args.benchmark),
            ("--platform", args.platform),
        )
        if given
    ]
    if clash:
        raise ConfigError(
            f"--fit-discrepancy cannot go with {', '.join(clash)}: the discrepancy is what the "
            "model variants' intervals miss, over every published cell of the campaign"
        )
    fits = campaign.fitted.on_one or campaign.fitted.on_all
    if fits and not args.cross_validate:
        raise ConfigError(
            f"--fit-discrepancy on {campaign.name} needs --cross-validate: constants are "
            "fitted on its cells (its [cross_validate] table), so only the cross-validated "
            "cells are out of sample"
        )


def _fit_discrepancy(
    args: argparse.Namespace,
    campaign: Campaign,
    report: Any,
    folds: list[Any] | None,
) -> None:
    """Write the campaign's out-of-sample residuals into the discrepancy file."""
    import sys

    from dvfslab.report.discrepancy import Residuals, provenance, shipped_path, write_residuals
    from dvfslab.validate import fill_simulated, published_cells
    from dvfslab.validate.calibrated import Discrepancy

    if folds is not None:
        cells = [c for f in folds for c in f.cells]
        how = "leave one machine out"
    else:
        cells = fill_simulated(published_cells(campaign.name), report)
        how = "no constant fitted on its cells"
    path = args.discrepancy or shipped_path()
    workloads = {b.name: b.workload for b in campaign.benchmarks}
    rows = Discrepancy(campaign.name, Residuals(()), workloads).residuals_of(cells)
    command = f"dvfslab validate {campaign.name} --fit-discrepancy" + (
        " --cross-validate" if folds is not None else ""
    )
    if args.iterations is not None:
        command += f" --iterations {args.iterations}"
    produced = {**provenance(command), "residuals_from": how}
    written = write_residuals(path, campaign.name, rows, produced)
    print(
        f"{path}: {len(rows)} residuals of {campaign.name} written ({how}); "
        f"{len(written.rows)} in all",
        file=sys.stderr,
    )


def _discrepancy(args: argparse.Namespace, campaign: Campaign) -> Any:
    """The discrepancy to score with: None when the file has no residuals."""
    from dvfslab.report.discrepancy import load_residuals
    from dvfslab.validate.calibrated import Discrepancy

    residuals = load_residuals(args.discrepancy)
    if not residuals.rows:
        return None
    workloads = {b.name: b.workload for b in campaign.benchmarks}
    return Discrepancy(campaign.name, residuals, workloads)
