# The two commands of the README: `make demo` and `make test`. Both set everything up on a fresh clone.
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed

.PHONY: demo test setup clean node-ui node-bench

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e '.[dev]'
	touch $(STAMP)

setup: $(STAMP)

demo: $(STAMP)
	scripts/loopback-only $(VENV)/bin/claudecode-model demo

node-ui:
	scripts/install-node-ui

node-bench:  # the peer of the new-process benchmark (python -m bench --only new-process)
	scripts/install-node-bench

test: $(STAMP) node-ui
	$(PY) -m ruff check src tests
	$(PY) -m ruff format --check src tests
	$(PY) -m mypy
	scripts/loopback-only $(PY) -m pytest -q

clean:
	rm -rf $(VENV) .mypy_cache .ruff_cache .pytest_cache .cache
