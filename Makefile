# linklab: two commands on a fresh Debian 12 machine.
#   make demo   the main job (installs what it needs first)
#   make test   unit + integration tests (real middlewares, namespaces; needs root)
SHELL := /bin/bash
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.linklab-setup-stamp
# the demo needs neither the Kubernetes control plane nor its build (minutes of Go):
# its own stamp, set up without them; make test (and make setup) builds everything
DEMO_STAMP := $(VENV)/.linklab-setup-demo-stamp
NATIVE_SOURCES := $(shell find probes emu ns3 -type f \( -name '*.cc' -o -name '*.cpp' -o -name '*.hpp' -o -name '*.h' -o -name '*.idl' -o -name 'CMakeLists.txt' -o -name '*.rs' -o -name 'Cargo.toml' -o -name 'Cargo.lock' \) 2>/dev/null)

.PHONY: setup demo test test-unit lint bench docs cli-reference clean-build

$(STAMP): scripts/setup.sh pyproject.toml $(NATIVE_SOURCES)
	bash scripts/setup.sh
	@touch $(STAMP)

$(DEMO_STAMP): scripts/setup.sh pyproject.toml $(NATIVE_SOURCES)
	LINKLAB_SKIP_K8S=1 bash scripts/setup.sh
	@touch $(DEMO_STAMP)

setup: $(STAMP)

demo: $(DEMO_STAMP)
	bash scripts/demo.sh

test: $(STAMP)
	$(VENV)/bin/ruff check src tests
	$(PY) -m pytest

test-unit: $(STAMP)
	$(PY) -m pytest -m "not integration"

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
