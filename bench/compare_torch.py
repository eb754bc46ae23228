#!/usr/bin/env python3
"""The side-by-side workloads (bench/bench_workloads*.cpp) in PyTorch with torch.func (grad,
vmap, jacfwd, jacrev, hessian, jvp): eager (impl "torch"), or with --compile each case's call
wrapped in torch.compile (default mode, impl "torch_compile"; its first call, reported apart,
includes Dynamo's tracing and Inductor's code generation and C++ compilation, with Inductor's on-disk
caches in a fresh folder unless TORCHINDUCTOR_CACHE_DIR is set). A case whose
compile fails or exceeds --compile-timeout is reported as an error saying why; graph breaks
(parts Dynamo left to eager PyTorch) are counted in the record. Threads: torch.set_num_threads(--threads).

  bench/.venv/bin/python bench/compare_torch.py --only W1 --quick --out -
  bench/.venv/bin/python bench/compare_torch.py --only W14 --quick --compile --out -
"""
import math
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import compare_common as cc  # noqa: E402

import torch  # noqa: E402
from torch.func import grad, grad_and_value, hessian, jacfwd, jacrev, jvp, vmap  # noqa: E402

f32, f64 = torch.float32, torch.float64


def block(x):
    return x


def w1_f(x):
    return torch.sum(torch.tanh(x) * x + torch.exp(-(x * x)))


def xent(logits, onehot):
    return -torch.mean(torch.sum(torch.log_softmax(logits, dim=-1) * onehot, dim=-1))


def mlp_loss(params, x, onehot):
    h = x
    for w, b in params[:-1]:
        h = torch.relu(h @ w + b)
    w, b = params[-1]
    return xent(h @ w + b, onehot)


def mlp_example_loss(params, x, onehot):
    return mlp_loss(params, x.unsqueeze(0), onehot.unsqueeze(0))


def to_params(p, dtype):
    return tuple((torch.as_tensor(w, dtype=dtype), torch.as_tensor(b, dtype=dtype)) for w, b in p)


def logreg_loss(w, X, y):
    m = y * (X @ w)
    return torch.mean(torch.log1p(torch.exp(-m))) + 0.5 * cc.LOGREG_LAMBDA * torch.sum(w * w)


def layer(x, W, b):
    return torch.tanh(W @ x + b)


def sin_fn(x, y):
    return torch.sin(x) * y + x * x / y


def rosenbrock(x):
    return torch.sum(100.0 * (x[1:] - x[:-1] ** 2) ** 2 + (1.0 - x[:-1]) ** 2)


def gmm_objective(alphas, means, icf, x, idx, eye, constant):
    K, d = means.shape
    n = x.shape[0]
    q = icf[:, :d]
    l = icf[:, d:]
    qdiag = torch.exp(q)
    sum_qs = torch.sum(q, dim=1)
    lpad = torch.cat([torch.zeros((K, 1), dtype=icf.dtype), l], dim=1)
    Q = lpad[:, idx] + qdiag[:, :, None] * eye
    xc = x[None, :, :] - means[:, None, :]
    qx = torch.matmul(xc, Q.transpose(1, 2))
    main = (alphas + sum_qs)[:, None] - 0.5 * torch.sum(qx * qx, dim=2)
    slse = torch.sum(torch.logsumexp(main, dim=0))
    prior = 0.5 * (torch.sum(qdiag * qdiag) + torch.sum(l * l))
    return slse - n * torch.logsumexp(alphas, dim=0) + prior + constant


def scan_loss(W, b, x0, steps):
    """W9 with a Python loop (PyTorch has no scan): every step's operations run eagerly."""
    def rhs(x):
        return torch.tanh(W @ x + b) - cc.SCAN_GAMMA * x

    x = x0
    for _ in range(steps):
        x = cc.rk4_step(rhs, x)
    return torch.sum(x * x)


def attention(q, k, v):
    s = (q @ k.transpose(-1, -2)) * (1.0 / math.sqrt(q.shape[-1]))
    return torch.softmax(s, dim=-1) @ v


def attention_loss(q, k, v):
    out = attention(q, k, v)
    return 0.5 * torch.sum(out * out)


def gru_loss(p, h0, xs):
    """W11 with a Python loop (PyTorch has no scan)."""
    h = h0
    for x in xs:
        h = cc.gru_cell(p, h, x, torch.sigmoid, torch.tanh)
    return torch.sum(h * h)


def leaves(out):
    if isinstance(out, torch.Tensor):
        return [out.detach()]
    if isinstance(out, (tuple, list)):
        return [t for o in out for t in leaves(o)]
    raise TypeError(type(out))


def make(w, kind, size):
    """thunk() running one call of the workload."""
    mode, v = cc.parse_size(size)
    t = torch.as_tensor
    if w == "W1":
        x = t(cc.normal_values(v["N"], 1001, 1.5), dtype=f32)
        f = grad(w1_f) if kind == "grad" else w1_f
        return lambda: f(x)
    if w in ("W2", "W3") or (w == "W5" and mode == "mlp"):
        sizes = [784, 512, 512, 10] if w != "W3" else [784, 128, 10]
        p, x, onehot = cc.mlp_batch(sizes, v["batch"])
        p, x, onehot = to_params(p, f32), t(x, dtype=f32), t(onehot, dtype=f32)
        if w == "W2":
            if kind == "fn":
                return lambda: mlp_loss(p, x, onehot)
            gv = grad_and_value(mlp_loss)
            return lambda: gv(p, x, onehot)
        if w == "W3":
            f = vmap(grad(mlp_example_loss), in_dims=(None, 0, 0))
            return lambda: f(p, x, onehot)
        direction = to_params(cc.mlp_params(sizes, 5005), f32)
        return lambda: jvp(grad(lambda q: mlp_loss(q, x, onehot)), (p,), (direction,))[1]
    if w in ("W4", "W5"):
        wv, vv, X, y = (t(a, dtype=f64) for a in cc.logreg_data())
        if w == "W4":
            h = hessian(lambda w2: logreg_loss(w2, X, y))
            return lambda: h(wv)
        g = grad(lambda w2: logreg_loss(w2, X, y))
        return lambda: jvp(g, (wv,), (vv,))[1]
    if w == "W6":
        x, W, b = (t(a, dtype=f32) for a in cc.layer_data(v["m"], v["n"]))
        # torch.func has no `jacobian`; the row uses jacrev, as jax.jacobian does.
        jac = {"jacfwd": jacfwd, "jacrev": jacrev, "jacobian": jacrev}[mode]
        f = jac(lambda x2: layer(x2, W, b))
        return lambda: f(x)
    if w == "W7":
        if mode == "grad_sin":
            x, y = t(0.7, dtype=f32), t(1.3, dtype=f32)
            f = grad(sin_fn, argnums=(0, 1))
            return lambda: f(x, y)
        x = t(cc.rosen_point(v["d"]), dtype=f32)
        f = hessian(rosenbrock)
        return lambda: f(x)
    if w == "W8":
        d, K = v["d"], v["K"]
        alphas, means, icf, x, idx = cc.gmm_data(d, K)
        alphas, means, icf, x = (t(a, dtype=f64) for a in (alphas, means, icf, x))
        idx = t(idx)
        eye = torch.eye(d, dtype=f64)
        constant = cc.gmm_constant(d, K, x.shape[0])

        def obj(a, m, i, x_):
            return gmm_objective(a, m, i, x_, idx, eye, constant)
        if kind == "fn":
            return lambda: obj(alphas, means, icf, x)
        g = grad(obj, argnums=(0, 1, 2))
        return lambda: g(alphas, means, icf, x)
    if w == "W9":
        W, b, x0 = (t(a, dtype=f64) for a in cc.scan_data(v["n"]))
        if kind == "fn":
            return lambda: scan_loss(W, b, x0, v["steps"])
        g = grad(lambda W_, b_: scan_loss(W_, b_, x0, v["steps"]), argnums=(0, 1))
        return lambda: g(W, b)
    if w == "W10":
        q, k, vv = (t(a, dtype=f32) for a in cc.attention_data(v["b"], v["h"], v["s"], v["d"]))
        if kind == "fn":
            return lambda: attention(q, k, vv)
        g = grad(attention_loss, argnums=(0, 1, 2))
        return lambda: g(q, k, vv)
    if w == "W11":
        p, h0, xs = cc.gru_data(v["batch"], v["in"], v["hidden"], v["steps"])
        p, h0, xs = tuple(t(a, dtype=f64) for a in p), t(h0, dtype=f64), t(xs, dtype=f64)
        if kind == "fn":
            return lambda: gru_loss(p, h0, xs)
        gv = grad_and_value(gru_loss)
        return lambda: gv(p, h0, xs)
    if w == "W12":
        p, X = cc.laplacian_data(v["points"], v["dim"], v["width"])
        p, X = tuple(t(a, dtype=f32) for a in p), t(X, dtype=f32)
        u = lambda x: cc.mlp_u(p, x, torch.tanh, torch.dot)  # noqa: E731
        f = vmap(lambda x: torch.trace(hessian(u)(x))) if kind == "grad" else vmap(u)
        return lambda: f(X)
    if w == "W13":
        p, tt, y = (t(a, dtype=f64) for a in cc.decay_data(v["K"], v["m"]))
        jac = {"jacfwd": jacfwd, "jacrev": jacrev}[mode]

        def normal_equations():
            r = lambda q: cc.decay_residual(q, tt, y, torch.exp, torch.outer)  # noqa: E731
            J = jac(r)(p)
            return J.T @ J, r(p) @ J
        return normal_equations
    if w == "Wconv":
        return make_conv(kind, v)
    raise ValueError(f"unknown workload {w}")


# Wconv (issue 31): y = conv2d(x, w) NCHW / OIHW, stride 1, SAME; grad of 0.5 sum(y^2) w.r.t. (x, w).
def conv_layer(x, w):
    return torch.nn.functional.conv2d(x, w, stride=1, padding="same")


def conv_layer_loss(x, w):
    y = conv_layer(x, w)
    return 0.5 * torch.sum(y * y)


def make_conv(kind, v):
    x, w = (torch.as_tensor(a, dtype=f32) for a in cc.conv_data(v["N"], v["C"], v["O"], v["H"], v["W"], v["K"]))
    f = grad(conv_layer_loss, argnums=(0, 1)) if kind == "grad" else conv_layer
    return lambda: f(x, w)


def compile_options(ap):
    ap.add_argument("--compile", action="store_true", help="time torch.compile(case) instead of eager (torch_compile)")
    ap.add_argument("--compile-timeout", type=int, default=300,
                    help="seconds a case's first call (its compile) may take before it is reported as an error")


class CompileTimeout(Exception):
    pass


def compiled(thunk):
    """torch.compile of one case's call, with fresh Dynamo caches: every case compiles its own graph
    (no recompile limit shared between cases made from the same lambda)."""
    import torch._dynamo
    torch._dynamo.reset()
    return torch.compile(thunk)


def brief(e):
    """Why a case failed, in one line for its table cell: the innermost exception (torch.compile wraps
    the cause, e.g. a CompileTimeout, in BackendCompilerFailed) and the outer one's type."""
    root = e
    while (root.__cause__ or root.__context__) is not None and root is not (root.__cause__ or root.__context__):
        root = root.__cause__ or root.__context__
    line = next((ln for ln in str(root).splitlines() if ln.strip()), "")
    return f"{type(root).__name__}: {line[:160]}" + (f" (in {type(e).__name__})" if root is not e else "")


def run_case(args, w, kind, size, impl):
    import signal
    from torch._dynamo.utils import counters
    base = dict(workload=w, kind=kind, size=size, impl=impl, threads=args.threads)
    thunk = make(w, kind, size)
    if args.compile:
        thunk = compiled(thunk)
        counters.clear()

    def on_alarm(signum, frame):
        raise CompileTimeout(f"first call (compile) took more than {args.compile_timeout} s")
    old = signal.signal(signal.SIGALRM, on_alarm)
    signal.alarm(args.compile_timeout if args.compile else 0)
    first_done = []
    try:
        def first_guarded():
            out = thunk()
            if not first_done:  # the compile is over: the rest of the case runs without the alarm
                signal.alarm(0)
                first_done.append(True)
            return out
        first, wall, cpu, out = cc.measure(first_guarded, block, args.reps, args.min_time)
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, old)
    rec = dict(base, first_call_s=first, wall_s=wall, cpu_s=cpu, l1=cc.l1_of([x.numpy() for x in leaves(out)]))
    if args.compile:
        rec["graph_breaks"] = sum(counters["graph_break"].values())
    return rec


def main(argv):
    args = cc.parse_common_args(argv, __doc__, compile_options)
    torch.set_num_threads(args.threads)
    if args.compile and "TORCHINDUCTOR_CACHE_DIR" not in os.environ:
        # A cold compile, as Fluxion's and JAX's first calls: Inductor's on-disk caches (graphs and
        # compiled kernels of earlier runs) go to a fresh folder, removed at exit.
        import atexit
        import shutil
        import tempfile
        cache = tempfile.mkdtemp(prefix="compare_torch_inductor_")
        os.environ["TORCHINDUCTOR_CACHE_DIR"] = cache
        atexit.register(shutil.rmtree, cache, True)
    impl = "torch_compile" if args.compile else "torch"
    records = []
    with torch.no_grad():  # torch.func transforms work under no_grad; plain functions then skip the tape
        for w, kind, size in cc.selected(args.only, args.quick, args.kind, args.size):
            try:
                rec = run_case(args, w, kind, size, impl)
            except Exception as e:
                rec = dict(workload=w, kind=kind, size=size, impl=impl, threads=args.threads, error=brief(e))
            note = f" ({rec['graph_breaks']} graph breaks)" if rec.get("graph_breaks") else ""
            print(f"{impl} t={args.threads} {w} {kind} {size}: " +
                  (f"{rec['wall_s'] * 1e3:.3f} ms{note}" if "wall_s" in rec else rec["error"]), file=sys.stderr, flush=True)
            records.append(rec)
    cc.write_records(records, args.out)


# ---------------------------------------------------------------- issue 31: linear algebra

_make_before_linalg = make


def make(w, kind, size):  # noqa: F811  (extends the catalogue above)
    if w not in ("Weigh", "Wsvd", "Wchol"):
        return _make_before_linalg(w, kind, size)
    _, v = cc.parse_size(size)
    a = torch.as_tensor(cc.linalg_data(w, v["n"]), dtype=f64)
    if w == "Weigh":
        g = grad(lambda x: torch.sum(torch.sin(torch.linalg.eigvalsh(x))))
        f = g if kind == "grad" else torch.linalg.eigh
    elif w == "Wsvd":
        g = grad(lambda x: torch.sum(torch.linalg.svdvals(x)))
        f = g if kind == "grad" else (lambda x: torch.linalg.svd(x, full_matrices=False))
    else:
        g = grad(lambda x: 2.0 * torch.sum(torch.log(torch.diagonal(torch.linalg.cholesky(x)))))
        f = g if kind == "grad" else torch.linalg.cholesky
    return lambda: f(a)


# ---------------------------------------------------------------- issue 34: W14-W17

_make_before_issue34 = make


def solve_all(A, b):
    return vmap(torch.linalg.solve)(A, b)


def solve_loss(A, b):
    x = solve_all(A, b)
    return torch.sum(x * x)


def make(w, kind, size):  # noqa: F811  (extends the catalogue above)
    if w not in ("W14", "W15", "W16", "W17"):
        return _make_before_issue34(w, kind, size)
    _, v = cc.parse_size(size)
    t = torch.as_tensor
    if w == "W14":
        W, X, labels = cc.xent_data(v["batch"], v["dim"], v["vocab"])
        W, X, labels = t(W, dtype=f32), t(X, dtype=f32), t(labels, dtype=torch.int64)
        loss = lambda W_: torch.nn.functional.cross_entropy(X @ W_, labels)  # noqa: E731
        f = grad_and_value(loss) if kind == "grad" else loss
        return lambda: f(W)
    if w == "W15":
        A, b = (t(a, dtype=f64) for a in cc.batched_solve_data(v["batch"], v["n"]))
        f = grad(solve_loss, argnums=(0, 1)) if kind == "grad" else solve_all
        return lambda: f(A, b)
    if w == "W16":
        x = t(cc.op_chain_data(v["n"]), dtype=f32)
        loss = lambda x_: cc.op_chain_loss(x_, torch.tanh, torch.sin)  # noqa: E731
        f = grad(loss) if kind == "grad" else loss
        return lambda: f(x)
    x = t(cc.nbody_data(v["n"]), dtype=f64)
    energy = lambda x_: cc.lj_energy(x_, lambda n: torch.eye(n, dtype=f64))  # noqa: E731
    f = grad(energy) if kind == "grad" else energy
    return lambda: f(x)


if __name__ == "__main__":
    main(sys.argv[1:])
