#!/usr/bin/env bash
# Gradescope runs this once, as root, in /autograder/source (the unpacked autograder zip), to build the
# image every submission is graded in (pick the Ubuntu 22.04 base image). It refuses to finish, and so
# fails the build rather than grading students, unless the image grades the packaged reference at 100.
#   1. Python: a final 3.11 release. Ubuntu 22.04's own python3.11 package is 3.11.0rc1, a release
#      candidate without sys.get_int_max_str_digits, which torch's dynamo calls (FlopCounterMode, the
#      optimizers): a correct submission then scores 68.73. So the distribution's python3.11 is used only
#      where apt's candidate is a final release (Debian 12: 3.11.2); otherwise, on Ubuntu, it comes from the
#      deadsnakes PPA: a final 3.11 built for each Ubuntu release, installed and updated by apt (signed, the
#      same Debian layout and python3.11-venv), where `uv python install` would fetch an interpreter from
#      GitHub outside apt. Whichever it is, check_python refuses a pre-release or anything below 3.11.
#   2. A venv in /autograder/source/.venv, readable by every user (the sandbox runs the submission's worker
#      as a uid of its own): torch's CPU build from PyTorch's index, tried briefly, else torch from PyPI
#      and $RA_TORCH_FIND_LINKS (a folder holding the CPU wheel: the meta-tests, an offline mirror); then
#      the pins of pyproject.toml. bubblewrap and util-linux for the sandbox (grader/harness/sandbox.py).
#   3. The proof: run_autograder grades the packaged reference, which must score full marks.
# `setup.sh --check-python PYTHON` runs the interpreter check alone (tests/meta/test_gradescope.py).
set -euo pipefail
SOURCE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
TORCH_PIN="{torch_pin}"  # from pyproject.toml, by grader/staff/gradescope.py
PYTHON_MIN=(3 11)  # requires-python, and the version of the CPU wheels the pins were measured with
TORCH_CPU_INDEX="https://download.pytorch.org/whl/cpu"
export DEBIAN_FRONTEND=noninteractive PIP_DISABLE_PIP_VERSION_CHECK=1 PIP_NO_CACHE_DIR=1
umask 022

say() { echo "setup.sh: $*" >&2; }

# check_python PYTHON: succeeds only for a final release of at least PYTHON_MIN that has
# sys.get_int_max_str_digits (what torch's dynamo needs); otherwise says why and fails.
check_python() {
  local facts
  facts="$("$1" -c 'import sys; v = sys.version_info
print(v.major, v.minor, v.micro, v.releaselevel, v.serial, int(hasattr(sys, "get_int_max_str_digits")))' 2>&1)" ||
    { say "$1 does not run: $facts"; return 1; }
  if [[ ! "$facts" =~ ^([0-9]+)\ ([0-9]+)\ ([0-9]+)\ ([a-z]+)\ ([0-9]+)\ ([01])$ ]]; then
    say "$1 did not report its version (it printed: ${facts:0:200})"; return 1
  fi
  local major="${BASH_REMATCH[1]}" minor="${BASH_REMATCH[2]}" micro="${BASH_REMATCH[3]}"
  local level="${BASH_REMATCH[4]}" serial="${BASH_REMATCH[5]}" digits="${BASH_REMATCH[6]}"
  local version="$major.$minor.$micro"
  if [ "$level" != final ]; then
    say "$1 is Python $version $level $serial, a pre-release, not a final release: torch's dynamo fails on it" \
        "(a correct submission would lose points). Install a final Python ${PYTHON_MIN[0]}.${PYTHON_MIN[1]}."
    return 1
  fi
  if (( major < PYTHON_MIN[0] || (major == PYTHON_MIN[0] && minor < PYTHON_MIN[1]) )); then
    say "$1 is Python $version: the grader needs ${PYTHON_MIN[0]}.${PYTHON_MIN[1]} or newer"; return 1
  fi
  if [ "$digits" != 1 ]; then
    say "$1 is Python $version without sys.get_int_max_str_digits, which torch's dynamo needs"; return 1
  fi
  say "$1 is Python $version, a final release"
}

if [ "${1:-}" = --check-python ]; then
  check_python "${2:?usage: setup.sh --check-python PYTHON}"
  exit
fi

# -- 1. Python -----------------------------------------------------------------------------------------
apt-get update -qq
candidate="$(apt-cache policy python3.11 2>/dev/null | awk '/Candidate:/ {print $2}')"
if [[ -z "$candidate" || "$candidate" == "(none)" || "$candidate" =~ ~(rc|a|b)[0-9] ]]; then
  # shellcheck disable=SC1091
  . /etc/os-release
  if [ "${ID:-}" != ubuntu ]; then
    say "this base image's python3.11 is '${candidate:-absent}', not a final release, and only Ubuntu has" \
        "the deadsnakes PPA: pick Gradescope's Ubuntu 22.04 base image"
    exit 1
  fi
  say "apt's python3.11 is '${candidate:-absent}', not a final release: taking it from the deadsnakes PPA"
  apt-get install -y -qq --no-install-recommends software-properties-common gpg-agent >/dev/null
  add-apt-repository -y ppa:deadsnakes/ppa >/dev/null
  apt-get update -qq
fi
apt-get install -y -qq --no-install-recommends python3.11 python3.11-venv bubblewrap util-linux ca-certificates \
  >/dev/null
check_python python3.11

# -- 2. the venv ---------------------------------------------------------------------------------------
python3.11 -m venv "$SOURCE/.venv"
PYTHON="$SOURCE/.venv/bin/python"
check_python "$PYTHON"
PIP=("$PYTHON" -m pip install --quiet --timeout 20 --retries 1)
# torch first, its CPU build; then the project, whose torch pin that build already satisfies
if ! "${PIP[@]}" --index-url "$TORCH_CPU_INDEX" "$TORCH_PIN" 2>/tmp/setup-torch-index.log; then
  say "PyTorch's CPU index ($TORCH_CPU_INDEX) did not answer ($(tail -n 1 /tmp/setup-torch-index.log));" \
      "torch from ${RA_TORCH_FIND_LINKS:-PyPI}"
  if [ -n "${RA_TORCH_FIND_LINKS:-}" ]; then
    "${PIP[@]}" --find-links "$RA_TORCH_FIND_LINKS" "$TORCH_PIN+cpu"
  else
    "${PIP[@]}" "$TORCH_PIN"
  fi
fi
"${PIP[@]}" -e "$SOURCE"
"$PYTHON" -c "import torch; assert not torch.version.cuda, 'expected the CPU build of torch'"

chmod 0600 "$SOURCE/grading-secret"
chmod 0755 "$SOURCE/run_autograder"
"$SOURCE/.venv/bin/resource-grader" doctor
# compare's inputs and the catalogue's answers, computed once here for the fingerprints of every grading
# (grader/fingerprints/cache.py: about 15 s per grading with a failed problem otherwise)
"$PYTHON" -m grader.fingerprints || say "compare's answers not kept: each grading's fingerprints compute them"

# -- 3. the proof: the packaged reference through run_autograder, as Gradescope will run it -----------------
check="$(mktemp -d)"
trap 'rm -rf "$check"' EXIT
ln -s "$SOURCE" "$check/source"
mkdir "$check/submission"
cp "$SOURCE"/reference/*.py "$check/submission/"
say "grading the packaged reference with run_autograder (a minute or more)"
status=0
# limits far above grading's: this proves the image (interpreter, torch, sandbox), not the speed of the machine
# that builds it, which may be shared and slower than a grading container (the limits count wall-clock time)
RA_AUTOGRADER_ROOT="$check" "$SOURCE/run_autograder" --call-timeout 120 --test-timeout 900 --time-limit 3600 \
  >"$check/log" 2>&1 || status=$?
cp "$check/results/results.json" "$SOURCE/setup-check-results.json" 2>/dev/null || true
"$PYTHON" - "$check/results/results.json" "$status" <<'EOF' || { tail -n 40 "$check/log" >&2; exit 1; }
import json, sys

path, status = sys.argv[1], int(sys.argv[2])
try:
    results = json.load(open(path))
except (OSError, ValueError) as exc:
    sys.exit(f"setup.sh: run_autograder left no results.json ({exc}): the image cannot grade")
out_of = sum(t["max_score"] for t in results["tests"])
failed = [t["name"] for t in results["tests"] if t["status"] != "passed"]
# run_autograder exits 0 whenever it wrote results.json; the reference is flagged as a copy of the reference
# (grader/copycheck.py), and that is all it may be flagged for
review = [line for line in results.get("extra_data", {}).get("review", []) if not line.startswith("[copy] ")]
if status != 0 or review or failed or abs(results["score"] - out_of) > 1e-6 or round(out_of) != 100:
    sys.exit(f"setup.sh: the packaged reference scored {results['score']} of {out_of} (run_autograder exited "
             f"{status}); failed: {failed[:12]}; evidence: {review[:3]}: this image would fail correct submissions")
print(f"setup.sh: the packaged reference scored {results['score']:g}/{out_of:g} on this image", file=sys.stderr)
EOF
