# Every target works as the first command typed on a fresh machine with Python 3.11:
# it creates .venv and installs what it needs (re-installing only when pyproject.toml changes).
PYTHON ?= $(shell command -v python3.11 || command -v python3)
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: demo test bench notebooks clean

$(BIN)/python:
	@test -n "$(PYTHON)" || { echo "need python3.11 (or python3) on PATH"; exit 1; }
	$(PYTHON) -m venv $(VENV)

$(STAMP): pyproject.toml | $(BIN)/python
	$(BIN)/python -m pip install --quiet -e ".[test]"
	@touch $(STAMP)

demo: $(STAMP)
	$(BIN)/hitl demo

test: $(STAMP)
	$(BIN)/python -m pytest -q

bench: $(STAMP)
	$(BIN)/python -m benchmarks

notebooks: $(STAMP)
	$(BIN)/python -m pip install --quiet jupyterlab
	$(BIN)/jupyter lab notebooks/

clean:
	rm -rf $(VENV) .pytest_cache checkpoints/*.sqlite*
