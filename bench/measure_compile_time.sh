#!/usr/bin/env bash
# Wall-clock compile time of a user translation unit that includes <fluxion/fluxion.hpp>, in the
# two modes (linking fluxion::fluxion, and header-only with FLUXION_IMPLEMENTATION), best of N runs.
# Usage: bench/measure_compile_time.sh [runs=3] [compiler=g++]   (from the repository root)
set -euo pipefail
shopt -s inherit_errexit
runs=${1:-3}
cxx=${2:-g++}
flags=(-std=c++17 -O2 -I include -I . -I /usr/include/eigen3)
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT

best_of() {  # prints the best wall time in seconds of compiling with the extra flags "$@"
  local best=""
  for ((i = 0; i < runs; ++i)); do
    local t0 t1
    t0=$(date +%s.%N)
    "$cxx" "${flags[@]}" "$@" -c bench/compile_time_probe.cpp -o "$out/probe.o"
    t1=$(date +%s.%N)
    best=$(python3 -c "import sys; t=$t1-$t0; b='$best'; print(f'{min(t, float(b)) if b else t:.2f}')")
  done
  echo "$best"
}

echo "compiler: $("$cxx" --version | head -1)"
echo "flags: ${flags[*]} -c bench/compile_time_probe.cpp"
echo "include <fluxion/fluxion.hpp>:                       $(best_of) s (best of $runs)"
echo "include <fluxion/fluxion.hpp> + FLUXION_IMPLEMENTATION: $(best_of -DFLUXION_IMPLEMENTATION) s (best of $runs)"
echo "for scale, include <Eigen/Core> only:                 $(printf '#include <Eigen/Core>\nint main(){}\n' > "$out/e.cpp"; t0=$(date +%s.%N); "$cxx" "${flags[@]}" -c "$out/e.cpp" -o "$out/e.o"; t1=$(date +%s.%N); python3 -c "print(f'{$t1-$t0:.2f}')") s"
