#!/usr/bin/env python3
"""Markdown table for bench/RESULTS.md from Google Benchmark JSON output.

Usage: bench/results_table.py run1.json [run2.json ...]

Each file comes from --benchmark_out=FILE --benchmark_out_format=json, normally with
--benchmark_repetitions=N --benchmark_report_aggregates_only=true (the per-run medians are used; a
run without repetitions works too). With several files, each number is the median over the files
of the per-run medians, and the "spread" column gives the smallest and largest per-run median of
our time, so that noise on a shared machine stays visible.

Benchmark names are <case>/<impl>; in each case the Eigen row (`eigen`, or `eigen_rowmajor` for
GEMM, the layout our tensors have) is the reference every other row is compared to. Times are
CPU time unless a case was registered with UseRealTime() (then wall time), matching what its
throughput counters use.
"""
import json
import statistics
import sys

REFERENCES = ("eigen", "eigen_rowmajor")
SCALE = {"ns": 1, "us": 1e3, "ms": 1e6, "s": 1e9}


def fmt_time(ns):
    if ns < 1e3:
        return f"{ns:.1f} ns"
    if ns < 1e6:
        return f"{ns / 1e3:.1f} µs"
    return f"{ns / 1e6:.2f} ms"


def load(paths):
    """{run_name: {"t": [ns...], "gflops": [...], "bps": [...]}} in registration order, and contexts."""
    rows, order, contexts = {}, {}, []
    for path in paths:
        run = json.load(open(path))
        contexts.append(run["context"])
        for b in run["benchmarks"]:
            name = b["run_name"]
            order.setdefault(name, (b.get("family_index", len(order)), len(order)))
            if b.get("run_type") == "aggregate" and b.get("aggregate_name") != "median":
                continue
            r = rows.setdefault(name, {"t": [], "gflops": [], "bps": [], "error": False})
            if b.get("error_occurred"):
                r["error"] = True
                continue
            real = name.endswith("/real_time")
            r["t"].append(b["real_time" if real else "cpu_time"] * SCALE[b["time_unit"]])
            if "GFLOPS" in b:
                r["gflops"].append(b["GFLOPS"])
            if "bytes_per_second" in b:
                r["bps"].append(b["bytes_per_second"])
    names = sorted(rows, key=lambda n: order[n])
    return [(n, rows[n]) for n in names], contexts


def main(paths):
    rows, contexts = load(paths)
    for c in contexts:
        print(f"<!-- {c.get('date', '')} on {c.get('host_name', '')}, {c.get('num_cpus')} CPUs, "
              f"load average {[round(x, 2) for x in c.get('load_avg', [])]} -->")
    cases = {}
    for name, r in rows:
        base = name[: -len("/real_time")] if name.endswith("/real_time") else name
        case, impl = base.rsplit("/", 1)
        cases.setdefault(case, {})[impl] = r
    many = len(paths) > 1
    print("| case | implementation | time | Eigen | ours / Eigen | throughput |" + (" spread of runs |" if many else ""))
    print("|---|---|---:|---:|---:|---:|" + ("---:|" if many else ""))
    med = statistics.median
    for case, impls in cases.items():
        ref_name = next((r for r in REFERENCES if r in impls), None)
        ref = impls.get(ref_name) if ref_name else None
        if ref is not None and (ref["error"] or not ref["t"]):
            ref = None
        for impl, r in impls.items():
            if r["error"] or not r["t"]:
                print(f"| `{case}` | {impl} | ERROR | | | |" + (" |" if many else ""))
                continue
            is_ref = impl == ref_name
            t = med(r["t"])
            rt = med(ref["t"]) if ref else None
            ratio = "—" if is_ref or rt is None else f"{t / rt:.2f}×"
            thr = ""
            if r["gflops"]:
                thr = f"{med(r['gflops']):.1f} GFLOP/s"
                if ref is not None and not is_ref:
                    thr += f" ({100 * med(r['gflops']) / med(ref['gflops']):.0f}% of Eigen)"
            elif r["bps"]:
                thr = f"{med(r['bps']) / 1e9:.2f} GB/s"
            ref_s = fmt_time(rt) if rt is not None and not is_ref else ""
            spread = f" {fmt_time(min(r['t']))} – {fmt_time(max(r['t']))} |" if many else ""
            print(f"| `{case}` | {impl} | {fmt_time(t)} | {ref_s} | {ratio} | {thr} |{spread}")


if __name__ == "__main__":
    main(sys.argv[1:])
