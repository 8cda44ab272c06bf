# Mnemo — developer tasks. `make help` lists them.
#
#   make setup    asks for the token, the model and the time zone; writes .env
#   make run      the Telegram bot          make chat   the local console
#   make test     lint + typecheck + tests (what CI runs, via .ci/run)
#   make lock     re-resolve requirements*.lock against PyPI
#
# One .venv, two levels: run/chat/doctor/setup install the runtime lock only
# (requirements.lock; EMBEDDER=1 takes requirements-embedder.lock), test/lint/...
# the developer lock. The locks pin the same versions of what they share, so the
# developer level is the runtime level plus tools, and either order leaves a
# working venv. Each level is reinstalled when pyproject.toml or its lock changes.

SHELL := /bin/bash
.SHELLFLAGS := -eu -o pipefail -c
.DEFAULT_GOAL := help
.DELETE_ON_ERROR:

PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
# The runtime level to install: EMBEDDER=1 adds the local embedding model (model2vec).
EMBEDDER ?= 0
RUN_LOCK := $(if $(filter 1,$(EMBEDDER)),requirements-embedder.lock,requirements.lock)
RUN_STAMP := $(VENV)/.installed-$(RUN_LOCK)
DEV_STAMP := $(VENV)/.installed-requirements-dev.lock

# Fails with one line unless $(1) is a Python >= 3.11.
define check_python
$(1) -c 'import sys; sys.exit(sys.version_info < (3, 11))' 2>/dev/null || { echo "error: Mnemo needs Python >= 3.11, but '$(1)' is: $$(command -v $(1) >/dev/null && $(1) -V 2>&1 | head -n1 || echo 'not found') (try: make PYTHON=python3.11 ...)" >&2; exit 1; }
endef

.PHONY: help install setup run chat doctor test lint fmt typecheck lock bench real-model-check clean

help:
	@echo "make setup      ask for the token, the model and the time zone; write .env"
	@echo "make run        run the Telegram bot (installs the runtime lock into $(VENV))"
	@echo "                (EMBEDDER=1: with the local embedding model, requirements-embedder.lock)"
	@echo "make chat       chat with the bot in this terminal (python -m bot chat)"
	@echo "make doctor     check config, token, model and workspace"
	@echo "make test       lint, typecheck, then pytest (what CI runs; installs the developer lock)"
	@echo "make install    create $(VENV) with the developer lock (requirements-dev.lock)"
	@echo "make lint       ruff check + ruff format --check"
	@echo "make fmt        sort imports and format with ruff"
	@echo "make typecheck  mypy (strict, see pyproject.toml)"
	@echo "make lock       re-resolve requirements{,-embedder,-replicas,-dev}.lock against PyPI"
	@echo "                (keeps current pins; 'make lock LOCK_ARGS=--upgrade' takes the newest)"
	@echo "make bench      run benchmarks/run_all.py if present"
	@echo "make real-model-check MODEL_GGUF=/path/to.gguf"
	@echo "                a real small model on this CPU through the bot (opt-in, minutes)"
	@echo "make clean      remove $(VENV) and caches"

# --- environment -----------------------------------------------------------

# $(call venv_install,LOCK): creates $(VENV) if missing and installs LOCK into it, then
# this project itself, editable (-qq: setuptools' "Editable installation" notice is
# not news; errors still print).
define venv_install
	@if [ ! -x "$(PY)" ]; then \
		$(call check_python,$(PYTHON)); \
		echo "creating $(VENV) with $$($(PYTHON) -V 2>&1)"; \
		$(PYTHON) -m venv "$(VENV)"; \
	fi
	@$(call check_python,$(PY))
	@echo "installing $(1) into $(VENV)"
	@$(PY) -m pip install --quiet --upgrade pip
	@$(PY) -m pip install --quiet -r $(1)
	@$(PY) -m pip install -qq --no-deps -e .
endef

$(RUN_STAMP): pyproject.toml $(RUN_LOCK)
	$(call venv_install,$(RUN_LOCK))
	@touch "$@"

# The developer lock holds the runtime lock's pins: installing it satisfies both levels.
$(DEV_STAMP): pyproject.toml requirements-dev.lock
	$(call venv_install,requirements-dev.lock)
	@touch "$@" "$(VENV)/.installed-requirements.lock" "$(VENV)/.installed-requirements-embedder.lock"

install: $(DEV_STAMP)

# --- running ---------------------------------------------------------------

setup: $(RUN_STAMP)
	$(PY) -m bot setup

run: $(RUN_STAMP)
	$(PY) -m bot run

chat: $(RUN_STAMP)
	$(PY) -m bot chat

doctor: $(RUN_STAMP)
	$(PY) -m bot doctor

# --- checks ----------------------------------------------------------------

# The tests on TEST_WORKERS processes (pytest-xdist; a worker that is free takes tests queued
# for a busy one), then those marked serial (timed: kills, freezes, threads racing) one at a
# time with nothing beside them; either failing fails the target. PYTEST_ARGS go to both runs
# (the second finding none of its tests among them is no failure: exit 5).
TEST_WORKERS ?= 2
PYTEST_ARGS ?=

test: $(DEV_STAMP) lint typecheck
	@status=0; \
	$(PY) -m pytest -q -n $(TEST_WORKERS) --dist worksteal -m "not serial" $(PYTEST_ARGS) || status=$$?; \
	$(PY) -m pytest -q -m serial $(PYTEST_ARGS) || { code=$$?; [ $$code -eq 5 ] || status=$$code; }; \
	exit $$status

lint: $(DEV_STAMP)
	$(PY) -m ruff check .
	$(PY) -m ruff format --check .

fmt: $(DEV_STAMP)
	$(PY) -m ruff check --select I --fix .
	$(PY) -m ruff format .

typecheck: $(DEV_STAMP)
	$(PY) -m mypy

bench: $(DEV_STAMP)
	@if [ -f benchmarks/run_all.py ]; then \
		$(PY) benchmarks/run_all.py; \
	else \
		echo "no benchmarks yet (benchmarks/run_all.py is missing)"; \
	fi

# Opt-in, never in CI: llama.cpp's server (the xllamacpp wheel, installed on first use) with
# a GGUF you downloaded; scripts/real_model_check.py says which one fits a small CPU.
MODEL_GGUF ?=
XLLAMACPP_VERSION := 2026.10.11549

real-model-check: $(DEV_STAMP)
	@if [ ! -f "$(MODEL_GGUF)" ]; then $(PY) scripts/real_model_check.py "$(MODEL_GGUF)"; exit 2; fi
	@$(PY) -c 'import xllamacpp' 2>/dev/null || $(PY) -m pip install --quiet "xllamacpp==$(XLLAMACPP_VERSION)"
	$(PY) scripts/real_model_check.py "$(MODEL_GGUF)"

# --- lock files --------------------------------------------------------------
# Resolved in a scratch venv against PyPI only: this machine's pip config
# (local mirrors, find-links) is ignored so that the pins install anywhere
# that reaches PyPI. Pins are for CPython 3.11 on Linux x86_64 (run this with
# such a $(PYTHON)). Each lock is constrained by the one before it (runtime,
# + the embedder extra, + dev and the replicas extra), so they always agree on shared packages.

LOCK_VENV ?= $(or $(TMPDIR),/tmp)/mnemo-lockvenv
PIP_TOOLS_VERSION := 7.6.2
PYPI_INDEX ?= https://pypi.org/simple
LOCK_ARGS ?=
LOCK_ENV := env -u PIP_FIND_LINKS -u PIP_INDEX_URL -u PIP_EXTRA_INDEX_URL \
	PIP_CONFIG_FILE=/dev/null PIP_INDEX_URL=$(PYPI_INDEX) CUSTOM_COMPILE_COMMAND="make lock"
PIP_COMPILE := $(LOCK_ENV) $(LOCK_VENV)/bin/pip-compile --quiet --strip-extras --allow-unsafe \
	--generate-hashes --no-emit-index-url --no-emit-find-links $(LOCK_ARGS)

lock:
	@$(call check_python,$(PYTHON))
	@if [ ! -x "$(LOCK_VENV)/bin/pip-compile" ]; then $(PYTHON) -m venv "$(LOCK_VENV)"; fi
	$(LOCK_ENV) $(LOCK_VENV)/bin/python -m pip install --quiet --upgrade pip "pip-tools==$(PIP_TOOLS_VERSION)"
	$(PIP_COMPILE) --output-file requirements.lock pyproject.toml
	$(PIP_COMPILE) --extra embedder --constraint requirements.lock --output-file requirements-embedder.lock pyproject.toml
	$(PIP_COMPILE) --extra dev --extra replicas --constraint requirements-embedder.lock --output-file requirements-dev.lock pyproject.toml
	$(PIP_COMPILE) --extra replicas --constraint requirements-dev.lock --output-file requirements-replicas.lock pyproject.toml

# --- housekeeping -------------------------------------------------------------

clean:
	rm -rf "$(VENV)" .mypy_cache .ruff_cache .pytest_cache build dist *.egg-info
	find . -path ./.git -prune -o -type d -name __pycache__ -prune -exec rm -rf {} +
