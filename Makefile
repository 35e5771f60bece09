# `make check` runs exactly what CI runs.
.PHONY: install test-deps check fmt lint test-rust test-python bench reference fingerprint campaign-docs

install:
	pip install -e '.[dev]'

# Headless Chromium for the HTML report tests: installed where this user can, else a one-line hint.
test-deps:
	scripts/install-test-deps

check: install test-deps lint test-rust test-python

lint:
	cargo fmt --all -- --check
	cargo clippy --workspace --all-targets -- -D warnings
	RUSTDOCFLAGS='-D warnings' cargo doc --workspace --no-deps --quiet
	ruff check python tests
	ruff format --check python tests
	mypy

test-rust:
	cargo test --workspace

test-python:
	pytest -q

fmt:
	cargo fmt --all
	ruff format python tests

# The generated reference pages (tests/test_reference.py checks they are current).
reference:
	python -m dvfslab.reference docs/reference

# The predicted tables of docs/campaigns.md, each from its campaign's results store: run the
# campaigns first (`dvfslab campaign run NAME`, into results/NAME; RESULTS=DIR for another place).
# Only the lines between a block's markers change (tests/test_campaign_docs.py).
RESULTS ?= results
CAMPAIGN_DOCS = docs/campaigns.md
campaign-docs:
	for name in $$(sed -n 's/^<!-- campaign-report: \(.*\) -->$$/\1/p' $(CAMPAIGN_DOCS)); do \
		python -m dvfslab campaign report $(RESULTS)/$$name --into $(CAMPAIGN_DOCS) || exit 1; \
	done

# The speed table (docs/speed.md): the scenarios in Rust (median of three), then through Python.
bench:
	cargo bench -p dvfslab-sim --bench speed
	dvfslab bench
	dvfslab bench --scenario campaign

# A sha256 of each result of a fixed set of runs, to compare two builds (docs/speed.md).
fingerprint:
	scripts/fingerprint
