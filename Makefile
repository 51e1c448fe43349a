# Two entry points for a fresh clone with only Python 3.11 present:
#   make demo   set up, then diagnose a shipped buggy training script
#   make test   set up, then run the whole test suite (what CI runs)

PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed
DEMO   ?= examples/fp16_overflow.py

.PHONY: setup demo test lint bench clean

setup: $(STAMP)

# The pinned CPU build of torch goes in first: an unpinned torch would pull a multi-GB CUDA build.
$(STAMP): pyproject.toml setup.py
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet torch==2.13.0
	$(BIN)/pip install --quiet -e '.[dev]'
	touch $(STAMP)

# diagnose exits 1 when it diagnosed a problem, which is what the demo is for.
demo: $(STAMP)
	$(BIN)/diagnose $(DEMO); status=$$?; [ $$status -le 1 ] || exit $$status

test: $(STAMP)
	$(BIN)/ruff check diagnose tui tests benchmarks examples
	$(BIN)/ruff format --check diagnose tui tests benchmarks examples
	$(BIN)/python -m pytest -q -n 2 --dist loadgroup

bench: $(STAMP)
	for b in benchmarks/bench_*.py; do $(BIN)/python $$b || exit 1; done

clean:
	rm -rf $(VENV) build dist *.egg-info .pytest_cache .ruff_cache .hypothesis
