#!/usr/bin/env bash
# Compile time of a user translation unit that includes <fluxion/fluxion.hpp> (bench/compile_time_probe.cpp),
# in the two modes: linking fluxion::fluxion (the header alone), and header-only with
# FLUXION_IMPLEMENTATION (the whole implementation compiled into the TU). Reports the best of N runs,
# wall time and CPU time (user+sys: what the compiler itself used, robust on a busy machine).
# Usage, from the repository root: bench/measure_compile_time.sh [runs=3] [compiler=g++] [extra flags...]
set -euo pipefail
shopt -s inherit_errexit
runs=${1:-3}
cxx=${2:-g++}
shift $(($# < 2 ? $# : 2))
flags=(-std=c++17 -O2 -I include -I . -I /usr/include/eigen3 "$@")
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
printf '#include <Eigen/Core>\nint main() {}\n' > "$out/eigen_only.cpp"

best_of() {  # best_of SOURCE [extra flags]: prints "wall W s, cpu C s"
  local src=$1
  shift
  local best_wall="" best_cpu=""
  for ((i = 0; i < runs; ++i)); do
    /usr/bin/time -f "%e %U %S" -o "$out/time" "$cxx" "${flags[@]}" "$@" -c "$src" -o "$out/probe.o"
    read -r wall user sys < "$out/time"
    best_wall=$(python3 -c "print(min(x for x in ($wall, ${best_wall:-1e9})))")
    best_cpu=$(python3 -c "print(round(min(x for x in ($user + $sys, ${best_cpu:-1e9})), 2))")
  done
  echo "wall ${best_wall} s, cpu ${best_cpu} s"
}

echo "compiler: $("$cxx" --version | head -1)"
echo "command:  $cxx ${flags[*]} [-DFLUXION_IMPLEMENTATION] -c bench/compile_time_probe.cpp   (best of $runs)"
echo "#include <fluxion/fluxion.hpp>:                          $(best_of bench/compile_time_probe.cpp)"
echo "#include <fluxion/fluxion.hpp> + FLUXION_IMPLEMENTATION: $(best_of bench/compile_time_probe.cpp -DFLUXION_IMPLEMENTATION)"
echo "for scale, #include <Eigen/Core> only:                   $(best_of "$out/eigen_only.cpp")"
