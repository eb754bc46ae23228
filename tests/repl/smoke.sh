#!/usr/bin/env bash
# clang-repl smoke test (the engine under xeus-cpp notebooks): include <fluxion/fluxion.hpp> in
# header-only mode, run eager ops and make_jaxpr, check the printed values, and report how long the
# include took (the cost of a notebook's first cell).
# Usage: tests/repl/smoke.sh <repo root> [<eigen include dir>]   (CTest: repl_smoke)
# Exit 77 (CTest: skipped) when clang-repl-19 is not installed. CLANG_REPL overrides the binary.
set -uo pipefail
root=${1:?usage: smoke.sh <repo root> [eigen include dir]}
eigen=${2:-/usr/include/eigen3}
repl=${CLANG_REPL:-clang-repl-19}
if ! command -v "$repl" >/dev/null 2>&1; then
  echo "repl_smoke: SKIPPED: $repl not found (Debian package clang-tools-19)."
  exit 77
fi

flags=(--Xcc=-std=c++17 "--Xcc=-I$root/include" "--Xcc=-I$root" "--Xcc=-I$eigen")
log=$(mktemp)
trap 'rm -f "$log"' EXIT

# One input line per statement, as a notebook sends cells. Every output line is flushed and
# timestamped on arrival, so the "included" marker times the header-only include.
t0=$(date +%s.%N)
("$repl" "${flags[@]}") 2>&1 <<'INPUT' | while IFS= read -r line; do echo "$(date +%s.%N) $line"; done >"$log"
#include <iostream>
#define FLUXION_IMPLEMENTATION
#include <fluxion/fluxion.hpp>
std::cout << "included" << std::endl;
namespace fx = fluxion;
auto x = fx::tensor({0.0, 1.0, 2.0});
std::cout << "sin: " << fx::sin(x) << std::endl;
std::cout << "sum: " << fx::sum(x * 2.0 + 1.0) << std::endl;
auto a = fx::tensor({{1.0, 2.0}, {3.0, 4.0}});
std::cout << "matmul: " << fx::matmul(a, a).to_vector<double>()[3] << std::endl;
auto f = [](const fx::Tensor& v) { return fx::sum(fx::tanh(v) * 2.0); };
std::cout << fx::make_jaxpr(f)(fx::ones({3}, fx::f32)) << std::endl;
std::cout << "cuda: " << fx::cuda::is_available() << std::endl;
%quit
INPUT
rc=${PIPESTATUS[0]}
t_end=$(date +%s.%N)
output=$(cut -d' ' -f2- "$log")

t_inc=$(awk '$2 == "included" { print $1; exit }' "$log")
if [[ -n $t_inc ]]; then
  echo "repl_smoke: '#include <fluxion/fluxion.hpp>' with FLUXION_IMPLEMENTATION took" \
       "$(awk "BEGIN { printf \"%.1f\", $t_inc - $t0 }") s in $repl;" \
       "whole session $(awk "BEGIN { printf \"%.1f\", $t_end - $t0 }") s"
fi

status=0
expect() {  # expect <description> <extended regex>
  if grep -Eq -- "$2" <<<"$output"; then echo "  ok: $1"; else echo "  MISSING: $1 (/$2/)"; status=1; fi
}
expect "the include compiles" '^included$'
expect "sin([0 1 2])" '^sin: \[0\. +0\.84147098 0\.90929743\]$'
expect "sum(2x + 1) = 9" '^sum: 9\.$'
expect "matmul([[1 2] [3 4]]^2)[1,1] = 22" '^matmul: 22$'
expect "make_jaxpr shows tanh" '= tanh '
expect "make_jaxpr shows reduce_sum" '= reduce_sum'
expect "cuda unavailable in header-only mode" '^cuda: 0$'
if grep -q 'error:' <<<"$output"; then
  echo "  clang-repl reported errors"
  status=1
fi
if [[ $rc -ne 0 ]]; then
  echo "  clang-repl exited with status $rc$([[ $rc -gt 128 ]] && echo " (signal $((rc - 128)))")"
  if [[ $rc -eq 139 && $status -eq 0 ]]; then
    echo "  (every statement ran: the crash is at exit. clang-repl-19 cannot run destructors of"
    echo "   thread_local objects defined in JIT-compiled code: a thread_local with a non-trivial"
    echo "   destructor in the implementation crashes it when the session ends.)"
  fi
  status=1
fi
if [[ $status -ne 0 ]]; then
  echo "repl_smoke: FAILED; clang-repl's output:"
  echo "$output"
  exit 1
fi
echo "repl_smoke: passed"
