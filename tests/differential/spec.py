"""The catalogue's vocabulary: input specifications, entries and the check sets (used by generate.py
and the cat_*.py catalogue modules). Each entry names a function written twice, here with JAX and
in tests/differential/cat_*.cpp with Fluxion, under the same name."""
import zlib

import numpy as np

# What the C++ test runs per entry (tests/differential/README.md lists what each one computes).
VALUE = ["value", "jit", "vmap"]
FORWARD = VALUE + ["jvp", "jacfwd"]
ALL = FORWARD + ["jacrev", "jacobian", "grad", "jit_grad", "vmap_grad", "hvp", "hessian"]
HESSIAN_MAX_INPUTS = 16  # hessian only for entries with at most this many input elements
BATCH = 3  # vmap runs over a stacked batch of this many examples


class A:
    """One input: a shape and how to fill it.

    float (default): uniform in [lo, hi), resampled within `gap` of any point of `avoid` (kinks);
    kind="int": integers in [lo, hi); kind="bool"; values=...: fixed values (the vmap batch repeats
    them); fill=v: every element v (large inputs stored as one number).
    """

    def __init__(self, *shape, lo=-1.0, hi=1.0, avoid=(), gap=0.05, kind="float", values=None, fill=None):
        self.shape = tuple(shape)
        self.lo, self.hi, self.avoid, self.gap = lo, hi, tuple(avoid), gap
        self.kind, self.values, self.fill = kind, values, fill

    def dtype(self, float_dtype):
        return {"float": float_dtype, "int": "i32", "bool": "bool"}[self.kind]

    def size(self):
        return int(np.prod(self.shape, dtype=np.int64))

    def sample(self, rng, float_dtype, batch=None):
        shape = ((batch,) if batch else ()) + self.shape
        np_dtype = NP_DTYPES[self.dtype(float_dtype)]
        if self.fill is not None:
            return np.full(shape, self.fill, dtype=np_dtype)
        if self.values is not None:
            v = np.asarray(self.values, dtype=np_dtype).reshape(self.shape)
            return np.stack([v] * batch) if batch else v
        if self.kind == "int":
            return rng.integers(int(self.lo), int(self.hi), size=shape).astype(np_dtype)
        if self.kind == "bool":
            return rng.random(shape) < 0.5
        x = rng.uniform(self.lo, self.hi, size=shape)
        for _ in range(100):
            bad = np.zeros(shape, dtype=bool)
            for p in self.avoid:
                bad |= np.abs(x - p) < self.gap
            if not bad.any():
                break
            x = np.where(bad, rng.uniform(self.lo, self.hi, size=shape), x)
        return x.astype(np_dtype)


NP_DTYPES = {"f64": np.float64, "f32": np.float32, "i32": np.int32, "i64": np.int64, "bool": np.bool_}


class Entry:
    """A catalogue function: `name` (unique), `fn` (JAX, taking the list of inputs), `args` (A specs),
    `checks` (a subset of ALL), `dtype` (the float dtype of float inputs), `cpp` (the C++ function's
    name when it differs: the f32 subset reuses the f64 functions)."""

    def __init__(self, name, fn, args, checks=ALL, dtype="f64", cpp=None):
        self.name, self.fn, self.args, self.checks = name, fn, list(args), list(checks)
        self.dtype, self.cpp = dtype, cpp or name
        if "hessian" in self.checks and sum(a.size() for a in self.args) > HESSIAN_MAX_INPUTS:
            self.checks.remove("hessian")

    def rng(self):
        return np.random.default_rng(zlib.crc32(self.name.encode()))


class Catalogue:
    """Collects entries; `e(...)` adds one and returns it."""

    def __init__(self, group):
        self.group, self.entries = group, []

    def e(self, name, fn, *args, **kw):
        entry = Entry(name, fn, args, **kw)
        self.entries.append(entry)
        return entry

    def f32(self, *names):
        """f32 copies of entries already added (name prefixed with f32/, same C++ function)."""
        by_name = {x.name: x for x in self.entries}
        for n in names:
            src = by_name[n]
            self.entries.append(Entry("f32/" + n, src.fn, src.args, checks=src.checks, dtype="f32", cpp=src.cpp))


def weights(shape, dtype):
    """The fixed weights that make a non-scalar output scalar for grad, hessian and hvp:
    S(x) = sum(f(x) * w) with w.flat[k] = 0.5 + 0.25 * (k % 4) (exact in every float dtype)."""
    n = int(np.prod(shape, dtype=np.int64))
    return (0.5 + 0.25 * (np.arange(n) % 4)).reshape(shape).astype(dtype)
