# Three entry points do all the set-up on a fresh machine:
#   make demo   - create .venv, install Hermes with PoCL, run the headless demo
#   make test   - create .venv, install Hermes with test extras, run ruff and the whole test suite,
#                 then the device suite on the test plug-in backend reference:0
#   make lab    - create .venv, install Hermes with JupyterLab, open the tutorials in notebooks/
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
LAB_SETTINGS := $(VENV)/share/jupyter/lab/settings
# Jupyter refuses to run as root (containers, CI) unless told to
ALLOW_ROOT := $(if $(filter 0,$(shell id -u)),--allow-root)

.PHONY: demo test lint env lab clean

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --upgrade pip

env: $(BIN)/python
	$(BIN)/pip install -e ".[dev]"

# the doctor first: what works on this machine, then the demo on what does
demo: env
	$(BIN)/hermes doctor
	$(BIN)/python -m hermes_nb.demo

lint: env
	$(BIN)/ruff check hermes_nb tests benchmarks
	$(BIN)/lint-imports

# then the device suite on reference:0, a NumPy-only plug-in backend (tests/plugins): ~15 s
# one pytest worker per core, each test file whole in one of them (its fixtures built once);
# a worker that dies (a native crash) ends the run at once instead of leaving it waiting
test: env lint
	$(BIN)/python -m pytest -n auto --dist loadfile --max-worker-restart=0
	HERMES_TEST_DEVICES=reference $(BIN)/python -m pytest tests/backend

# reinstalled only when pyproject.toml changes (the install is editable: code changes need none)
$(VENV)/.lab-installed: pyproject.toml | $(BIN)/python
	$(BIN)/pip install -e ".[lab]"
	touch $@

# the settings Binder uses too: no news or update checks, so the lab stays quiet offline
$(LAB_SETTINGS)/overrides.json: binder/overrides.json | $(BIN)/python
	mkdir -p $(LAB_SETTINGS)
	cp $< $@

# token authentication stays on: open the URL with ?token=... that the lab prints
lab: $(VENV)/.lab-installed $(LAB_SETTINGS)/overrides.json
	$(BIN)/jupyter lab --ip=127.0.0.1 --notebook-dir=notebooks $(ALLOW_ROOT)

clean:
	rm -rf $(VENV) build dist *.egg-info
