# Two entry points that work on a fresh machine with Python 3.11:
#   make grade   grade a submission (default: the sample in grader/staff/samples/partial) and print the table
#   make test    the project's own check: lint, the reference through the whole suite in-process and isolated,
#                and the meta-tests (stubs fail, every catalogued mistake is caught, API agrees) but the slow
#                tier (its time and that of `make slow`: `python -m grader.staff.bench --make-test`)
#   make slow    the slow tier of the meta-tests (marked `slow`): the hostile corpus in both sandbox modes, the
#                Gradescope image, a Dask cluster (with TLS, with workers that are not root, on a one-node Slurm
#                cluster that it installs when missing), cgroup v2 in a virtual machine. CI runs `make test` and then
#                `make slow`
#   make release, make gradescope   course staff: the student repository, Gradescope's autograder zip
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
SUBMISSION ?= grader/staff/samples/partial
export HYPOTHESIS_PROFILE ?= ci

# torch's CPU build (PyPI's Linux wheel brings ~2 GB of CUDA libraries this project never uses): PyTorch's CPU
# index beside the plain one, where a 5 s probe reaches it; where it cannot be reached, the plain index (or a
# local wheel) alone, at once (pip would retry an unreachable index five times per package: minutes)
TORCH_INDEX ?= https://download.pytorch.org/whl/cpu
PIP_OPTIONS ?= --quiet --disable-pip-version-check
PROBE = import urllib.request; urllib.request.urlopen("$(TORCH_INDEX)/", timeout=5)

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	if $(BIN)/python -c '$(PROBE)' 2>/dev/null; then index="--extra-index-url $(TORCH_INDEX)"; \
	else echo "PyTorch's CPU index cannot be reached: torch from the plain index"; index=; fi; \
	$(BIN)/python -m pip install $(PIP_OPTIONS) $$index -e '.[dev,cluster]'
	touch $(STAMP)

.PHONY: venv sandbox test slow lint reference meta grade bench doctor release gradescope
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
	$(BIN)/mypy

# On pytest-xdist's workers, one per core (WORKERS=0: in one process). Isolated, a test file to a worker (each
# problem's grading worker starts once); the meta-tests, a file or class to a worker (tests/meta/conftest.py).
# In-process, the ci profile (40 examples a test: the wider search for a test that disagrees with the reference);
# isolated, the grade profile's budgets and fixed inputs, which `grade --local` runs (the worker's path for every
# test, at a third of the ci profile's CPU)
WORKERS ?= auto
reference: $(STAMP)
	$(BIN)/pytest --impl reference -q -n $(WORKERS)
	$(BIN)/pytest --impl reference --isolated --hypothesis-profile=grade -q -n $(WORKERS) --dist loadfile

# compare's inputs and the reference's and the catalogue's answers on them, computed once for the whole run where none
# are kept (grader/fingerprints/cache.py), as Gradescope's setup.sh does: every grading the meta-tests run reads them
ANSWERS = $(BIN)/python -m grader.fingerprints
META = $(BIN)/pytest --meta tests/meta -q --durations=20 -n $(WORKERS) --dist loadscope --no-loadscope-reorder
meta: $(STAMP) sandbox
	$(ANSWERS)
	$(META) -m "not slow"

slow: $(STAMP) sandbox
	$(ANSWERS)
	$(META) -m slow

test: lint reference meta

grade: $(STAMP) sandbox
	$(BIN)/resource-grader grade $(SUBMISSION) --local

bench: $(STAMP)
	$(BIN)/python -m grader.staff.bench

# Course staff: the student repository, and Gradescope's autograder (the course secret from
# RA_GRADING_SECRET_FILE or RA_GRADING_SECRET, or SECRET_FILE=...). Both refuse an output that exists.
RELEASE ?= dist/student
AUTOGRADER ?= dist/autograder.zip
release: $(STAMP)
	$(BIN)/resource-grader release $(RELEASE)

gradescope: $(STAMP)
	$(BIN)/resource-grader gradescope $(AUTOGRADER) $(if $(SECRET_FILE),--secret-file $(SECRET_FILE))
