# The two commands of the README: `make run` and `make test`. Both begin with
# `make setup`, which is idempotent: it only redoes what changed.
#
# Settings: manage.py picks config.settings.local (its default), and so do setup, demo and run
# (the Procfile names it for each process); `make test` runs pytest, which picks
# config.settings.test (pyproject.toml). Nothing here exports DJANGO_SETTINGS_MODULE: pytest would
# take it over its own.

VENV ?= .venv
PY := $(VENV)/bin/python
PIP := $(VENV)/bin/pip
PYTHON ?= python3

.PHONY: setup run demo test test-quick flake lint audit bench drill migrate static clean browser image

setup: $(VENV)/.installed .env node_modules/.installed browser migrate static

$(VENV)/.installed: requirements/base.txt requirements/dev.txt
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PIP) install --quiet --upgrade pip
	$(PIP) install --quiet -r requirements/base.txt -r requirements/dev.txt
	touch $@

.env:
	cp .env.example .env

# The host's guest library, served as a static file (not committed).
node_modules/.installed: package.json package-lock.json
	npm ci --no-audit --no-fund --loglevel=error
	touch $@

# Debian's Chromium for the browser tests (Playwright's own download does not work offline).
browser:
	@command -v chromium >/dev/null 2>&1 || { \
	  if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then \
	    (apt-get install -y -qq chromium >/dev/null 2>&1 || { apt-get update -qq && apt-get install -y -qq chromium >/dev/null; }) ; \
	  else echo "chromium is not installed: the browser tests will be skipped (apt-get install chromium)"; fi; }

migrate: $(VENV)/.installed .env
	$(PY) manage.py migrate --no-input -v 0

# The static files gathered into staticfiles/, as a production image would (WhiteNoise serves them).
static: $(VENV)/.installed .env node_modules/.installed
	$(PY) manage.py collectstatic --no-input -v 0

# Demo data: the sandbox's lender, loans and products; our catalog filled from the sandbox's
# product listing (the service is not up yet: the periodic pull keeps it in step later), the
# appraisal's turnaround and staff address; the partner account its demo user signs in with (the
# same password the sandbox user has configured); and an admin login for the staff who work
# orders, created once (a rerun keeps its password and sessions; refused outside local runs: its
# password is public).
demo: setup
	$(PY) manage.py sandbox_seed --listing var/sandbox-products.json
	$(PY) manage.py products_import var/sandbox-products.json
	$(PY) manage.py product_settings appraisal --turnaround-hours 48 --staff-email appraisals@partner.example
	@printf 'demo-password-1\n' | $(PY) manage.py partner_account lender.demo --company DEMO01
	@printf 'staff-demo-password-1\n' | $(PY) manage.py staff_account staff.demo --email staff.demo@partner.example --keep-existing
	$(PY) manage.py connection_demo appraisal

# The processes of the Procfile under honcho; bin/run prints the links last, once each answers and
# the worker says it is ready (after its banner), and ends with status 0 on Ctrl-C (a stop asked for
# is no error of make's).
run: demo
	@rm -rf var/metrics  # the figures of this run's processes only (Prometheus multiprocess mode)
	@$(PY) bin/run $(VENV)/bin/honcho Procfile http://127.0.0.1:8000

# The suite in parallel (pytest-xdist): PYTEST_WORKERS processes, each with its own database, queue,
# cache keys and folders (config/settings/test.py); the tests that do not share the machine (the
# image, the drills) one after another on one worker (tests/conftest.py, --dist loadgroup).
# Two cores, 3 workers: much of the suite waits on sockets and subprocesses, and the three kept
# busy 2.84 of 3 on average (docs/testing.md); 0 runs serially in this process.
PYTEST_WORKERS ?= 3
PYTEST_XDIST = -n $(PYTEST_WORKERS) --dist loadgroup

# The tests whose behaviour depends on the broker, run again on RabbitMQ when it answers: a killed
# worker's unacknowledged message, retries published with a countdown, the relay's batches and a
# broker failing midway, the whole pipeline with a worker, a broker down at receipt, and /healthz's
# broker check. The rest publish nothing, or record what they publish (tasks_sent), or run the same
# code whatever carries the message: a second run on RabbitMQ would check nothing new.
QUEUE_TESTS = tests/fulfillment/test_worker_killed.py tests/fulfillment/test_task_retries.py \
	tests/inbox/test_relay.py \
	tests/fulfillment/test_pipeline.py::test_typical_sequence_from_webhook_to_request_completed \
	tests/fulfillment/test_pipeline.py::test_injected_503_and_429_then_success \
	tests/fulfillment/test_pipeline.py::test_broker_down_at_receipt_then_handed_over_by_the_relay \
	tests/core/test_healthz.py::test_healthz_up

# Everything, as CI runs it; the 30 slowest tests are listed at the end (docs/testing.md).
test: setup
	@eval "$$(bin/test-services)"; \
	  echo "make test: database $${DATABASE_URL:-sqlite (default)}, broker $${CELERY_BROKER_URL:-SQLite (default)}, $(PYTEST_WORKERS) workers"; \
	  $(VENV)/bin/pytest $(PYTEST_XDIST) --durations=30 $(PYTEST_ARGS) || exit 1; \
	  if [ -n "$${RABBITMQ_URL:-}" ] && [ -z "$(PYTEST_ARGS)" ]; then \
	    echo "make test: the queue tests again on RabbitMQ ($${RABBITMQ_URL%%@*}@...)"; \
	    CELERY_BROKER_URL="$$RABBITMQ_URL" $(VENV)/bin/pytest $(PYTEST_XDIST) $(QUEUE_TESTS) || exit 1; \
	  else echo "make test: RabbitMQ not answering on 127.0.0.1:5672, its run skipped"; fi

# The quick loop while working: the unit tests and those on the fake platform, without a live server,
# a worker, a browser, the image, a drill or Django started cold in another process (the few settings and
# preflight tests that need one). `make test` runs everything.
QUICK_MARKERS = not live and not worker and not browser and not image and not drill and not cold_start
test-quick: setup
	@eval "$$(bin/test-services)"; \
	  $(VENV)/bin/pytest $(PYTEST_XDIST) -m "$(QUICK_MARKERS)" $(PYTEST_ARGS)

# The tests with live workers, browsers and drills, FLAKE_ROUNDS times over (each round a fresh run,
# its results in var/flake/): how often each test failed, and a failure if any did.
FLAKE_ROUNDS ?= 20
FLAKE_MARKERS ?= worker or browser or drill
flake: setup
	@rm -rf var/flake && mkdir -p var/flake
	@eval "$$(bin/test-services)"; \
	  for round in $$(seq 1 $(FLAKE_ROUNDS)); do \
	    $(VENV)/bin/pytest $(PYTEST_XDIST) -q -m "$(FLAKE_MARKERS)" --junitxml=var/flake/round-$$round.xml \
	      $(PYTEST_ARGS) >var/flake/round-$$round.log 2>&1; \
	    echo "make flake: round $$round of $(FLAKE_ROUNDS): $$(tail -1 var/flake/round-$$round.log)"; \
	  done
	@$(PY) bin/flake-count var/flake/round-*.xml

lint: $(VENV)/.installed
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .

# Known vulnerabilities of the pinned dependencies: pip-audit over requirements/base.txt and dev.txt
# (the pins themselves, not whatever the venv holds) and npm audit over package-lock.json (the host's
# guest library). Both ask an advisory database online: when it cannot be reached the target fails
# and says so, it never passes in silence (docs/security.md: keeping the pins current).
audit: $(VENV)/.installed node_modules/.installed
	@$(VENV)/bin/pip-audit --strict --disable-pip --no-deps --progress-spinner off \
	    --requirement requirements/base.txt --requirement requirements/dev.txt \
	  || { echo "make audit: pip-audit failed: a vulnerable pin (listed above) or no advisory database reached"; exit 1; }
	@npm audit --omit=dev \
	  || { echo "make audit: npm audit failed: a vulnerable package (listed above) or no registry reached"; exit 1; }
	@echo "make audit: no known vulnerability in the pinned dependencies"

# The benchmarks and the drills, from the one table in bench/run.py (`bench/run.py --list`): all of
# them, or some with ARGS, e.g. `make bench ARGS="--only intake,latency"`. Both need PostgreSQL
# and Redis; the drill restarts the machine's PostgreSQL.
bench: setup
	$(PY) bench/run.py $(ARGS)

drill: setup
	$(PY) bench/run.py --drills $(ARGS)

# The application's image (Containerfile), with podman: IMAGE names it, BASE_IMAGE its base (on a
# machine that reaches no registry: BASE_IMAGE=$$(bin/image-base), a local stand-in).
IMAGE ?= localhost/partner:latest
image: node_modules/.installed
	podman build --format docker $(if $(BASE_IMAGE),--build-arg BASE_IMAGE=$(BASE_IMAGE)) -t $(IMAGE) .

clean:
	rm -rf var db.sqlite3 staticfiles
