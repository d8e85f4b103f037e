# The two commands: `make run` and `make test`. Both create .venv on a fresh machine.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: run test test-all bench lint docs install clean

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip

# torch first and pinned: the CPU wheel 2.13.0 is on these machines; any other torch pulls CUDA.
$(STAMP): $(BIN)/python pyproject.toml constraints.txt
	$(BIN)/pip install --quiet torch==2.13.0
	$(BIN)/pip install --quiet -e ".[dev,dask,postgres,data,server,docs]" -c constraints.txt
	touch $(STAMP)

install: $(STAMP)

run: $(STAMP)
	$(BIN)/dpinfer demo --out out

# the suite runs on every core (pytest-xdist) plus one worker: tests wait on subprocesses, servers
# and sleeps, so one more worker than cores fills the idle time (measured on 2 cores: 256 s with 3
# workers against 287 s with 2 and 270 s with 4); tests that start servers pick free ports
WORKERS ?= $(shell $(PYTHON) -c "import os; print(len(os.sched_getaffinity(0)) + 1)")

# bytecode caches on (PYTHONDONTWRITEBYTECODE emptied for the run) and filled once, in parallel,
# before the workers start (tests/warm_caches.py): otherwise every worker compiles the package and
# rewrites every test module's asserts itself, at the same moment (measured: collection 13.7 s of
# CPU per worker from a fresh clone, 7.6 s after warming, which takes 2.5 s on 2 cores), and every
# command-line, notebook and docs subprocess compiles what it imports again (0.5 s each)
TEST_ENV := PYTHONDONTWRITEBYTECODE=

test: $(STAMP)
	$(TEST_ENV) $(BIN)/python tests/warm_caches.py
	$(TEST_ENV) $(BIN)/python -m pytest -q -n $(WORKERS)

test-all: $(STAMP)
	$(TEST_ENV) $(BIN)/python tests/warm_caches.py
	$(TEST_ENV) $(BIN)/python -m pytest -q -n $(WORKERS) -m "slow or not slow"

bench: $(STAMP)
	@for f in benchmarks/*.py; do echo "== $$f"; $(BIN)/python $$f || exit 1; done

# the documentation site: docs/_build/html (warnings are errors; the tutorial notebooks are executed)
docs: $(STAMP)
	$(BIN)/python -m sphinx -W --keep-going -b html docs docs/_build/html

lint: $(STAMP)
	$(BIN)/ruff check src tests benchmarks examples
	$(BIN)/mypy

clean:
	rm -rf $(VENV) out build *.egg-info src/*.egg-info docs/_build docs/api/generated
