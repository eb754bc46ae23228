"""The op catalogue (JAX side): every public op of include/fluxion/ops.hpp and a few of lax.hpp.
Mirrors tests/differential/cat_ops_*.cpp entry by entry (same names)."""
import jax
import jax.numpy as jnp
import numpy as np
from jax import lax
from jax.scipy.special import logsumexp

from spec import VALUE, A, Catalogue


def unary(c):
    x = A(3, 4, lo=-2.0, hi=2.0)
    pos = A(3, 4, lo=0.3, hi=3.0)
    c.e("unary/neg", lambda a: jnp.negative(a[0]), x)
    c.e("unary/neg_operator", lambda a: -a[0] * 2.0, x)
    c.e("unary/sin", lambda a: jnp.sin(a[0]), x)
    c.e("unary/cos", lambda a: jnp.cos(a[0]), x)
    c.e("unary/tan", lambda a: jnp.tan(a[0]), A(3, 4, lo=-1.2, hi=1.2))
    c.e("unary/exp", lambda a: jnp.exp(a[0]), x)
    c.e("unary/log", lambda a: jnp.log(a[0]), pos)
    c.e("unary/log1p", lambda a: jnp.log1p(a[0]), A(3, 4, lo=-0.7, hi=2.0))
    c.e("unary/expm1", lambda a: jnp.expm1(a[0]), x)
    c.e("unary/sqrt", lambda a: jnp.sqrt(a[0]), pos)
    c.e("unary/rsqrt", lambda a: lax.rsqrt(a[0]), pos)
    c.e("unary/tanh", lambda a: jnp.tanh(a[0]), x)
    c.e("unary/sigmoid", lambda a: jax.nn.sigmoid(a[0]), A(3, 4, lo=-4.0, hi=4.0))
    c.e("unary/softplus", lambda a: jax.nn.softplus(a[0]), A(3, 4, lo=-4.0, hi=4.0))
    c.e("unary/abs", lambda a: jnp.abs(a[0]), A(3, 4, lo=-2.0, hi=2.0, avoid=[0.0], gap=0.1))
    c.e("unary/sign", lambda a: jnp.sign(a[0]) * a[0], A(3, 4, lo=-2.0, hi=2.0, avoid=[0.0], gap=0.1))
    c.e("unary/floor", lambda a: jnp.floor(a[0]) + a[0], A(3, 4, lo=-3.0, hi=3.0, avoid=range(-3, 4), gap=0.05))
    c.e("unary/ceil", lambda a: jnp.ceil(a[0]) * a[0], A(3, 4, lo=-3.0, hi=3.0, avoid=range(-3, 4), gap=0.05))
    c.e("unary/round", lambda a: jnp.round(a[0]) - a[0],
        A(3, 4, lo=-3.0, hi=3.0, avoid=[k + 0.5 for k in range(-4, 4)], gap=0.05))
    c.e("unary/square", lambda a: jnp.square(a[0]), x)
    c.e("unary/pow_int_exponent", lambda a: a[0] ** 3, x)
    c.e("unary/pow_half_exponent", lambda a: jnp.power(a[0], 0.5), pos)
    c.e("unary/pow_scalar_base", lambda a: jnp.power(2.0, a[0]), x)
    c.e("unary/stop_gradient", lambda a: lax.stop_gradient(a[0]) * a[0] + jnp.sin(lax.stop_gradient(a[0] * 2.0)), x)
    c.e("unary/astype_round_trip", lambda a: a[0].astype(jnp.float32).astype(jnp.float64) * a[0], x)
    c.e("unary/creation_ops",
        lambda a: a[0] * jnp.full_like(a[0], 2.0) + jnp.linspace(0.0, 1.0, 12).reshape(3, 4) + jnp.ones_like(a[0])
        - jnp.zeros((3, 4)) + jnp.eye(4)[:3] + jnp.full((3, 4), 0.5) * jnp.arange(12).reshape(3, 4)
        + jnp.zeros_like(a[0]), x)
    c.e("unary/chain", lambda a: jnp.exp(jnp.sin(a[0]) * jnp.tanh(a[0])) / (1.0 + jnp.square(a[0])), x)
    c.f32("unary/sin", "unary/exp", "unary/log", "unary/tanh", "unary/sigmoid", "unary/sqrt", "unary/chain")


def binary(c):
    x, y = A(3, 4, lo=-2.0, hi=2.0), A(3, 4, lo=-2.0, hi=2.0)
    pos, pos2 = A(3, 4, lo=0.3, hi=2.0), A(3, 4, lo=0.5, hi=2.5)
    c.e("binary/add", lambda a: a[0] + a[1], x, y)
    c.e("binary/subtract", lambda a: jnp.subtract(a[0], a[1]), x, y)
    c.e("binary/multiply", lambda a: jnp.multiply(a[0], a[1]), x, y)
    c.e("binary/divide", lambda a: a[0] / a[1], x, pos)
    c.e("binary/pow", lambda a: jnp.power(a[0], a[1]), pos, y)
    c.e("binary/maximum", lambda a: jnp.maximum(a[0], a[1]), x, y)
    c.e("binary/minimum", lambda a: jnp.minimum(a[0], a[1]), x, y)
    c.e("binary/maximum_scalar", lambda a: jnp.maximum(a[0], 0.25), A(3, 4, lo=-2.0, hi=2.0, avoid=[0.25], gap=0.05))
    c.e("binary/minimum_scalar", lambda a: jnp.minimum(a[0], -0.25), A(3, 4, lo=-2.0, hi=2.0, avoid=[-0.25], gap=0.05))
    c.e("binary/atan2", lambda a: jnp.arctan2(a[0], a[1]), x, pos)
    c.e("binary/remainder_positive", lambda a: jnp.remainder(a[0], a[1]),
        A(3, 4, lo=0.1, hi=5.0), A(3, 4, lo=0.7, hi=1.3))
    c.e("binary/add_broadcast", lambda a: a[0] + a[1], A(3, 1), A(1, 4))
    c.e("binary/multiply_broadcast_rank", lambda a: a[0] * a[1], A(2, 3, 2), A(2))
    c.e("binary/add_scalar", lambda a: a[0] + 1.5, x)
    c.e("binary/subtract_scalar_left", lambda a: 1.0 - a[0], x)
    c.e("binary/multiply_scalar", lambda a: 3.0 * a[0] * 0.5, x)
    c.e("binary/divide_scalar", lambda a: a[0] / 3.0, x)
    c.e("binary/divide_scalar_left", lambda a: 2.0 / a[0], pos)
    c.e("binary/rank0_operand", lambda a: a[0] * a[1] + a[1], x, A())
    c.e("binary/pow_tensor_scalar_exponent", lambda a: jnp.power(a[0], 2.5) - a[0] ** -1.5, pos2)
    c.f32("binary/add", "binary/multiply", "binary/divide", "binary/pow", "binary/add_broadcast")


def compare(c):
    ints = A(3, 4, lo=-2, hi=3, kind="int")
    ints2 = A(3, 4, lo=-2, hi=3, kind="int")
    as_f = lambda a: a.astype(jnp.float64)  # noqa: E731 (integer-valued floats so that == is exercised)
    c.e("compare/lt", lambda a: as_f(a[0]) < as_f(a[1]), ints, ints2, checks=VALUE)
    c.e("compare/le", lambda a: as_f(a[0]) <= as_f(a[1]), ints, ints2, checks=VALUE)
    c.e("compare/gt", lambda a: as_f(a[0]) > as_f(a[1]), ints, ints2, checks=VALUE)
    c.e("compare/ge", lambda a: as_f(a[0]) >= as_f(a[1]), ints, ints2, checks=VALUE)
    c.e("compare/eq", lambda a: as_f(a[0]) == as_f(a[1]), ints, ints2, checks=VALUE)
    c.e("compare/ne", lambda a: as_f(a[0]) != as_f(a[1]), ints, ints2, checks=VALUE)
    c.e("compare/scalar_right", lambda a: (a[0] < 0.5) | (a[0] >= 1.0), A(3, 4, lo=-2.0, hi=2.0), checks=VALUE)
    c.e("compare/scalar_left", lambda a: (0.5 <= a[0]) | (-1.0 > a[0]), A(3, 4, lo=-2.0, hi=2.0), checks=VALUE)
    c.e("compare/int_tensors", lambda a: (a[0] == a[1]) | (a[0] > 1), ints, ints2, checks=VALUE)
    c.e("logic/and_or_not", lambda a: jnp.logical_or(jnp.logical_and(a[0], a[1]), jnp.logical_not(a[0])),
        A(3, 4, kind="bool"), A(3, 4, kind="bool"), checks=VALUE)
    c.e("logic/operators", lambda a: (a[0] & ~a[1]) | (a[1] & ~a[0]), A(3, 4, kind="bool"), A(3, 4, kind="bool"),
        checks=VALUE)
    sel = A(3, 4, lo=-2.0, hi=2.0, avoid=[0.0], gap=0.05)
    c.e("where/tensors", lambda a: jnp.where(a[0] > 0, jnp.sin(a[1]), jnp.cos(a[1]) * a[0]), sel, A(3, 4))
    c.e("where/scalar_true", lambda a: jnp.where(a[0] > 0, 2.0, a[0] * a[0]), sel)
    c.e("where/scalar_false", lambda a: jnp.where(a[0] > 0, a[0] * 3.0, -1.0), sel)
    c.e("where/scalars", lambda a: jnp.where(a[0] > 0, 1.0, -1.0) * a[0], sel)
    c.e("where/broadcast_condition", lambda a: jnp.where(a[1] > 0, a[0], -a[0]), A(3, 4), A(3, 1, avoid=[0.0]))
    c.e("clip/scalars", lambda a: jnp.clip(a[0], -0.5, 0.7),
        A(3, 4, lo=-2.0, hi=2.0, avoid=[-0.5, 0.7], gap=0.05))
    c.e("clip/tensors", lambda a: jnp.clip(a[0], a[1], a[1] + 1.0),
        A(3, 4, lo=-2.0, hi=2.0), A(3, 4, lo=-1.0, hi=0.0))
    c.f32("where/tensors", "clip/scalars")


def reductions(c):
    x = A(2, 3, 4)
    m = A(3, 4)
    c.e("reduce/sum_all", lambda a: jnp.sum(a[0]), x)
    c.e("reduce/sum_axis0", lambda a: jnp.sum(a[0], axis=0), x)
    c.e("reduce/sum_negative_axis_keepdims", lambda a: jnp.sum(a[0], axis=-1, keepdims=True), x)
    c.e("reduce/sum_axes_0_2", lambda a: jnp.sum(a[0], axis=(0, 2)), x)
    c.e("reduce/mean_all", lambda a: jnp.mean(a[0]), x)
    c.e("reduce/mean_axis1_keepdims", lambda a: jnp.mean(a[0], axis=1, keepdims=True), x)
    c.e("reduce/prod_all", lambda a: jnp.prod(a[0]), A(2, 3, lo=0.5, hi=1.5))
    c.e("reduce/prod_axis0", lambda a: jnp.prod(a[0], axis=0), A(3, 4, lo=-1.5, hi=1.5, avoid=[0.0], gap=0.1))
    c.e("reduce/max_all", lambda a: jnp.max(a[0]), m)
    c.e("reduce/max_axis1_keepdims", lambda a: jnp.max(a[0], axis=1, keepdims=True), m)
    c.e("reduce/min_all", lambda a: jnp.min(a[0]), m)
    c.e("reduce/min_axes_0_1", lambda a: jnp.min(a[0], axis=(0, 1)), x)
    c.e("reduce/argmax_flat", lambda a: jnp.argmax(a[0]), m, checks=VALUE)
    c.e("reduce/argmax_axis1", lambda a: jnp.argmax(a[0], axis=1), m, checks=VALUE)
    c.e("reduce/argmin_flat", lambda a: jnp.argmin(a[0]), m, checks=VALUE)
    c.e("reduce/argmin_axis0_keepdims", lambda a: jnp.argmin(a[0], axis=0, keepdims=True), m, checks=VALUE)
    c.e("reduce/cumsum_axis0", lambda a: jnp.cumsum(a[0], axis=0), m)
    c.e("reduce/cumsum_axis1", lambda a: jnp.cumsum(a[0], axis=1) * a[0], m)
    c.e("reduce/logsumexp_all", lambda a: logsumexp(a[0] * 3.0), m)
    c.e("reduce/logsumexp_axis1_keepdims", lambda a: logsumexp(a[0] * 3.0, axis=1, keepdims=True), m)
    c.e("reduce/logsumexp_axes_0_2", lambda a: logsumexp(a[0], axis=(0, 2)), x)
    c.e("reduce/softmax_last", lambda a: jax.nn.softmax(a[0] * 2.0), m)
    c.e("reduce/softmax_axis0", lambda a: jax.nn.softmax(a[0], axis=0), m)
    c.e("reduce/log_softmax_last", lambda a: jax.nn.log_softmax(a[0] * 2.0), m)
    c.e("reduce/log_softmax_axis0", lambda a: jax.nn.log_softmax(a[0], axis=0), m)
    c.e("reduce/norm_all", lambda a: jnp.linalg.norm(a[0]), x)
    c.e("reduce/norm_axis1", lambda a: jnp.linalg.norm(a[0], axis=1), m)
    c.e("reduce/norm_axis0_keepdims", lambda a: jnp.linalg.norm(a[0], axis=0, keepdims=True), m)
    c.f32("reduce/sum_axis0", "reduce/mean_all", "reduce/logsumexp_axis1_keepdims", "reduce/softmax_last",
          "reduce/norm_all", "reduce/cumsum_axis1")


def shapes(c):
    x = A(2, 3, 2)
    c.e("shape/reshape", lambda a: jnp.reshape(a[0], (3, 4)) * 2.0, x)
    c.e("shape/reshape_inferred", lambda a: jnp.sin(jnp.reshape(a[0], (-1, 2))), x)
    c.e("shape/transpose_reverse", lambda a: jnp.transpose(a[0]) * jnp.arange(1.0, 3.0).reshape(2, 1, 1), x)
    c.e("shape/transpose_permutation", lambda a: jnp.cos(jnp.transpose(a[0], (1, 0, 2))), x)
    c.e("shape/expand_dims_int", lambda a: jnp.expand_dims(a[0], 1) * a[0][:, None, :], A(3, 2))
    c.e("shape/expand_dims_axes", lambda a: jnp.exp(jnp.expand_dims(a[0], (0, 3))), A(3, 2))
    c.e("shape/squeeze_all", lambda a: jnp.squeeze(a[0]) ** 2, A(1, 3, 1, 2))
    c.e("shape/squeeze_axes", lambda a: jnp.squeeze(a[0], axis=(0,)) * 3.0, A(1, 3, 1, 2))
    c.e("shape/concatenate_axis0", lambda a: jnp.concatenate([a[0], jnp.sin(a[1]), a[0] * a[0]], axis=0),
        A(2, 3), A(1, 3))
    c.e("shape/concatenate_axis1", lambda a: jnp.concatenate([a[0], a[1] * 2.0], axis=1), A(2, 3), A(2, 1))
    c.e("shape/stack_axis0", lambda a: jnp.stack([a[0], a[1], a[0] * a[1]]), A(2, 3), A(2, 3))
    c.e("shape/stack_axis1", lambda a: jnp.stack([a[0], jnp.tanh(a[1])], axis=1), A(2, 3), A(2, 3))
    c.e("shape/stack_negative_axis", lambda a: jnp.stack([a[0], a[1]], axis=-1) ** 2, A(2, 3), A(2, 3))
    c.e("shape/ravel", lambda a: jnp.ravel(a[0]) * jnp.arange(12.0), x)
    c.e("shape/broadcast_to", lambda a: jnp.broadcast_to(a[0], (2, 3, 2)) * jnp.sin(a[0]), A(3, 1))


def indexing(c):
    x = A(4, 5)
    c.e("index/slice", lambda a: a[0][1:3, 0:4] * 2.0, x)
    c.e("index/slice_strided", lambda a: jnp.sin(a[0][0:4:2, 1:5:3]), x)
    c.e("index/slice_clamped_limit", lambda a: a[0][2:10, 3:99] ** 2, x)
    idx = np.array([2, 0, 3, 2], dtype=np.int32)
    c.e("index/take_axis0", lambda a: jnp.take(a[0], idx, axis=0), x)
    c.e("index/take_axis1_repeated", lambda a: jnp.take(a[0], jnp.array([4, 4, 1], jnp.int32), axis=1) ** 2, x)
    c.e("index/take_flat", lambda a: jnp.take(a[0], jnp.array([19, 0, 7, 7], jnp.int32)), x)
    c.e("index/take_negative", lambda a: jnp.take(a[0], jnp.array([-1, -4, 0], jnp.int32), axis=0) * 3.0, x)
    c.e("index/take_2d_indices", lambda a: jnp.take(a[0], jnp.array([[0, 1], [3, 3]], jnp.int32), axis=1), x)
    c.e("lax/dynamic_slice", lambda a: lax.dynamic_slice(a[0], (jnp.int32(1), jnp.int32(2)), (2, 3)) * 2.0, x)
    c.e("lax/dynamic_slice_clamped", lambda a: lax.dynamic_slice(a[0], (jnp.int32(3), jnp.int32(4)), (2, 3)), x)
    c.e("lax/dynamic_update_slice", lambda a: lax.dynamic_update_slice(a[0], jnp.sin(a[1]),
                                                                         (jnp.int32(1), jnp.int32(2))),
        A(4, 5), A(2, 2))
    c.e("lax/pad", lambda a: lax.pad(a[0], jnp.array(0.5, a[0].dtype), [(1, 0, 1), (0, 2, 0)]) * 2.0, A(3, 2))
    c.e("lax/pad_negative", lambda a: lax.pad(a[0], jnp.array(0.0, a[0].dtype), [(-1, 1, 0), (1, -1, 1)]), A(3, 3))
    c.e("lax/gather_clamped", lambda a: jnp.take(a[0], jnp.array([[0, 7], [-3, 2]], jnp.int32), axis=1, mode="clip"), x)
    c.e("lax/scatter_add", lambda a: a[0].at[jnp.array([2, 0, 2], jnp.int32)].add(a[1] * a[1]), A(4, 5), A(3, 5))
    c.e("lax/cumsum_reverse", lambda a: lax.cumsum(a[0], axis=1, reverse=True), A(3, 4))
    c.e("lax/select", lambda a: lax.select(a[0] > a[1], a[0] * a[1], a[1] - a[0]), A(3, 4), A(3, 4))


def linalg(c):
    spd = lambda a: a @ jnp.swapaxes(a, -1, -2) + 3.0 * jnp.eye(a.shape[-1], dtype=a.dtype)  # noqa: E731
    c.e("linalg/matmul_2d", lambda a: jnp.matmul(a[0], a[1]), A(2, 3), A(3, 4))
    c.e("linalg/matmul_1d_2d", lambda a: jnp.matmul(a[0], a[1]), A(3), A(3, 4))
    c.e("linalg/matmul_2d_1d", lambda a: a[0] @ a[1], A(2, 3), A(3))
    c.e("linalg/matmul_batched", lambda a: jnp.matmul(a[0], a[1]), A(2, 2, 3), A(2, 3, 2))
    c.e("linalg/matmul_broadcast_batch", lambda a: jnp.matmul(a[0], a[1]), A(2, 2, 3), A(3, 2))
    c.e("linalg/dot_1d", lambda a: jnp.dot(a[0], a[1]), A(5), A(5))
    c.e("linalg/dot_2d", lambda a: jnp.dot(a[0], a[1]), A(2, 3), A(3, 3))
    c.e("linalg/dot_3d_2d", lambda a: jnp.dot(a[0], a[1]), A(2, 2, 3), A(3, 2))
    c.e("linalg/outer", lambda a: jnp.outer(a[0], a[1]), A(3), A(2, 2))
    c.e("linalg/solve_vector", lambda a: jnp.linalg.solve(spd(a[0]), a[1]), A(3, 3), A(3))
    c.e("linalg/solve_matrix", lambda a: jnp.linalg.solve(spd(a[0]), a[1]), A(3, 3), A(3, 2))
    c.e("linalg/solve_batched_vector", lambda a: jnp.linalg.solve(spd(a[0]), a[1][..., None])[..., 0],
        A(2, 3, 3), A(2, 3))
    c.e("linalg/inv", lambda a: jnp.linalg.inv(spd(a[0])), A(3, 3))
    c.e("lax/dot_general_batch", lambda a: lax.dot_general(a[0], a[1], (((2,), (1,)), ((0,), (0,)))),
        A(2, 2, 3), A(2, 3, 2))
    c.e("lax/gram", lambda a: a[0].T @ (a[1][:, None] * a[0]), A(4, 3), A(4, lo=0.5, hi=1.5))
    c.f32("linalg/matmul_2d", "linalg/solve_matrix", "linalg/dot_1d")


def build():
    c = Catalogue("ops")
    for group in (unary, binary, compare, reductions, shapes, indexing, linalg):
        group(c)
    return c
