# contextlab — the two commands of the README are `make run` and `make test`; `make help` lists
# every target (the text after `##` on a target's line).
SHELL := /bin/bash
.DEFAULT_GOAL := help
VENV := .venv
PY := $(VENV)/bin/python
ORACLE := tests/conformance/oracle
ORACLE_1_6 := tests/conformance/oracle-1.6.0
ORACLE_0_73 := tests/conformance/oracle-0.73.1
TEST_DATABASE_URL ?= postgres://postgres@127.0.0.1:5432/contextlab
TEST_REDIS_URL ?= redis://127.0.0.1:6379/0
PORT ?= 8000

.PHONY: help install install-dev oracle oracle-1.6.0 oracle-0.73.1 oracle-1.x-variants system-deps run worker test test-fast lint bench bench-load dialect-data dialect-data-1x dialect-data-0.73 dialect-data-releases matrix soak

help: ## list the targets
	@grep -E '^[a-zA-Z0-9_.-]+:.*## ' $(MAKEFILE_LIST) | sed -e 's/\$$(PORT)/$(PORT)/g' \
		| awk -F ':.*## ' '{ printf "  make %-22s %s\n", $$1, $$2 }'

$(VENV)/.runtime: requirements.txt
	test -x $(PY) || $$(tools/find-python) -m venv $(VENV)
	$(PY) -m pip install -q --disable-pip-version-check -r requirements.txt
	touch $@

$(VENV)/.dev: requirements-dev.txt requirements.txt $(VENV)/.runtime
	$(PY) -m pip install -q --disable-pip-version-check -r requirements-dev.txt
	touch $@

install: $(VENV)/.runtime ## .venv with the pinned runtime requirements

install-dev: $(VENV)/.dev oracle oracle-1.6.0 oracle-0.73.1 oracle-1.x-variants system-deps ## what the tests need: dev requirements, the Pi oracles (npm), Chromium (apt)

# The real Pi 0.80.2, pinned by package-lock.json, run only by tests and benchmarks.
oracle: $(ORACLE)/node_modules/.installed ## the real Pi 0.80.2 for the tests (npm ci)
$(ORACLE)/node_modules/.installed: $(ORACLE)/package.json $(ORACLE)/package-lock.json
	cd $(ORACLE) && npm ci --ignore-scripts --no-audit --no-fund --loglevel=error
	touch $@

# The real Pi 1.6.0 (1.x dialect) and 0.73.1 (0.73 dialect), pinned the same way.
oracle-1.6.0: $(ORACLE_1_6)/node_modules/.installed ## the real Pi 1.6.0 for the tests (npm ci)
$(ORACLE_1_6)/node_modules/.installed: $(ORACLE_1_6)/package.json $(ORACLE_1_6)/package-lock.json
	cd $(ORACLE_1_6) && npm ci --ignore-scripts --no-audit --no-fund --loglevel=error
	touch $@

# Pi 1.0.3, 1.3.0 and 1.5.2, for tests/conformance/test_pi_1x_variants.py: each older pi-ai
# generation's request body and clamp checked against the engine's variant.
ORACLES_1X_VARIANTS := tests/conformance/oracle-1.0.3 tests/conformance/oracle-1.3.0 tests/conformance/oracle-1.5.2
oracle-1.x-variants: $(addsuffix /node_modules/.installed,$(ORACLES_1X_VARIANTS)) ## Pi 1.0.3, 1.3.0, 1.5.2 (npm ci)
tests/conformance/oracle-%/node_modules/.installed: tests/conformance/oracle-%/package.json tests/conformance/oracle-%/package-lock.json
	cd tests/conformance/oracle-$* && npm ci --ignore-scripts --no-audit --no-fund --loglevel=error
	touch $@

oracle-0.73.1: $(ORACLE_0_73)/node_modules/.installed ## the real Pi 0.73.1 for the tests (npm ci)
$(ORACLE_0_73)/node_modules/.installed: $(ORACLE_0_73)/package.json $(ORACLE_0_73)/package-lock.json
	cd $(ORACLE_0_73) && npm ci --ignore-scripts --no-audit --no-fund --loglevel=error
	touch $@

system-deps: ## Debian's chromium, ripgrep and fd-find (apt)
	tools/install-system-deps

# Dashboard with a demo session on embedded defaults (SQLite, in-process jobs; no PostgreSQL/Redis).
# Single-user: DEBUG on, and the dashboard may read the user's own Pi agent dir (prompt layers).
AGENT_DIR := $(or $(PI_CODING_AGENT_DIR),$(HOME)/.pi/agent)
RUN_ENV := DEBUG=true CONTEXTLAB_SERVER_ROOTS=$(or $(CONTEXTLAB_SERVER_ROOTS),$(AGENT_DIR))
# The port is checked first: a busy one stops here, before migrate and before demo changes the
# demo password.
run: install ## the dashboard at http://127.0.0.1:$(PORT)/ with a demo session (another port: PORT=8001 make run)
	@$(PY) -m contextlab preflight port $(PORT)
	$(RUN_ENV) $(PY) manage.py migrate --noinput
	$(RUN_ENV) $(PY) manage.py demo
	$(RUN_ENV) $(PY) manage.py runserver 127.0.0.1:$(PORT)

# Refuses to start without REDIS_URL or when that Redis does not answer: a worker on Celery's
# memory:// broker would never receive a job.
worker: install ## a Celery worker for jobs (needs REDIS_URL: the web server's Redis)
	@$(PY) -m contextlab preflight broker
	$(VENV)/bin/celery -A contextlab worker --loglevel=INFO --concurrency=2

# Every test, against the real PostgreSQL and Redis on 127.0.0.1, the real Pi and a real browser.
# Each run names its test databases and Redis keys after its own id (tests/settings.py): two runs
# at once on one machine never touch each other's, nor anything else on the servers.
test: install-dev lint ## every test (PostgreSQL, Redis, the Pi oracles, Chromium; see the README)
	DATABASE_URL=$(TEST_DATABASE_URL) REDIS_URL=$(TEST_REDIS_URL) $(PY) -m pytest -n 2 $(PYTEST_ARGS)

# No Node, no Chromium: the differential tests against the real Pi and the browser tests are left
# out (the pytest markers `oracle` and `browser`; tests/conftest.py marks by fixture too), and so
# is the fault injection (`faults`: PostgreSQL stopped, workers killed; minutes of waiting).
test-fast: $(VENV)/.dev ## the tests without the Pi oracles, the browser and the fault injection (a few minutes)
	DATABASE_URL=$(TEST_DATABASE_URL) REDIS_URL=$(TEST_REDIS_URL) $(PY) -m pytest -n 2 \
		-m "not oracle and not browser and not faults" $(PYTEST_ARGS)

# Part of `make test`: ruff (lint and format) over the project, mypy strict over the whole package
# (the engine and the Django apps, with django-stubs' plugin: pyproject.toml).
lint: $(VENV)/.dev ## ruff (lint, format) and mypy strict (the engine and the apps)
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .
	$(VENV)/bin/mypy contextlab

# The extension's soak (issue 17): SOAK_RUNS (100) real `pi -p` runs, 0.80.2 and 1.6.0, against a
# live contextlab that is stopped, SIGSTOPped, killed -9, answers 500 or slowly, refuses the token;
# prints its figures (the line starting SOAK). Minutes long, not part of `make test` (its 20-run
# version is).
soak: $(VENV)/.dev oracle oracle-1.6.0 ## the extension's soak: 100 real pi -p runs against a failing server
	CONTEXTLAB_SOAK_RUNS=$(or $(SOAK_RUNS),100) DATABASE_URL=$(TEST_DATABASE_URL) REDIS_URL=$(TEST_REDIS_URL) $(PY) -m pytest -p no:xdist -p no:cacheprovider -s -q tests/integrations/test_pi_soak.py

# On the test settings (DEBUG off, a test-only key, plain-HTTP cookies), like the tests.
bench: install-dev ## the benchmarks (bench/), against PostgreSQL and Redis
	DJANGO_SETTINGS_MODULE=tests.settings DATABASE_URL=$(TEST_DATABASE_URL) REDIS_URL=$(TEST_REDIS_URL) $(PY) -m bench

# The load test (locust, gunicorn 4 workers, PostgreSQL): minutes long, not part of test/bench.
# Locust lives in its own virtualenv so its dependencies never touch the app's.
.venv-load/bin/locust: bench/requirements-load.txt
	$$(tools/find-python) -m venv .venv-load
	.venv-load/bin/pip install -r bench/requirements-load.txt
	touch $@

bench-load: install .venv-load/bin/locust ## the load test (locust, gunicorn): minutes long
	DATABASE_URL=$(TEST_DATABASE_URL) $(PY) -m bench.load $(LOAD_ARGS)

# 0.73.1's, 0.80.2's and 1.6.0's texts are their rows of the release table (each text is stored
# once): these targets regenerate the table (tests/conformance/test_dialect_data.py and
# test_pi_0_73.py check the rows against the pinned oracles).
dialect-data dialect-data-1x dialect-data-0.73: dialect-data-releases ## regenerate the release table (the 0.73.1, 0.80.2 and 1.6.0 texts are its rows)

# Regenerate contextlab/pi/dialects/releases_data.py from every release 0.70.0-1.6.0, installed
# pinned outside the repository ($(PI_RELEASES)) by tools/pi_releases.py.
PI_RELEASES ?= /work/pi-releases
dialect-data-releases: $(VENV)/.dev ## regenerate the release table from every Pi release 0.70.0-1.6.0
	PI_RELEASES=$(PI_RELEASES) $(PY) tools/pi_releases.py install
	PI_RELEASES=$(PI_RELEASES) $(PY) tools/gen_release_table.py > /tmp/releases_data.py
	mv /tmp/releases_data.py contextlab/pi/dialects/releases_data.py

# The release matrix: records every release not yet in $(PI_MATRIX_DIR) (install, record, check)
# and prints release | requests matched by default | with the chosen release | first difference.
PI_MATRIX_DIR ?= /work/pi-matrix
matrix: $(VENV)/.dev ## record and check every Pi release (cached), print the matrix
	PI_RELEASES=$(PI_RELEASES) PI_MATRIX_DIR=$(PI_MATRIX_DIR) $(PY) -m tests.conformance.matrix $(RELEASES)
