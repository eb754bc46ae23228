#!/usr/bin/env bash
# Builds Fluxion's Jupyter kernel and installs it for this user: kernel name fluxion-cpp17, shown as
# "C++17 (Fluxion)" in Jupyter's launcher and in `jupyter kernelspec list`.
#   bash scripts/jupyter.sh [BUILD_DIR]        (default build/)
# Installs missing Debian packages first (scripts/deps.sh: clang 19's interpreter library, ipykernel, nbconvert),
# builds the library and the kernel's host program (target fluxion_jupyter_kernel), then runs
# `jupyter kernelspec install --user`. The kernelspec points into BUILD_DIR and this checkout: keep both.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/deps.sh
build=${1:-build}
cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build "$build" -j"$(nproc)" --target fluxion_jupyter_kernel
spec="$build/jupyter/share/jupyter/kernels/fluxion-cpp17"
if [[ ! -f $spec/kernel.json ]]; then
  echo "jupyter.sh: the kernel was not configured: see the 'Jupyter kernel' line of cmake's output" >&2
  exit 1
fi
/usr/bin/jupyter kernelspec install --user --replace --name fluxion-cpp17 "$spec"
echo "jupyter.sh: installed the kernel \"C++17 (Fluxion)\" (fluxion-cpp17). Try:"
echo "  jupyter nbconvert --execute --to html --ExecutePreprocessor.kernel_name=fluxion-cpp17 --output-dir /tmp \\"
echo "    notebooks/01-tour.ipynb"
