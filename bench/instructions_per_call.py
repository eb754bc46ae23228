#!/usr/bin/env python3
"""Instructions per jit call of one benchmark, counted by callgrind: a measure that a busy or
drifting host does not disturb, for A/B comparisons of binaries built from two commits.

Only instructions inside fluxion::Executable::run_unchecked (a jit'd function's call, plan run
included) are counted, and divided by the number of calls of that function, so that the
benchmark's own loop and its calibration runs do not matter. Control-flow bodies run plans of
their own through the same function: for a scan benchmark the result is per body run.

    bench/instructions_per_call.py BINARY FILTER [BINARY FILTER ...]
    bench/instructions_per_call.py /tmp/before/bench_workloads W1/fluxion_jit/N=65536/ \\
                                   build/bench/bench_workloads W1/fluxion_jit/N=65536/
"""
import os
import re
import subprocess
import sys
import tempfile

FUNCTION = "Executable::run_unchecked"


def per_call(binary, bench_filter):
    env = dict(os.environ, FLUXION_NUM_THREADS="1", OMP_NUM_THREADS="1", OPENBLAS_NUM_THREADS="1")
    with tempfile.NamedTemporaryFile(suffix=".callgrind") as out:
        subprocess.run(["valgrind", "--tool=callgrind", "--callgrind-out-file=" + out.name,
                        "--toggle-collect=*" + FUNCTION + "*", binary, "--benchmark_filter=" + bench_filter,
                        "--benchmark_min_time=0.3"], env=env, stdout=subprocess.DEVNULL,
                       stderr=subprocess.DEVNULL, check=False)
        names, calls, total, callee = {}, {}, 0, None
        with open(out.name) as f:
            for line in f:
                m = re.match(r"(c?fn)=\((\d+)\)(?: (.*))?", line)
                if m:
                    kind, ident, name = m.groups()
                    if name:
                        names[ident] = name.strip()
                    callee = ident if kind == "cfn" else None
                    continue
                if line.startswith("calls=") and callee and FUNCTION in names.get(callee, ""):
                    calls[names[callee]] = calls.get(names[callee], 0) + int(line.split()[0][6:])
                elif line.startswith("summary:") or line.startswith("totals:"):
                    total = int(line.split()[1])
    # The overloads call each other's work, not each other: the most called one counts the calls.
    n = max(calls.values()) if calls else 0
    return total, n


def main(argv):
    if len(argv) < 2 or len(argv) % 2:
        print(__doc__)
        return 2
    for binary, bench_filter in zip(argv[0::2], argv[1::2]):
        total, n = per_call(binary, bench_filter)
        per = f"{total / n:.0f}" if n else "n/a (no call counted)"
        print(f"{bench_filter:50s} {binary:45s} calls {n:6d} instructions/call {per}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
