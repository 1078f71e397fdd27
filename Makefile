# The two commands a fresh machine needs: `make run` and `make test`.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
EXTRAS ?= dev
comma := ,
STAMP := $(VENV)/.installed-$(subst $(comma),-,$(EXTRAS))

.PHONY: run test fixtures-nosimd lint format bench mutants clean-venv

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip

$(STAMP): pyproject.toml | $(BIN)/python
	$(BIN)/python -m pip install --quiet -e '.[$(EXTRAS)]'
	touch $(STAMP)

# The main job: the quickstart sweep into the embedded SQLite MLflow store, then its report;
# then the same questions read from a deployment's logs (the committed example, docs/logs.md).
run: $(STAMP)
	$(BIN)/python -m experiments.run -m experiment=quickstart
	$(BIN)/python -m reports quickstart
	$(BIN)/python -m experiments.run experiment=live live.sessions=20
	$(BIN)/python -m experiments.analyze examples/session_log --out reports/out/analyze/example

# The suite on every core (pytest-xdist); a test file runs on one worker, so its
# module-scoped fixtures (a sweep, a tracking server, a Ray head) start once. One worker
# more than the cores: the service tests spend most of their time waiting on a server, a
# Ray head or a sweep's subprocess, and the extra worker runs other files meanwhile
# (2 cores, idle, same code, one run each: 555 s with 3 workers, 574 s with 2; later, with
# bytecode caches, 490 s with 3 and 545 s with 4; idle runs of one tree spread by about
# 60 s, so these gains are small and not established).
TEST_WORKERS ?= $(shell $(PYTHON) -c "import os; print(len(os.sched_getaffinity(0)) + 1)")
# Bytecode caches stay on for the suite even where the environment turns them off
# (PYTHONDONTWRITEBYTECODE=1, as in this project's sandbox): without them every worker
# rewrites every test module's asserts again (collecting took 16.7 s of CPU per worker
# without, 7.3 s with) and every sweep's processes compile procmem's modules again. The
# caches go to __pycache__ folders beside procmem's own sources (git-ignored). Whole suite,
# idle, 3 workers, one run each: 838 s of CPU without, 822 s with (499 and 490 s).
test: $(STAMP)
	env -u PYTHONDONTWRITEBYTECODE $(BIN)/python -m pytest -q -n $(TEST_WORKERS) --dist loadfile \
		--durations=15

# The fixture tests again with numpy's dispatched SIMD kernels disabled (baseline only):
# another summation order, as on another CPU; the fixtures' tolerance must absorb it.
FIXTURE_TESTS := tests/test_fixture_compare.py tests/experiments/test_quickstart_fixture.py \
	tests/simulators/test_confidence_pinned.py tests/simulators/test_loop_decisions.py
fixtures-nosimd: $(STAMP)
	@features="$$($(BIN)/python tools/simd_features.py)"; \
	echo "NPY_DISABLE_CPU_FEATURES=\"$$features\""; \
	NPY_DISABLE_CPU_FEATURES="$$features" $(BIN)/python -m pytest -q -n auto --dist loadfile \
		$(FIXTURE_TESTS)

lint: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .

format: $(STAMP)
	$(BIN)/ruff check --fix .
	$(BIN)/ruff format .

bench: $(STAMP)
	@for f in benchmarks/bench_*.py; do echo "== $$f"; $(BIN)/python $$f || exit 1; done

# Plant each mutant of tools/mutant_catalog.py in a copy of the tree and run its tests
# (several minutes; not part of `make test`). Last line: JSON with 0 survivors expected.
mutants: $(STAMP)
	$(BIN)/python tools/mutants.py --jobs 2

clean-venv:
	rm -rf $(VENV)
