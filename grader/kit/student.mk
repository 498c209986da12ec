# The assignment's commands (Python 3.11 and make are all you need):
#   make venv    create .venv with the pinned dependencies (torch 2.13.0, CPU build)
#   make test    every test on your code (the same as `pytest` in the activated venv)
#   make grade   your local score table, computed the way the grader computes it
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
# torch's CPU build (PyPI's Linux wheel brings ~2 GB of CUDA libraries this assignment never uses)
TORCH_INDEX ?= https://download.pytorch.org/whl/cpu
PIP_OPTIONS ?= --quiet --disable-pip-version-check --extra-index-url $(TORCH_INDEX)

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install $(PIP_OPTIONS) -e .
	touch $(STAMP)

.PHONY: venv test grade doctor
venv: $(STAMP)

test: $(STAMP)
	$(BIN)/pytest

grade: $(STAMP)
	$(BIN)/resource-grader grade --local

doctor: $(STAMP)
	$(BIN)/resource-grader doctor
