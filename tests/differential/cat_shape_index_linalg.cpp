// Catalogue: shape ops, indexing and linear algebra (mirrors shapes(), indexing() and linalg() in
// cat_ops.py).
#include "harness.hpp"

namespace diff {
namespace {
Tensor i32s(std::vector<int32_t> v, fx::Shape shape) { return fx::from_vector(v, shape); }
Tensor i32(int32_t v) { return fx::scalar<int32_t>(v); }
/// a aᵀ + 3 I (batched): well-conditioned systems for solve and inv.
Tensor spd(const Tensor& a) {
  int64_t n = a.shape()[a.ndim() - 1];
  std::vector<int64_t> perm;
  for (int64_t i = 0; i < a.ndim(); ++i) perm.push_back(i);
  std::swap(perm[perm.size() - 1], perm[perm.size() - 2]);
  return fx::matmul(a, fx::transpose(a, perm)) + fx::astype(fx::eye(n), a.dtype()) * 3.0;
}
}  // namespace

void add_shape_index_linalg(Catalogue& c) {
  c.add("shape/reshape", [](const Args& a) { return fx::reshape(a[0], {3, 4}) * 2.0; });
  c.add("shape/reshape_inferred", [](const Args& a) { return fx::sin(fx::reshape(a[0], {-1, 2})); });
  c.add("shape/transpose_reverse", [](const Args& a) {
    return fx::transpose(a[0]) * fx::reshape(fx::tensor({1.0, 2.0}), {2, 1, 1});
  });
  c.add("shape/transpose_permutation", [](const Args& a) { return fx::cos(fx::transpose(a[0], {1, 0, 2})); });
  c.add("shape/expand_dims_int", [](const Args& a) { return fx::expand_dims(a[0], 1) * fx::expand_dims(a[0], 1); });
  c.add("shape/expand_dims_axes", [](const Args& a) {
    return fx::exp(fx::expand_dims(a[0], std::vector<int64_t>{0, 3}));
  });
  c.add("shape/squeeze_all", [](const Args& a) { return fx::square(fx::squeeze(a[0])); });
  c.add("shape/squeeze_axes", [](const Args& a) { return fx::squeeze(a[0], {0}) * 3.0; });
  c.add("shape/concatenate_axis0", [](const Args& a) {
    return fx::concatenate({a[0], fx::sin(a[1]), a[0] * a[0]}, 0);
  });
  c.add("shape/concatenate_axis1", [](const Args& a) { return fx::concatenate({a[0], a[1] * 2.0}, 1); });
  c.add("shape/stack_axis0", [](const Args& a) { return fx::stack({a[0], a[1], a[0] * a[1]}); });
  c.add("shape/stack_axis1", [](const Args& a) { return fx::stack({a[0], fx::tanh(a[1])}, 1); });
  c.add("shape/stack_negative_axis", [](const Args& a) { return fx::square(fx::stack({a[0], a[1]}, -1)); });
  c.add("shape/ravel", [](const Args& a) { return fx::ravel(a[0]) * fx::astype(fx::arange(12), a[0].dtype()); });
  c.add("shape/broadcast_to", [](const Args& a) { return fx::broadcast_to(a[0], {2, 3, 2}) * fx::sin(a[0]); });

  c.add("index/slice", [](const Args& a) { return fx::slice(a[0], {1, 0}, {3, 4}) * 2.0; });
  c.add("index/slice_strided", [](const Args& a) { return fx::sin(fx::slice(a[0], {0, 1}, {4, 5}, {2, 3})); });
  c.add("index/slice_clamped_limit", [](const Args& a) { return fx::square(fx::slice(a[0], {2, 3}, {10, 99})); });
  c.add("index/take_axis0", [](const Args& a) { return fx::take(a[0], i32s({2, 0, 3, 2}, {4}), 0); });
  c.add("index/take_axis1_repeated", [](const Args& a) { return fx::square(fx::take(a[0], i32s({4, 4, 1}, {3}), 1)); });
  c.add("index/take_flat", [](const Args& a) { return fx::take(a[0], i32s({19, 0, 7, 7}, {4})); });
  c.add("index/take_negative", [](const Args& a) { return fx::take(a[0], i32s({-1, -4, 0}, {3}), 0) * 3.0; });
  c.add("index/take_2d_indices", [](const Args& a) { return fx::take(a[0], i32s({0, 1, 3, 3}, {2, 2}), 1); });
  c.add("lax/dynamic_slice", [](const Args& a) {
    return fx::lax::dynamic_slice(a[0], {i32(1), i32(2)}, {2, 3}) * 2.0;
  });
  c.add("lax/dynamic_slice_clamped", [](const Args& a) {
    return fx::lax::dynamic_slice(a[0], {i32(3), i32(4)}, {2, 3});
  });
  c.add("lax/dynamic_update_slice", [](const Args& a) {
    return fx::lax::dynamic_update_slice(a[0], fx::sin(a[1]), {i32(1), i32(2)});
  });
  c.add("lax/pad", [](const Args& a) {
    return fx::lax::pad(a[0], fx::astype(fx::scalar(0.5), a[0].dtype()), {1, 0}, {0, 2}, {1, 0}) * 2.0;
  });
  c.add("lax/pad_negative", [](const Args& a) {
    return fx::lax::pad(a[0], fx::astype(fx::scalar(0.0), a[0].dtype()), {-1, 1}, {1, -1}, {0, 1});
  });
  c.add("lax/gather_clamped", [](const Args& a) { return fx::lax::gather(a[0], i32s({0, 7, -3, 2}, {2, 2}), 1); });
  c.add("lax/scatter_add", [](const Args& a) {
    return fx::lax::scatter_add(a[0], i32s({2, 0, 2}, {3}), fx::square(a[1]), 0);
  });
  c.add("lax/cumsum_reverse", [](const Args& a) { return fx::lax::cumsum(a[0], 1, true); });
  c.add("lax/select", [](const Args& a) { return fx::lax::select(a[0] > a[1], a[0] * a[1], a[1] - a[0]); });

  c.add("linalg/matmul_2d", [](const Args& a) { return fx::matmul(a[0], a[1]); });
  c.add("linalg/matmul_1d_2d", [](const Args& a) { return fx::matmul(a[0], a[1]); });
  c.add("linalg/matmul_2d_1d", [](const Args& a) { return fx::matmul(a[0], a[1]); });
  c.add("linalg/matmul_batched", [](const Args& a) { return fx::matmul(a[0], a[1]); });
  c.add("linalg/matmul_broadcast_batch", [](const Args& a) { return fx::matmul(a[0], a[1]); });
  c.add("linalg/dot_1d", [](const Args& a) { return fx::dot(a[0], a[1]); });
  c.add("linalg/dot_2d", [](const Args& a) { return fx::dot(a[0], a[1]); });
  c.add("linalg/dot_3d_2d", [](const Args& a) { return fx::dot(a[0], a[1]); });
  c.add("linalg/outer", [](const Args& a) { return fx::outer(a[0], a[1]); });
  c.add("linalg/solve_vector", [](const Args& a) { return fx::solve(spd(a[0]), a[1]); });
  c.add("linalg/solve_matrix", [](const Args& a) { return fx::solve(spd(a[0]), a[1]); });
  c.add("linalg/solve_batched_vector", [](const Args& a) { return fx::solve(spd(a[0]), a[1]); });
  c.add("linalg/inv", [](const Args& a) { return fx::inv(spd(a[0])); });
  c.add("lax/dot_general_batch", [](const Args& a) {
    return fx::lax::dot_general(a[0], a[1], {{2}, {1}}, {{0}, {0}});
  });
  c.add("lax/gram", [](const Args& a) { return fx::lax::gram(a[0], a[1]); });
}

}  // namespace diff
