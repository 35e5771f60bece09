"""Report blocks in Markdown documents: `dvfslab campaign report DIR --into DOC.md` rewrites the
lines between a campaign's markers with its Markdown report and nothing else."""

from __future__ import annotations

from pathlib import Path

import pytest

from campaign_helpers import TINY
from dvfslab import ConfigError
from dvfslab.campaign import campaign_from_dict, campaign_names, load_results, run_campaign
from dvfslab.report import build_report, render
from dvfslab.report.doc_blocks import END, block_names, replace_block

DOCS = Path(__file__).resolve().parent.parent / "docs"

BEFORE = "# Predictions\n\nSome prose about the tiny campaign.\n\n"
AFTER = (
    "\n**What the model cannot capture yet.** Hand-written text.\n\n"
    "<!-- campaign-report: other -->\n\n| kept | as is |\n\n<!-- end campaign-report -->\n"
)


@pytest.fixture(scope="module")
def tiny_store(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """TINY's 8 runs of 0.2 s in a results store."""
    out = tmp_path_factory.mktemp("tiny")
    run_campaign(campaign_from_dict(TINY, source="tiny"), out, jobs=1, progress=False)
    return out


def doc_with_block(inner: str) -> str:
    return BEFORE + f"<!-- campaign-report: tiny -->\n\n{inner}\n\n{END}\n" + AFTER


def test_the_block_becomes_the_report_and_the_rest_stays(cli, tiny_store, tmp_path):
    doc = tmp_path / "campaigns.md"
    doc.write_text(doc_with_block("| an old | table |\n|---|---|\n| 1 | 2 |"), encoding="utf-8")
    run = cli("campaign", "report", str(tiny_store), "--into", str(doc))
    assert run.code == 0, run.stderr
    assert run.stdout == ""
    assert "the tiny report block replaced" in run.stderr

    markdown = render(build_report(load_results(tiny_store), "schedutil"), "markdown")
    assert "### skylake-e3-1240v5: performance ratio to schedutil" in markdown
    assert doc.read_text(encoding="utf-8") == doc_with_block(markdown.strip("\n"))

    # Again: the same document, byte for byte.
    again = cli("campaign", "report", str(tiny_store), "--into", str(doc), "--format", "markdown")
    assert again.code == 0, again.stderr
    assert doc.read_text(encoding="utf-8") == doc_with_block(markdown.strip("\n"))
    assert list(tmp_path.iterdir()) == [doc]  # no temporary file left beside it


def test_a_document_without_the_block_is_left_alone(cli, tiny_store, tmp_path):
    doc = tmp_path / "other.md"
    text = BEFORE + AFTER
    doc.write_text(text, encoding="utf-8")
    run = cli("campaign", "report", str(tiny_store), "--into", str(doc))
    assert run.code == 1
    assert f"{doc}: no line '<!-- campaign-report: tiny -->'" in run.stderr
    assert "report blocks there: other" in run.stderr
    assert doc.read_text(encoding="utf-8") == text

    wrong = cli("campaign", "report", str(tiny_store), "--into", str(doc), "--format", "csv")
    assert wrong.code == 1
    assert "--into writes the Markdown report; it cannot go with --format csv" in wrong.stderr

    missing = cli("campaign", "report", str(tiny_store), "--into", str(tmp_path / "nope.md"))
    assert missing.code == 1
    assert f"document {tmp_path / 'nope.md'} does not exist" in missing.stderr


def test_blocks_that_are_not_closed_or_given_twice_are_refused():
    opened = "<!-- campaign-report: a -->\ntext\n<!-- campaign-report: b -->\n" + END + "\n"
    with pytest.raises(ConfigError, match=r"doc.md: block 'a' \(line 1\) has no"):
        replace_block(opened, "a", "new", source="doc.md")
    twice = ("<!-- campaign-report: a -->\n" + END + "\n") * 2
    with pytest.raises(ConfigError, match="is on 2 lines; expected one"):
        replace_block(twice, "a", "new", source="doc.md")
    assert replace_block(twice[: len(twice) // 2], "a", "new\n") == (
        "<!-- campaign-report: a -->\n\nnew\n\n" + END + "\n"
    )


def test_the_shipped_documents_blocks_name_shipped_campaigns_and_are_closed():
    text = (DOCS / "campaigns.md").read_text(encoding="utf-8")
    names = block_names(text)
    assert names == [
        "amd-epyc-freqmax",
        "intel-pstate-load-based",
        "powernv-ramp-down",
        "margins-pixel6",
    ]
    assert set(names) <= set(campaign_names())
    for name in names:
        # Closed, and in the shape the tool writes: rewriting a block with what it holds
        # leaves the document as it is.
        start = text.index(f"<!-- campaign-report: {name} -->\n")
        inner = text[start:].split("\n", 1)[1].split(END, 1)[0]
        assert replace_block(text, name, inner) == text
