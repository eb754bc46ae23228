#!/usr/bin/env bash
# Data-parallel training over 1 and 2 processes (issue 32): the median step time of examples/data_parallel
# as `full` (one process, the whole batch, no collectives) and as `ddp`, `ddp-jit` and `fsdp` under
# `mpirun -np 1` and `mpirun -np 2 --oversubscribe --bind-to none` (each rank its share of the batch; one rank
# runs the same collectives over a world of one), and the bytes each rank
# hands to collectives per step (fx::collective_stats) against the gradient's size, the lower bound of what
# one all_sum of the gradient sends per rank.
#   bash bench/data_parallel.sh                       # the example's problem: 64 examples, hidden 32
#   SIZES="64x32 4096x256" bash bench/data_parallel.sh  # examples x hidden units, one table each
# Then the latency of one all_sum with the cross-rank check on and off (bench/collective_latency.cpp).
# Uses $BUILD_DIR (default build/), building the example there if needed (FLUXION_BUILD_EXAMPLES=ON).
# Without mpirun, or in a build without MPI (the example exits 3 then), it prints the one-process row and
# why the others are missing, and exits 0. Exit status 1 when a run fails its own check (its parameters
# differ from the full-batch run's by more than 1e-12 relative) or cannot run.
set -uo pipefail
cd "$(dirname "$0")/.." || exit 1
build=${BUILD_DIR:-build}
bin=$build/examples/data_parallel
if [[ ! -x $bin ]]; then
  cmake --build "$build" --target data_parallel || exit 1
fi
sizes=${SIZES:-64x32}
cores=$(nproc)
# Open MPI in a container runs as root only with consent; loopback only, like tests/mpi.
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
mpirun_flags=(--oversubscribe --bind-to none --mca btl_tcp_if_include lo --mca oob_tcp_if_include lo)
have_mpirun=1
command -v mpirun >/dev/null 2>&1 || have_mpirun=0

# The value of key=value in the example's result line.
field() { sed -n "s/.*[[:space:]]$1=\([^[:space:]]*\).*/\1/p" <<<"$2"; }

status=0
row() {  # mode ranks command...
  local mode=$1 ranks=$2 out line
  shift 2
  out=$("$@" 2>&1)
  local rc=$?
  if [[ $rc == 3 ]]; then  # the example's "this build cannot run it" (no MPI compiled in): not a failure
    printf '%-8s %5s   skipped: %s\n' "$mode" "$ranks" "$(grep -v '^$' <<<"$out" | tail -1)"
    return
  elif [[ $rc != 0 ]]; then
    # The example's own message (mpirun's banners start with dashes or name the job).
    printf '%-8s %5s   failed (exit %s): %s\n' "$mode" "$ranks" "$rc" "$(grep -v '^$\|^---\|^mode=' <<<"$out" | head -1)"
    status=1
    return
  fi
  line=$(grep "^mode=" <<<"$out" | head -1)
  printf '%-8s %5s %12s %12s %16s %12s %12s\n' "$mode" "$ranks" "$(field step_ms "$line")" \
    "$(field grad_bytes "$line")" "$(field sent_per_step "$line")" "$(field calls_per_step "$line")" \
    "$(field max_rel_diff "$line")"
}

echo "examples/data_parallel: 20 steps of SGD with momentum, f64; step = median over the 20 (ms)."
echo "grad bytes: the flat gradient (lower bound of one all_sum per rank); sent/step: fx::collective_stats."
for size in $sizes; do
  examples=${size%x*} hidden=${size#*x}
  echo
  echo "== $examples examples, hidden $hidden; $cores cores, split between the ranks (FLUXION_NUM_THREADS) =="
  printf '%-8s %5s %12s %12s %16s %12s %12s\n' mode ranks "step ms" "grad bytes" "sent/step/rank" "calls/step" \
    "max rel diff"
  row full 1 "$bin" full --examples "$examples" --hidden "$hidden"
  if [[ $have_mpirun == 0 ]]; then
    echo "(no mpirun on this machine: install Open MPI, e.g. bash scripts/deps.sh, for the 2-process rows)"
    continue
  fi
  for mode in ddp ddp-jit fsdp; do
    for ranks in 1 2; do
      # The cores split between the ranks (each rank's kernels would otherwise start a thread per core).
      row "$mode" "$ranks" env FLUXION_NUM_THREADS="${FLUXION_NUM_THREADS:-$(((cores + ranks - 1) / ranks))}" \
        mpirun -np "$ranks" "${mpirun_flags[@]}" "$bin" "$mode" --examples "$examples" --hidden "$hidden"
    done
  done
done

# The latency of one collective with the cross-rank check of each call on and off (bench/collective_latency.cpp).
latency=$build/bench/collective_latency
if [[ $have_mpirun == 1 && -x $latency ]]; then
  echo
  echo "== one eager all_sum on 2 ranks, per call =="
  for elements in 4 262144; do
    for checks in 1 0; do
      FLUXION_DISTRIBUTED_CHECKS=$checks mpirun -np 2 "${mpirun_flags[@]}" -x FLUXION_DISTRIBUTED_CHECKS "$latency" \
        $((elements > 1000 ? 200 : 1000)) "$elements" 2>&1 | grep "^all_sum" || status=1
    done
  done
elif [[ $have_mpirun == 1 ]]; then
  echo "(no $latency: configure with FLUXION_BUILD_BENCHMARKS=ON for the latency rows)"
fi
exit $status
