#!/usr/bin/env python3
"""The side-by-side workloads (bench/bench_workloads*.cpp) in JAX: every function jax.jit'd,
results block_until_ready. Run by bench/compare with bench/.venv's Python; threads are limited
by the caller (XLA_FLAGS, taskset) because XLA reads its flags at start-up.

  bench/.venv/bin/python bench/compare_jax.py --only W1 --quick --out -
"""
import math
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import compare_common as cc  # noqa: E402

import jax  # noqa: E402

jax.config.update("jax_enable_x64", True)  # W4, W5 logreg, W8, W9, W11, W13 are f64; the rest builds f32 explicitly
import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402
from jax.scipy.special import logsumexp  # noqa: E402

f32, f64 = jnp.float32, jnp.float64


def block(x):
    return jax.block_until_ready(x)


# ---------------------------------------------------------------- workloads

def w1_f(x):
    return jnp.sum(jnp.tanh(x) * x + jnp.exp(-(x * x)))


def relu(z):
    return jnp.maximum(z, 0.0)


def xent(logits, onehot):
    return -jnp.mean(jnp.sum(jax.nn.log_softmax(logits, axis=-1) * onehot, axis=-1))


def mlp_loss(params, x, onehot):
    h = x
    for w, b in params[:-1]:
        h = relu(h @ w + b)
    w, b = params[-1]
    return xent(h @ w + b, onehot)


def mlp_example_loss(params, x, onehot):
    return mlp_loss(params, x[None, :], onehot[None, :])


def to_params(p, dtype):
    return tuple((jnp.asarray(w, dtype), jnp.asarray(b, dtype)) for w, b in p)


def logreg_loss(w, X, y):
    m = y * (X @ w)
    return jnp.mean(jnp.log1p(jnp.exp(-m))) + 0.5 * cc.LOGREG_LAMBDA * jnp.sum(w * w)


def layer(x, W, b):
    return jnp.tanh(W @ x + b)


def sin_fn(x, y):
    return jnp.sin(x) * y + x * x / y


def rosenbrock(x):
    return jnp.sum(100.0 * (x[1:] - x[:-1] ** 2) ** 2 + (1.0 - x[:-1]) ** 2)


def gmm_objective(alphas, means, icf, x, idx, constant):
    K, d = means.shape
    n = x.shape[0]
    q = icf[:, :d]
    l = icf[:, d:]
    qdiag = jnp.exp(q)
    sum_qs = jnp.sum(q, axis=1)
    lpad = jnp.concatenate([jnp.zeros((K, 1), icf.dtype), l], axis=1)
    Q = lpad[:, idx] + qdiag[:, :, None] * jnp.eye(d, dtype=icf.dtype)
    xc = x[None, :, :] - means[:, None, :]
    qx = jnp.einsum("knj,kij->kni", xc, Q)
    main = (alphas + sum_qs)[:, None] - 0.5 * jnp.sum(qx * qx, axis=2)
    slse = jnp.sum(logsumexp(main, axis=0))
    prior = 0.5 * (jnp.sum(qdiag * qdiag) + jnp.sum(l * l))
    return slse - n * logsumexp(alphas) + prior + constant


def scan_loss(W, b, x0, steps):
    """sum(x_T^2) after `steps` RK4 steps of dx/dt = tanh(W x + b) - gamma x, as one lax.scan."""
    def rhs(x):
        return jnp.tanh(W @ x + b) - cc.SCAN_GAMMA * x

    xT, _ = jax.lax.scan(lambda x, _: (cc.rk4_step(rhs, x), None), x0, None, length=steps)
    return jnp.sum(xT * xT)


def attention(q, k, v):
    s = (q @ jnp.swapaxes(k, -1, -2)) * (1.0 / math.sqrt(q.shape[-1]))
    return jax.nn.softmax(s, axis=-1) @ v


def attention_loss(q, k, v):
    out = attention(q, k, v)
    return 0.5 * jnp.sum(out * out)


def gru_loss(p, h0, xs):
    """sum(h_T^2) after one GRU step per slice of xs, as one lax.scan."""
    hT, _ = jax.lax.scan(lambda h, x: (cc.gru_cell(p, h, x, jax.nn.sigmoid, jnp.tanh), None), h0, xs)
    return jnp.sum(hT * hT)


def laplacians(p, X):
    """trace(hessian(u)(x)) at every row of X: vmap of the Hessian's trace."""
    u = lambda x: cc.mlp_u(p, x, jnp.tanh, jnp.dot)  # noqa: E731
    return jax.vmap(lambda x: jnp.trace(jax.hessian(u)(x)))(X)


def mlp_values(p, X):
    return jax.vmap(lambda x: cc.mlp_u(p, x, jnp.tanh, jnp.dot))(X)


def make(w, kind, size):
    """(thunk, leaves(result)) of the jit'd workload: thunk() runs one call."""
    mode, v = cc.parse_size(size)
    leaves = jax.tree_util.tree_leaves
    if w == "W1":
        x = jnp.asarray(cc.normal_values(v["N"], 1001, 1.5), f32)
        f = jax.jit(jax.grad(w1_f) if kind == "grad" else w1_f)
        return (lambda: f(x)), leaves
    if w in ("W2", "W3") or (w == "W5" and mode == "mlp"):
        sizes = [784, 512, 512, 10] if w != "W3" else [784, 128, 10]
        p, x, onehot = cc.mlp_batch(sizes, v["batch"])
        p, x, onehot = to_params(p, f32), jnp.asarray(x, f32), jnp.asarray(onehot, f32)
        if w == "W2":
            f = jax.jit(jax.value_and_grad(mlp_loss) if kind == "grad" else mlp_loss)
            return (lambda: f(p, x, onehot)), leaves
        if w == "W3":
            f = jax.jit(jax.vmap(jax.grad(mlp_example_loss), in_axes=(None, 0, 0)))
            return (lambda: f(p, x, onehot)), leaves
        direction = to_params(cc.mlp_params(sizes, 5005), f32)

        @jax.jit
        def hvp(p, t, x, onehot):
            return jax.jvp(jax.grad(lambda q: mlp_loss(q, x, onehot)), (p,), (t,))[1]
        return (lambda: hvp(p, direction, x, onehot)), leaves
    if w in ("W4", "W5"):
        wv, vv, X, y = (jnp.asarray(a, f64) for a in cc.logreg_data())
        if w == "W4":
            f = jax.jit(lambda w_, X_, y_: jax.hessian(lambda w2: logreg_loss(w2, X_, y_))(w_))
            return (lambda: f(wv, X, y)), leaves

        @jax.jit
        def hvp(w_, t, X_, y_):
            return jax.jvp(jax.grad(lambda w2: logreg_loss(w2, X_, y_)), (w_,), (t,))[1]
        return (lambda: hvp(wv, vv, X, y)), leaves
    if w == "W6":
        x, W, b = (jnp.asarray(a, f32) for a in cc.layer_data(v["m"], v["n"]))
        # jax.jacobian is jax.jacrev; the "jacobian" row uses it as JAX defines it.
        jac = {"jacfwd": jax.jacfwd, "jacrev": jax.jacrev, "jacobian": jax.jacobian}[mode]
        f = jax.jit(lambda x_, W_, b_: jac(lambda x2: layer(x2, W_, b_))(x_))
        return (lambda: f(x, W, b)), leaves
    if w == "W7":
        if mode == "grad_sin":
            x, y = jnp.asarray(0.7, f32), jnp.asarray(1.3, f32)
            f = jax.jit(jax.grad(sin_fn, argnums=(0, 1)))
            return (lambda: f(x, y)), leaves
        x = jnp.asarray(cc.rosen_point(v["d"]), f32)
        f = jax.jit(jax.hessian(rosenbrock))
        return (lambda: f(x)), leaves
    if w == "W8":
        d, K = v["d"], v["K"]
        alphas, means, icf, x, idx = cc.gmm_data(d, K)
        alphas, means, icf, x = (jnp.asarray(a, f64) for a in (alphas, means, icf, x))
        constant = cc.gmm_constant(d, K, x.shape[0])

        def obj(a, m, i, x_):
            return gmm_objective(a, m, i, x_, idx, constant)
        f = jax.jit(jax.grad(obj, argnums=(0, 1, 2)) if kind == "grad" else obj)
        return (lambda: f(alphas, means, icf, x)), leaves
    if w == "W9":
        W, b, x0 = (jnp.asarray(a, f64) for a in cc.scan_data(v["n"]))

        def loss(W_, b_, x0_):
            return scan_loss(W_, b_, x0_, v["steps"])
        f = jax.jit(jax.grad(loss, argnums=(0, 1)) if kind == "grad" else loss)
        return (lambda: f(W, b, x0)), leaves
    if w == "W10":
        q, k, vv = (jnp.asarray(a, f32) for a in cc.attention_data(v["b"], v["h"], v["s"], v["d"]))
        f = jax.jit(jax.grad(attention_loss, argnums=(0, 1, 2)) if kind == "grad" else attention)
        return (lambda: f(q, k, vv)), leaves
    if w == "W11":
        p, h0, xs = cc.gru_data(v["batch"], v["in"], v["hidden"], v["steps"])
        p, h0, xs = tuple(jnp.asarray(a, f64) for a in p), jnp.asarray(h0, f64), jnp.asarray(xs, f64)
        f = jax.jit(jax.value_and_grad(gru_loss) if kind == "grad" else gru_loss)
        return (lambda: f(p, h0, xs)), leaves
    if w == "W12":
        p, X = cc.laplacian_data(v["points"], v["dim"], v["width"])
        p, X = tuple(jnp.asarray(a, f32) for a in p), jnp.asarray(X, f32)
        f = jax.jit(laplacians if kind == "grad" else mlp_values)
        return (lambda: f(p, X)), leaves
    if w == "W13":
        p, t, y = (jnp.asarray(a, f64) for a in cc.decay_data(v["K"], v["m"]))
        jac = {"jacfwd": jax.jacfwd, "jacrev": jax.jacrev}[mode]

        @jax.jit
        def normal_equations(p_, t_, y_):
            r = lambda q: cc.decay_residual(q, t_, y_, jnp.exp, jnp.outer)  # noqa: E731
            J = jac(r)(p_)
            return J.T @ J, r(p_) @ J
        return (lambda: normal_equations(p, t, y)), leaves
    if w == "Wconv":
        return make_conv(kind, v), leaves
    raise ValueError(f"unknown workload {w}")


# Wconv (issue 31): y = conv(x, w) NCHW / OIHW, stride 1, SAME; grad of 0.5 sum(y^2) w.r.t. (x, w).
def conv_layer(x, w):
    return jax.lax.conv(x, w, (1, 1), "SAME")


def conv_layer_loss(x, w):
    y = conv_layer(x, w)
    return 0.5 * jnp.sum(y * y)


def make_conv(kind, v):
    x, w = (jnp.asarray(a, f32) for a in cc.conv_data(v["N"], v["C"], v["O"], v["H"], v["W"], v["K"]))
    f = jax.jit(jax.grad(conv_layer_loss, argnums=(0, 1)) if kind == "grad" else conv_layer)
    return lambda: f(x, w)


def main(argv):
    args = cc.parse_common_args(argv, __doc__)
    records = []
    for w, kind, size in cc.selected(args.only, args.quick, args.kind, args.size):
        try:
            thunk, leaves = make(w, kind, size)
            first, wall, cpu, out = cc.measure(thunk, block, args.reps, args.min_time)
            rec = dict(workload=w, kind=kind, size=size, impl="jax", threads=args.threads, first_call_s=first,
                       wall_s=wall, cpu_s=cpu, l1=cc.l1_of(leaves(out)))
        except Exception as e:  # report and go on: one failing case must not hide the others
            rec = dict(workload=w, kind=kind, size=size, impl="jax", threads=args.threads, error=f"{type(e).__name__}: {e}")
        print(f"jax t={args.threads} {w} {kind} {size}: " + (f"{rec['wall_s'] * 1e3:.3f} ms" if "wall_s" in rec else rec["error"]),
              file=sys.stderr, flush=True)
        records.append(rec)
    cc.write_records(records, args.out)


# ---------------------------------------------------------------- issue 31: linear algebra

_make_before_linalg = make


def make(w, kind, size):  # noqa: F811  (extends the catalogue above)
    if w not in ("Weigh", "Wsvd", "Wchol"):
        return _make_before_linalg(w, kind, size)
    _, v = cc.parse_size(size)
    a = jnp.asarray(cc.linalg_data(w, v["n"]), f64)
    leaves = jax.tree_util.tree_leaves
    if w == "Weigh":
        grad = jax.grad(lambda x: jnp.sum(jnp.sin(jnp.linalg.eigh(x)[0])))
        f = jax.jit(grad if kind == "grad" else jnp.linalg.eigh)
    elif w == "Wsvd":
        grad = jax.grad(lambda x: jnp.sum(jnp.linalg.svd(x, compute_uv=False)))
        f = jax.jit(grad if kind == "grad" else (lambda x: jnp.linalg.svd(x, full_matrices=False)))
    else:
        grad = jax.grad(lambda x: 2.0 * jnp.sum(jnp.log(jnp.diagonal(jnp.linalg.cholesky(x)))))
        f = jax.jit(grad if kind == "grad" else jnp.linalg.cholesky)
    return (lambda: f(a)), leaves


# ---------------------------------------------------------------- issue 34: W14-W17

_make_before_issue34 = make


def xent_loss(W, X, labels):
    logits = X @ W
    picked = jnp.take_along_axis(logits, labels[:, None], axis=-1)[:, 0]
    return jnp.mean(logsumexp(logits, axis=-1) - picked)


def solve_all(A, b):
    return jax.vmap(jnp.linalg.solve)(A, b)


def solve_loss(A, b):
    x = solve_all(A, b)
    return jnp.sum(x * x)


def make(w, kind, size):  # noqa: F811  (extends the catalogue above)
    if w not in ("W14", "W15", "W16", "W17"):
        return _make_before_issue34(w, kind, size)
    _, v = cc.parse_size(size)
    leaves = jax.tree_util.tree_leaves
    if w == "W14":
        W, X, labels = cc.xent_data(v["batch"], v["dim"], v["vocab"])
        W, X, labels = jnp.asarray(W, f32), jnp.asarray(X, f32), jnp.asarray(labels, jnp.int32)
        f = jax.jit(jax.value_and_grad(xent_loss) if kind == "grad" else xent_loss)
        return (lambda: f(W, X, labels)), leaves
    if w == "W15":
        A, b = (jnp.asarray(a, f64) for a in cc.batched_solve_data(v["batch"], v["n"]))
        f = jax.jit(jax.grad(solve_loss, argnums=(0, 1)) if kind == "grad" else solve_all)
        return (lambda: f(A, b)), leaves
    if w == "W16":
        x = jnp.asarray(cc.op_chain_data(v["n"]), f32)
        loss = lambda x_: cc.op_chain_loss(x_, jnp.tanh, jnp.sin)  # noqa: E731
        f = jax.jit(jax.grad(loss) if kind == "grad" else loss)
        return (lambda: f(x)), leaves
    x = jnp.asarray(cc.nbody_data(v["n"]), f64)
    energy = lambda x_: cc.lj_energy(x_, lambda n: jnp.eye(n, dtype=f64))  # noqa: E731
    f = jax.jit(jax.grad(energy) if kind == "grad" else energy)
    return (lambda: f(x)), leaves


if __name__ == "__main__":
    main(sys.argv[1:])
