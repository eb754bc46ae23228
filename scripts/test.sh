#!/usr/bin/env bash
# Builds everything (library, tests, benchmarks, examples) in build/ (Release) and runs CTest,
# then the sanitizer build (AddressSanitizer + UBSan at -O0, no benchmarks, no CUDA) in
# build-asan/ and runs CTest there, then the concurrency suite under ThreadSanitizer in build-tsan/.
# Installs missing build dependencies first (scripts/deps.sh).
#   bash scripts/test.sh            # all three builds
#   FLUXION_TEST_ASAN=0 bash scripts/test.sh   # skip the sanitizer build
#   FLUXION_TEST_TSAN=0 bash scripts/test.sh   # skip the ThreadSanitizer build
set -uo pipefail
cd "$(dirname "$0")/.." || exit 1
bash scripts/deps.sh || exit 1

jobs=$(nproc)
export CTEST_OUTPUT_ON_FAILURE=1
passed=0
failed=0
skipped=0
status=0

# run_suite <name> <build dir> <ctest args...> -- <cmake configure args...>
# Builds every target, or only those in the array `targets` when it is set.
run_suite() {
  local name=$1 dir=$2
  shift 2
  local ctest_args=()
  while [[ $# -gt 0 && $1 != -- ]]; do ctest_args+=("$1"); shift; done
  shift
  echo "==== $name: configure + build ($dir, -j$jobs) ===="
  local t0=$SECONDS
  mkdir -p "$dir"
  if ! cmake -S . -B "$dir" "$@" >"$dir/configure.log" 2>&1; then
    cat "$dir/configure.log"
    echo "$name: configure FAILED"
    failed=$((failed + 1)); status=1; return
  fi
  if ! cmake --build "$dir" -j"$jobs" ${targets:+--target "${targets[@]}"}; then
    echo "$name: build FAILED"
    failed=$((failed + 1)); status=1; return
  fi
  echo "==== $name: built in $((SECONDS - t0)) s; ctest ===="
  t0=$SECONDS
  ctest --test-dir "$dir" --output-on-failure -j"$jobs" "${ctest_args[@]}" 2>&1 | tee "$dir/ctest.log"
  local rc=${PIPESTATUS[0]}
  # The suites that test Fluxion against JAX's references and against itself (random programs)
  # print their counts; ctest keeps a passing test's output only in its log.
  sed -n -e '/^differential: /,/^=====/p' -e '/^fuzz: seeds/,/^=====/p' "$dir/Testing/Temporary/LastTest.log" \
    2>/dev/null | grep -v '^=====' || true
  local line skips
  line=$(grep -E '^[0-9]+% tests passed, [0-9]+ tests? failed out of [0-9]+' "$dir/ctest.log" | tail -1)
  skips=$(grep -cE '^[[:space:]]*[0-9]+ - .*\(Skipped\)$' "$dir/ctest.log")
  if [[ $line =~ ([0-9]+)\ tests?\ failed\ out\ of\ ([0-9]+) ]]; then
    failed=$((failed + BASH_REMATCH[1]))
    passed=$((passed + BASH_REMATCH[2] - BASH_REMATCH[1] - skips))
    skipped=$((skipped + skips))
  fi
  echo "==== $name: ${line:-no ctest summary} ($((SECONDS - t0)) s) ===="
  [[ $rc -eq 0 && -n $line ]] || status=1
}

t_start=$SECONDS
run_suite release build -- -DCMAKE_BUILD_TYPE=Release -DFLUXION_BUILD_TESTS=ON \
  -DFLUXION_BUILD_BENCHMARKS=ON -DFLUXION_SANITIZE=OFF
if [[ ${FLUXION_TEST_ASAN:-1} != 0 ]]; then
  # The packaging, clang-repl, notebook, Jupyter and compile-error tests do not exercise memory safety:
  # they run in the first suite (the Jupyter kernel is not built with sanitizers).
  export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=0}
  export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
  # -O0 -g1: sanitizer instrumentation at -O3 makes Eigen-heavy files compile ~5x slower, and
  # the suites are small. Debug keeps assertions on; CUDA is off (its runtime and ASan disagree).
  # The library is shared here: linked statically, every sanitized test executable held its own
  # copy (~235 MB each, 5 GB in all, which filled CI's disk); shared, the build takes about 1 GB.
  run_suite asan build-asan -E '^(consumer_|repl_|notebooks|jupyter_|compile_check_)' -- -DCMAKE_BUILD_TYPE=Debug \
    "-DCMAKE_CXX_FLAGS_DEBUG=-O0 -g1" -DFLUXION_BUILD_TESTS=ON -DFLUXION_BUILD_BENCHMARKS=OFF \
    -DFLUXION_SANITIZE=ON -DFLUXION_CUDA=OFF -DBUILD_SHARED_LIBS=ON
fi
if [[ ${FLUXION_TEST_TSAN:-1} != 0 ]]; then
  # ThreadSanitizer on the concurrency suite (tests/test_concurrency.cpp: 8 threads calling jit'd
  # functions, eager ops, compiles, the plan cache), run with FLUXION_NUM_THREADS 1 and 2
  # (tests/CMakeLists.txt): only the library and that suite are built, at -O1 like the sanitizer
  # build above, the library shared. The first report fails the run; nothing is suppressed.
  # The CPU kernels run on the project's own thread pool (backends/cpu/thread_pool.cpp), whose
  # synchronization TSan sees, so a thread count of 2 is checked in full (no OpenMP anywhere).
  export TSAN_OPTIONS=${TSAN_OPTIONS:-halt_on_error=1:second_deadlock_stack=1}
  targets=(test_concurrency)
  run_suite tsan build-tsan -R '^test_concurrency' -- -DCMAKE_BUILD_TYPE=Debug "-DCMAKE_CXX_FLAGS_DEBUG=-O1 -g1" \
    -DFLUXION_BUILD_TESTS=ON -DFLUXION_BUILD_BENCHMARKS=OFF -DFLUXION_BUILD_EXAMPLES=OFF -DFLUXION_SANITIZE=thread \
    -DFLUXION_CUDA=OFF -DBUILD_SHARED_LIBS=ON
  unset targets
fi
echo "==== total: $((SECONDS - t_start)) s ===="
echo "tests: $passed passed, $failed failed, $skipped skipped"
exit $status
