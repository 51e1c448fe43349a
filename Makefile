# Entry points for a fresh clone with only Python 3.11 present:
#   make demo   set up the tool, then diagnose a shipped buggy training script
#   make test   set up the tool and its test tools, then run the whole test suite (what CI runs)
#   make fast   the same suite without the slow end-to-end runs

PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed
DEV    := $(VENV)/.installed-dev
DEMO   ?= examples/fp16_overflow.py

.PHONY: setup setup-dev demo test fast lint bench clean

setup: $(STAMP)
setup-dev: $(DEV)

# torch goes in first, pinned: an unpinned torch would take the newest release. Whether it is
# the CPU build depends on the wheels pip can see (see the README).
$(STAMP): pyproject.toml setup.py
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet torch==2.13.0
	$(BIN)/pip install --quiet -e .
	touch $(STAMP)

$(DEV): $(STAMP)
	$(BIN)/pip install --quiet -e '.[dev]'
	touch $(DEV)

# diagnose exits 1 when it diagnosed a problem, which is what the demo is for.
demo: $(STAMP)
	$(BIN)/diagnose $(DEMO); status=$$?; [ $$status -le 1 ] || exit $$status

lint: $(DEV)
	$(BIN)/ruff check diagnose tui tests benchmarks examples
	$(BIN)/ruff format --check diagnose tui tests benchmarks examples

test: lint
	$(BIN)/python -m pytest -q -n 2 --dist loadgroup

fast: lint
	$(BIN)/python -m pytest -q -n 2 --dist loadgroup -m "not slow"

bench: $(DEV)
	for b in benchmarks/bench_*.py; do $(BIN)/python $$b || exit 1; done

clean:
	rm -rf $(VENV) build dist *.egg-info .pytest_cache .ruff_cache .hypothesis
