#!/usr/bin/env python3
"""Markdown table for bench/RESULTS.md from Google Benchmark JSON output.

Usage: bench/results_table.py out.json [more.json ...]   (runs of different filters are merged)
(out.json from --benchmark_out=out.json --benchmark_out_format=json, with
--benchmark_repetitions=N --benchmark_report_aggregates_only=true: medians are used; a run without
repetitions works too.)

Benchmark names are <case>/<impl>; in each case the Eigen row (`eigen`, or `eigen_rowmajor` for
GEMM, the layout our tensors have) is the reference every other row is compared to.
Times are CPU time unless a case was registered with UseRealTime() (then wall time), matching what
its throughput counters use.
"""
import json
import sys

REFERENCES = ("eigen", "eigen_rowmajor")


def fmt_time(ns):
    if ns < 1e3:
        return f"{ns:.1f} ns"
    if ns < 1e6:
        return f"{ns / 1e3:.1f} µs"
    return f"{ns / 1e6:.2f} ms"


def to_ns(b, key):
    scale = {"ns": 1, "us": 1e3, "ms": 1e6, "s": 1e9}[b["time_unit"]]
    return b[key] * scale


def main(paths):
    runs = [json.load(open(p)) for p in paths]
    data = runs[0]
    rows = {}
    for b in (b for run in runs for b in run["benchmarks"]):
        if b.get("run_type") == "aggregate" and b.get("aggregate_name") != "median":
            continue
        if b.get("error_occurred"):
            rows[b["run_name"]] = None
            continue
        rows[b["run_name"]] = b
    # Registration order (family_index), not run order: random interleaving shuffles the latter.
    order = {}
    for b in (b for run in runs for b in run["benchmarks"]):
        order.setdefault(b["run_name"], (b.get("family_index", len(order)), len(order)))
    cases = {}
    for name, b in sorted(rows.items(), key=lambda kv: order[kv[0]]):
        real = name.endswith("/real_time")  # UseRealTime(): rates and our column use wall time
        case, impl = name[: -len("/real_time")].rsplit("/", 1) if real else name.rsplit("/", 1)
        if b is not None:
            b["_key"] = "real_time" if real else "cpu_time"
        cases.setdefault(case, {})[impl] = b
    for run in runs:
        c = run["context"]
        print(f"<!-- {c.get('date', '')} on {c.get('host_name', '')}, {c.get('num_cpus')} CPUs, "
              f"load average {c.get('load_avg', '?')} -->")
    print("| case | implementation | time (median) | Eigen | ours / Eigen | throughput |")
    print("|---|---|---:|---:|---:|---:|")
    for case, impls in cases.items():
        ref_name = next((r for r in REFERENCES if r in impls), None)
        ref = impls.get(ref_name) if ref_name else None
        for impl, b in impls.items():
            if b is None:
                print(f"| `{case}` | {impl} | ERROR | | | |")
                continue
            t = to_ns(b, b["_key"])
            rt = to_ns(ref, ref["_key"]) if ref else None
            ratio = "—" if impl == ref_name or rt is None else f"{t / rt:.2f}×"
            thr = ""
            if "GFLOPS" in b:
                thr = f"{b['GFLOPS']:.1f} GFLOP/s"
                if ref is not None and impl != ref_name:
                    thr += f" ({100 * b['GFLOPS'] / ref['GFLOPS']:.0f}% of Eigen)"
            elif "bytes_per_second" in b:
                thr = f"{b['bytes_per_second'] / 1e9:.2f} GB/s"
            ref_s = fmt_time(rt) if rt is not None and impl != ref_name else ""
            print(f"| `{case}` | {impl} | {fmt_time(t)} | {ref_s} | {ratio} | {thr} |")


if __name__ == "__main__":
    main(sys.argv[1:])
