#!/usr/bin/env bash
# Creates a Python virtual environment with cppyy (cling from PyPI's cppyy-cling wheel) for the
# notebook runner's cling engine. Optional: without it the notebooks run through clang-repl only.
# Usage: tests/notebooks/setup_cling.sh <venv dir>   (e.g. build/cling-venv; CMake's default)
# Takes ~1 min with a warm pip cache; the first install builds CPyCppyy from source (~5-7 min on
# 2 cores). Prints the Python to pass as --cling-python / FLUXION_CLING_PYTHON.
set -euo pipefail
venv=${1:?usage: setup_cling.sh <venv dir>}
if [[ -x $venv/bin/python ]] && "$venv/bin/python" -c 'import cppyy' 2>/dev/null; then
  echo "cling: $venv already has cppyy"
else
  python3 -m venv "$venv"
  "$venv/bin/pip" install -q --disable-pip-version-check cppyy
  "$venv/bin/python" -c 'import cppyy' # fails loudly when the install is unusable
fi
echo "$venv/bin/python"
