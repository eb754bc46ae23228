#!/usr/bin/python3
"""Runs notebooks through Fluxion's Jupyter kernel with `jupyter nbconvert --execute` and compares the outputs with
the stored ones, with run_notebooks.py's rules (imported from it): cells tagged `nondeterministic` are not compared,
a cell tagged `raises-exception` must show an error and no other cell may, stream and display text must match, and
an SVG drawing stored in a cell must be produced too when Graphviz `dot` is installed. Numbers in the text match
within a relative tolerance (--rtol), so that the last digits of a float may differ between engines.

  run_with_kernel.py --jupyter-path BUILD/jupyter/share/jupyter [--kernel fluxion-cpp17] [--keep DIR] notebook.ipynb ...

Exit status: 0 passed, 1 a difference (notebook, cell and first differing output are named), 77 a dependency is
missing (nbconvert, or the kernel was not built: the reason is printed). Needs nbconvert's Python (Debian's
/usr/bin/python3 with jupyter-nbconvert).
"""
import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import run_notebooks  # noqa: E402  (the comparison rules)

NUMBER = re.compile(r"[-+]?(?:\d+\.\d*|\.\d+|\d+)(?:[eE][-+]?\d+)?|nan|inf")


def texts_match(expected, got, rtol, atol=1e-12):
    """Equal, or equal once each number is compared within rtol (the text between numbers must be equal)."""
    if expected == got:
        return True
    e_parts, g_parts = NUMBER.split(expected), NUMBER.split(got)
    e_nums, g_nums = NUMBER.findall(expected), NUMBER.findall(got)
    if e_parts != g_parts or len(e_nums) != len(g_nums):
        return False
    for a, b in zip(e_nums, g_nums):
        if a == b:
            continue
        try:
            x, y = float(a), float(b)
        except ValueError:
            return False
        if abs(x - y) > atol + rtol * max(abs(x), abs(y)):
            return False
    return True


def items_match(expected, got, rtol):
    if len(expected) != len(got) or expected[0] != got[0]:
        return False
    return all(texts_match(str(e), str(g), rtol) for e, g in zip(expected[1:], got[1:]))


def has_svg(outputs):
    return any("image/svg+xml" in o.get("data", {}) for o in outputs if o.get("output_type") == "display_data")


def cell_seconds(cell):
    """How long the kernel took on a cell (nbclient records execute_input and execute_reply times); None if unknown."""
    times = cell.get("metadata", {}).get("execution", {})
    start, end = times.get("iopub.execute_input"), times.get("shell.execute_reply")
    if not start or not end:
        return None
    from datetime import datetime
    parse = lambda t: datetime.fromisoformat(t.replace("Z", "+00:00"))  # noqa: E731
    return (parse(end) - parse(start)).total_seconds()


def timing_summary(produced_nb):
    secs = [cell_seconds(c) for c in produced_nb["cells"] if c.get("cell_type") == "code"]
    if not secs or None in secs:
        return ""
    rest = sorted(secs[1:])
    if not rest:
        return f"(first cell {secs[0]:.1f} s)"
    slowest = secs.index(max(secs[1:]), 1) + 1
    return (f"(first cell {secs[0]:.1f} s; other cells median {rest[len(rest) // 2]:.2f} s, "
            f"slowest {max(rest):.1f} s: cell {slowest})")


def check_notebook(path, produced_nb, rtol):
    """Problems (strings) of one executed notebook against the stored one."""
    with open(path) as f:
        stored_nb = json.load(f)
    stored = [c for c in stored_nb["cells"] if c.get("cell_type") == "code"]
    produced = [c for c in produced_nb["cells"] if c.get("cell_type") == "code"]
    name = os.path.basename(path)
    if len(stored) != len(produced):
        return [f"{name}: {len(stored)} code cells stored, {len(produced)} executed"]
    dot = shutil.which(os.environ.get("FLUXION_DOT", "dot"))
    problems = []
    for number, (s, p) in enumerate(zip(stored, produced), 1):
        cell = run_notebooks.Cell(number - 1, number, s, os.path.dirname(path))
        outs = p.get("outputs", [])
        errors = [o for o in outs if o.get("output_type") == "error"]
        label = f"{name}: {cell.label()}"
        if cell.raises and not errors:
            problems.append(f"{label}: tagged raises-exception but showed no error")
        elif errors and not cell.raises:
            problems.append(f"{label}: {errors[0].get('ename')}: {errors[0].get('evalue')}")
        if "nondeterministic" in cell.tags:
            continue
        expected, got = run_notebooks.comparable(s.get("outputs", [])), run_notebooks.comparable(outs)
        if len(expected) != len(got) or not all(items_match(e, g, rtol) for e, g in zip(expected, got)):
            diff = run_notebooks.first_difference(expected, got) or "outputs differ beyond the tolerance"
            problems.append(f"{label}: output differs from the stored one: {diff}")
        if dot and has_svg(s.get("outputs", [])) and not has_svg(outs):
            problems.append(f"{label}: the stored SVG drawing was not produced")
    return problems


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("notebooks", nargs="+")
    ap.add_argument("--jupyter-path", required=True, help="folder holding kernels/<kernel>/kernel.json")
    ap.add_argument("--kernel", default="fluxion-cpp17")
    ap.add_argument("--nbconvert", default="/usr/bin/jupyter-nbconvert")
    ap.add_argument("--rtol", type=float, default=1e-6)
    ap.add_argument("--timeout", type=int, default=600, help="seconds one cell may take")
    ap.add_argument("--keep", help="a folder to keep the executed notebooks in (default: deleted)")
    args = ap.parse_args()

    spec = os.path.join(args.jupyter_path, "kernels", args.kernel, "kernel.json")
    if not os.path.exists(spec):
        print(f"notebooks (jupyter): SKIPPED: no kernelspec {spec} (the kernel was not built: clang 19 missing?)")
        return 77
    if not os.path.exists(args.nbconvert):
        print(f"notebooks (jupyter): SKIPPED: {args.nbconvert} missing (apt-get install jupyter-nbconvert)")
        return 77
    with open(spec) as f:
        python = json.load(f)["argv"][0]
    probe = subprocess.run([python, "-c", "import ipykernel"], capture_output=True)
    if probe.returncode != 0:
        print(f"notebooks (jupyter): SKIPPED: {python} cannot import ipykernel (apt-get install python3-ipykernel)")
        return 77

    env = dict(os.environ, JUPYTER_PATH=os.path.abspath(args.jupyter_path))
    failures = []
    for path in map(os.path.abspath, args.notebooks):
        work = os.path.abspath(args.keep) if args.keep else tempfile.mkdtemp(prefix="fluxion-nbk-")
        os.makedirs(work, exist_ok=True)
        try:
            t0 = time.time()
            run = subprocess.run([args.nbconvert, "--execute", "--to", "notebook", "--output-dir", work,
                                  f"--ExecutePreprocessor.kernel_name={args.kernel}",
                                  f"--ExecutePreprocessor.timeout={args.timeout}", path],
                                 cwd=os.path.dirname(path), env=env, capture_output=True, text=True)
            wall = time.time() - t0
            out = os.path.join(work, os.path.basename(path))
            if run.returncode != 0 or not os.path.exists(out):
                failures.append(f"{os.path.basename(path)}: nbconvert failed (status {run.returncode}):\n"
                                + run.stderr[-6000:])
                continue
            with open(out) as f:
                produced = json.load(f)
            problems = check_notebook(path, produced, args.rtol)
            print(f"  {os.path.basename(path):32} {'FAILED' if problems else 'passed'} {wall:6.1f} s "
                  + timing_summary(produced), flush=True)
            failures += problems
        finally:
            if not args.keep:
                shutil.rmtree(work, ignore_errors=True)
    for f in failures:
        print("FAIL " + f)
    print("notebooks (jupyter): " + (f"{len(failures)} failure(s)" if failures else "passed"))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
