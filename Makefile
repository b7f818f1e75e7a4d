# The two commands of the README: `make demo` and `make test`. Both set everything up on a fresh clone, installing
# exactly the versions of requirements/dev.lock. Maintainers: `make test-fast` is the quick tier (the checks and the
# tests that start no CLI), `make lock` refreshes the locks, `make test-latest` runs the same suite on the newest
# versions pyproject.toml's ranges allow (the canary). docs/testing.md says what each tier runs and how long it takes.
PYTHON ?= python3
VENV ?= .venv
PY = $(VENV)/bin/python
STAMP = $(VENV)/.installed
LOCK := requirements/dev.lock
LATEST := .venv-latest
# pytest-xdist workers: the whole suite waits on CLI processes much of the time, so more workers than cores pay;
# the unit tier is CPU-bound (docs/testing.md has the measurements). Override with `make test WORKERS=2`.
WORKERS ?= 4
FAST_WORKERS ?= 2

.PHONY: demo test test-fast checks test-latest lock setup clean node-ui node-bench

# The locked environment: every package pinned and hash-checked, the project itself installed without build isolation
# (its build backend is in the lock too), so nothing unpinned is fetched.
.venv/.installed: pyproject.toml $(LOCK)
	rm -rf .venv
	$(PYTHON) -m venv .venv
	.venv/bin/python -m pip install --quiet --require-hashes --no-deps -r $(LOCK)
	.venv/bin/python -m pip install --quiet --no-deps --no-build-isolation -e .
	.venv/bin/python -m pip check
	touch $@

# The canary's environment: the newest versions the ranges allow, made anew on every `make test-latest`.
$(LATEST)/.installed: pyproject.toml
	rm -rf $(LATEST)
	$(PYTHON) -m venv $(LATEST)
	$(LATEST)/bin/python -m pip install --quiet --upgrade pip
	$(LATEST)/bin/python -m pip install --quiet --upgrade --upgrade-strategy eager -e '.[dev]'
	$(LATEST)/bin/python -m pip list --format=freeze | grep -iE '^(claude-agent-sdk|pydantic-ai-slim|mcp)=='
	touch $@

setup: $(STAMP)

demo: $(STAMP)
	scripts/loopback-only $(VENV)/bin/claudecode-model demo

node-ui:
	scripts/install-node-ui

node-bench:  # the peer of the new-process benchmark (python -m bench --only new-process)
	scripts/install-node-bench

# Lint, format and types: mypy checks src/ strictly and tests/ without strict (pyproject.toml's [tool.mypy]).
checks: $(STAMP)
	$(PY) -m ruff check src tests
	$(PY) -m ruff format --check src tests
	$(PY) -m mypy

# The gate (CI's `.ci/run`): the checks, then every test, in parallel workers.
test: checks node-ui
	scripts/loopback-only $(PY) -m pytest -q -n $(WORKERS) --durations=15

# The quick tier: the checks, then the tests that start no CLI (`-m "not cli"`).
test-fast: checks
	scripts/loopback-only $(PY) -m pytest -q -m "not cli" -n $(FAST_WORKERS) --durations=15

test-latest:
	rm -f $(LATEST)/.installed
	$(MAKE) --no-print-directory test VENV=$(LATEST)

lock:
	scripts/lock

# The wheel and the sdist of a release, in dist/ (tests/test_wheel_cli.py installs the wheel into a fresh venv).
.PHONY: dist
dist: $(STAMP)
	rm -rf dist
	$(PY) -m hatchling build -d dist

clean:
	rm -rf $(VENV) $(LATEST) .mypy_cache .ruff_cache .pytest_cache .cache
