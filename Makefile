# The README's two commands: `make demo` and `make test`. Both set up what they need.
# After set-up, `make test-unit` is the inner loop: lint and the unit tests, on every core.
SHELL := /bin/bash
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
# Test processes: most integration tests wait (Wait states, boots, grace periods), so twice the cores keeps 2 busy.
TEST_WORKERS ?= 4

.PHONY: demo test test-unit lint venv clean

# Create the virtualenv and install the pinned dependencies; re-runs only when they change.
$(STAMP): requirements.txt requirements-dev.txt pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --disable-pip-version-check -r requirements-dev.txt
	$(BIN)/pip install --quiet --disable-pip-version-check --no-deps --no-build-isolation -e .
	touch $(STAMP)

venv: $(STAMP)

## demo: run the main job end to end in the local sandbox
demo: $(STAMP)
	$(BIN)/python -m clm_sandbox.demo

## test: lint and run the whole test suite in $(TEST_WORKERS) processes (each with its own sandbox); prints its 15
## slowest tests, then the outcome
test: $(STAMP)
	tools/install-chromium
	$(BIN)/ruff check .
	@# The outcome is repeated last, after pytest has exited: nothing a test left running can print after it.
	$(BIN)/python -m pytest -n $(TEST_WORKERS) --dist worksteal --durations=15 $(PYTEST_ARGS) 2>&1 | tee .pytest.log; \
	rc=$${PIPESTATUS[0]}; \
	echo '--- test outcome ---'; grep -aE '^(FAILED|ERROR) |^=+ .* in [0-9.]+s' .pytest.log; \
	if [ $$rc -eq 5 ]; then echo 'no tests collected'; exit 0; fi; exit $$rc

## test-unit: the inner loop: lint and the unit tests (tests/unit) on every core (pytest-xdist)
test-unit: lint
	$(BIN)/python -m pytest tests/unit -q -n auto $(PYTEST_ARGS)

lint: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .

clean:
	rm -rf $(VENV) cdk.out tools/cdk/node_modules .pytest_cache .ruff_cache .hypothesis .pytest.log
