"""The HTML report, opened in a real headless Chromium: no console error, not a blank page.

Chromium is a test requirement (Debian package `chromium`, installed by .ci/run). Without it
these tests fail, saying how to install it; they never skip.
"""

from __future__ import annotations

import re
import shutil
import struct
import subprocess
import zlib
from html.parser import HTMLParser
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from dvfslab import ConfigError
from dvfslab.report import build_report
from dvfslab.report.html import render_html, write_html
from report_data import BASELINE, synthetic_results

BROWSERS = ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable")
INSTALL_HINT = "install it with: apt-get update && apt-get install -y chromium"
SCREEN = (1280, 2400)


@pytest.fixture(scope="module")
def chromium() -> str:
    for name in BROWSERS:
        path = shutil.which(name)
        if path:
            return path
    pytest.fail(f"headless Chromium is needed to test the HTML report; {INSTALL_HINT}")


@pytest.fixture(scope="module")
def report():
    return build_report(synthetic_results(), BASELINE)


def residency() -> pd.DataFrame:
    """time_in_freq of two configurations, like SimResult.df_cpus_time_in_freq() labelled."""
    rows = [
        {
            "platform": "box",
            "benchmark": "tput",
            "config": config,
            "cpu": cpu,
            "freq_khz": khz,
            "time_s": share * (cpu + 1),
        }
        for config, shares in ((BASELINE, (0.6, 0.3, 0.1)), ("fast", (0.1, 0.3, 0.6)))
        for cpu in range(4)
        for khz, share in zip((1_200_000, 2_400_000, 3_600_000), shares)
    ]
    return pd.DataFrame(rows)


def timeline() -> pd.DataFrame:
    """Frequency and util_avg of 10 CPUs, as concat(df_cpus_frequency(), df_cpus_util())."""
    rng = np.random.default_rng(0)
    t = np.sort(rng.random(20_000)) * 2.0  # more points than the report keeps
    freq = pd.DataFrame(
        {
            "time_s": t,
            "cpu": rng.integers(0, 10, t.size),
            "freq_khz": rng.choice([1_200_000, 2_400_000, 3_600_000], t.size),
        }
    )
    util = pd.DataFrame(
        {"time_s": t[:500], "cpu": rng.integers(0, 2, 500), "util_avg": rng.integers(0, 1024, 500)}
    )
    return pd.concat([freq, util], ignore_index=True)


@pytest.fixture(scope="module")
def html_file(tmp_path_factory, report) -> Path:
    path = tmp_path_factory.mktemp("html") / "report.html"
    assert write_html(path, report, time_in_freq=residency(), timeline=timeline()) == path
    return path


def run_chromium(chromium: str, page: Path, *args: str) -> subprocess.CompletedProcess[str]:
    proc = subprocess.run(
        [
            chromium,
            "--headless",
            "--disable-gpu",
            "--no-sandbox",
            "--no-first-run",
            "--hide-scrollbars",
            f"--user-data-dir={page.parent / 'chromium-profile'}",
            "--enable-logging=stderr",
            "--v=0",
            f"--window-size={SCREEN[0]},{SCREEN[1]}",
            *args,
            page.as_uri(),
        ],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    return proc


def console_messages(stderr: str) -> list[str]:
    """What the page said on the console: Chromium logs it as `...:CONSOLE(line)] "message"`."""
    return [line for line in stderr.splitlines() if ":CONSOLE" in line or "Uncaught" in line]


def png_facts(path: Path) -> tuple[int, int, int]:
    """Width, height, and how many distinct byte values its decompressed image data holds.

    A uniform image filters down to a handful of byte values (filter types, 0 and the colour);
    a page with text and coloured charts has many.
    """
    data = path.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n", "not a PNG"
    pos, width, height, idat = 8, 0, 0, b""
    while pos < len(data):
        (length,) = struct.unpack(">I", data[pos : pos + 4])
        kind, body = data[pos + 4 : pos + 8], data[pos + 8 : pos + 8 + length]
        if kind == b"IHDR":
            width, height = struct.unpack(">II", body[:8])
        elif kind == b"IDAT":
            idat += body
        pos += 12 + length
    return width, height, len(set(zlib.decompress(idat)))


# -- the file itself -------------------------------------------------------------------------


class _Counter(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.tags: dict[str, int] = {}
        self.refs: list[str] = []

    def handle_starttag(self, tag, attrs):
        self.tags[tag] = self.tags.get(tag, 0) + 1
        self.refs += [v for k, v in attrs if k in ("src", "href") and v]


def test_html_is_self_contained(html_file):
    text = html_file.read_text(encoding="utf-8")
    parsed = _Counter()
    parsed.feed(text)
    assert parsed.refs == []  # no scripts, stylesheets or images to fetch
    assert "<script" not in text
    # the only URLs are the SVG and XLink namespace names, which are never fetched
    assert set(re.findall(r"https?://[^\s\"'<>]+", text)) == {
        "http://www.w3.org/2000/svg",
        "http://www.w3.org/1999/xlink",
    }
    # per platform: ratio, power, PPW; per benchmark: per-parameter curves; one residency
    # chart; frequency and util_avg timelines
    assert parsed.tags["svg"] == 3 + 2 + 1 + 2
    assert parsed.tags["table"] == 3 + 2


def test_charts_ids_are_unique_and_every_reference_resolves(html_file):
    """Many matplotlib figures share one page: their ids must not collide."""
    text = html_file.read_text(encoding="utf-8")
    ids = re.findall(r' id="([^"]+)"', text)
    refs = set(re.findall(r'href="#([^"]+)"', text)) | set(re.findall(r"url\(#([^)]+)\)", text))
    assert len(ids) == len(set(ids))
    assert refs
    assert refs <= set(ids)


def test_chart_text_is_text_and_bars_tell_their_values(report):
    text = render_html(report)
    # a chart's title and its category labels are SVG text, not glyph outlines
    assert re.search(r"<text[^>]*>Average package power</text>", text)
    assert re.search(r"<text[^>]*>tput \(higher\)</text>", text)
    # hovering the bar of "fast" for tput shows its ratio and interval
    assert re.search(r"<title>tput \(higher\) / fast: 1\.10 \[1\.\d\d, 1\.\d\d\]</title>", text)
    assert "<title>jobs=2 / slow: 62.50 +- 1.44</title>" in text


def test_a_configuration_has_one_colour_in_every_chart(report):
    # The ratio charts leave the baseline out and the power chart has it: colours by position
    # would shift from one to the next.
    text = render_html(report, time_in_freq=residency())
    fills: dict[str, set[str]] = {}
    for config, fill in re.findall(
        r"<title>[^<]* / ([^:<]+): [^<]*</title>\s*<path[^>]*?style=\"fill: (#[0-9a-f]{6})", text
    ):
        fills.setdefault(config, set()).add(fill)
    assert {BASELINE, "fast", "slow"} <= set(fills)
    assert all(len(f) == 1 for f in fills.values()), fills
    assert len({next(iter(f)) for f in fills.values()}) == len(fills)


def test_the_same_report_renders_to_the_same_bytes(report):
    assert render_html(report) == render_html(report)


def test_write_is_atomic_and_leaves_no_temporary_file(html_file):
    assert sorted(p.name for p in html_file.parent.iterdir() if p.is_file()) == ["report.html"]


def test_missing_directory_is_a_config_error(tmp_path, report):
    with pytest.raises(ConfigError, match="does not exist"):
        write_html(tmp_path / "nope" / "r.html", report)


def test_optional_frames_need_their_columns(report):
    with pytest.raises(ConfigError, match="time_in_freq DataFrame lacks column"):
        render_html(report, time_in_freq=pd.DataFrame({"freq_khz": [1]}))
    with pytest.raises(ConfigError, match="freq_khz or util_avg"):
        render_html(report, timeline=pd.DataFrame({"time_s": [0.0], "cpu": [0]}))


def test_unlabelled_frames_from_one_run_are_accepted(report):
    # straight from SimResult: df_cpus_time_in_freq() and df_cpus_frequency(), no labels
    tif = residency().drop(columns=["platform", "benchmark", "config"])
    freq = timeline().dropna(subset=["freq_khz"])[["time_s", "cpu", "freq_khz"]]
    text = render_html(report, time_in_freq=tif, timeline=freq)
    assert text.count("<svg") == 5 + 1 + 1
    assert "all CPUs" in text
    assert "Frequency (CPUs 0..7 of 10)" in text


def test_report_without_optional_frames_has_no_residency_section(report):
    text = render_html(report)
    assert "Frequency residency" not in text
    assert "Timelines" not in text
    assert text.count("<svg") == 5


# -- in the browser --------------------------------------------------------------------------


def test_chromium_renders_it_without_console_errors(chromium, html_file):
    shot = html_file.parent / "screenshot.png"
    proc = run_chromium(chromium, html_file, f"--screenshot={shot}")
    assert console_messages(proc.stderr) == []
    assert shot.is_file(), proc.stderr[-2000:]
    width, height, distinct = png_facts(shot)
    assert (width, height) == SCREEN
    assert shot.stat().st_size > 20_000
    assert distinct > 32, "the screenshot looks blank"


def test_chromium_sees_every_chart(chromium, html_file):
    dom = run_chromium(chromium, html_file, "--dump-dom").stdout
    assert dom.count("<svg") == 8
    assert "box: performance ratio to base" in dom
    assert "*  10.00%*" in dom


def test_the_checks_catch_an_error_and_a_blank_page(chromium, tmp_path):
    """The harness itself: a blank page with a script error must fail both checks."""
    page = tmp_path / "broken.html"
    page.write_text(
        "<!DOCTYPE html><html><body><script>undefinedFunction();</script></body></html>",
        encoding="utf-8",
    )
    shot = tmp_path / "blank.png"
    proc = run_chromium(chromium, page, f"--screenshot={shot}")
    assert any("undefinedFunction" in m for m in console_messages(proc.stderr))
    assert png_facts(shot)[2] <= 32
