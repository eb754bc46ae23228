#!/usr/bin/env bash
# Fresh Debian 12 machine -> Fluxion built in build/ (Release), the demo run, the Jupyter kernel installed.
#   bash scripts/setup.sh
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/deps.sh
jobs=$(nproc)
cmake -S . -B build -DCMAKE_BUILD_TYPE=Release
cmake --build build --target demo -j"$jobs"
echo "---- build/examples/demo ----"
build/examples/demo
# The Jupyter kernel "C++17 (Fluxion)" for this user (README, Notebooks), from the same build.
bash scripts/jupyter.sh build
