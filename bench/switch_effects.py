#!/usr/bin/env python3
"""Each optimization's effect: every fluxion_jit row of the workload suites with all optimizations
on and with each one off (FLUXION_DISABLE=<name>, runtime/switches.hpp), interleaved, on one
thread (taskset -c 0). Prints a Markdown table of time(off) / time(on), each the fastest of its
runs (the least disturbed by other load on a shared host; --stat median: the median of its runs):
above 1 the optimization pays on that row, below 1 it costs.

  bench/switch_effects.py --bin-dir build/bench [--rounds 1] [--min-time 0.2] [--filter REGEX]
                          [--switches siblings,gram] [--stat median]
"""
import argparse
import json
import os
import statistics
import subprocess
import sys

SUITES = ["bench_workloads", "bench_workloads_tiny", "bench_workloads_curvature", "bench_workloads_gmm",
          "bench_workloads_scan", "bench_workloads_attention", "bench_workloads_recurrent",
          "bench_workloads_laplacian", "bench_workloads_least_squares"]
SWITCHES = ["simplify", "algebra", "seeds", "products", "siblings", "gram", "cse", "fusion", "tiles",
            "side_by_side", "buffer_reuse", "register_programs", "blas", "loops"]


def run(binary, disabled, min_time, pattern):
    env = dict(os.environ, FLUXION_NUM_THREADS="1", OMP_NUM_THREADS="1", OPENBLAS_NUM_THREADS="1",
               FLUXION_DISABLE=disabled)
    flt = pattern or "fluxion_jit"
    out = subprocess.run(["taskset", "-c", "0", binary, f"--benchmark_filter={flt}",
                          f"--benchmark_min_time={min_time}", "--benchmark_format=json"],
                         env=env, capture_output=True, text=True, check=True).stdout
    if not out.strip():  # the filter matches nothing in this suite
        return {}
    scale = {"ns": 1e-6, "us": 1e-3, "ms": 1.0, "s": 1e3}
    return {b["name"].replace("/real_time", "").replace("fluxion_jit/", ""): b["real_time"] * scale[b["time_unit"]]
            for b in json.loads(out)["benchmarks"]}


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--bin-dir", default="build/bench")
    ap.add_argument("--rounds", type=int, default=1)
    ap.add_argument("--min-time", default="0.2")
    ap.add_argument("--filter", default="", help="Google Benchmark filter (default: every fluxion_jit row)")
    ap.add_argument("--switches", default="", help="comma-separated switches to turn off (default: every one)")
    ap.add_argument("--stat", choices=["min", "median"], default="min",
                    help="each configuration's time over its runs: the fastest (default) or the median")
    a = ap.parse_args()
    stat = min if a.stat == "min" else statistics.median
    switches = [s for s in a.switches.split(",") if s] or SWITCHES
    unknown = [s for s in switches if s not in SWITCHES]
    if unknown:
        ap.error(f"unknown switches {unknown}; known: {', '.join(SWITCHES)}")
    on, off = {}, {s: {} for s in switches}
    for r in range(a.rounds):
        for config in [""] + switches + [""]:  # all-on before and after each round's switches
            print(f"round {r + 1}: FLUXION_DISABLE={config or '(none)'}", file=sys.stderr, flush=True)
            for suite in SUITES:
                path = os.path.join(a.bin_dir, suite)
                if not os.path.exists(path):
                    continue
                for name, t in run(path, config, a.min_time, a.filter).items():
                    (on if not config else off[config]).setdefault(name, []).append(t)
    print("| row | all on (ms) | " + " | ".join(switches) + " |")
    print("|---|---:|" + "---:|" * len(switches))
    for name in sorted(on, key=lambda n: (int(n.split("/")[0][1:]) if n[1:].split("/")[0].isdigit() else 99, n)):
        base = stat(on[name])
        cells = []
        for s in switches:
            v = off[s].get(name)
            cells.append(f"{stat(v) / base:.2f}" if v else "")
        print(f"| {name} | {base:.4g} | " + " | ".join(cells) + " |")


if __name__ == "__main__":
    main()
