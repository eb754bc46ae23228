"""Fluxion's Jupyter kernel for C++17: ipykernel's wrapper-kernel API around one C++ host process.

The host (jupyter/host/fluxion_kernel_host.cpp) keeps one clang::Interpreter session with the Fluxion library
linked in. This side sends it each cell (length-prefixed) and, while the cell runs, turns what the host writes on
its stdout/stderr into `stream` messages, its display messages into `display_data`, and its reply into the
execute reply (C++ exceptions and compile errors become Jupyter errors; the session goes on). Interrupt: SIGINT
reaches the host; a cell that has not returned INTERRUPT_GRACE seconds later is ended by restarting the host,
which the cell's error says.

The host parses the usual first-cell headers ("preload") while the notebook opens: the kernel does not wait for
that to answer Jupyter's requests, only the first cell waits for it.

Settings: $FLUXION_KERNEL_CONFIG names a JSON file {"host": ..., "flags": ..., "preload": ...} (written by the CMake
build, jupyter/CMakeLists.txt); an optional "args" list adds interpreter flags.
"""
import codecs
import json
import os
import selectors
import signal
import struct
import subprocess
import time

from ipykernel.kernelbase import Kernel

INTERRUPT_GRACE = 3.0  # seconds a cell gets to return after SIGINT before the host is restarted


def load_config():
    path = os.environ.get("FLUXION_KERNEL_CONFIG", "")
    if not path or not os.path.exists(path):
        raise RuntimeError("FLUXION_KERNEL_CONFIG does not name the kernel's settings file (fluxion_kernel.json in "
                           "the build's jupyter/ folder); reinstall the kernel with scripts/jupyter.sh")
    with open(path) as f:
        return json.load(f)


class HostDied(Exception):
    """The host process ended while a cell ran (a crash, or killed)."""


class Host:
    """One host process: a C++ session. Cells go in through a pipe; outputs come back through callbacks."""

    def __init__(self, config, cwd):
        self.settings = config
        cells_r, self.cells_w = os.pipe()
        control_r, control_w = os.pipe()
        args = [config["host"], "--cells", str(cells_r), "--control", str(control_w), "--flags", config["flags"]]
        if config.get("preload"):
            args += ["--preload", config["preload"]]
        args += config.get("args", [])
        self.proc = subprocess.Popen(args, pass_fds=(cells_r, control_w), cwd=cwd, stdin=subprocess.DEVNULL,
                                     stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        os.close(cells_r)
        os.close(control_w)
        self.control = control_r
        self.pending = b""
        self.closed = set()  # the host's stdout/stderr once they reached their end
        for fd in (self.proc.stdout.fileno(), self.proc.stderr.fileno(), self.control):
            os.set_blocking(fd, False)
        self.decoders = {name: codecs.getincrementaldecoder("utf-8")("replace") for name in ("stdout", "stderr")}

    def alive(self):
        return self.proc.poll() is None

    def send_cell(self, code):
        data = code.encode("utf-8")
        os.write(self.cells_w, struct.pack("<I", len(data)) + data)

    def _drain(self, on_stream):
        """Forwards what the host printed so far (called before each control message, to keep the order)."""
        for name, pipe in (("stdout", self.proc.stdout), ("stderr", self.proc.stderr)):
            while True:
                try:
                    chunk = os.read(pipe.fileno(), 65536)
                except BlockingIOError:
                    break
                if not chunk:
                    self.closed.add(pipe.fileno())  # the host closed it (or ended): stop watching it
                    break
                text = self.decoders[name].decode(chunk)
                if text:
                    on_stream(name, text)

    def _messages(self):
        """Complete control messages received so far."""
        out = []
        while len(self.pending) >= 4:
            (n,) = struct.unpack("<I", self.pending[:4])
            if len(self.pending) < 4 + n:
                break
            out.append(json.loads(self.pending[4:4 + n].decode("utf-8", "replace")))
            self.pending = self.pending[4 + n:]
        return out

    def wait(self, on_stream, on_display, deadline=None):
        """Runs until the host's next reply (or ready) message and returns it; streams and displays on the way.
        None when the deadline passed first. Raises HostDied when the host ends."""
        sel = selectors.DefaultSelector()
        watched = {self.proc.stdout.fileno(), self.proc.stderr.fileno(), self.control} - self.closed
        for fd in watched:
            sel.register(fd, selectors.EVENT_READ)
        try:
            while True:
                timeout = None if deadline is None else max(0.0, deadline - time.monotonic())
                events = sel.select(timeout)
                if not events and deadline is not None and time.monotonic() >= deadline:
                    return None
                control_ready = any(key.fd == self.control for key, _ in events)
                self._drain(on_stream)
                for fd in self.closed & watched:
                    sel.unregister(fd)
                    watched.discard(fd)
                if not control_ready:
                    continue
                try:
                    chunk = os.read(self.control, 65536)
                except BlockingIOError:
                    continue
                if not chunk:
                    self.proc.wait()
                    self._drain(on_stream)
                    raise HostDied(self.proc.returncode)
                self.pending += chunk
                for msg in self._messages():
                    if msg["type"] == "display":
                        on_display(msg["data"], msg.get("result", False))
                        os.write(self.cells_w, b"A")  # the host waits for it: later output cannot overtake
                    else:
                        return msg
        finally:
            sel.close()

    def interrupt(self):
        if self.alive():
            self.proc.send_signal(signal.SIGINT)

    def stop(self):
        try:
            os.close(self.cells_w)  # the host exits at the end of its input
        except OSError:
            pass
        if self.alive():
            try:
                self.proc.wait(timeout=2)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        for f in (self.proc.stdout, self.proc.stderr):
            f.close()
        try:
            os.close(self.control)
        except OSError:
            pass


class FluxionKernel(Kernel):
    implementation = "fluxion_kernel"
    implementation_version = "0.1.0"
    language = "c++"
    language_version = "17"
    language_info = {
        "name": "C++17",
        "version": "17",
        "mimetype": "text/x-c++src",
        "file_extension": ".cpp",
        "codemirror_mode": "text/x-c++src",
        "pygments_lexer": "cpp",
    }
    banner = ("C++17 with Fluxion (clang 19 incremental compiler, Fluxion linked in). "
              "#include <fluxion/fluxion.hpp>; xcpp::display(x) from <xcpp/xdisplay.hpp> shows rich output.")

    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        self.settings = load_config()
        self.host = None
        self.start_error = None
        self._start_host()

    def _start_host(self):
        """Starts a host; the next cell waits until it is ready (_wait_ready)."""
        self.host = Host(self.settings, os.getcwd())
        self.host_ready = False
        self.start_error = None

    def _wait_ready(self):
        """Waits for the host's start-up (and preload); start_error says why it failed. What the host printed while
        starting goes to the current cell."""
        if self.host_ready:
            return
        startup = []
        try:
            msg = self.host.wait(lambda name, text: startup.append((name, text)), self._display)
        except HostDied as e:
            text = "".join(t for _, t in startup).strip()
            self.start_error = f"the C++ host did not start (exit status {e.args[0]}): {text}"
            return
        for name, text in startup:
            self._stream(name, text)
        self.host_ready = True
        if msg.get("type") != "ready":
            self.start_error = f"unexpected start-up message {msg}"
        elif msg.get("status") == "error":
            self._stream("stderr", f"The kernel could not preload {self.settings.get('preload')}: "
                                   f"{msg.get('ename')}: {msg.get('evalue')}\n")

    # ------------------------------------------------------------------ outputs

    def _stream(self, name, text):
        if not self._silent:
            self.send_response(self.iopub_socket, "stream", {"name": name, "text": text})

    def _display(self, data, is_result=False):
        """display_data, or execute_result for the value of the cell's last expression (shown as Out[n])."""
        if self._silent:
            return
        if is_result:
            self.send_response(self.iopub_socket, "execute_result",
                               {"data": data, "metadata": {}, "execution_count": self.execution_count})
        else:
            self.send_response(self.iopub_socket, "display_data", {"data": data, "metadata": {}})

    def _error(self, ename, evalue):
        traceback = [f"\x1b[0;31m{ename}\x1b[0m: {evalue}"] if evalue else [ename]
        content = {"ename": ename, "evalue": evalue, "traceback": traceback}
        if not self._silent:
            self.send_response(self.iopub_socket, "error", content)
        return dict(content, status="error", execution_count=self.execution_count)

    def _restart_host(self, why):
        self.host.stop()
        self._start_host()
        return why

    # ------------------------------------------------------------------ requests

    def do_execute(self, code, silent, store_history=True, user_expressions=None, allow_stdin=False):
        self._silent = silent
        if self.start_error is not None:  # the last start failed: try again
            self._restart_host("")
        try:
            self._wait_ready()
        except KeyboardInterrupt:
            return self._error("Interrupted", self._restart_host("interrupted while the C++ session was starting; "
                                                                 "a new one is starting"))
        if self.start_error is not None:
            return self._error("KernelError", self.start_error)
        if not code.strip():
            return {"status": "ok", "execution_count": self.execution_count, "payload": [], "user_expressions": {}}
        reply = None
        try:
            self.host.send_cell(code)
            try:
                reply = self.host.wait(self._stream, self._display)
            except KeyboardInterrupt:
                self.host.interrupt()
                try:
                    reply = self.host.wait(self._stream, self._display, time.monotonic() + INTERRUPT_GRACE)
                except KeyboardInterrupt:
                    reply = None
                if reply is None:
                    why = self._restart_host(f"the cell did not stop within {INTERRUPT_GRACE:g} s of the interrupt, "
                                             "so the C++ session was restarted: run the earlier cells again")
                    return self._error("Interrupted", why)
                if reply.get("status") == "ok":
                    return self._error("Interrupted", "the cell was interrupted")
        except (HostDied, BrokenPipeError) as e:
            status = e.args[0] if isinstance(e, HostDied) else self.host.proc.poll()
            how = f"signal {-status}" if isinstance(status, int) and status < 0 else f"exit status {status}"
            why = self._restart_host(f"the C++ session ended while running this cell ({how}); a new one was "
                                     "started: run the earlier cells again")
            return self._error("KernelRestarted", why)
        if reply.get("status") == "error":
            return self._error(reply.get("ename", "Error"), reply.get("evalue", ""))
        return {"status": "ok", "execution_count": self.execution_count, "payload": [], "user_expressions": {}}

    def do_shutdown(self, restart):
        if self.host is not None:
            self.host.stop()
        return {"status": "ok", "restart": restart}

    def do_is_complete(self, code):
        depth = sum(code.count(o) - code.count(c) for o, c in (("{", "}"), ("(", ")"), ("[", "]")))
        return {"status": "incomplete" if depth > 0 else "complete", "indent": "  " if depth > 0 else ""}
