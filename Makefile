# The two commands: `make run` and `make test`. Both create .venv on a fresh machine.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: run test test-all bench lint install clean

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip

# torch first and pinned: the CPU wheel 2.13.0 is on these machines; any other torch pulls CUDA.
$(STAMP): $(BIN)/python pyproject.toml constraints.txt
	$(BIN)/pip install --quiet torch==2.13.0
	$(BIN)/pip install --quiet -e ".[dev,dask,postgres,data,server]" -c constraints.txt
	touch $(STAMP)

install: $(STAMP)

run: $(STAMP)
	$(BIN)/dpinfer demo --out out

# the suite runs on every core (pytest-xdist); tests that start servers pick free ports
test: $(STAMP)
	$(BIN)/python -m pytest -q -n auto

test-all: $(STAMP)
	$(BIN)/python -m pytest -q -n auto -m "slow or not slow"

bench: $(STAMP)
	@for f in benchmarks/*.py; do echo "== $$f"; $(BIN)/python $$f || exit 1; done

lint: $(STAMP)
	$(BIN)/ruff check src tests benchmarks examples
	$(BIN)/mypy

clean:
	rm -rf $(VENV) out build *.egg-info src/*.egg-info
