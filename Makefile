# a2a-hub — the two commands that matter: `make demo` and `make test`.
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin

.PHONY: demo test lint format bench clean

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip

$(VENV)/.installed: pyproject.toml | $(BIN)/python
	$(BIN)/pip install --quiet -e .
	@touch $@

$(VENV)/.installed-dev: pyproject.toml | $(BIN)/python
	$(BIN)/pip install --quiet -e '.[dev,postgres]'
	@touch $@ $(VENV)/.installed

## demo: serve the echo agent and send it one message (the debate demo comes later)
demo: $(VENV)/.installed
	$(BIN)/python scripts/demo_echo.py

## test: lint, type-check and run the whole suite
test: $(VENV)/.installed-dev lint
	$(BIN)/pytest -q

lint: $(VENV)/.installed-dev
	$(BIN)/ruff check src tests scripts
	$(BIN)/ruff format --check src tests scripts
	$(BIN)/mypy

format: $(VENV)/.installed-dev
	$(BIN)/ruff format src tests scripts
	$(BIN)/ruff check --fix src tests scripts

## bench: nothing measured yet; the benchmark against the official SDK is issue 7
bench:
	@echo "make bench: no benchmark has been written yet — nothing is measured."

clean:
	rm -rf $(VENV) .a2a-hub .pytest_cache .mypy_cache .ruff_cache
