# `make check` runs exactly what CI runs; `make help` lists the targets (each one's `##` comment).
.PHONY: help install test-deps check fmt lint test-rust test-python bench bench-rl reference fingerprint \
	campaign-docs discrepancy wheel check-wheel

help: ## list the targets
	@grep -E '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | sed 's/:.*## /\t/' | expand -t 16

install: ## pip install -e '.[dev]': builds the Rust simulator (about 90 s on 2 cores)
	pip install -e '.[dev]'

# Headless Chromium for the HTML report tests: installed where this user can, else a one-line hint.
test-deps: ## headless Chromium for the HTML report tests
	scripts/install-test-deps

check: install test-deps lint test-rust test-python ## what CI runs: install, lint, Rust and Python tests

lint: ## cargo fmt and clippy, rustdoc, ruff, mypy
	cargo fmt --all -- --check
	cargo clippy --workspace --all-targets -- -D warnings
	RUSTDOCFLAGS='-D warnings' cargo doc --workspace --no-deps --quiet
	ruff check python tests
	ruff format --check python tests
	mypy

test-rust: ## cargo test --workspace
	cargo test --workspace

test-python: ## pytest -q -n auto (every core)
	pytest -q -n auto --dist worksteal

fmt: ## format the Rust and Python code
	cargo fmt --all
	ruff format python tests

# The generated reference pages (tests/test_reference.py checks they are current).
reference: ## regenerate docs/reference/ from the registries
	python -m dvfslab.reference docs/reference

# The predicted tables of docs/campaigns.md, each from its campaign's results store: run the
# campaigns first (`dvfslab campaign run NAME`, into results/NAME; RESULTS=DIR for another place).
# Only the lines between a block's markers change (tests/test_campaign_docs.py).
RESULTS ?= results
CAMPAIGN_DOCS = docs/campaigns.md
campaign-docs: ## the predicted tables of docs/campaigns.md, from the results stores
	for name in $$(sed -n 's/^<!-- campaign-report: \(.*\) -->$$/\1/p' $(CAMPAIGN_DOCS)); do \
		python -m dvfslab campaign report $(RESULTS)/$$name --into $(CAMPAIGN_DOCS) || exit 1; \
	done

# The model discrepancy's residuals (docs/validation.md, "Model discrepancy"), from every
# publication with ratio cells: intel-invariance cross-validated (about 25 min on 2 cores, its
# stores under $(RESULTS)), the others as run. Each replaces only its publication's rows.
DISCREPANCY_PUBLICATIONS = amd-invariance-regression i7-2600k-process-chains runnable-boosting-pixel6
discrepancy: ## refit the model discrepancy from every publication (docs/validation.md)
	python -m dvfslab validate intel-invariance --cross-validate --fit-discrepancy --quiet \
		--out $(RESULTS)/intel-invariance
	for name in $(DISCREPANCY_PUBLICATIONS); do \
		python -m dvfslab validate $$name --fit-discrepancy --quiet --out $(RESULTS)/$$name || exit 1; \
	done

# The speed table (docs/speed.md): the scenarios in Rust (median of three), then through Python.
bench: ## the speed scenarios, in Rust and through Python (docs/speed.md)
	cargo bench -p dvfslab-sim --bench speed
	dvfslab bench
	dvfslab bench --scenario campaign

bench-rl: ## train the CMA-ES agent of examples/gym and score it beside the governors (needs .[rl])
	python benches/rl_agent.py

# A sha256 of each result of a fixed set of runs, to compare two builds (docs/speed.md).
fingerprint: ## a sha256 of each result of a fixed set of runs, to compare builds
	scripts/fingerprint

# A wheel for users without a Rust toolchain: abi3, one wheel for every Python >= 3.9.
wheel: ## build target/wheels/dvfslab-*.whl (maturin build --release)
	maturin build --release

# The wheel installed into a fresh virtualenv with no cargo on PATH, running the README's first
# command (a few minutes: the release build, then the dependencies from the package index).
check-wheel: ## build the wheel and prove it installs and runs without Rust
	scripts/check-wheel
