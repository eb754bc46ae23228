"""The control-flow catalogue (JAX side): each construct alone, then every construct nested in every
other (outer x inner), then a few deeper nests. Mirrors cat_control.cpp and cat_nested.cpp.

Fluxion's while_loop(..., max_steps(n)) is reverse-differentiable because under reverse mode it runs n
steps that keep the old carry once the predicate fails; JAX's while_loop has no reverse mode, so the
JAX side writes that loop as `while_max_steps` below (same values: the predicate is re-checked each
step). Forward-only loops (no max_steps, tensor bounds) use lax.while_loop itself."""
import jax
import jax.numpy as jnp
import numpy as np
from jax import lax

from spec import FORWARD, A, Catalogue


def while_max_steps(cond, body, init, n):
    def step(c, _):
        p = cond(c)
        return jax.tree.map(lambda new, old: jnp.where(p, new, old), body(c), c), None

    return lax.scan(step, init, None, length=n)[0]


def at(v, i):
    return v[i]


def i32(b):
    return b.astype(jnp.int32)


# ---- inner constructs: h [3] -> [3] ----
INNER_XS = np.array([[0.1, -0.2, 0.3], [0.0, 0.2, -0.1]])


def in_cond(h):
    return lax.cond(jnp.sum(h) > 0, lambda v: jnp.sin(v) * 1.1, lambda v: jnp.cos(v) - 0.5 * v, h)


def in_switch(h):
    k = i32(jnp.sum(h) > 0) + i32(at(h, 0) > 0.3)
    return lax.switch(k, [lambda v: v * 1.2, lambda v: jnp.sin(v) + 0.1, lambda v: 0.5 * v * v - 0.2], h)


def in_scan(h):
    def body(c, x):
        c2 = jnp.tanh(c * 0.9 + x)
        return c2, jnp.sum(c2)

    c, ys = lax.scan(body, h, INNER_XS.astype(h.dtype))
    return c + 0.1 * jnp.sum(ys)


def in_fori(h):
    return lax.fori_loop(0, 3, lambda i, v: v * 0.8 + jnp.sin(v) * 0.3 + i.astype(v.dtype) * 0.01, h)


def in_while(h):
    out = while_max_steps(lambda s: s[0] < 3, lambda s: (s[0] + 1, s[1] * 0.9 + 0.1 * jnp.sin(s[1])),
                          (jnp.int32(0), h), 5)
    return out[1]


def in_checkpoint(h):
    return jax.checkpoint(lambda v: jnp.sin(v) * v + 0.5)(h)


_jitted_helper = jax.jit(lambda v: jnp.tanh(v) * 1.3 - 0.2 * v)


def in_jit(h):
    return _jitted_helper(h)


@jax.custom_jvp
def half_tanh(v):  # tanh with a rule giving half its true derivative: shows the rule is used
    return jnp.tanh(v)


half_tanh.defjvp(lambda p, t: (jnp.tanh(p[0]), 0.5 * (1.0 - jnp.tanh(p[0]) ** 2) * t[0]))


@jax.custom_vjp
def sin2(v):  # 2 sin(v) whose bwd is 3 cos(v) ct (not the true 2 cos(v) ct): shows the rule is used
    return jnp.sin(v) * 2.0


sin2.defvjp(lambda v: (jnp.sin(v) * 2.0, jnp.cos(v)), lambda r, ct: (3.0 * r * ct,))


def in_custom_jvp(h):
    return half_tanh(h) + 0.1 * h


def in_custom_vjp(h):
    return sin2(h) * 0.5 + 0.2 * h


INNERS = {"cond": in_cond, "switch": in_switch, "scan": in_scan, "fori": in_fori, "while": in_while,
          "checkpoint": in_checkpoint, "jit": in_jit, "custom_jvp": in_custom_jvp, "custom_vjp": in_custom_vjp}


# ---- outer constructs: (inner g, inputs) -> [3] ----
def out_scan(g, a):
    def body(h, r):
        h2 = g(h * 0.7 + r * 0.3)
        return h2, jnp.sum(h2 * h2)

    h, ys = lax.scan(body, a[0], a[1])
    return h + 0.1 * jnp.sum(ys)


def out_fori(g, a):
    x = a[0]
    return lax.fori_loop(0, 3, lambda i, h: g(h) * 0.9 + 0.1 * x, x)


def out_while(g, a):
    x = a[0]
    return while_max_steps(lambda s: s[0] < 3, lambda s: (s[0] + 1, g(s[1]) + 0.05 * x), (jnp.int32(0), x), 4)[1]


def out_cond(g, a):
    return lax.cond(jnp.sum(a[0]) > 0.1, lambda v: g(v), lambda v: g(v * 0.5) * 2.0, a[0])


def out_switch(g, a):
    x = a[0]
    k = i32(at(x, 0) > -0.3) + i32(at(x, 0) > 0.3)
    return lax.switch(k, [lambda v: g(v), lambda v: g(-v) * 0.5, lambda v: v * 2.0 + g(v * 0.3)], x)


def out_checkpoint(g, a):
    return jax.checkpoint(lambda v: g(g(v) * 0.8))(a[0])


def out_jit(g, a):
    return jax.jit(lambda v: g(v) * 1.5 + v)(a[0])


OUTERS = {"scan": (out_scan, [A(3), A(4, 3)]), "fori": (out_fori, [A(3)]), "while": (out_while, [A(3)]),
          "cond": (out_cond, [A(3)]), "switch": (out_switch, [A(3)]), "checkpoint": (out_checkpoint, [A(3)]),
          "jit": (out_jit, [A(3)])}


def single(c):
    x3 = A(3)
    c.e("cf/cond", lambda a: lax.cond(jnp.sum(a[0]) > 0, lambda v: jnp.sin(v) * v, lambda v: jnp.exp(v) - 1.0, a[0]), x3)
    c.e("cf/cond_pytree_and_closure",
        lambda a: (lambda r: r[0] + r[1])(lax.cond(at(a[0], 0) > 0.0, lambda p: (p[0] * a[1], jnp.sum(p[1])),
                                                   lambda p: (p[0] + a[1], jnp.prod(p[1])), (a[0], a[0] * 2.0))),
        A(3, avoid=[0.0]), A(3))
    c.e("cf/switch", lambda a: lax.switch(i32(at(a[0], 1) > 0) * 2, [lambda v: v, lambda v: v * 5.0, jnp.cos], a[0]),
        A(3, avoid=[0.0]))
    c.e("cf/switch_index_clamped",
        lambda a: lax.switch(jnp.int32(7), [jnp.sin, jnp.cos], a[0]) + lax.switch(jnp.int32(-2), [jnp.exp, jnp.sin],
                                                                                     a[0]), x3)
    c.e("cf/while_max_steps_data_dependent",
        lambda a: while_max_steps(lambda v: jnp.sum(v * v) < 10.0, lambda v: v * 1.5 + 0.1, a[0], 8),
        A(3, lo=0.5, hi=1.5))
    c.e("cf/while_forward_only",
        lambda a: lax.while_loop(lambda v: jnp.sum(v * v) < 10.0, lambda v: v * 1.5 + 0.1, a[0]),
        A(3, lo=0.5, hi=1.5), checks=FORWARD)
    c.e("cf/while_pytree_carry",
        lambda a: while_max_steps(lambda s: s[0] < 4, lambda s: (s[0] + 1, s[1] * 0.9 + jnp.sin(s[2]), s[2] * 1.1),
                                  (jnp.int32(0), a[0], a[1]), 6)[1], x3, A(3))
    c.e("cf/fori", lambda a: lax.fori_loop(0, 4, lambda i, h: jnp.sin(h) * 1.2 + i.astype(h.dtype) * 0.1, a[0]), x3)
    c.e("cf/fori_tensor_bounds", lambda a: lax.fori_loop(jnp.int32(1), jnp.int32(4),
                                                          lambda i, h: h * 0.5 + jnp.cos(h) * i.astype(h.dtype), a[0]),
        x3, checks=FORWARD)
    c.e("cf/scan", lambda a: (lambda r: r[0] * 2.0 + jnp.sum(r[1]))(
        lax.scan(lambda h, x: (jnp.tanh(h + x), jnp.sum(h * x)), a[0], a[1])), x3, A(4, 3))
    c.e("cf/scan_reverse", lambda a: lax.scan(lambda h, x: (h * 0.5 + jnp.sin(x), h * x), a[0], a[1], reverse=True)[1],
        A(3), A(4, 3))
    c.e("cf/scan_pytree",
        lambda a: (lambda r: r[0][0] + r[0][1] * 2.0 + jnp.sum(r[1][0]) - jnp.sum(r[1][1]))(
            lax.scan(lambda h, x: ((h[0] * jnp.cos(x[0]), h[1] + h[0] * x[1]), (h[0] * x[1], jnp.sin(h[1]))),
                     (a[0], a[1]), (a[2], a[2] * 0.5))), A(3), A(3), A(4, 3))
    c.e("cf/scan_rnn",
        lambda a: lax.scan(lambda h, x: (jnp.tanh(a[0] @ h + x), jnp.sum(h * h)), jnp.zeros(3, a[0].dtype), a[1])[1],
        A(3, 3), A(4, 3))
    c.e("cf/checkpoint", lambda a: jax.checkpoint(lambda v, w: jnp.sin(v * w) * jnp.exp(w))(a[0], a[1]), x3, A(3))
    c.e("cf/custom_jvp", lambda a: half_tanh(a[0] * 2.0) * a[0], x3)
    c.e("cf/custom_vjp", lambda a: sin2(a[0]) * a[0], x3)
    c.e("cf/jit_helper", lambda a: jax.jit(lambda v, w: jnp.sin(v) * w + v)(a[0], a[1]) * 2.0, x3, A(3))
    c.f32("cf/cond", "cf/scan", "cf/while_max_steps_data_dependent", "cf/fori", "cf/custom_jvp", "cf/checkpoint")


def nested(c):
    for oname, (outer, args) in OUTERS.items():
        for iname, inner in INNERS.items():
            c.e(f"nest/{iname}_in_{oname}", lambda a, o=outer, g=inner: o(g, a), *args)
    c.f32("nest/cond_in_scan", "nest/checkpoint_in_scan", "nest/scan_in_cond")


def deep(c):
    """Three levels, forward-only loops holding control flow, and transforms inside loop bodies."""
    x3 = A(3)
    c.e("deep/scan_in_scan_in_scan",
        lambda a: out_scan(lambda h: out_scan(in_scan, [h, jnp.stack([h, h * 0.5])]), a), A(3), A(2, 3))
    c.e("deep/cond_in_while_in_scan", lambda a: out_scan(lambda h: out_while(in_cond, [h]), a), A(3), A(3, 3))
    c.e("deep/fori_in_checkpoint_in_scan", lambda a: out_scan(lambda h: out_checkpoint(in_fori, [h]), a),
        A(3), A(3, 3))
    c.e("deep/switch_in_cond_in_fori", lambda a: out_fori(lambda h: out_cond(in_switch, [h]), a), x3)
    c.e("deep/custom_vjp_in_jit_in_while", lambda a: out_while(lambda h: out_jit(in_custom_vjp, [h]), a), x3)
    c.e("deep/while_forward_only_holding_scan",
        lambda a: lax.while_loop(lambda s: s[0] < 3, lambda s: (s[0] + 1, in_scan(s[1])), (jnp.int32(0), a[0]))[1],
        x3, checks=FORWARD)
    c.e("deep/while_forward_only_holding_cond",
        lambda a: lax.while_loop(lambda v: jnp.sum(v * v) < 8.0, lambda v: in_cond(v) * 1.7 + 0.2, a[0]),
        A(3, lo=0.5, hi=1.0), checks=FORWARD)
    c.e("deep/vmap_in_scan_body",
        lambda a: lax.scan(lambda h, x: (h + jax.vmap(lambda r: jnp.sin(r) * jnp.sum(r))(jnp.outer(x, h)).sum(0) * 0.1,
                                         None), a[0], a[1])[0], A(3), A(2, 3))
    c.e("deep/grad_in_scan_body",
        lambda a: lax.scan(lambda h, x: (h - 0.1 * jax.grad(lambda v: jnp.sum(jnp.sin(v * x) * v))(h), None),
                           a[0], a[1])[0], A(3), A(3, 3))
    c.e("deep/jvp_in_fori_body",
        lambda a: lax.fori_loop(0, 3, lambda i, h: h + 0.2 * jax.jvp(jnp.tanh, (h,), (a[1],))[1], a[0]), x3, A(3))


def build():
    c = Catalogue("control_flow")
    single(c)
    nested(c)
    deep(c)
    return c
