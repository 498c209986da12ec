#!/usr/bin/env bash
# Gradescope runs this once, as root, in /autograder/source (the unpacked autograder zip), to build the
# image every submission is graded in (pick the Ubuntu 22.04 base image: its python3.11 package is used).
#   Python 3.11 and a venv in /autograder/source/.venv, readable by every user (the sandbox runs the
#   submission's worker as a uid of its own); the pinned dependencies of pyproject.toml, torch's CPU build
#   from PyTorch's index (no CUDA download); bubblewrap and util-linux for the sandbox (grader/sandbox.py).
set -euo pipefail
SOURCE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
export DEBIAN_FRONTEND=noninteractive PIP_DISABLE_PIP_VERSION_CHECK=1 PIP_NO_CACHE_DIR=1
umask 022

apt-get update -qq
apt-get install -y -qq --no-install-recommends python3.11 python3.11-venv bubblewrap util-linux >/dev/null

python3.11 -m venv "$SOURCE/.venv"
PIP=("$SOURCE/.venv/bin/python" -m pip install --quiet)
# torch first, from PyTorch's CPU index; then the project, whose torch pin the CPU build already satisfies
"${PIP[@]}" --index-url https://download.pytorch.org/whl/cpu "{torch_pin}"
"${PIP[@]}" -e "$SOURCE"

chmod 0600 "$SOURCE/grading-secret"
chmod 0755 "$SOURCE/run_autograder"
"$SOURCE/.venv/bin/python" -c "import torch; assert not torch.version.cuda, 'expected the CPU build of torch'"
"$SOURCE/.venv/bin/resource-grader" doctor
