#!/usr/bin/env python3
"""Runs Fluxion's C++ notebooks (notebooks/*.ipynb, kernel xcpp17) outside Jupyter and checks them.

Every code cell runs, in order, in one interpreter process per notebook, through each available
engine:
  clang-repl  clang-repl-19 (the engine under xeus-cpp): each cell is written to a file and sent as
              one input (`#include "<cell file>"`), so multi-line functions, structs and
              preprocessor directives behave as in a notebook; `#pragma cling add_include_path`
              becomes --Xcc=-I.
  cling       cling from PyPI's cppyy-cling (the engine under xeus-cling), driven by cling_driver.py
              under the Python of a virtual environment that has cppyy (--cling-python, or
              $FLUXION_CLING_PYTHON; tests/notebooks/setup_cling.sh creates one).
A cell's stdout is compared with the outputs stored in the notebook (stream text, display_data
text/plain and text/html; SVG drawings only need to be present when stored and `dot` exists), unless
the cell is tagged `nondeterministic` (timings). A cell tagged `raises-exception` must throw: the
runner wraps it in try/catch and checks the exception's type and message. `xcpp::display(v)`
records the mime bundle of v (tests/notebooks/support/xcpp/xdisplay.hpp stands in for the kernel's).

  run_notebooks.py [--root REPO] [notebook.ipynb ...]      run and compare
  run_notebooks.py --update [...]                          run and store the outputs in the notebooks

Exit status: 0 all notebooks passed on every engine that ran, 1 a failure (the notebook and cell are
named), 77 no engine available (clang-repl-19 missing and no cling). Python 3 standard library only.
"""
import argparse
import json
import os
import queue
import re
import shutil
import subprocess
import sys
import tempfile
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
SUPPORT = os.path.join(HERE, "support")

CELL_END = "@@fluxion-cell-end@@"
MARKERS = re.compile(r"\n?@@fluxion-(display|error)-begin@@\n(.*?)\n@@fluxion-\1-end@@\n", re.S)
PRAGMA_INCLUDE = re.compile(r'^\s*#\s*pragma\s+cling\s+add_include_path\s*\(\s*"([^"]*)"\s*\)\s*$')
PRAGMA_OTHER = re.compile(r"^\s*#\s*pragma\s+cling\b")
DIAGNOSTIC_ERROR = re.compile(r"(^|\s|:)(fatal )?error:|JIT session error|Failed to materialize", re.M)


def cell_source(cell):
    src = cell.get("source", "")
    return "".join(src) if isinstance(src, list) else src


def tags(cell):
    return set(cell.get("metadata", {}).get("tags", []))


class Cell:
    """One code cell as an engine runs it: translated source plus what to expect."""

    def __init__(self, index, number, cell, notebook_dir):
        self.index = index              # position among all cells of the notebook
        self.number = number            # 1-based among code cells
        self.cell = cell
        self.tags = tags(cell)
        self.include_dirs = []
        lines = []
        for line in cell_source(cell).splitlines():
            m = PRAGMA_INCLUDE.match(line)
            if m:
                self.include_dirs.append(os.path.normpath(os.path.join(notebook_dir, m.group(1))))
                lines.append("")        # keeps line numbers of diagnostics
            elif PRAGMA_OTHER.match(line):
                raise SystemExit(f"unsupported cling pragma in cell {number}: {line.strip()}")
            else:
                lines.append(line)
        self.source = "\n".join(lines) + "\n"
        self.original = cell_source(cell)
        self.raises = "raises-exception" in self.tags

    def label(self):
        first = next((l.strip() for l in self.original.splitlines() if l.strip()), "")
        return f"cell {self.number} (code cell {self.number}, `{first[:60]}`)"


def write_cell_files(cells, work):
    """cell_NNN.cpp per cell, and for raises-exception cells a wrapper that catches and reports."""
    paths = []
    for c in cells:
        path = os.path.join(work, f"cell_{c.number:03d}.cpp")
        with open(path, "w") as f:
            f.write(c.source)
        if c.raises:
            wrapper = os.path.join(work, f"cell_{c.number:03d}_raises.cpp")
            with open(wrapper, "w") as f:
                # A function, not a top-level try statement: clang-repl-19 crashes on some lambdas
                # inside a top-level try block.
                fn = f"fluxion_notebook_cell_{c.number:03d}"
                f.write(f"void {fn}() {{\n  try {{\n" + c.source +
                        "  fluxion_notebook::report_exception(\"\", \"<no exception>\");\n"
                        "  } catch (const std::exception& fluxion_notebook_e) {\n"
                        "    fluxion_notebook::report_exception(fluxion_notebook::type_name(typeid(fluxion_notebook_e)),"
                        " fluxion_notebook_e.what());\n"
                        "  } catch (...) {\n"
                        "    fluxion_notebook::report_exception(\"...\", \"a non-std::exception\");\n"
                        "  }\n}\n"
                        f"{fn}();\n")
            path = wrapper
        paths.append(path)
    return paths


def parse_outputs(text):
    """A cell's stdout -> Jupyter outputs (stream, display_data, error) in order."""
    outputs = []
    pos = 0

    def stream(s):
        if s:
            if outputs and outputs[-1]["output_type"] == "stream":
                outputs[-1]["text"] += s
            else:
                outputs.append({"name": "stdout", "output_type": "stream", "text": s})

    for m in MARKERS.finditer(text):
        stream(text[pos:m.start()])
        pos = m.end()
        if m.group(1) == "display":
            outputs.append({"data": json.loads(m.group(2)), "metadata": {}, "output_type": "display_data"})
        else:
            ename, _, evalue = m.group(2).partition("\n")
            outputs.append({"ename": ename, "evalue": evalue, "output_type": "error",
                            "traceback": [f"{ename}: {evalue}"] if ename else []})
    stream(text[pos:])
    return outputs


class Session:
    """Reads an interpreter's stdout on a thread and splits it at the cell-end markers."""

    def __init__(self, proc):
        self.proc = proc
        self.chunks = queue.Queue()
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self):
        buf = ""
        for line in iter(self.proc.stdout.readline, ""):
            if line.rstrip("\n") == CELL_END:
                self.chunks.put((buf[:-1] if buf.endswith("\n") else buf, time.time()))
                buf = ""
            else:
                buf += line
        self.chunks.put((None, buf))  # end of stream: what was printed after the last marker

    def next_cell(self, timeout):
        try:
            return self.chunks.get(timeout=timeout)
        except queue.Empty:
            return ("timeout", None)


def new_text(path, offset):
    with open(path, errors="replace") as f:
        f.seek(offset)
        text = f.read()
    return text, offset + len(text.encode(errors="replace"))


class Engine:
    name = "?"

    def run(self, notebook_path, cells, includes, timeout):
        """Runs the cells; returns (results, wall seconds). Each result: dict with outputs,
        diagnostics, seconds, or status 'crashed' / 'timeout' / 'not run'."""
        raise NotImplementedError

    def _finish(self, proc, cells, stderr_path, timeout, t0):
        """Collects the cells' results, waits for the process; (results, seconds, exit note)."""
        results = self._collect(proc, Session(proc), cells, stderr_path, timeout, t0)
        try:
            proc.wait(timeout=60)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        exit_note = "" if proc.returncode == 0 else f"{self.name} exited with status {proc.returncode}"
        return results, time.time() - t0, exit_note

    def _collect(self, proc, session, cells, stderr_path, timeout, t0):
        results, offset, last = [], 0, t0
        for c in cells:
            chunk, when = session.next_cell(timeout)
            diag, offset = new_text(stderr_path, offset)
            if chunk == "timeout":
                proc.kill()
                results.append({"status": "timeout", "diagnostics": diag, "seconds": time.time() - last})
                break
            if chunk is None:
                proc.wait()
                results.append({"status": "crashed", "diagnostics": diag + (when or ""),
                                "returncode": proc.returncode})
                break
            results.append({"status": "ran", "outputs": parse_outputs(chunk), "diagnostics": diag,
                            "seconds": when - last})
            last = when
        return results


class ClangRepl(Engine):
    name = "clang-repl"

    def __init__(self, binary, std):
        self.binary, self.std = binary, std

    def run(self, notebook_path, cells, includes, timeout):
        work = tempfile.mkdtemp(prefix="fluxion-nb-")
        try:
            paths = write_cell_files(cells, work)
            dirs = includes + [d for c in cells for d in c.include_dirs] + [SUPPORT]
            args = [self.binary, f"--Xcc=-std={self.std}"] + [f"--Xcc=-I{d}" for d in dirs]
            end = "fluxion_notebook::end_of_cell();\n"
            script = '#include "fluxion_notebook_runner.hpp"\n'
            for p in paths:
                script += f'#include "{p}"\n' + end
            script += "%quit\n"
            stderr_path = os.path.join(work, "stderr.txt")
            t0 = time.time()
            with open(stderr_path, "w") as err:
                proc = subprocess.Popen(args, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=err,
                                        cwd=os.path.dirname(notebook_path), text=True, bufsize=1)
            threading.Thread(target=self._feed, args=(proc, script), daemon=True).start()
            return self._finish(proc, cells, stderr_path, timeout, t0)
        finally:
            shutil.rmtree(work, ignore_errors=True)

    @staticmethod
    def _feed(proc, script):
        try:
            proc.stdin.write(script)
            proc.stdin.close()
        except BrokenPipeError:
            pass


class Cling(Engine):
    name = "cling"

    def __init__(self, python, std):
        self.python, self.std = python, std

    def run(self, notebook_path, cells, includes, timeout):
        work = tempfile.mkdtemp(prefix="fluxion-nb-cling-")
        try:
            paths = write_cell_files(cells, work)
            plan = {"include_dirs": includes + [d for c in cells for d in c.include_dirs] + [SUPPORT],
                    "cells": [{"file": p, "source": open(p).read()} for p in paths]}
            plan_path = os.path.join(work, "plan.json")
            with open(plan_path, "w") as f:
                json.dump(plan, f)
            stderr_path = os.path.join(work, "stderr.txt")
            env = dict(os.environ, STDCXX=self.std.replace("c++", ""))
            env.setdefault("EXTRA_CLING_ARGS", "-O0")
            t0 = time.time()
            with open(stderr_path, "w") as err:
                proc = subprocess.Popen([self.python, os.path.join(HERE, "cling_driver.py"), plan_path],
                                        stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=err,
                                        cwd=os.path.dirname(notebook_path), text=True, bufsize=1, env=env)
            return self._finish(proc, cells, stderr_path, timeout, t0)
        finally:
            shutil.rmtree(work, ignore_errors=True)

    def available(self):
        if not self.python or not os.path.exists(self.python):
            return False, f"no Python with cppyy ({self.python or 'set --cling-python or FLUXION_CLING_PYTHON'})"
        r = subprocess.run([self.python, "-c", "import cppyy"], capture_output=True, text=True)
        if r.returncode != 0:
            return False, f"{self.python} cannot import cppyy"
        return True, ""


# ---------------------------------------------------------------- comparison

def text_of(value):
    return "".join(value) if isinstance(value, list) else (value or "")


def comparable(outputs):
    """What must match between a stored and a produced output list."""
    out = []
    for o in outputs:
        kind = o.get("output_type")
        if kind == "stream":
            if out and out[-1][0] == "stream":
                out[-1] = ("stream", out[-1][1] + text_of(o.get("text")))
            else:
                out.append(("stream", text_of(o.get("text"))))
        elif kind in ("display_data", "execute_result"):
            data = o.get("data", {})
            out.append(("display", text_of(data.get("text/plain")), text_of(data.get("text/html"))))
        elif kind == "error":
            out.append(("error", o.get("ename", ""), o.get("evalue", "")))
    return out


def jupyter_outputs(outputs):
    """Outputs in the form Jupyter stores them (text split into lines)."""
    stored = []
    for o in outputs:
        o = dict(o)
        if o["output_type"] == "stream":
            o["text"] = o["text"].splitlines(keepends=True)
        elif o["output_type"] == "display_data":
            o["data"] = {k: (v.splitlines(keepends=True) if k.startswith("text/") else v)
                         for k, v in o["data"].items()}
        stored.append(o)
    return stored


def first_difference(expected, got):
    for i, (e, g) in enumerate(zip(expected, got)):
        if e != g:
            return f"output {i + 1} differs:\n--- stored\n{format_item(e)}\n--- produced\n{format_item(g)}"
    if len(expected) != len(got):
        return (f"{len(expected)} stored outputs, {len(got)} produced:\n--- stored\n"
                + "\n".join(map(format_item, expected)) + "\n--- produced\n" + "\n".join(map(format_item, got)))
    return None


def format_item(item):
    return " | ".join(str(x) for x in item)[:2000]


# ---------------------------------------------------------------- main

def check_cell(cell, result, update):
    """Problems with one cell's result (empty list when it passed)."""
    problems = []
    if result["status"] != "ran":
        extra = f" (exit status {result.get('returncode')})" if result["status"] == "crashed" else ""
        problems.append(f"the interpreter {result['status']}{extra} while running it")
        return problems
    if DIAGNOSTIC_ERROR.search(result["diagnostics"]):
        problems.append("compile errors")
    errors = [o for o in result["outputs"] if o["output_type"] == "error"]
    if cell.raises:
        if not errors or errors[0]["ename"] == "":
            problems.append("tagged raises-exception but threw nothing")
    elif errors:
        problems.append(f"threw {errors[0]['ename']}: {errors[0]['evalue']}")
    if not update and "nondeterministic" not in cell.tags:
        diff = first_difference(comparable(cell.cell.get("outputs", [])), comparable(result["outputs"]))
        if diff:
            problems.append("output differs from the stored one: " + diff)
    return problems


def main():
    root_default = os.path.dirname(os.path.dirname(HERE))
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("notebooks", nargs="*", help="default: <root>/notebooks/*.ipynb")
    ap.add_argument("--root", default=root_default, help="the Fluxion repository (include paths)")
    ap.add_argument("--include", action="append", default=[], help="more include directories")
    ap.add_argument("--eigen", default="/usr/include/eigen3", help="Eigen's include directory")
    ap.add_argument("--engines", default="auto", help="auto, clang-repl, cling or clang-repl,cling")
    ap.add_argument("--clang-repl", default=os.environ.get("CLANG_REPL", "clang-repl-19"))
    ap.add_argument("--cling-python", default=os.environ.get("FLUXION_CLING_PYTHON", ""),
                    help="a Python that can import cppyy (tests/notebooks/setup_cling.sh)")
    ap.add_argument("--std", default="c++17")
    ap.add_argument("--timeout", type=float, default=900, help="seconds one cell may take")
    ap.add_argument("--update", action="store_true", help="store the produced outputs in the notebooks")
    args = ap.parse_args()

    root = os.path.abspath(args.root)
    notebooks = args.notebooks or sorted(
        os.path.join(root, "notebooks", n) for n in os.listdir(os.path.join(root, "notebooks")) if n.endswith(".ipynb"))
    includes = [os.path.join(root, "include"), root, args.eigen] + args.include

    wanted = ["clang-repl", "cling"] if args.engines == "auto" else args.engines.split(",")
    engines, skipped = [], []
    if "clang-repl" in wanted:
        binary = shutil.which(args.clang_repl)
        if binary:
            engines.append(ClangRepl(binary, args.std))
        else:
            skipped.append(f"clang-repl: {args.clang_repl} not found (Debian package clang-tools-19)")
    if "cling" in wanted:
        cling = Cling(args.cling_python, args.std)
        ok, why = cling.available()
        if ok:
            engines.append(cling)
        else:
            skipped.append(f"cling: {why}")
    for s in skipped:
        print(f"notebooks: engine skipped: {s}")
    if not engines:
        print("notebooks: SKIPPED: no engine available")
        return 77
    print("notebooks: engines: " + ", ".join(e.name for e in engines), flush=True)

    failures, summary = [], []
    for path in notebooks:
        name = os.path.basename(path)
        with open(path) as f:
            nb = json.load(f)
        cells = []
        for i, c in enumerate(nb["cells"]):
            if c.get("cell_type") == "code":
                cells.append(Cell(i, len(cells) + 1, c, os.path.dirname(os.path.abspath(path))))
        stored_by = None
        for engine in engines:
            results, wall, exit_note = engine.run(os.path.abspath(path), cells, includes, args.timeout)
            nb_failures = []
            for cell, result in zip(cells, results):
                problems = check_cell(cell, result, args.update)
                if problems:
                    diag = result.get("diagnostics", "").strip()
                    nb_failures.append(f"{name}: {cell.label()} [{engine.name}]: " + "; ".join(problems)
                                       + (f"\n  diagnostics:\n    " + diag[-4000:].replace("\n", "\n    ") if diag else ""))
            if len(results) < len(cells) and not nb_failures:
                nb_failures.append(f"{name} [{engine.name}]: stopped after cell {len(results)} of {len(cells)}")
            first = results[0]["seconds"] if results and "seconds" in results[0] else float("nan")
            status = "FAILED" if nb_failures else "passed"
            summary.append(f"  {name:32} {engine.name:10} {status:6} {wall:6.1f} s "
                           f"(first cell {first:.1f} s, {len(results)}/{len(cells)} cells)")
            print(summary[-1] + (f"  [{exit_note}]" if exit_note else ""), flush=True)
            if exit_note and not nb_failures:
                print(f"  note: {name} [{engine.name}]: every cell ran; {exit_note} at exit")
            for msg in nb_failures:
                print("FAIL " + msg, flush=True)
            failures += nb_failures
            if args.update and not nb_failures and stored_by is None:
                for cell, result in zip(cells, results):
                    cell.cell["outputs"] = jupyter_outputs(result["outputs"])
                    cell.cell["execution_count"] = cell.number
                with open(path, "w") as f:
                    json.dump(nb, f, indent=1, ensure_ascii=False)
                    f.write("\n")
                stored_by = engine.name
                print(f"  stored the {engine.name} outputs in {name}")
    print("notebooks: summary (engines: " + ", ".join(e.name for e in engines) + ")")
    print("\n".join(summary))
    if failures:
        print(f"notebooks: {len(failures)} failure(s)")
        return 1
    print("notebooks: passed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
