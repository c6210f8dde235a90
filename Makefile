# Two commands: `make demo` runs the main job end to end, `make test` runs the whole suite.
# Both create the virtual environment on first use.

PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
STATE_DIR ?= .state/demo

.PHONY: install test lint typecheck demo dev-server clean

$(BIN)/.installed: pyproject.toml
	@$(PYTHON) -c 'import sys; sys.exit(0 if sys.version_info >= (3, 11) else "Python 3.11 or newer is required (set PYTHON=...)")'
	@test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[dev]'
	@touch $@

install: $(BIN)/.installed

lint: install
	$(BIN)/ruff check .

# mypy --check-untyped-defs over the whole project, tests included (settings in pyproject.toml).
typecheck: install
	$(BIN)/mypy

test: lint typecheck
	$(BIN)/pytest

demo: install
	STATE_DIR=$(STATE_DIR) bash scripts/demo.sh

# A local Temporal dev server in the foreground: gRPC on :7233, Web UI on :8233, state in .state/
# (TEMPORAL_PORT, TEMPORAL_UI_PORT and SUPPORT_STATE_DIR override them). Ctrl-C stops it.
dev-server: install
	$(BIN)/python temporal_dev.py

clean:
	rm -rf .state
