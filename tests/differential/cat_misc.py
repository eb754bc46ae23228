"""Transforms used inside catalogue functions, custom rules and checkpoint, small models, special values
and the documented conventions (JAX side). Mirrors cat_transforms.cpp and cat_special.cpp."""
import jax
import jax.numpy as jnp
from jax import lax
from jax.scipy.special import logsumexp

from cat_control import half_tanh, sin2
from spec import VALUE, A, Catalogue

INF = float("inf")


def g3(v):
    """The scalar function the transforms-inside entries differentiate."""
    return jnp.sum(jnp.sin(v) * v * v)


def transforms_inside(c):
    x3 = A(3)
    c.e("tr/grad", lambda a: jax.grad(g3)(a[0]) * a[0], x3)
    c.e("tr/value_and_grad", lambda a: (lambda r: r[0] * r[1])(jax.value_and_grad(g3)(a[0])), x3)
    c.e("tr/grad_argnums",
        lambda a: (lambda r: r[0] * 2.0 + r[1])(jax.grad(lambda u, w: jnp.sum(jnp.sin(u * w) * u), argnums=(0, 1))(
            a[0], a[1])), x3, A(3))
    c.e("tr/grad_has_aux",
        lambda a: (lambda r: r[0] + r[1])(jax.grad(lambda v: (g3(v), jnp.cos(v)), has_aux=True)(a[0])), x3)
    c.e("tr/jvp", lambda a: (lambda r: r[0] + r[1] * 2.0)(jax.jvp(g3, (a[0],), (a[1],))), x3, A(3))
    c.e("tr/vjp", lambda a: (lambda r: r[1](a[1])[0])(jax.vjp(lambda v: jnp.sin(v) * v, a[0])), x3, A(3))
    c.e("tr/linearize", lambda a: (lambda r: r[1](a[1]) + r[0])(jax.linearize(lambda v: jnp.exp(v) * v, a[0])),
        x3, A(3))
    c.e("tr/vmap_in_axes_none", lambda a: jax.vmap(lambda r, w: jnp.sin(r * w), in_axes=(0, None))(a[0], a[1]),
        A(2, 3), A(3))
    c.e("tr/vmap_out_axes_1", lambda a: jax.vmap(lambda r: jnp.cumsum(r) * r, out_axes=1)(a[0]), A(2, 3))
    c.e("tr/vmap_in_axes_1", lambda a: jax.vmap(lambda r: jnp.sum(r * r), in_axes=(1,))(a[0]), A(2, 3))
    c.e("tr/jacfwd", lambda a: jax.jacfwd(lambda v: jnp.sin(v) * jnp.sum(v))(a[0]), x3)
    c.e("tr/jacrev", lambda a: jax.jacrev(lambda v: jnp.sin(v) * jnp.sum(v))(a[0]), x3)
    c.e("tr/jacobian", lambda a: jax.jacobian(lambda v: jnp.exp(v) * v[0])(a[0]), x3)
    c.e("tr/hessian", lambda a: jax.hessian(g3)(a[0]), x3)
    c.e("tr/hvp", lambda a: jax.jvp(jax.grad(g3), (a[0],), (a[1],))[1], x3, A(3))
    c.e("tr/jit", lambda a: jax.jit(lambda v: jnp.sin(v) * jnp.cos(v))(a[0]) * a[0], x3)
    c.e("tr/jit_of_grad", lambda a: jax.jit(jax.grad(g3))(a[0]), x3)
    c.e("tr/grad_of_grad_perturbation",  # d/dx [x * d/dy sum(x + y)] must see x as a constant inside
        lambda a: a[0] * jax.grad(lambda y: jnp.sum(a[0] + y) * jnp.sum(y))(a[1]), x3, A(3))
    c.e("tr/stop_gradient_in_loss", lambda a: jnp.sum((a[0] - lax.stop_gradient(jnp.mean(a[0]))) ** 2) * a[0], x3)
    c.f32("tr/grad", "tr/hessian")


def custom_rules(c):
    x3 = A(3)

    @jax.custom_jvp
    def mul2(u, w):
        return u * w

    mul2.defjvp(lambda p, t: (p[0] * p[1], t[0] * p[1] * 2.0 + p[0] * t[1]))

    @jax.custom_vjp
    def scaled_exp(v):
        return jnp.exp(v)

    scaled_exp.defvjp(lambda v: (jnp.exp(v), (jnp.exp(v), v)), lambda r, ct: (r[0] * ct + r[1] * ct * 0.5,))

    @jax.custom_jvp
    def safe_norm(v):  # the classic: a rule defined at 0 too
        return jnp.sqrt(jnp.sum(v * v))

    safe_norm.defjvp(lambda p, t: (jnp.sqrt(jnp.sum(p[0] * p[0])),
                                   jnp.sum(p[0] * t[0]) / jnp.maximum(jnp.sqrt(jnp.sum(p[0] * p[0])), 1e-12)))
    c.e("custom/jvp_two_arguments", lambda a: mul2(a[0], jnp.sin(a[1])), x3, A(3))
    c.e("custom/vjp_pytree_residuals", lambda a: scaled_exp(a[0] * 0.5) * a[0], x3)
    c.e("custom/jvp_safe_norm", lambda a: safe_norm(a[0]) * a[0], x3)
    c.e("custom/jvp_under_vmap_inside", lambda a: jax.vmap(half_tanh)(a[0]) * 2.0, A(2, 3))
    c.e("custom/vjp_in_composition", lambda a: jnp.sum(sin2(jnp.tanh(a[0])) * a[1]) * jnp.cos(a[0]), x3, A(3))
    c.e("custom/checkpoint_chain",
        lambda a: jax.checkpoint(lambda v: jax.checkpoint(lambda u: jnp.sin(u) * u)(jnp.exp(v) * 0.5) + v)(a[0]), x3)


def pendulum(s):
    return jnp.stack([s[1], -jnp.sin(s[0]) - 0.1 * s[1]])


def rk4_step(s, h):
    k1 = pendulum(s)
    k2 = pendulum(s + k1 * (h / 2))
    k3 = pendulum(s + k2 * (h / 2))
    k4 = pendulum(s + k3 * h)
    return s + (k1 + k2 * 2.0 + k3 * 2.0 + k4) * (h / 6)


def layer_norm(x):
    m = jnp.mean(x, axis=-1, keepdims=True)
    v = jnp.mean((x - m) ** 2, axis=-1, keepdims=True)
    return (x - m) / jnp.sqrt(v + 1e-5)


def models(c):
    c.e("model/mlp_loss",
        lambda a: jnp.mean((jnp.tanh(a[2] @ a[0] + a[1]) @ jnp.ones((3,), a[0].dtype) - 0.5) ** 2),
        A(2, 3), A(3), A(4, 2))
    c.e("model/logistic_regression",
        lambda a: -jnp.mean(jnp.log(jax.nn.sigmoid(a[1] @ a[0])) + jnp.log1p(-jax.nn.sigmoid(a[1] @ a[0] * 0.5))),
        A(3), A(5, 3))
    c.e("model/softmax_cross_entropy",
        lambda a: -jnp.sum(jax.nn.log_softmax(a[1] @ a[0], axis=1) * jnp.eye(3, dtype=a[0].dtype)[:2]),
        A(4, 3), A(2, 4))
    c.e("model/gaussian_log_likelihood",
        lambda a: jnp.sum(-0.5 * ((a[1] - a[0][0]) / jnp.exp(a[0][1])) ** 2 - a[0][1]),
        A(2), A(5))
    c.e("model/attention",
        lambda a: jax.nn.softmax(a[0] @ a[1].T / 3.0 ** 0.5, axis=-1) @ a[1], A(2, 3), A(3, 3))
    c.e("model/layer_norm", lambda a: layer_norm(a[0]), A(2, 4))
    c.e("model/rk4_pendulum_step", lambda a: rk4_step(a[0], 0.1), A(2))
    c.e("model/polynomial_horner",
        lambda a: lax.fori_loop(0, 4, lambda i, acc: acc * a[0] + jnp.take(a[1], i), jnp.zeros_like(a[0])),
        A(3), A(4))
    c.e("model/logsumexp_mixture", lambda a: logsumexp(-0.5 * (a[0][:, None] - a[1][None, :]) ** 2, axis=1),
        A(3), A(4))
    c.f32("model/mlp_loss", "model/logistic_regression", "model/attention")


def special(c):
    """Special values (ops being fixed concurrently: see EXPECTED_DIFFERENCES.md) and conventions."""
    one = lambda v: A(len(v), values=v)  # noqa: E731
    # 19 elements: infinities in the vectorised body and in the scalar tail of the kernels.
    long = [INF, 4.0, 0.0, 2.0, 1e-300, 9.0, INF, 0.25, 1.0, 3.0, 5.0, 7.0, 16.0, INF, 2.0, 8.0, 6.0, INF, 0.5]
    c.e("special/sqrt_of_inf", lambda a: jnp.sqrt(a[0]), one(long), checks=VALUE)
    c.e("special/sqrt_abs_fused", lambda a: jnp.sqrt(jnp.abs(a[0] * -1.0)) + 1.0, one(long), checks=VALUE)
    c.e("special/sqrt_of_inf_f32", lambda a: jnp.sqrt(a[0]), one(long[:4] + long[5:]), dtype="f32", checks=VALUE,
        cpp="special/sqrt_of_inf")
    c.e("special/pow_negative_zero", lambda a: jnp.power(a[0], -1.0), one([-0.0, 0.0, 2.0, -0.0, 4.0, -0.0, -2.0, 0.5, -0.0]),
        checks=VALUE)
    c.e("special/round_half_even", lambda a: jnp.round(a[0]), one([0.5, 1.5, 2.5, -0.5, -1.5, 0.49, 2.51]),
        checks=VALUE)
    c.e("special/remainder_negative", lambda a: jnp.remainder(a[0], a[1]),
        one([-1.0, 1.0, -5.5, 5.5]), one([3.0, -3.0, 2.0, -2.0]), checks=VALUE)
    c.e("special/logsumexp_empty_axis", lambda a: logsumexp(a[0], axis=1), A(2, 0), checks=["value", "jit"])
    c.e("special/softmax_empty_axis", lambda a: jax.nn.softmax(a[0], axis=1), A(2, 0), checks=["value", "jit"])
    c.e("special/sum_f32_million", lambda a: jnp.sum(a[0]), A(1000000, fill=0.1), dtype="f32", checks=["value", "jit"])
    c.e("special/mean_f32_columns", lambda a: jnp.mean(a[0], axis=0), A(200000, 2, fill=0.1), dtype="f32",
        checks=["value", "jit"])
    c.e("special/exp_log_inf_nan", lambda a: jnp.exp(a[0]) + jnp.log(jnp.abs(a[0])),
        one([INF, -INF, 0.0, float("nan"), 1.0]), checks=VALUE)
    # Conventions (expected differences).
    c.e("convention/abs_grad_at_zero", lambda a: jnp.abs(a[0]), one([0.0, 1.0, -2.0]), checks=["grad", "vmap_grad"])
    c.e("convention/pow_grad_at_zero_to_zero", lambda a: jnp.power(a[0], a[1]), one([0.0, 2.0]), one([0.0, 0.0]),
        checks=["grad"])
    c.e("convention/norm_grad_at_zero", lambda a: jnp.linalg.norm(a[0]), one([0.0, 0.0, 0.0]), checks=["grad"])
    c.e("convention/logsumexp_grad_all_neg_inf", lambda a: logsumexp(a[0]), one([-INF, -INF]), checks=["value", "grad"])
    c.e("convention/max_grad_with_ties", lambda a: jnp.max(a[0]), one([1.0, 3.0, 3.0]), checks=["grad"])
    c.e("convention/maximum_grad_at_tie", lambda a: jnp.maximum(a[0], a[1]), one([1.0, 2.0]), one([1.0, 0.0]),
        checks=["grad"])
    c.e("convention/divide_i32", lambda a: a[0] / a[1], A(4, lo=1, hi=9, kind="int"), A(4, lo=1, hi=5, kind="int"),
        checks=VALUE)
    c.e("convention/sin_i32", lambda a: jnp.sin(a[0]), A(4, lo=-5, hi=5, kind="int"), checks=VALUE)
    c.e("convention/take_out_of_range", lambda a: jnp.take(a[0], jnp.array([5, -7, 1], jnp.int32)), A(4),
        checks=VALUE)


def gaps(c):
    """The ops and transform options issue 28 found missing (any, all, isnan, relu, var, std, scalar
    forms, argnums for the Jacobians, per-leaf in_axes)."""
    x = A(3, 4, lo=-2.0, hi=2.0, avoid=[0.0], gap=0.05)
    special_values = A(5, values=[1.0, float("nan"), INF, -INF, 0.0])
    c.e("gaps/relu", lambda a: jax.nn.relu(a[0]), x)
    c.e("gaps/var", lambda a: jnp.var(a[0], axis=1), x)
    c.e("gaps/std", lambda a: jnp.std(a[0]), x)
    c.e("gaps/any", lambda a: jnp.any(a[0] > 1.5, axis=0), x, checks=VALUE)
    c.e("gaps/all", lambda a: jnp.all(a[0] > -1.5, axis=1), x, checks=VALUE)
    c.e("gaps/isnan", lambda a: jnp.isnan(a[0]), special_values, checks=VALUE)
    c.e("gaps/isfinite", lambda a: jnp.isfinite(a[0]), special_values, checks=VALUE)
    c.e("gaps/isinf", lambda a: jnp.isinf(a[0]), special_values, checks=VALUE)
    c.e("gaps/fmod", lambda a: jnp.fmod(a[0], a[1]), A(4, values=[-1.0, 1.0, -5.5, 5.5]),
        A(4, values=[3.0, -3.0, 2.0, -2.0]), checks=VALUE)
    c.e("gaps/remainder_scalar", lambda a: jnp.remainder(a[0], 0.75), A(3, 4, lo=0.1, hi=3.0, avoid=[0.75, 1.5, 2.25]))
    c.e("gaps/atan2_scalar", lambda a: jnp.arctan2(a[0], 2.0), x)
    c.e("gaps/jacfwd_argnums", lambda a: jax.jacfwd(lambda u, w: jnp.sin(u * w), argnums=1)(a[0], a[1]), A(3), A(3))
    c.e("gaps/hessian_argnums",
        lambda a: jax.hessian(lambda u, w: jnp.sum(jnp.sin(u * w) * u), argnums=1)(a[0], a[1]), A(3), A(3))
    c.e("gaps/vmap_per_leaf_in_axes", lambda a: jax.vmap(lambda p: p[0] * p[1], in_axes=((0, None),))((a[0], a[1])),
        A(2, 3), A(3))


def build():
    c = Catalogue("misc")
    for group in (transforms_inside, custom_rules, models, special, gaps):
        group(c)
    return c
