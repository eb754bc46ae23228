#!/usr/bin/python3
"""Checks Fluxion's Jupyter kernel (jupyter/) through the Jupyter protocol, as a front end uses it.

  test_kernel.py --jupyter-path BUILD/jupyter/share/jupyter [--root REPO]

Each check runs cells in one kernel and looks at the messages: a C++ exception becomes an error and the session goes
on; a compile error likewise; stdout arrives while the cell runs; xcpp::display publishes a mime bundle; restart
gives a fresh session; interrupt ends a busy cell; a crashing cell restarts the session and says so; the first cell
prints nothing but what it is asked to. Exit status
0 passed, 1 a check failed (named), 77 a dependency is missing (the reason is printed).
"""
import argparse
import os
import sys
import time

FIRST_CELL = """#pragma cling add_include_path("{root}/include")
#define FLUXION_IMPLEMENTATION
#include <fluxion/fluxion.hpp>
#include <fluxion/display.hpp>
#include <xcpp/xdisplay.hpp>
#include <chrono>
#include <iostream>
#include <thread>
namespace fx = fluxion;
"""


class Run:
    """The messages one cell produced: outputs in order (with their arrival times) and the reply."""

    def __init__(self, client, code, timeout=300, on_output=None):
        msg_id = client.execute(code, stop_on_error=False)
        self.outputs, self.reply = [], None
        deadline = time.monotonic() + timeout
        while True:
            msg = client.get_iopub_msg(timeout=max(1, deadline - time.monotonic()))
            if msg["parent_header"].get("msg_id") != msg_id:
                continue
            kind = msg["msg_type"]
            if kind in ("stream", "display_data", "execute_result", "error"):
                self.outputs.append((time.monotonic(), kind, msg["content"]))
                if on_output:
                    on_output(self)
            elif kind == "status" and msg["content"]["execution_state"] == "idle":
                break
        while self.reply is None:
            msg = client.get_shell_msg(timeout=max(1, deadline - time.monotonic()))
            if msg["parent_header"].get("msg_id") == msg_id:
                self.reply = msg["content"]

    def text(self, name="stdout"):
        return "".join(c["text"] for _, k, c in self.outputs if k == "stream" and c["name"] == name)

    def errors(self):
        return [c for _, k, c in self.outputs if k == "error"]


def check(condition, what, run=None):
    if not condition:
        detail = f"\n  reply: {run.reply}\n  outputs: {[(k, c) for _, k, c in run.outputs]}" if run else ""
        raise AssertionError(what + detail)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--jupyter-path", required=True)
    ap.add_argument("--root", default=os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
    ap.add_argument("--kernel", default="fluxion-cpp17")
    args = ap.parse_args()
    spec = os.path.join(args.jupyter_path, "kernels", args.kernel, "kernel.json")
    if not os.path.exists(spec):
        print(f"test_kernel: SKIPPED: no kernelspec {spec} (the kernel was not built: clang 19 missing?)")
        return 77
    try:
        from jupyter_client.manager import KernelManager
        import ipykernel  # noqa: F401  (the kernel runs on it)
    except ImportError as e:
        print(f"test_kernel: SKIPPED: {e} (apt-get install python3-jupyter-client python3-ipykernel)")
        return 77
    os.environ["JUPYTER_PATH"] = os.path.abspath(args.jupyter_path)

    km = KernelManager(kernel_name=args.kernel)
    km.start_kernel(cwd=args.root)
    client = km.client()
    client.start_channels()
    client.wait_for_ready(timeout=120)
    failed = []

    def case(name, fn):
        try:
            fn()
            print(f"  {name}: passed", flush=True)
        except Exception as e:  # a failed check or a timeout: report it, go on with the next case
            failed.append(name)
            print(f"  {name}: FAILED: {type(e).__name__}: {e}", flush=True)

    def first_cell():
        t0 = time.monotonic()
        r = Run(client, FIRST_CELL.format(root=args.root))
        check(r.reply["status"] == "ok", "the first cell failed", r)
        check(not r.outputs, "the first cell printed something (warnings or noise)", r)
        print(f"    first cell, sent as soon as the kernel answered (it waits for the preload): "
              f"{time.monotonic() - t0:.1f} s")

    def exception_then_next_cell():
        r = Run(client, "auto a = fx::tensor({1.0, 2.0});")
        check(r.reply["status"] == "ok", "defining a tensor failed", r)
        r = Run(client, "a + fx::ones({3});")
        check(r.reply["status"] == "error" and r.reply["ename"] == "fluxion::ShapeError",
              "a shape mismatch should be a fluxion::ShapeError error reply", r)
        check(len(r.errors()) == 1 and "broadcast" in r.errors()[0]["evalue"], "the error output names the problem", r)
        t0 = time.monotonic()
        r = Run(client, "std::cout << fx::sum(a) << std::endl;")
        check(r.reply["status"] == "ok" and r.text().strip() == "3.", "the session survives the exception", r)
        print(f"    small cell after it {time.monotonic() - t0:.2f} s")

    def compile_error():
        r = Run(client, "int x = undefined_thing;")
        check(r.reply["status"] == "error" and r.reply["ename"] == "CompileError", "a compile error reply", r)
        check("undeclared identifier 'undefined_thing'" in r.reply["evalue"], "the diagnostic is the error's value", r)
        r = Run(client, "int y = 2; std::cout << y + 1 << std::endl;")
        check(r.reply["status"] == "ok" and r.text() == "3\n", "the session survives the compile error", r)

    def streaming():
        seen = {}

        def note(run):
            for t, _, c in run.outputs:
                if "first" in c.get("text", ""):
                    seen.setdefault("first", t)

        r = Run(client, 'std::cout << "first" << std::endl;\n'
                        'std::this_thread::sleep_for(std::chrono::milliseconds(1500));\n'
                        'std::cout << "second" << std::endl;', on_output=note)
        check(r.reply["status"] == "ok" and r.text() == "first\nsecond\n", "both lines arrive", r)
        last = [t for t, _, c in r.outputs if "second" in c.get("text", "")][0]
        check(last - seen["first"] > 0.5, "stdout streams while the cell runs (first line before the sleep)", r)

    def display():
        r = Run(client, 'std::cout << "before" << std::endl;\nxcpp::display(fx::tensor({1.0, 2.0}));\n'
                        'std::cout << "after" << std::endl;\nxcpp::display(42);')
        kinds = [(k, c.get("text", "").strip()) for _, k, c in r.outputs]
        check([k for k, _ in kinds] == ["stream", "display_data", "stream", "display_data"],
              "print, display, print, display in order", r)
        bundle = r.outputs[1][2]["data"]
        check("fluxion-tensor" in bundle.get("text/html", "") and bundle.get("text/plain") == "[1. 2.]",
              "the tensor's mime bundle (text/html table and text/plain)", r)
        check(r.outputs[3][2]["data"] == {"text/plain": "42"}, "a type without mime_bundle_repr shows its text", r)
        r = Run(client, "int five = 5;\nfive * 2")
        check([(k, c["data"]) for _, k, c in r.outputs] == [("execute_result", {"text/plain": "(int) 10"})],
              "a number as the last expression (no ';') is the cell's result", r)
        r = Run(client, "auto shown = fx::tensor({3.0, 4.0});\nshown")
        check([k for _, k, _ in r.outputs] == ["execute_result"] and
              "fluxion-tensor" in r.outputs[0][2]["data"].get("text/html", ""),
              "a tensor as the last expression is the cell's result, as an HTML table", r)
        r = Run(client, "[](int v) { return v; }")
        check(r.reply["status"] == "ok" and not r.outputs, "a value xcpp::display cannot show is left unshown", r)

    def crash():
        r = Run(client, "int* nowhere = nullptr;\n*nowhere = 1;")
        check(r.reply["status"] == "error" and r.reply["ename"] == "KernelRestarted"
              and "signal 11" in r.reply["evalue"],
              "a crashing cell says the session was restarted", r)
        r = Run(client, "int after_crash = 1;")
        check(r.reply["status"] == "ok", "cells run after the crash", r)

    def interrupt():
        r_holder = {}

        def busy():
            r_holder["run"] = Run(client, "volatile long spin = 0; while (true) { spin = spin + 1; }", timeout=60)

        import threading
        t = threading.Thread(target=busy)
        t.start()
        time.sleep(3)
        km.interrupt_kernel()
        t.join(60)
        r = r_holder.get("run")
        check(r is not None and r.reply["status"] == "error" and r.reply["ename"] == "Interrupted",
              "an interrupted busy cell ends with an Interrupted error", r)
        r = Run(client, "int after_interrupt = 1;")
        check(r.reply["status"] == "ok", "cells run after the interrupt", r)

    def restart():
        Run(client, "int kept = 5;")
        km.restart_kernel(now=True)
        client.wait_for_ready(timeout=120)
        r = Run(client, "int k2 = kept;")
        check(r.reply["status"] == "error" and "kept" in r.reply["evalue"], "restart forgets earlier definitions", r)
        r = Run(client, FIRST_CELL.format(root=args.root) + "std::cout << fx::ones({2}) << std::endl;")
        check(r.reply["status"] == "ok" and r.text() == "[1. 1.]\n", "the restarted kernel runs cells", r)

    try:
        for name, fn in [("first cell", first_cell), ("exception, then the next cell", exception_then_next_cell),
                         ("compile error", compile_error), ("stdout streams", streaming),
                         ("display bundles", display), ("interrupt", interrupt), ("crash", crash),
                         ("restart", restart)]:
            case(name, fn)
    finally:
        client.stop_channels()
        km.shutdown_kernel(now=True)
    print("test_kernel: " + (f"FAILED: {', '.join(failed)}" if failed else "passed"))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
