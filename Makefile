# Two commands do all set-up on a fresh machine with only python3:
#   make demo   - venv, install, real LiteLLM proxy on 127.0.0.1, replay a built-in agent session
#   make test   - venv, install, the default test run
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
export LITELLM_LOCAL_MODEL_COST_MAP := True
export PIP_DISABLE_PIP_VERSION_CHECK := 1

.PHONY: install demo test test-slow test-fast fuzz lint bench clean

$(BIN)/.installed: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[dev]'
	touch $@

install: $(BIN)/.installed

demo: install
	$(BIN)/litellm-budget demo --config examples/config.yaml

# Workers for the default run: most of its time is a test waiting on a proxy it started, so two
# workers keep two cores busy. A file stays on one worker (its module-scoped proxy starts once).
WORKERS ?= 2

# The default run: everything but the few slow end-to-end cases (marked `slow`).
test: install
	$(BIN)/python -m pytest -m "not slow" -n $(WORKERS) --dist loadfile

# The slow end-to-end cases the default run leaves out; CI (.ci/run) runs them after `make test`.
test-slow: install
	$(BIN)/python -m pytest -m slow

# The inner loop (about two minutes on two cores): everything but the real proxy, subprocesses and session replays.
test-fast: install
	$(BIN)/python -m pytest -m "not proxy and not subprocess and not sessions"

# Property tests on fresh random examples (the default run repeats the same ones).
fuzz: install
	HYPOTHESIS_PROFILE=fuzz $(BIN)/python -m pytest tests/core/test_properties.py

lint: install
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/mypy

bench: install
	$(BIN)/python benchmarks/bench_fit.py

clean:
	rm -rf $(VENV) build dist *.egg-info

# The wheel the README's Install section installs: dist/litellm_budget-VERSION-py3-none-any.whl.
.PHONY: wheel
wheel: install
	$(BIN)/python -m pip wheel --quiet --no-deps -w dist .
