# Every target works as the first command typed on a fresh machine with Python 3.11:
# it creates .venv and installs what it needs (re-installing only when pyproject.toml changes).
PYTHON ?= $(shell command -v python3.11 || command -v python3)
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

# The floors of pyproject.toml, proved: .venv-lowest holds the lowest versions it allows of our
# direct dependencies (uv's lowest-direct resolution; what they need in turn at its newest), and
# runs the in-process tests of the files below (the imports, the runner's flows, both stores, the
# templates, LangChain agents, the HTTP API) plus the README's commands as processes (the CLI).
# A floor that no longer holds fails `make test`.
UV_VERSION := 0.13.9
UV := $(BIN)/uv
UV_STAMP := $(VENV)/.uv-$(UV_VERSION)
LOWEST := .venv-lowest
LOWEST_STAMP := $(LOWEST)/.installed
LOWEST_TESTS := tests/test_models.py tests/test_runner.py tests/test_database.py tests/test_pause_checkpoints.py \
	tests/test_workers.py tests/test_builtin_workflows.py tests/test_tool_approval.py tests/test_user_apps.py \
	tests/test_langgraph_compat.py tests/test_store_contract.py tests/test_savers.py tests/test_langchain_agents.py \
	tests/test_api.py
# pytest-xdist: most tests wait on a process, a server or a browser they started, so two workers
# keep both cores busy (make test stays under 15 minutes on a 2-core machine)
WORKERS ?= 2

.PHONY: demo test test-lowest bench notebooks clean chromium

$(BIN)/python:
	@test -n "$(PYTHON)" || { echo "need python3.11 (or python3) on PATH"; exit 1; }
	$(PYTHON) -m venv $(VENV)

# editable_mode=compat: a plain path in a .pth file, which type checkers (mypy, pyright) follow; setuptools'
# default editable install is an import hook they cannot see, so `import hitl_graphs` would not be found
$(STAMP): pyproject.toml | $(BIN)/python
	$(BIN)/python -m pip install --quiet -e ".[test]" --config-settings editable_mode=compat
	@touch $(STAMP)

$(UV_STAMP): | $(BIN)/python
	@$(BIN)/python -m pip install --quiet uv==$(UV_VERSION) \
		|| { echo "make: cannot install uv $(UV_VERSION) from PyPI into $(VENV); it builds $(LOWEST)" >&2; exit 1; }
	@touch $(UV_STAMP)

$(LOWEST_STAMP): pyproject.toml | $(UV_STAMP)
	rm -rf $(LOWEST)
	$(UV) venv --quiet --python $(BIN)/python $(LOWEST)
	@$(UV) pip install --quiet --python $(LOWEST)/bin/python --resolution lowest-direct -e ".[test]" 2>$(LOWEST)/install.log \
		|| { echo "make: cannot build $(LOWEST) (the lowest versions pyproject.toml allows) without PyPI:" \
			"$$(grep -m1 -o 'Failed to fetch: [^ ]*' $(LOWEST)/install.log || grep -m1 'error:' $(LOWEST)/install.log)" \
			"($(LOWEST)/install.log has uv's output)" >&2; \
			exit 1; }
	@touch $(LOWEST_STAMP)

demo: $(STAMP)
	$(BIN)/hitl demo

# the browser tests (pytest -m browser) drive Debian's chromium; this installs it where it is missing
chromium:
	@sh tools/ensure_chromium.sh

# The PostgreSQL tests start a throwaway server from the machine's PostgreSQL (tests/pg_server.py):
# tools/ensure_postgres.sh installs Debian's package when it is missing and we are root on Debian,
# and otherwise stops here with one line naming what to install. They never skip.
test: $(STAMP) $(LOWEST_STAMP) chromium
	@sh tools/ensure_postgres.sh
	$(BIN)/python -m pytest -q -n $(WORKERS)
	$(MAKE) --no-print-directory test-lowest

test-lowest: $(LOWEST_STAMP)
	@sh tools/ensure_postgres.sh
	$(LOWEST)/bin/python -m pytest -q -n $(WORKERS) -m "not slow" $(LOWEST_TESTS)
	$(LOWEST)/bin/python -m pytest -q tests/test_readme.py

bench: $(STAMP)
	$(BIN)/python -m benchmarks

notebooks: $(STAMP)
	$(BIN)/python -m pip install --quiet jupyterlab
	$(BIN)/jupyter lab notebooks/

clean:
	rm -rf $(VENV) $(LOWEST) .pytest_cache checkpoints/*.sqlite*
