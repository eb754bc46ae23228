#!/usr/bin/env bash
# Installs Fluxion's build dependencies from Debian 12 packages, only those missing (a re-run
# costs a few dpkg queries). Run as root (or with sudo available). ccache is optional.
set -euo pipefail

# libopenblas-dev: FLUXION_BLAS=AUTO links OpenBLAS for large GEMMs (OpenMP comes with g++).
# libdnnl-dev: FLUXION_DNNL=AUTO runs f32 GEMMs through oneDNN's sgemm.
# clang-tools-19 (clang-repl), nlohmann-json3-dev (notebook display), graphviz (Jaxpr drawings):
# the notebook tests. clang-format-14: the format check (scripts/format.sh --check, CTest format_check).
# libclang-cpp19-dev, libclang-19-dev, llvm-19-dev (clang::Interpreter, its headers and libLLVM), python3-ipykernel,
# python3-jupyter-client, jupyter-client (jupyter kernelspec), jupyter-nbconvert: the Jupyter kernel (jupyter/,
# scripts/jupyter.sh) and its tests. chromium, jupyter-nbconvert: the rendered-notebook test
# (tests/notebooks/render_check.py: stored outputs as HTML, screenshots in headless Chromium).
# libopenmpi-dev, openmpi-bin: fx::distributed's MPI engine (FLUXION_MPI=AUTO) and mpirun for the
# multi-process tests (tests/mpi/).
required=(cmake g++ make libeigen3-dev libboost-dev doctest-dev libbenchmark-dev clang-tools-19
          libopenblas-dev libdnnl-dev nlohmann-json3-dev graphviz python3 clang-format-14
          libopenmpi-dev openmpi-bin libclang-cpp19-dev libclang-19-dev llvm-19-dev python3-ipykernel
          python3-jupyter-client jupyter-client jupyter-nbconvert chromium)
optional=(ccache)

missing() { for p in "$@"; do dpkg -s "$p" >/dev/null 2>&1 || echo "$p"; done; }
mapfile -t need < <(missing "${required[@]}")
mapfile -t want < <(missing "${optional[@]}")
if [[ ${#need[@]} -eq 0 && ${#want[@]} -eq 0 ]]; then
  echo "deps: all present (${required[*]} ${optional[*]})"
  exit 0
fi

sudo=()
if [[ $(id -u) -ne 0 ]]; then
  if command -v sudo >/dev/null 2>&1; then
    sudo=(sudo)
  elif [[ ${#need[@]} -gt 0 ]]; then
    echo "deps: missing ${need[*]}; run this script as root or install them with apt-get." >&2
    exit 1
  else
    echo "deps: optional ${want[*]} missing (not root: skipped)"
    exit 0
  fi
fi

export DEBIAN_FRONTEND=noninteractive
echo "deps: installing ${need[*]} ${want[*]}"
"${sudo[@]}" apt-get update -q
if [[ ${#need[@]} -gt 0 ]]; then
  "${sudo[@]}" apt-get install -y -q --no-install-recommends "${need[@]}"
fi
if [[ ${#want[@]} -gt 0 ]]; then
  "${sudo[@]}" apt-get install -y -q --no-install-recommends "${want[@]}" ||
    echo "deps: optional ${want[*]} could not be installed; building without it"
fi
