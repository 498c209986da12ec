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

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --disable-pip-version-check -e '.[dev,cluster]'
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
