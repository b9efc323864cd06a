# The two commands of the README. Both are idempotent: a second run reuses .venv.
PY ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
TEST_STAMP := $(VENV)/.installed-test
export QT_QPA_PLATFORM_PLUGIN_PATH :=

.PHONY: run test venv deps pull-default check-system package bench clean screenshots compile

$(BIN)/python:
	$(PY) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip

$(STAMP): $(BIN)/python pyproject.toml constraints.txt
	$(BIN)/pip install -q -c constraints.txt -e .
	touch $@

$(TEST_STAMP): $(STAMP)
	$(BIN)/pip install -q -c constraints.txt -e '.[test]'
	touch $@

check-system:
	@$(PY) packaging/check_system.py

pull-default: $(STAMP)
	$(BIN)/python -m explorer pull smollm2-135m --quiet || echo "Could not pull smollm2-135m; the app will open the bundled model instead."

# Bytecode for the project's own modules, as a wheel install would have it: an editable install leaves
# them to be compiled at every start where PYTHONDONTWRITEBYTECODE is set (0.13 s of each cold start).
compile: $(STAMP)
	@$(BIN)/python -m compileall -q explorer > /dev/null

run: check-system $(STAMP) pull-default compile
	$(BIN)/transformer-explorer

# The real models of the realmodel tests, pulled into the folder tests/isolation.py links the test store from.
# Gemma is pulled for testing with its terms accepted; it is never committed or redistributed.
# Outside CI a failed pull only warns (those tests skip); in CI (CI set) it fails the run.
TEST_MODELS := $(CURDIR)/.cache/test-models
PULL_TEST := TRANSFORMER_EXPLORER_HOME=$(TEST_MODELS) $(BIN)/python -m explorer pull --quiet
PULL_FAILED := { [ -z "$$CI" ] && echo "not pulled: its realmodel tests will be skipped (in CI they fail)"; }

# The suite runs in TEST_WORKERS processes (pytest-xdist), a test file whole in one of them (its module's fixtures
# made once), each on one torch thread: two processes of two threads on CI's two cores stall each other.
TEST_WORKERS ?= 2

test: check-system $(TEST_STAMP)
	$(PULL_TEST) smollm2-135m || $(PULL_FAILED)
	$(PULL_TEST) gemma3-270m --accept-license || $(PULL_FAILED)
	$(PULL_TEST) minilm-l6 || $(PULL_FAILED)
	$(BIN)/lint-imports
	$(BIN)/ruff check .
	QT_QPA_PLATFORM=offscreen TRANSFORMER_EXPLORER_TEST_MODELS=$(TEST_MODELS) OMP_NUM_THREADS=1 \
	  TRANSFORMER_EXPLORER_REQUIRED_MODELS="$${CI:+smollm2-135m gemma3-270m minilm-l6}" \
	  $(BIN)/python -m pytest -q -n $(TEST_WORKERS) --dist loadfile

bench: $(TEST_STAMP) compile
	$(BIN)/python bench/bench_engine.py --model smollm2-135m
	$(BIN)/python bench/bench_trace_memory.py --model smollm2-135m
	$(BIN)/python bench/bench_app.py

package: $(TEST_STAMP)
	bash packaging/build.sh

screenshots: $(STAMP)
	$(BIN)/python packaging/screenshots.py

clean:
	rm -rf $(VENV) build dist
