# Two commands do all the set-up on a fresh machine: `make run` and `make test`.
SHELL := /bin/bash
PYTHON ?= python3.11
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
# Debian packages the sandbox and the end-to-end tests need (cmake, g++: the llama-cpp-python build;
# fonts-dejavu-core: the PDF report's font, with Greek, maths and arrows; fonts-wqy-microhei, 1.6 MB: its
# Chinese, Japanese and Korean; fonts-symbola, 1.3 MB: its emoji and other symbols).
APT_PACKAGES := bubblewrap util-linux postgresql curl chromium fonts-noto-color-emoji fonts-dejavu-core \
	fonts-wqy-microhei fonts-symbola cmake g++

.PHONY: run run-llm llm-local test test-all system-deps install ingest lint bench clean

run: install system-deps
	bash scripts/run-local.sh

# LLM mode against a real small model served on loopback (see README, "LLM mode").
run-llm: install system-deps llm-local
	bash scripts/run-llm.sh

llm-local: install $(VENV)/.llm-local

$(VENV)/.llm-local: scripts/install-llm-local.sh
	bash scripts/install-llm-local.sh
	touch $@

test: install system-deps llm-local
	$(BIN)/lint-imports --no-cache
	$(BIN)/python -m pytest -q

test-all: install system-deps
	$(BIN)/python -m pytest -q -m ""

install: $(STAMP)

# torch is installed first and pinned: an unpinned torch pulls a multi-GB CUDA build.
$(STAMP): pyproject.toml
	@command -v $(PYTHON) >/dev/null || { echo "error: $(PYTHON) not found; install Python 3.11"; exit 1; }
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip
	$(BIN)/python -m pip install -q torch==2.13.0
	$(BIN)/python -m pip install -q -e '.[dev]'
	touch $(STAMP)

system-deps:
	@bash scripts/system-deps.sh $(APT_PACKAGES)

ingest: install
	$(BIN)/interviewer ingest

lint: install
	$(BIN)/ruff check .
	$(BIN)/mypy

bench: install system-deps llm-local
	for f in bench/bench_*.py; do echo "== $$f"; $(BIN)/python $$f || exit 1; done

clean:
	rm -rf data .pytest_cache
