# Two commands on a fresh clone: `make demo` and `make test`. Both bootstrap .venv themselves.
PYTHON ?= $(shell command -v python3.11 || command -v python3)
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

# The first python3.13 that runs (a pyenv shim on PATH may not: pyenv installs are tried first).
PY313 ?= $(shell for p in $$HOME/.pyenv/versions/3.13*/bin/python3.13 $$(command -v python3.13); do "$$p" -c "" 2>/dev/null && { echo "$$p"; break; }; done)
VENV313 := .venv313

# The browser tests drive Debian's chromium through Playwright (a dev dependency) with
# executable_path, so no browser build is downloaded.
CHROMIUM := /usr/bin/chromium
SUDO := $(shell [ "$$(id -u)" = 0 ] || echo sudo)

.PHONY: demo test test-313 check fmt clean shutdown-loop

$(STAMP): pyproject.toml
	@test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --disable-pip-version-check --upgrade pip
	$(BIN)/python -m pip install --quiet --disable-pip-version-check -e '.[dev]'
	@touch $(STAMP)

check: $(STAMP)
	$(BIN)/ruff format --check .
	$(BIN)/ruff check .
	$(BIN)/lint-imports
	$(BIN)/mypy

$(CHROMIUM):
	@command -v apt-get >/dev/null || { echo "install Chromium as $(CHROMIUM) for the browser tests"; exit 69; }
	$(SUDO) apt-get update -qq
	DEBIAN_FRONTEND=noninteractive $(SUDO) apt-get install -y -qq chromium

# Two worker processes (pytest-xdist); PYTEST_WORKERS=0 runs the suite in one.
PYTEST_WORKERS ?= 2

test: check $(CHROMIUM)
	$(BIN)/pytest -q -n $(PYTEST_WORKERS)

# Only the clustered daemons as real processes, killed, stopped and frozen (their end-to-end
# tests and the small cluster benchmark; `make test` runs them too).
test-cluster: $(STAMP)
	$(BIN)/pytest -q -n $(PYTEST_WORKERS) -m cluster_processes

# The suite again on CPython 3.13 (CI runs both; the daemon supports 3.11 to 3.13).
test-313: $(CHROMIUM)
	@test -n "$(PY313)" || { echo "python3.13 not found: install it or set PY313=/path/to/python3.13"; exit 69; }
	@test -x $(VENV313)/bin/python || $(PY313) -m venv $(VENV313)
	$(VENV313)/bin/python -m pip install --quiet --disable-pip-version-check -e '.[dev]'
	$(VENV313)/bin/pytest -q -p no:cacheprovider -n $(PYTEST_WORKERS)

# The signal-stop end-to-end tests, RUNS times in a row (a flaky stop is a race to find).
RUNS ?= 100
shutdown-loop: $(STAMP)
	@for i in $$(seq 1 $(RUNS)); do \
		$(BIN)/pytest -q -p no:cacheprovider tests/e2e/test_daemon_end_to_end.py -k signal \
			>/tmp/storyteller-shutdown-loop.log 2>&1 \
			|| { cat /tmp/storyteller-shutdown-loop.log; echo "run $$i of $(RUNS) failed"; exit 1; }; \
	done; echo "$(RUNS) runs in a row passed"

demo: $(STAMP)
	$(BIN)/python -m storyteller_daemon demo

fmt: $(STAMP)
	$(BIN)/ruff format .
	$(BIN)/ruff check --fix .

clean:
	rm -rf $(VENV) $(VENV313) .evennia-venv .evennia-venv.lock .pytest_cache .mypy_cache .ruff_cache demo-data
