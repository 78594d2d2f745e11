# linklab: two commands on a fresh Debian 12 machine.
#   make demo   the main job (installs what it needs first)
#   make test   unit + integration tests (real middlewares, namespaces; needs root)
#   make test-unit  the quick check: no root, no native build (the venv only)
SHELL := /bin/bash
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.linklab-setup-stamp
# the demo needs only what it uses (setup.sh's DEMO_PACKAGES, the venv, the probes, the
# emulator): its own stamp; make test (and make setup) installs and builds everything
DEMO_STAMP := $(VENV)/.linklab-setup-demo-stamp
# the unit tests need the venv alone: no apt tools, no native build, no root
VENV_STAMP := $(VENV)/.linklab-setup-venv-stamp
NATIVE_SOURCES := $(shell find probes emu ns3 -type f \( -name '*.cc' -o -name '*.cpp' -o -name '*.hpp' -o -name '*.h' -o -name '*.idl' -o -name 'CMakeLists.txt' -o -name '*.rs' -o -name 'Cargo.toml' -o -name 'Cargo.lock' \) 2>/dev/null)

.PHONY: setup demo test test-unit lint bench docs cli-reference clean-build

$(STAMP): scripts/setup.sh pyproject.toml $(NATIVE_SOURCES)
	bash scripts/setup.sh
	@touch $(STAMP)

$(DEMO_STAMP): scripts/setup.sh pyproject.toml $(NATIVE_SOURCES)
	LINKLAB_SETUP_ONLY=demo bash scripts/setup.sh
	@touch $(DEMO_STAMP)

$(VENV_STAMP): scripts/setup.sh pyproject.toml
	LINKLAB_SETUP_ONLY=venv bash scripts/setup.sh
	@touch $(VENV_STAMP)

setup: $(STAMP)

demo: $(DEMO_STAMP)
	bash scripts/demo.sh

# Tests write bytecode caches (__pycache__, ignored by git) even where the environment
# asks Python not to (PYTHONDONTWRITEBYTECODE): hundreds of tests start `linklab`, and
# each start would compile every module again (make test-unit: 82 s -> 72 s here).
PYTEST := env -u PYTHONDONTWRITEBYTECODE $(PY) -m pytest

# Three passes. Every test not marked integration (no root, no namespaces; the few timed
# ones wait for what they time to start) runs one file per worker, a worker per CPU. Then
# the integration tests on two workers, a file's tests on one (its module fixtures once): they
# mostly wait on links, discovery and cells, each checking only what its own run made.
# Last, one at a time, the integration tests marked alone: the ones that time something
# (the relay, a delay, ns-3 in real time), load the CPU, or check that nothing changed
# machine-wide (the root namespace, /tmp, every process), which a test beside them would
# upset.
# The native Zenoh probe is built here, on the tests' first need (not by setup: cargo
# builds zenoh in minutes, once per machine, cached in ~/.cache/linklab/probe-zenoh), so
# no test waits for it inside its own timeout.
test: $(STAMP)
	$(VENV)/bin/ruff check src tests
	bash scripts/zenoh-probe-build.sh
	$(PYTEST) -m "not integration" -n auto --dist loadfile
	$(PYTEST) -m "integration and not alone" -n 2 --dist loadfile
	$(PYTEST) -m "integration and alone"

# the unit tier (tests/conftest.py): no test marked integration, native or slow, property
# tests at a few examples, one worker per CPU (pytest-xdist); about a minute. make test
# runs every test, each at its full count.
test-unit: $(VENV_STAMP)
	$(PYTEST) --tier=unit -n auto

lint: $(STAMP)
	$(VENV)/bin/ruff check src tests

# the docs site (mkdocs.yml): strict, so a broken link or anchor fails; into build/site
docs: $(DEMO_STAMP)
	$(VENV)/bin/mkdocs build --strict

# docs/reference/cli.md from the command tree (tests/test_docs_site.py checks it is current)
cli-reference: $(DEMO_STAMP)
	$(PY) scripts/cli_reference.py

bench: $(STAMP)
	@echo "benchmarks: see docs/RESULTS.md for each command"

clean-build:
	rm -rf build
