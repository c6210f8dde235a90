# Two commands: `make demo` runs the main job end to end, `make test` runs the whole suite.
# Both create the virtual environment on first use.

PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
STATE_DIR ?= .state/demo

.PHONY: install browser test lint typecheck demo dev-server clean

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

# Debian's chromium for the Web UI test (tests/browser), which Playwright drives headless; Playwright
# downloads no browser of its own. Installed with apt-get (root) when /usr/bin/chromium is missing.
browser:
	@test -x /usr/bin/chromium || { \
		{ [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null; } || \
			{ echo "browser: /usr/bin/chromium is missing and apt-get needs root here: run 'sudo make browser' (or sudo apt-get install chromium)"; exit 1; }; \
		echo "browser: installing Debian's chromium (apt-get install chromium) for the Web UI test in tests/browser"; \
		export DEBIAN_FRONTEND=noninteractive; \
		apt-get install -y -qq --no-install-recommends chromium >/dev/null 2>&1 || \
			{ apt-get update -qq && apt-get install -y -qq --no-install-recommends chromium >/dev/null; }; \
	}

test: lint typecheck browser
	$(BIN)/pytest

demo: install
	STATE_DIR=$(STATE_DIR) bash scripts/demo.sh

# A local Temporal dev server in the foreground: gRPC on :7233, Web UI on :8233, state in .state/
# (TEMPORAL_PORT, TEMPORAL_UI_PORT and SUPPORT_STATE_DIR override them). Ctrl-C stops it.
dev-server: install
	$(BIN)/python temporal_dev.py

clean:
	rm -rf .state
