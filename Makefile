# Mnemo — developer tasks. `make help` lists them.
#
#   make test     lint + typecheck + tests (what CI runs, via .ci/run)
#   make run      the Telegram bot          make chat   the local console
#   make lock     re-resolve requirements*.lock against PyPI
#
# The venv is (re)built when pyproject.toml or requirements-dev.lock change.

SHELL := /bin/bash
.SHELLFLAGS := -eu -o pipefail -c
.DEFAULT_GOAL := help
.DELETE_ON_ERROR:

PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed

# Fails with one line unless $(1) is a Python >= 3.11.
define check_python
$(1) -c 'import sys; sys.exit(sys.version_info < (3, 11))' 2>/dev/null || { echo "error: Mnemo needs Python >= 3.11, but '$(1)' is: $$(command -v $(1) >/dev/null && $(1) -V 2>&1 | head -n1 || echo 'not found') (try: make PYTHON=python3.11 ...)" >&2; exit 1; }
endef

.PHONY: help install run chat doctor test lint fmt typecheck lock bench real-model-check clean

help:
	@echo "make install    create $(VENV) and install runtime + dev deps from requirements-dev.lock"
	@echo "make run        run the Telegram bot (python -m bot run)"
	@echo "make chat       chat with the bot in this terminal (python -m bot chat)"
	@echo "make doctor     check config, token, model and workspace"
	@echo "make test       lint, typecheck, then pytest (what CI runs)"
	@echo "make lint       ruff check + ruff format --check"
	@echo "make fmt        sort imports and format with ruff"
	@echo "make typecheck  mypy (strict, see pyproject.toml)"
	@echo "make lock       re-resolve requirements{,-embedder,-dev}.lock against PyPI"
	@echo "                (keeps current pins; 'make lock LOCK_ARGS=--upgrade' takes the newest)"
	@echo "make bench      run benchmarks/run_all.py if present"
	@echo "make real-model-check MODEL_GGUF=/path/to.gguf"
	@echo "                a real small model on this CPU through the bot (opt-in, minutes)"
	@echo "make clean      remove $(VENV) and caches"

# --- environment -----------------------------------------------------------

$(STAMP): pyproject.toml requirements-dev.lock
	@if [ ! -x "$(PY)" ]; then \
		$(call check_python,$(PYTHON)); \
		echo "creating $(VENV) with $$($(PYTHON) -V 2>&1)"; \
		$(PYTHON) -m venv "$(VENV)"; \
	fi
	@$(call check_python,$(PY))
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -r requirements-dev.lock
	$(PY) -m pip install --quiet --no-deps -e .
	@touch "$@"

install: $(STAMP)

# --- running ---------------------------------------------------------------

run: $(STAMP)
	$(PY) -m bot run

chat: $(STAMP)
	$(PY) -m bot chat

doctor: $(STAMP)
	$(PY) -m bot doctor

# --- checks ----------------------------------------------------------------

test: $(STAMP) lint typecheck
	$(PY) -m pytest -q

lint: $(STAMP)
	$(PY) -m ruff check .
	$(PY) -m ruff format --check .

fmt: $(STAMP)
	$(PY) -m ruff check --select I --fix .
	$(PY) -m ruff format .

typecheck: $(STAMP)
	$(PY) -m mypy

bench: $(STAMP)
	@if [ -f benchmarks/run_all.py ]; then \
		$(PY) benchmarks/run_all.py; \
	else \
		echo "no benchmarks yet (benchmarks/run_all.py is missing)"; \
	fi

# Opt-in, never in CI: llama.cpp's server (the xllamacpp wheel, installed on first use) with
# a GGUF you downloaded; scripts/real_model_check.py says which one fits a small CPU.
MODEL_GGUF ?=
XLLAMACPP_VERSION := 2026.10.11549

real-model-check: $(STAMP)
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

# --- housekeeping -------------------------------------------------------------

clean:
	rm -rf "$(VENV)" .mypy_cache .ruff_cache .pytest_cache build dist *.egg-info
	find . -path ./.git -prune -o -type d -name __pycache__ -prune -exec rm -rf {} +
