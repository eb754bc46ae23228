#!/usr/bin/env bash
# The GPU check of the CUDA backend (issue 30), one script for a lent GPU machine: it builds the
# library, the CUDA tests and the GPU benchmark with the CUDA backend on (build-gpu/), runs
# `ctest -R cuda` with FLUXION_TEST_DEVICE=cuda (every primitive's registry samples on the GPU
# against the reference kernels, the jit cases on cuda:0 against the CPU jit), then test_rules and
# test_jit_equals_eager with their samples on cuda:0, then bench/gpu_bench.cpp (copy bandwidth,
# elementwise chain, dot_general against raw cuBLAS, small-call latency), and prints one summary.
# Without a GPU the cases that need one skip with their reason and the host-side ones (the emulated
# kernels, the cuBLAS argument mapping, the allocator policy, NVRTC) still run. It must finish in
# under 7 minutes on one H100/H200 (16 cores). Logs go under $OUT when it is set (the device tool
# brings them back), else build-gpu/logs.
#   bash bench/gpu_check.sh
# Set CUDA_ARCHS (e.g. CUDA_ARCHS=90) to compile device code for fewer architectures.
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
  summary "   no nvidia-smi: no GPU driver on this machine (the GPU tests and benchmarks will skip)"
fi
nvcc_bin=$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)
"$nvcc_bin" --version 2>&1 | tail -1 | sed 's/^/   nvcc: /' | tee -a "$out/summary.txt"

summary "== build (FLUXION_CUDA=ON, Release)"
arch_flag=()
if [[ -n "${CUDA_ARCHS:-}" ]]; then arch_flag=(-DCMAKE_CUDA_ARCHITECTURES="$CUDA_ARCHS"); fi
if ! cmake -S . -B build-gpu -DCMAKE_BUILD_TYPE=Release -DFLUXION_CUDA=ON -DFLUXION_BUILD_TESTS=ON \
  -DFLUXION_BUILD_BENCHMARKS=OFF -DFLUXION_BUILD_EXAMPLES=OFF -DCMAKE_CUDA_COMPILER="$nvcc_bin" \
  "${arch_flag[@]}" > "$out/configure.log" 2>&1; then
  summary "   configure FAILED: see $out/configure.log"
  tail -20 "$out/configure.log"
  exit 1
fi
# Every test whose name says cuda (what `ctest -R cuda` runs), and the benchmark.
mapfile -t tests < <(cd tests && ls test_*cuda*.cpp | sed 's/\.cpp$//')
targets=("${tests[@]}" test_rules test_jit_equals_eager gpu_bench)
if ! cmake --build build-gpu -j"$jobs" --target "${targets[@]}" > "$out/build.log" 2>&1; then
  summary "   build FAILED: see $out/build.log"
  grep -m 20 -E "error" "$out/build.log"
  exit 1
fi
summary "   built ${targets[*]} in $(($(date +%s) - start)) s"

summary "== ctest -R cuda (FLUXION_TEST_DEVICE=cuda)"
status=0
# test_rules_cuda_emulated is CPU emulation (CI runs it) and its executable is not built here.
if ! (cd build-gpu && FLUXION_TEST_DEVICE=cuda ctest -R cuda -E rules_cuda_emulated -V --timeout 240) \
  > "$out/ctest.log" 2>&1; then
  status=1
fi
grep -E "^ *[0-9]+/[0-9]+ Test +#|tests passed, |^\s+[0-9]+ - .*\(" "$out/ctest.log" | sed 's/^\s*/   /' |
  tee -a "$out/summary.txt"
# The test executables' own lines: what ran on the GPU, what was skipped and why.
grep -hE "SKIPPED|\[cuda\]|\[cuda_emulated\]|CUDA device" "$out/ctest.log" | sort -u | head -20 | sed 's/^/     /' |
  tee -a "$out/summary.txt"

# The registry suites with their samples on cuda:0 (tests/samples.hpp: on_test_device): derivatives
# to second order, vmap and their compositions, and jit against eager, all computed on the GPU.
summary "== rule suite and jit = eager on the GPU (FLUXION_TEST_DEVICE=cuda)"
if command -v nvidia-smi > /dev/null && nvidia-smi > /dev/null 2>&1; then
  for t in test_rules test_jit_equals_eager; do
    if FLUXION_TEST_DEVICE=cuda timeout 240 "build-gpu/tests/$t" > "$out/$t.gpu.log" 2>&1; then
      summary "   $t: $(grep -E '^\[doctest\] assertions' "$out/$t.gpu.log" | tail -1)"
    else
      status=1
      summary "   $t FAILED on the GPU (see $out/$t.gpu.log):"
      grep -m 8 -E "ERROR|Error|error" "$out/$t.gpu.log" | sed 's/^/     /' | tee -a "$out/summary.txt"
    fi
  done
else
  summary "   skipped: no GPU driver (nvidia-smi)"
fi

summary "== gpu_bench"
if build-gpu/bench/gpu_bench > "$out/gpu_bench.log" 2>&1; then
  sed 's/^/   /' "$out/gpu_bench.log" | tee -a "$out/summary.txt"
else
  status=1
  summary "   gpu_bench FAILED (see $out/gpu_bench.log):"
  tail -5 "$out/gpu_bench.log" | sed 's/^/   /' | tee -a "$out/summary.txt"
fi
summary "== done in $(($(date +%s) - start)) s, status $status"
exit $status
