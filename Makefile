# Two commands on a fresh clone: `make demo` and `make test`. Both bootstrap .venv themselves.
PYTHON ?= $(shell command -v python3.11 || command -v python3)
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: demo test check fmt clean

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

test: check
	$(BIN)/pytest -q

demo: $(STAMP)
	$(BIN)/python -m storyteller_daemon demo

fmt: $(STAMP)
	$(BIN)/ruff format .
	$(BIN)/ruff check --fix .

clean:
	rm -rf $(VENV) .evennia-venv .evennia-venv.lock .pytest_cache .mypy_cache .ruff_cache demo-data
