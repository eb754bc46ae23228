#!/usr/bin/env bash
# Long mode of the random program fuzzer (tests/test_fuzz_programs.cpp; issue 28): 100,000
# programs by default, from a seed range disjoint from CI's (CI runs seeds 28..2027).
#   bash bench/fuzz_programs.sh [programs] [first seed]
#   JOBS=2 bash bench/fuzz_programs.sh            # contiguous seed ranges side by side
# Uses $BUILD_DIR (default build/), building test_fuzz_programs there if needed. Logs go to
# $BUILD_DIR/fuzz_programs.<n>.log; each failure is reported there shrunk, with its seed.
# Exit status: 0 when every program passed every check.
set -uo pipefail
cd "$(dirname "$0")/.." || exit 1
build=${BUILD_DIR:-build}
programs=${1:-100000}
first=${2:-1000000}
jobs=${JOBS:-1}
bin=$build/tests/test_fuzz_programs
if [[ ! -x $bin ]]; then
  cmake --build "$build" --target test_fuzz_programs || exit 1
fi

start=$SECONDS
per=$(((programs + jobs - 1) / jobs))
pids=()
for ((j = 0; j < jobs; ++j)); do
  seed=$((first + j * per))
  count=$((programs - j * per < per ? programs - j * per : per))
  ((count > 0)) || break
  FLUXION_FUZZ_SEED=$seed FLUXION_FUZZ_PROGRAMS=$count FLUXION_FUZZ_REPORTS=${FLUXION_FUZZ_REPORTS:-10} \
    "$bin" --test-case="fuzz: random programs*" >"$build/fuzz_programs.$j.log" 2>&1 &
  pids+=($!)
done
status=0
for j in "${!pids[@]}"; do
  wait "${pids[$j]}" || status=1
  # The summary (counts per check, worst errors), then any failure reports.
  sed -n '/^fuzz: seeds/,/^  ops generated/p' "$build/fuzz_programs.$j.log"
  grep -q 'ERROR' "$build/fuzz_programs.$j.log" && grep -A40 'ERROR' "$build/fuzz_programs.$j.log" | head -200
done
echo "fuzz_programs: $programs programs from seed $first in $((SECONDS - start)) s on $jobs job(s):" \
  "$([[ $status == 0 ]] && echo 'no failure' || echo 'FAILURES (see above and the logs)')"
exit $status
