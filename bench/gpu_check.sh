#!/usr/bin/env bash
# The GPU check of the CUDA backend (issue 30), one script for a lent GPU machine: it builds the
# library and the CUDA tests with the CUDA backend on, runs them with FLUXION_TEST_DEVICE=cuda (on
# the GPU when there is one; without one the CUDA tests that need it skip with their reason and
# the host-side ones, such as the cuBLAS argument mapping, still run), and prints one summary.
# Logs go under $OUT when it is set (the device tool brings them back), else build-gpu/logs.
#   bash bench/gpu_check.sh            # about 5 minutes of build on 16 cores
# What runs on the GPU today: device discovery, memory and copies (tests/test_cuda.cpp). The
# kernels, cuBLAS products and jit plans of issue 30 join this script as they land; their
# benchmarks then run after the tests.
set -uo pipefail
cd "$(dirname "$0")/.." || exit 1
out=${OUT:-build-gpu/logs}
mkdir -p "$out"
start=$(date +%s)
jobs=$(nproc 2>/dev/null || echo 2)
summary() { echo "$*" | tee -a "$out/summary.txt"; }
: > "$out/summary.txt"

summary "== machine"
if command -v nvidia-smi > /dev/null; then
  nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader 2>&1 | tee "$out/nvidia-smi.txt" |
    sed 's/^/   gpu: /' | tee -a "$out/summary.txt"
else
  summary "   no nvidia-smi: no GPU driver on this machine (the GPU tests will skip)"
fi
nvcc --version 2>&1 | tail -1 | sed 's/^/   nvcc: /' | tee -a "$out/summary.txt"

summary "== build (FLUXION_CUDA=ON, Release)"
if ! cmake -S . -B build-gpu -DCMAKE_BUILD_TYPE=Release -DFLUXION_CUDA=ON -DFLUXION_BUILD_TESTS=ON \
  -DFLUXION_BUILD_BENCHMARKS=OFF -DFLUXION_BUILD_EXAMPLES=OFF > "$out/configure.log" 2>&1; then
  summary "   configure FAILED: see $out/configure.log"
  tail -20 "$out/configure.log"
  exit 1
fi
targets=(test_cuda test_cuda_gemm_mapping)
if ! cmake --build build-gpu -j"$jobs" --target "${targets[@]}" > "$out/build.log" 2>&1; then
  summary "   build FAILED: see $out/build.log"
  grep -m 20 -E "error" "$out/build.log"
  exit 1
fi
summary "   built ${targets[*]} in $(($(date +%s) - start)) s"

summary "== tests (FLUXION_TEST_DEVICE=cuda)"
status=0
for t in "${targets[@]}"; do
  if FLUXION_TEST_DEVICE=cuda "build-gpu/tests/$t" > "$out/$t.log" 2>&1; then
    summary "   $t: $(grep -E 'test cases:' "$out/$t.log" | tail -1 | tr -s ' ')"
  else
    status=1
    summary "   $t FAILED: $(grep -E 'test cases:' "$out/$t.log" | tail -1 | tr -s ' ') (see $out/$t.log)"
  fi
  grep -hE "skipp|\[cuda\]|\[cuBLAS" "$out/$t.log" | head -5 | sed 's/^/     /' | tee -a "$out/summary.txt"
done
summary "== done in $(($(date +%s) - start)) s, status $status"
exit $status
