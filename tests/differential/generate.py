#!/usr/bin/env python3
"""Regenerates the differential test's reference data (tests/differential/data/*.json) with JAX.

  tests/differential/generate.py            # all groups
  tests/differential/generate.py --list     # the entries and their checks (writes nothing)
  tests/differential/generate.py --only 'nest/*'   # regenerate the matching entries only

The catalogue is cat_ops.py, cat_control.py and cat_misc.py (mirrored by cat_*.cpp). For each entry it
samples the inputs (fixed seed per entry name), runs the JAX function under every transform the entry
checks, and stores inputs and outputs; the C++ test (test_differential) compares Fluxion against them,
so CI never runs Python. JAX runs with jax_enable_x64 on CPU. It creates bench/.venv and installs
jax[cpu] and numpy there when they are missing (like bench/compare), then re-runs itself with it.
"""
import argparse
import json
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
VENV = os.path.join(ROOT, "bench", ".venv")
VPY = os.path.join(VENV, "bin", "python")
DATA = os.path.join(HERE, "data")
sys.path.insert(0, HERE)


def ensure_jax():
    """Imports jax, or re-runs this script with bench/.venv's Python (created when missing)."""
    try:
        import jax  # noqa: F401
        import numpy  # noqa: F401
        return
    except ImportError:
        pass
    if os.path.realpath(sys.executable) == os.path.realpath(VPY) and os.environ.get("FLUXION_DIFF_REEXEC"):
        sys.exit("jax is still missing from bench/.venv after installing it")
    if not os.path.exists(VPY):
        subprocess.run([sys.executable, "-m", "venv", VENV], check=True)
    probe = subprocess.run([VPY, "-c", "import jax, numpy"], capture_output=True)
    if probe.returncode != 0:
        subprocess.run([VPY, "-m", "pip", "install", "--disable-pip-version-check", "jax[cpu]", "numpy"], check=True)
    os.environ["FLUXION_DIFF_REEXEC"] = "1"
    os.execv(VPY, [VPY, os.path.abspath(__file__)] + sys.argv[1:])


# ---------------------------------------------------------------- serialization

def number(v, dtype):
    if dtype in ("bool", "i32", "i64"):
        return int(v)
    v = float(v)
    if v != v:
        return "nan"
    if v in (float("inf"), float("-inf")):
        return "inf" if v > 0 else "-inf"
    if dtype == "f32":
        import numpy as np
        return json.loads(str(np.float32(v)))  # the shortest text that reads back as this f32
    return v


def tensor_json(x, spec=None):
    import numpy as np
    x = np.asarray(x)
    dtype = {"float64": "f64", "float32": "f32", "int32": "i32", "int64": "i64", "bool": "bool"}[str(x.dtype)]
    out = {"dtype": dtype, "shape": list(x.shape)}
    if spec is not None and spec.fill is not None:
        out["fill"] = number(spec.fill, dtype)
    else:
        out["data"] = [number(v, dtype) for v in x.ravel()]
    return out


# ---------------------------------------------------------------- references

def close(a, b, rtol):
    import numpy as np
    a, b = np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64)
    if a.shape != b.shape:
        return False
    both_nan = np.isnan(a) & np.isnan(b)
    same = (a == b) | both_nan
    err = np.abs(a - b)
    scale = np.max(np.abs(np.where(np.isfinite(b), b, 0.0)), initial=0.0)
    return bool(np.all(same | (err <= rtol * (np.abs(b) + scale) + 1e-300)))


def references(entry, args, batched, tangent, notes):
    """{check-reference name: list of arrays} for the entry's checks (see README.md)."""
    import jax
    import jax.numpy as jnp
    import numpy as np
    from spec import weights

    f = entry.fn
    rtol = 1e-6 if entry.dtype == "f32" else 1e-10

    def scalarized(a):
        y = f(a)
        return y if y.ndim == 0 else jnp.sum(y * weights(y.shape, y.dtype))

    def leaves(tree):
        return [np.asarray(t) for t in jax.tree.leaves(tree)]

    def first_working(name, options):
        errors = []
        for i, (label, thunk) in enumerate(options):
            try:
                out = thunk()
                if i:
                    notes[name] = f"computed as {label}; {errors[0]}"
                return out
            except Exception as e:  # JAX refuses this formulation: try the next one
                errors.append(f"{label}: {type(e).__name__}: {str(e).splitlines()[0][:120]}")
        raise RuntimeError(f"{entry.name}: no JAX formulation of {name} works: {errors}")

    # Derivatives and vmaps run jitted: one XLA compilation per reference instead of one per op
    # (3-4x faster to generate); the value itself runs op by op, as a user would call it.
    J = jax.jit
    refs = {}
    c = set(entry.checks)
    if c & {"value", "jit"}:
        refs["value"] = leaves(f(args))
        if "jit" in c and not all(close(a, b, rtol) for a, b in zip(leaves(J(f)(args)), refs["value"])):
            notes["jit"] = "jax.jit(f) differs from f beyond rtol"
    if "vmap" in c:
        refs["vmap"] = leaves(J(jax.vmap(f))(batched))
    if c & {"jacfwd", "jacrev", "jacobian", "jvp"}:
        jac = first_working("jacobian", [("jacfwd", lambda: leaves(J(jax.jacfwd(f))(args))),
                                         ("jacrev", lambda: leaves(J(jax.jacrev(f))(args)))])
        try:
            other = leaves(J(jax.jacrev(f))(args))
            if "jacrev" in c and not all(close(a, b, rtol) for a, b in zip(other, jac)):
                # Reverse mode rounds differently (e.g. cotangents cast to f32): jacrev gets its own.
                notes["jacrev"] = "JAX's jacfwd and jacrev differ beyond rtol: jacrev has its own reference"
                refs["jacrev"] = other
        except Exception:
            pass
        if c & {"jacfwd", "jacrev", "jacobian"}:
            refs["jacobian"] = jac
    if "jvp" in c:
        def jvp_from_jacobian():
            y = np.asarray(f(args))
            total = sum(np.tensordot(j, np.asarray(t), axes=np.ndim(t)) for j, t in zip(jac, tangent))
            return [np.asarray(total, dtype=y.dtype).reshape(y.shape)]
        refs["jvp"] = first_working("jvp", [("jax.jvp", lambda: leaves(J(lambda a, t: jax.jvp(f, (a,), (t,))[1])(
            args, tangent))),
                                            ("jacobian . tangent", jvp_from_jacobian)])
    if c & {"grad", "jit_grad"}:
        refs["grad"] = leaves(J(jax.grad(scalarized))(args))
    if "vmap_grad" in c:
        refs["vmap_grad"] = leaves(J(jax.vmap(jax.grad(scalarized)))(batched))
    if "hvp" in c:
        def grad_dot_v(a):
            return sum(jnp.vdot(g, t) for g, t in zip(jax.grad(scalarized)(a), tangent))
        refs["hvp"] = first_working("hvp", [
            ("jvp of grad", lambda: leaves(J(lambda a, t: jax.jvp(jax.grad(scalarized), (a,), (t,))[1])(args, tangent))),
            ("grad of grad . v", lambda: leaves(J(jax.grad(grad_dot_v))(args)))])
    if "hessian" in c:
        refs["hessian"] = first_working("hessian", [
            ("jax.hessian", lambda: leaves(J(jax.hessian(scalarized))(args))),
            ("jacrev of jacrev", lambda: leaves(J(jax.jacrev(jax.jacrev(scalarized)))(args)))])
    return refs


def generate_entry(entry):
    import numpy as np
    rng = entry.rng()
    args = [a.sample(rng, entry.dtype) for a in entry.args]
    needs_batch = bool({"vmap", "vmap_grad"} & set(entry.checks))
    batched = [a.sample(rng, entry.dtype, batch=3) for a in entry.args] if needs_batch else []
    differentiates = bool(set(entry.checks) - {"value", "jit", "vmap"})
    tangent = [rng.standard_normal(a.shape).astype(x.dtype) for a, x in zip(entry.args, args)] if differentiates else []
    import jax.numpy as jnp
    notes = {}
    refs = references(entry, [jnp.asarray(x) for x in args], [jnp.asarray(x) for x in batched],
                      [jnp.asarray(x) for x in tangent], notes)
    out = {"name": entry.name, "dtype": entry.dtype, "checks": entry.checks,
           "args": [tensor_json(x, spec) for x, spec in zip(args, entry.args)],
           "batched": [tensor_json(x) for x in batched], "tangent": [tensor_json(x) for x in tangent],
           "refs": {k: [tensor_json(np.asarray(t)) for t in v] for k, v in refs.items()}}
    if entry.cpp != entry.name:
        out["cpp"] = entry.cpp
    if notes:
        out["jax_notes"] = notes
    return out


def catalogues():
    import cat_control
    import cat_misc
    import cat_ops
    return [cat_ops.build(), cat_control.build(), cat_misc.build()]


def stored_entries(path):
    """name -> entry of an existing data file (empty when there is none)."""
    try:
        with open(path) as fh:
            return {e["name"]: e for e in json.load(fh)["entries"]}
    except (OSError, ValueError, KeyError):
        return {}


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--list", action="store_true", help="print the entries and their checks, and stop")
    ap.add_argument("--only", metavar="GLOB[,GLOB...]",
                    help="regenerate only the matching entries (and new ones), keep the others' data")
    opts = ap.parse_args()
    ensure_jax()
    import fnmatch
    import time

    import jax
    jax.config.update("jax_enable_x64", True)
    jax.config.update("jax_platforms", "cpu")
    import numpy as np

    cats = catalogues()
    names = [e.name for c in cats for e in c.entries]
    dup = sorted({n for n in names if names.count(n) > 1})
    if dup:
        sys.exit(f"duplicate entry names: {dup}")
    if opts.list:
        for c in cats:
            for e in c.entries:
                print(f"{e.name:55s} {e.dtype} {' '.join(e.checks)}")
        return
    os.makedirs(DATA, exist_ok=True)
    header = {"generator": "tests/differential/generate.py", "jax": jax.__version__, "numpy": np.__version__,
              "x64": True}
    for c in cats:
        path = os.path.join(DATA, c.group + ".json")
        old = stored_entries(path) if opts.only else {}
        rows, t0 = [], time.time()
        for i, e in enumerate(c.entries):
            if opts.only and not any(fnmatch.fnmatchcase(e.name, g) for g in opts.only.split(",")) and e.name in old:
                rows.append(old[e.name])
                continue
            t = time.time()
            rows.append(generate_entry(e))
            note = f" {rows[-1]['jax_notes']}" if rows[-1].get("jax_notes") else ""
            print(f"  [{c.group} {i + 1}/{len(c.entries)}] {e.name} ({time.time() - t:.1f} s){note}", file=sys.stderr,
                  flush=True)
            if i % 20 == 19:
                jax.clear_caches()  # compiled programs of earlier entries are rarely reused; memory grows
        lines = [json.dumps(r, separators=(",", ":"), allow_nan=False) for r in rows]
        with open(path, "w") as fh:
            fh.write('{"header":' + json.dumps(header) + ',\n"entries":[\n' + ",\n".join(lines) + "\n]}\n")
        print(f"{path}: {len(lines)} entries, {os.path.getsize(path) / 1024:.0f} KiB, {time.time() - t0:.0f} s")


if __name__ == "__main__":
    main()
