"""Shared parts of the side-by-side comparison (bench/compare, compare_jax.py, compare_torch.py).

- WORKLOADS: the catalogue of workloads and sizes, the same as bench/bench_workloads*.cpp (case
  names W<k>/<impl>/<size>); `quick` marks the sizes run by `bench/compare --quick`.
- Inputs: the counter-based generator of bench/workloads.hpp reproduced with numpy, so every
  framework sees the same numbers (to rounding) and results can be cross-checked by their sum of
  absolute values ("l1").
- measure(): first call (trace + compile for jit'd functions) timed apart, then repetitions of a
  calibrated number of calls; medians of wall and process-CPU time per call.

Only the standard library is imported at module level: bench/compare imports this file with the
system Python, the framework scripts with bench/.venv's.
"""
import json
import math
import statistics
import sys
import time

# W9 (bench/bench_workloads_scan.cpp): RK4 of dx/dt = tanh(W x + b) - gamma x over SCAN_STEPS steps of
# step SCAN_H; loss sum(x_T^2); gradient w.r.t. (W, b).
SCAN_N, SCAN_STEPS, SCAN_H, SCAN_GAMMA = 4, 1000, 0.01, 0.5

# workload -> list of (kind, size, quick). kind "grad" is the transformed function (the row compared
# with JAX and PyTorch), "fn" the function alone (for grad/function ratios).
WORKLOADS = {
    "W1": [(k, f"N={n}", n <= 65536) for n in (4096, 65536, 1 << 24) for k in ("grad", "fn")],
    "W2": [(k, f"batch={b}", b <= 256) for b in (32, 256, 1024) for k in ("grad", "fn")],
    "W3": [("grad", f"batch={b}", b == 64) for b in (64, 256)],
    "W4": [("grad", "d=1000,N=1000", True)],
    "W5": [("grad", "logreg:d=1000,N=1000", True), ("grad", "mlp:batch=256", True)],
    "W6": [("grad", f"{mode}:m={m},n={n}", m * n < 1024 * 1024)
           for (m, n) in ((2048, 32), (32, 2048), (1024, 1024)) for mode in ("jacfwd", "jacrev", "jacobian")],
    "W7": [("grad", "grad_sin:scalar", True), ("grad", "rosenbrock_hessian:d=2", True),
           ("grad", "rosenbrock_hessian:d=10", True)],
    "W8": [(k, f"d={d},K={K}", d <= 10 and K <= 25) for d in (2, 10, 32, 64) for K in (5, 25, 100)
           for k in ("grad", "fn")],
    "W9": [(k, f"rk4:n={SCAN_N},steps={SCAN_STEPS}", True) for k in ("grad", "fn")],
    "W10": [(k, "b=8,h=4,s=128,d=32", True) for k in ("grad", "fn")],
    "W11": [(k, "gru:batch=16,in=32,hidden=64,steps=100", True) for k in ("grad", "fn")],
    "W12": [(k, "mlp:points=256,dim=3,width=64", True) for k in ("grad", "fn")],
    "W13": [("grad", f"{mode}:K={K},m=256", K == 25) for K in (25, 100) for mode in ("jacfwd", "jacrev")],
}

LABELS = {
    ("W1", "grad"): "W1 grad elementwise",
    ("W1", "fn"): "W1 function",
    ("W2", "grad"): "W2 MLP value_and_grad",
    ("W2", "fn"): "W2 MLP loss",
    ("W3", "grad"): "W3 per-sample grads",
    ("W4", "grad"): "W4 logreg hessian",
    ("W5", "grad"): "W5 hvp",
    ("W6", "grad"): "W6 jacobian",
    ("W7", "grad"): "W7 tiny",
    ("W8", "grad"): "W8 GMM gradient",
    ("W8", "fn"): "W8 GMM objective",
    ("W9", "grad"): "W9 scan RK4 gradient",
    ("W9", "fn"): "W9 scan RK4 loss",
    ("W10", "grad"): "W10 attention grad",
    ("W10", "fn"): "W10 attention",
    ("W11", "grad"): "W11 GRU scan value_and_grad",
    ("W11", "fn"): "W11 GRU scan loss",
    ("W12", "grad"): "W12 Laplacian vmap(hessian)",
    ("W12", "fn"): "W12 MLP u(x)",
    ("W13", "grad"): "W13 least-squares JᵀJ, Jᵀr",
}

F64_WORKLOADS = {"W4", "W8", "W9", "W11", "W13"}  # and W5's logreg case


def selected(only=None, quick=False, kind=None, size=None):
    """[(workload, kind, size)] in catalogue order (with `kind` / `size`, only those)."""
    out = []
    for w, cases in WORKLOADS.items():
        if only and w not in only:
            continue
        for k, s, q in cases:
            if (quick and not q) or (kind and k != kind) or (size and s != size):
                continue
            out.append((w, k, s))
    return out


def parse_common_args(argv, description, extra=None):
    """The options every framework script takes; `extra(parser)` adds a script's own."""
    import argparse
    ap = argparse.ArgumentParser(description=description)
    if extra:
        extra(ap)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--only", default="", help="comma-separated workloads, e.g. W1,W7")
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--kind", default=None, help="only this kind (grad or fn): with --size, one case")
    ap.add_argument("--size", default=None, help="only this size, e.g. batch=4096,n=4")
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--min-time", type=float, default=0.2, help="seconds per repetition (at least one call)")
    ap.add_argument("--out", default="-")
    args = ap.parse_args(argv)
    args.only = [w.strip() for w in args.only.split(",") if w.strip()]
    return args


# ---------------------------------------------------------------- inputs (numpy)

_GOLDEN = 0x9E3779B97F4A7C15
_M1 = 0xBF58476D1CE4E5B9
_M2 = 0x94D049BB133111EB


def uniform01(seed, count):
    import numpy as np
    with np.errstate(over="ignore"):
        j = np.arange(count, dtype=np.uint64)
        z = np.uint64((seed << 32) & 0xFFFFFFFFFFFFFFFF) + (j + np.uint64(1)) * np.uint64(_GOLDEN)
        z = (z ^ (z >> np.uint64(30))) * np.uint64(_M1)
        z = (z ^ (z >> np.uint64(27))) * np.uint64(_M2)
        z = z ^ (z >> np.uint64(31))
    return (z >> np.uint64(11)).astype(np.float64) * 2.0 ** -53


def normal_values(n, seed, scale=1.0):
    import numpy as np
    u = uniform01(seed, 2 * n)
    return scale * np.sqrt(-2.0 * np.log(1.0 - u[0::2])) * np.cos(6.283185307179586 * u[1::2])


def uniform_values(n, seed, lo, hi):
    return lo + (hi - lo) * uniform01(seed, n)


def mlp_params(sizes, seed):
    """[(W [in, out], b [out])] as float64 numpy arrays, as EigenMlp(sizes, seed)."""
    out = []
    for l in range(len(sizes) - 1):
        w = normal_values(sizes[l] * sizes[l + 1], seed + 17 * l, math.sqrt(2.0 / sizes[l])).reshape(sizes[l], sizes[l + 1])
        b = normal_values(sizes[l + 1], seed + 17 * l + 5, 0.1)
        out.append((w, b))
    return out


def mlp_batch(sizes, batch):
    """(params, x [batch, in], onehot [batch, classes]) in float64, as MlpBatch."""
    import numpy as np
    params = mlp_params(sizes, 2002)
    x = normal_values(batch * sizes[0], 3003, 1.0).reshape(batch, sizes[0])
    labels = (7 * np.arange(batch) + 3) % sizes[-1]
    onehot = np.zeros((batch, sizes[-1]))
    onehot[np.arange(batch), labels] = 1.0
    return params, x, onehot


def logreg_data(d=1000, n=1000):
    import numpy as np
    X = normal_values(n * d, 4004, 1.0).reshape(n, d)
    w = normal_values(d, 4005, 1.0 / math.sqrt(d))
    v = normal_values(d, 4006, 1.0)
    y = np.where((np.arange(n) * 5 + 1) % 3 == 0, -1.0, 1.0)
    return w, v, X, y


LOGREG_LAMBDA = 1e-2


def layer_data(m, n):
    W = normal_values(m * n, 6006, 1.0 / math.sqrt(n)).reshape(m, n)
    x = normal_values(n, 6007, 1.0)
    b = normal_values(m, 6008, 0.1)
    return x, W, b


def rosen_point(d):
    import numpy as np
    return 1.2 - 0.15 * np.arange(d, dtype=np.float64)


def gmm_data(d, K, n=1000):
    import numpy as np
    seed = 7000 + 100 * d + K
    tri = d * (d + 1) // 2
    alphas = normal_values(K, seed, 1.0)
    means = uniform_values(K * d, seed + 1, 0.0, 1.0).reshape(K, d)
    icf = normal_values(K * tri, seed + 2, 1.0).reshape(K, tri)
    x = normal_values(n * d, seed + 3, 1.0).reshape(n, d)
    idx = np.zeros((d, d), dtype=np.int64)
    pos = 1
    for j in range(d):
        for i in range(j + 1, d):
            idx[i, j] = pos
            pos += 1
    return alphas, means, icf, x, idx


def gmm_constant(d, K, n):
    """-n d/2 log(2 pi) - K C with the Wishart prior gamma = 1, m = 0 (as the C++ suite)."""
    gamma, m = 1.0, 0
    np_ = d + m + 1
    lg = 0.25 * d * (d - 1) * math.log(math.pi) + sum(math.lgamma(0.5 * np_ + 0.5 * (1 - j)) for j in range(1, d + 1))
    C = np_ * d * (math.log(gamma) - 0.5 * math.log(2.0)) - lg
    return -n * d * 0.5 * math.log(2 * math.pi) - K * C


def scan_data(n=SCAN_N):
    """(W [n, n], b [n], x0 [n]) in float64, as ScanData in bench/bench_workloads_scan.cpp."""
    W = normal_values(n * n, 9001, 1.0 / math.sqrt(n)).reshape(n, n)
    return W, normal_values(n, 9002, 0.1), normal_values(n, 9003, 1.0)


def rk4_step(rhs, x, h=SCAN_H):
    """One RK4 step of dx/dt = rhs(x), written as the C++ suite writes it (any array library)."""
    k1 = rhs(x)
    k2 = rhs(x + k1 * (h / 2))
    k3 = rhs(x + k2 * (h / 2))
    k4 = rhs(x + k3 * h)
    return x + (k1 + 2.0 * k2 + 2.0 * k3 + k4) * (h / 6)


def attention_data(b, h, s, d):
    """(q, k, v) [b, h, s, d] in float64, as AttentionData in bench/bench_workloads_attention.cpp."""
    n = b * h * s * d
    return tuple(normal_values(n, seed).reshape(b, h, s, d) for seed in (10001, 10002, 10003))


def gru_data(batch, inp, hidden, steps):
    """(params (wz, wr, wn, uz, ur, un, bz, br, bn), h0 [batch, hidden], xs [steps, batch, inp]) in
    float64, as GruData in bench/bench_workloads_recurrent.cpp."""
    shapes = [(inp, hidden)] * 3 + [(hidden, hidden)] * 3 + [(hidden,)] * 3
    scales = [1.0 / math.sqrt(inp)] * 3 + [1.0 / math.sqrt(hidden)] * 3 + [0.1] * 3
    params = tuple(normal_values(math.prod(sh), 11001 + i, sc).reshape(sh)
                   for i, (sh, sc) in enumerate(zip(shapes, scales)))
    h0 = normal_values(batch * hidden, 11010, 0.5).reshape(batch, hidden)
    xs = normal_values(steps * batch * inp, 11011, 1.0).reshape(steps, batch, inp)
    return params, h0, xs


def gru_cell(p, h, x, sigmoid, tanh):
    """One GRU step, written as the C++ suite writes it (any array library)."""
    wz, wr, wn, uz, ur, un, bz, br, bn = p
    z = sigmoid(x @ wz + h @ uz + bz)
    r = sigmoid(x @ wr + h @ ur + br)
    n = tanh(x @ wn + r * (h @ un) + bn)
    return (1.0 - z) * n + z * h


def laplacian_data(points, dim, width):
    """(params (W1, b1, W2, b2, w3), X [points, dim]) rounded to float32 values, as LaplacianData in
    bench/bench_workloads_laplacian.cpp."""
    import numpy as np
    shapes = [(dim, width), (width,), (width, width), (width,), (width,)]
    scales = [1.0 / math.sqrt(dim), 0.1, 1.0 / math.sqrt(width), 0.1, 1.0 / math.sqrt(width)]
    params = tuple(normal_values(math.prod(sh), 12002 + i, sc).astype(np.float32).reshape(sh)
                   for i, (sh, sc) in enumerate(zip(shapes, scales)))
    X = uniform_values(points * dim, 12001, -1.0, 1.0).astype(np.float32).reshape(points, dim)
    return params, X


def mlp_u(p, x, tanh, dot):
    """u(x) = w3 . tanh(tanh(x W1 + b1) W2 + b2) for one point x [dim]."""
    W1, b1, W2, b2, w3 = p
    return dot(tanh(tanh(x @ W1 + b1) @ W2 + b2), w3)


def decay_data(K, m):
    """(p = (a, lambda) [2K], t [m], y [m]) in float64, as DecayData in
    bench/bench_workloads_least_squares.cpp."""
    import numpy as np
    t = 4.0 * np.arange(m, dtype=np.float64) / (m - 1)
    y = normal_values(m, 13001, 0.01) + 1.5 * np.exp(-0.7 * t) + 0.5 * np.exp(-2.5 * t)
    a = uniform_values(K, 13002, 0.5, 1.5) / K
    lam = uniform_values(K, 13003, 0.1, 3.0)
    return np.concatenate([a, lam]), t, y


def decay_residual(p, t, y, exp, outer):
    """r(p) = exp(-t lambda^T) a - y, p = (a, lambda)."""
    K = p.shape[0] // 2
    return exp(-outer(t, p[K:])) @ p[:K] - y


def parse_size(size):
    """'mode:m=2048,n=32' -> ('mode', {'m': 2048, 'n': 32}); 'N=4096' -> (None, {'N': 4096})."""
    mode = None
    if ":" in size:
        mode, size = size.split(":", 1)
    vals = {}
    for part in size.split(","):
        if "=" not in part:
            continue
        k, v = part.split("=")
        try:
            vals[k] = int(v)
        except ValueError:
            vals[k] = v
    return mode, vals


# ---------------------------------------------------------------- timing

def measure(fn, block, reps, min_time):
    """(first_call_s, median wall s per call, median process-CPU s per call, result of first call)."""
    t0 = time.perf_counter()
    out = block(fn())
    first = time.perf_counter() - t0
    block(fn())  # warm
    n = 1
    while True:
        t0 = time.perf_counter()
        for _ in range(n):
            block(fn())
        dt = time.perf_counter() - t0
        if dt >= min_time or n >= 1 << 20:
            break
        n = max(2 * n, int(n * min_time / max(dt, 1e-9) * 1.1))
    walls, cpus = [], []
    for _ in range(reps):
        w0, c0 = time.perf_counter(), time.process_time()
        for _ in range(n):
            block(fn())
        walls.append((time.perf_counter() - w0) / n)
        cpus.append((time.process_time() - c0) / n)
    return first, statistics.median(walls), statistics.median(cpus), out


def l1_of(leaves):
    import numpy as np
    return float(sum(np.abs(np.asarray(leaf, dtype=np.float64)).sum() for leaf in leaves))


def write_records(records, path):
    text = json.dumps(records, indent=1)
    if path == "-":
        sys.stdout.write(text + "\n")
    else:
        with open(path, "w") as f:
            f.write(text + "\n")


# Wconv (bench/bench_workloads_conv.cpp, issue 31): y = conv(x, w), x [N, C, H, W] (NCHW), w [O, C, K, K]
# (OIHW), stride 1, SAME padding, f32; "grad" is the gradient of 0.5 sum(y^2) w.r.t. (x, w).
WORKLOADS["Wconv"] = [(k, "N=8,C=32,O=64,H=32,W=32,K=3", True) for k in ("grad", "fn")]
LABELS[("Wconv", "grad")] = "Wconv conv2d forward+backward"
LABELS[("Wconv", "fn")] = "Wconv conv2d forward"


def conv_data(N, C, O, H, W, K):
    """(x [N, C, H, W], w [O, C, K, K]) in float64, as ConvData in bench/bench_workloads_conv.cpp."""
    x = normal_values(N * C * H * W, 14001).reshape(N, C, H, W)
    w = normal_values(O * C * K * K, 14002, 1.0 / math.sqrt(C * K * K)).reshape(O, C, K, K)
    return x, w


# ---------------------------------------------------------------- issue 31: linear algebra
# Weigh, Wsvd (bench/bench_workloads_linalg.cpp), Wchol (bench/bench_workloads_cholesky.cpp), f64.
WORKLOADS["Weigh"] = [(k, f"n={n}", n == 32) for n in (32, 128) for k in ("grad", "fn")]
WORKLOADS["Wsvd"] = [(k, f"n={n}", n == 32) for n in (32, 128) for k in ("grad", "fn")]
WORKLOADS["Wchol"] = [(k, f"n={n}", n == 32) for n in (32, 128) for k in ("grad", "fn")]
LABELS.update({
    ("Weigh", "grad"): "Weigh grad Σ sin(eigvals)",
    ("Weigh", "fn"): "Weigh eigh",
    ("Wsvd", "grad"): "Wsvd grad nuclear norm",
    ("Wsvd", "fn"): "Wsvd svd",
    ("Wchol", "grad"): "Wchol grad log det",
    ("Wchol", "fn"): "Wchol cholesky",
})
F64_WORKLOADS |= {"Weigh", "Wsvd", "Wchol"}


def linalg_data(w, n):
    """The f64 input matrix of Weigh (symmetric), Wsvd (general) or Wchol (positive definite), as
    LinalgData / SpdData in bench/bench_workloads_linalg.cpp and bench_workloads_cholesky.cpp."""
    import numpy as np
    seed = {"Weigh": 31001, "Wsvd": 31002, "Wchol": 31003}[w]
    x = normal_values(n * n, seed).reshape(n, n)
    if w == "Weigh":
        return (x + x.T) * (0.5 / math.sqrt(n))
    if w == "Wsvd":
        return x / math.sqrt(n)
    return x @ x.T / n + np.eye(n)


# ---------------------------------------------------------------- issue 34: W14-W17
# W14 cross-entropy (bench/bench_workloads_xent.cpp, f32), W15 batched small solves
# (bench_workloads_batched_solve.cpp, f64), W16 a chain of 200 small operations (bench_workloads_op_chain.cpp,
# f32), W17 Lennard-Jones energy and forces (bench_workloads_nbody.cpp, f64).
XENT_VOCAB, SOLVE_SYSTEMS, CHAIN_BLOCKS = 1000, 4096, 25
WORKLOADS["W14"] = [(k, f"batch={b},dim={d},vocab={XENT_VOCAB}", b == 256)
                    for (b, d) in ((256, 128), (1024, 512)) for k in ("grad", "fn")]
WORKLOADS["W15"] = [(k, f"batch={SOLVE_SYSTEMS},n={n}", True) for n in (4, 8) for k in ("grad", "fn")]
WORKLOADS["W16"] = [(k, f"ops={8 * CHAIN_BLOCKS},n={n}", True) for n in (64, 256) for k in ("grad", "fn")]
WORKLOADS["W17"] = [(k, f"lj:n={n}", n == 512) for n in (512, 1000) for k in ("grad", "fn")]
LABELS.update({
    ("W14", "grad"): "W14 cross-entropy value_and_grad",
    ("W14", "fn"): "W14 cross-entropy loss",
    ("W15", "grad"): "W15 vmap(solve) grad",
    ("W15", "fn"): "W15 vmap(solve)",
    ("W16", "grad"): "W16 200-op chain grad",
    ("W16", "fn"): "W16 200-op chain",
    ("W17", "grad"): "W17 n-body LJ forces",
    ("W17", "fn"): "W17 n-body LJ energy",
})
F64_WORKLOADS |= {"W15", "W17"}


def xent_data(batch, dim, vocab=XENT_VOCAB):
    """(W [dim, vocab], X [batch, dim], labels [batch] int64) as XentData in bench/bench_workloads_xent.cpp
    (float64 values; the workload rounds them to f32)."""
    import numpy as np
    X = normal_values(batch * dim, 14101).reshape(batch, dim)
    W = normal_values(dim * vocab, 14102, 1.0 / math.sqrt(dim)).reshape(dim, vocab)
    return W, X, (7 * np.arange(batch) + 3) % vocab


def batched_solve_data(batch, n):
    """(A [batch, n, n] = I + N(0, 0.25 / n), b [batch, n]) in float64, as SolveData in
    bench/bench_workloads_batched_solve.cpp."""
    import numpy as np
    A = normal_values(batch * n * n, 15001, 0.5 / math.sqrt(n)).reshape(batch, n, n) + np.eye(n)
    return A, normal_values(batch * n, 15002).reshape(batch, n)


def op_chain_data(n):
    """x [n] (float64 values; the workload rounds them to f32), as OpChainData."""
    return normal_values(n, 16001)


def op_chain_loss(x, tanh, sin):
    """W16: CHAIN_BLOCKS blocks of 8 operations, then sum(x^2), as op_chain_loss in
    bench/bench_workloads_op_chain.cpp (any array library whose arrays have .mean() and .sum())."""
    for k in range(CHAIN_BLOCKS):
        y = tanh(x * (1.0 + 0.01 * k) + 0.02 * k)
        z = y - y.mean()
        x = z + 0.1 * sin(z)
    return (x * x).sum()


def nbody_data(n):
    """Positions [n, 3] in float64 (n a cube), as NbodyData in bench/bench_workloads_nbody.cpp: a cubic
    lattice of spacing 1.2, row-major in (i, j, k), plus a jitter U(-0.1, 0.1) per coordinate."""
    import numpy as np
    side = round(n ** (1.0 / 3.0))
    assert side ** 3 == n, f"W17: n = {n} is not a cube"
    p = np.arange(n)
    cells = np.stack([p // (side * side), (p // side) % side, p % side], axis=1).astype(np.float64)
    return 1.2 * cells + uniform_values(3 * n, 17001, -0.1, 0.1).reshape(n, 3)


def lj_energy(x, eye):
    """W17: Lennard-Jones energy over all ordered pairs (the identity added to r^2 zeroes the diagonal
    terms), as lj_energy in bench/bench_workloads_nbody.cpp; eye(n) builds the identity in x's dtype."""
    d = x[:, None, :] - x[None, :, :]
    r2 = (d * d).sum(-1) + eye(x.shape[0])
    inv = 1.0 / r2
    s = inv * inv * inv
    return 2.0 * (s * s - s).sum()
