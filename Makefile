# Two entry points that work on a fresh machine with Python 3.11:
#   make grade   grade a submission (default: the sample in grader/samples/partial) and print the table
#   make test    the project's own check: lint, the reference through the whole suite in-process and
#                isolated, and the meta-tests (stubs fail, every catalogued mistake is caught, API agrees)
#   make release, make gradescope   course staff: the student repository, Gradescope's autograder zip
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
SUBMISSION ?= grader/samples/partial
export HYPOTHESIS_PROFILE ?= ci

# torch's CPU build (PyPI's Linux wheel brings ~2 GB of CUDA libraries this project never uses): torch alone
# first, with PyTorch's CPU index beside the plain one, asked once with a short timeout and no retries, so
# that where it cannot be reached the plain index (or a local wheel) provides torch in seconds, not minutes
TORCH_INDEX ?= https://download.pytorch.org/whl/cpu
TORCH_PIN := $(shell grep -o '"torch==[^"]*"' pyproject.toml | tr -d '"')
PIP_OPTIONS ?= --quiet --disable-pip-version-check
TORCH_OPTIONS ?= --timeout 10 --retries 0 --extra-index-url $(TORCH_INDEX)

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install $(PIP_OPTIONS) $(TORCH_OPTIONS) '$(TORCH_PIN)' || \
	  echo "torch could not be installed on its own: the project's install below tries the plain index"
	$(BIN)/python -m pip install $(PIP_OPTIONS) -e '.[dev]'
	touch $(STAMP)

.PHONY: venv sandbox test lint reference meta grade bench doctor release gradescope
venv: $(STAMP)

# The grader's namespaces layer needs bubblewrap (Debian/Ubuntu): installed here when root and missing.
sandbox:
	@if ! command -v bwrap >/dev/null; then \
	  if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null; then \
	    apt-get update -qq && apt-get install -y -qq bubblewrap >/dev/null; \
	  else echo "bubblewrap is not installed: the grader's namespaces layer is off (make doctor)"; fi; fi

doctor: $(STAMP)
	$(BIN)/resource-grader doctor

lint: $(STAMP)
	$(BIN)/ruff check .

reference: $(STAMP)
	$(BIN)/pytest --impl reference -q
	$(BIN)/pytest --impl reference --isolated -q

meta: $(STAMP) sandbox
	$(BIN)/pytest --meta tests/meta -q --durations=20

test: lint reference meta

grade: $(STAMP) sandbox
	$(BIN)/resource-grader grade $(SUBMISSION) --local

bench: $(STAMP)
	$(BIN)/python -m grader.bench

# Course staff: the student repository, and Gradescope's autograder (the course secret from
# RA_GRADING_SECRET_FILE or RA_GRADING_SECRET, or SECRET_FILE=...). Both refuse an output that exists.
RELEASE ?= dist/student
AUTOGRADER ?= dist/autograder.zip
release: $(STAMP)
	$(BIN)/resource-grader release $(RELEASE)

gradescope: $(STAMP)
	$(BIN)/resource-grader gradescope $(AUTOGRADER) $(if $(SECRET_FILE),--secret-file $(SECRET_FILE))
