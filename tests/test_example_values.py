"""scripts/example-values, which prints the docs' tables of example values."""

from __future__ import annotations

import sys

import pytest

from script_helpers import load_script


def test_values_are_printed_to_three_figures() -> None:
    script = load_script("example-values")
    assert script.three_figures(1380.4) == "1,380"
    assert script.three_figures(321_456.0) == "321,000"
    assert script.three_figures(8.663) == "8.66"
    assert script.three_figures(0.007561) == "0.00756"
    assert script.three_figures(0.0) == "0"
    assert script.wall(0.004) == "< 0.01 s"
    assert script.wall(0.4351) == "0.435 s"


def test_a_run_gives_its_metric_with_its_unit() -> None:
    script = load_script("example-values")
    value, seconds = script.timed_run(script.PLATFORM, "performance", "pipe-test:loops=200", seed=1)
    number, unit = value.split(" ")
    assert unit == "µs"
    assert float(number) > 0
    assert seconds > 0


def test_an_unknown_table_is_refused(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    script = load_script("example-values")
    monkeypatch.setattr(sys, "argv", ["example-values", "everything"])
    assert script.main() == 2
    assert "usage:" in capsys.readouterr().err
