# Two commands a newcomer needs: `make serve` and `make test`.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
HOST ?= 127.0.0.1
PORT ?= 8080
DATA_DIR ?= ./data
# The simulated upstreams stand in for the vendors unless a vendor key is in the environment.
VENDOR_KEYS := $(OPENAI_API_KEY)$(ANTHROPIC_API_KEY)$(GEMINI_API_KEY)$(GOOGLE_API_KEY)$(MISTRAL_API_KEY)$(COHERE_API_KEY)$(CO_API_KEY)$(ELEVENLABS_API_KEY)
DEMO := $(if $(strip $(VENDOR_KEYS)),,--demo)

.PHONY: serve sim test lint typecheck unit bench bench-quick clean system-packages \
	test-system-packages voice-clients

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip

# Reinstall only when the dependency list changed. `make serve` runs the gateway with every
# extra (`[all]`: audio, files, exports, postgres); `pip install .` alone is the core
# (docs/operations.md, "Extras").
$(VENV)/.installed: pyproject.toml | $(BIN)/python
	$(BIN)/python -m pip install --quiet -e '.[all]'
	touch $@

$(VENV)/.installed-dev: pyproject.toml | $(BIN)/python
	$(BIN)/python -m pip install --quiet -e '.[dev]'
	touch $(VENV)/.installed $@

# The voice frameworks the Realtime tests drive, in a venv of their own (pyproject's
# `voice-clients` extra: they pin packages older than the gateway's).
VOICE_VENV := .venv-voice
$(VOICE_VENV)/.installed: pyproject.toml
	$(PYTHON) -m venv $(VOICE_VENV)
	$(VOICE_VENV)/bin/python -m pip install --quiet $$($(PYTHON) -c "import tomllib; \
		print(' '.join(tomllib.load(open('pyproject.toml', 'rb'))['project']['optional-dependencies']['voice-clients']))")
	touch $@

voice-clients: $(VOICE_VENV)/.installed

# Debian packages: the gateway's own (scripts/system-packages.txt: OCR language data), and
# for `make test` also the tests' (scripts/test-system-packages.txt: browser, Redis,
# PostgreSQL).
system-packages:
	@scripts/install-system-packages scripts/system-packages.txt

test-system-packages:
	@scripts/install-system-packages scripts/system-packages.txt scripts/test-system-packages.txt

serve: system-packages $(VENV)/.installed
	$(BIN)/gateway serve --host $(HOST) --port $(PORT) --data-dir $(DATA_DIR) $(DEMO)

sim: $(VENV)/.installed
	$(BIN)/gateway sim --host $(HOST) --port 9090

lint: $(VENV)/.installed-dev
	$(BIN)/ruff check gateway streams providers store tests bench
	$(BIN)/ruff format --check gateway streams providers store tests bench

typecheck: $(VENV)/.installed-dev
	$(BIN)/mypy

# Tests run in parallel processes (pytest-xdist); `make unit PYTEST_PARALLEL=-n0` runs them
# in one process. Three processes on two cores: many tests wait on sockets, subprocesses
# and timers, so a third process keeps the cores busy. Tests marked `alone` (a real
# process's shutdown timing or RSS) run afterwards, by themselves (exit 5: none selected, as with
# some PYTEST_ARGS). PYTEST_ARGS goes to both calls.
PYTEST_PARALLEL ?= -n 3
PYTEST_ARGS ?=
unit: $(VENV)/.installed-dev $(VOICE_VENV)/.installed
	GATEWAY_TEST_POSTGRES=required $(BIN)/pytest $(PYTEST_PARALLEL) -m "not alone" $(PYTEST_ARGS)
	GATEWAY_TEST_POSTGRES=required $(BIN)/pytest -m alone $(PYTEST_ARGS) || [ $$? -eq 5 ]

test: test-system-packages lint typecheck unit

bench: $(VENV)/.installed-dev
	$(BIN)/python -m bench

bench-quick: $(VENV)/.installed-dev
	$(BIN)/python -m bench --quick

clean:
	rm -rf $(VENV) .pytest_cache .mypy_cache .ruff_cache
