# Two entry points do all the set-up on a fresh machine:
#   make demo   - create .venv, install Hermes with PoCL, run the headless demo
#   make test   - create .venv, install Hermes with test extras, run ruff and the whole test suite
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin

.PHONY: demo test lint env clean

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --upgrade pip

env: $(BIN)/python
	$(BIN)/pip install -e ".[dev]"

demo: env
	$(BIN)/python -m hermes_nb.demo

lint: env
	$(BIN)/ruff check hermes_nb tests benchmarks

test: env lint
	$(BIN)/python -m pytest

clean:
	rm -rf $(VENV) build dist *.egg-info
