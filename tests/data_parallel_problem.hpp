// The MLP training problem shared by the data-parallel tests in one process (tests/test_data_parallel.cpp,
// named-axis vmap) and across processes (tests/mpi/test_data_parallel_mpi.cpp): full-batch, ddp (eager or
// jit) and sharded training of one member over the axis "world".
#pragma once
#include <algorithm>
#include <utility>
#include <vector>

#include <doctest/doctest.h>
#include <fluxion/fluxion.hpp>

#include "test_util.hpp"

namespace data_parallel_problem {

namespace fx = fluxion;
namespace dist = fluxion::distributed;
using fx::Tensor;

struct Mlp {
  Tensor w1, b1, w2, b2;
};

}  // namespace data_parallel_problem
BOOST_HANA_ADAPT_STRUCT(data_parallel_problem::Mlp, w1, b1, w2, b2);

namespace data_parallel_problem {

constexpr int64_t kExamples = 64, kInputs = 3, kHidden = 8, kSteps = 20;
inline const dist::SgdMomentum kOptimizer{0.05, 0.9};

inline Tensor forward(const Mlp& p, const Tensor& x) {
  return fx::matmul(fx::tanh(fx::matmul(x, p.w1) + p.b1), p.w2) + p.b2;
}

inline Tensor loss(const Mlp& p, const Tensor& x, const Tensor& y) {
  Tensor err = forward(p, x) - y;
  return fx::mean(err * err);
}

inline Tensor inputs() {
  return fx::reshape(fx::sin(fx::linspace(0.0, 17.0, kExamples * kInputs)), {kExamples, kInputs});
}
inline Tensor targets(const Tensor& x) {
  Tensor c = fx::reshape(fx::tensor({1.0, -2.0, 0.5}), {kInputs, 1});
  return fx::sin(fx::matmul(x, c)) + 0.1;
}
inline Mlp initial() {
  return {fx::reshape(fx::linspace(-0.6, 0.7, kInputs * kHidden), {kInputs, kHidden}), fx::linspace(-0.1, 0.1, kHidden),
          fx::reshape(fx::cos(fx::linspace(0.0, 3.0, kHidden)) * 0.5, {kHidden, 1}), fx::zeros({1})};
}
inline Mlp zeros_like(const Mlp& p) {
  return fx::tree_map([](const Tensor& t) { return fx::zeros_like(t); }, p);
}

/// max |got - want| / max |want| over all parameters.
inline double relative_difference(const Mlp& got, const Mlp& want) {
  double diff = 0, scale = 0;
  std::vector<Tensor> g = fx::tree_leaves(got), w = fx::tree_leaves(want);
  for (size_t i = 0; i < g.size(); ++i) {
    diff = std::max(diff, fx::testing::max_diff(g[i], w[i]));
    scale = std::max(scale, fx::max(fx::abs(w[i])).item<double>());
  }
  return diff / scale;
}

inline Mlp train_full(const Tensor& x, const Tensor& y) {
  Mlp p = initial(), v = zeros_like(p);
  for (int64_t s = 0; s < kSteps; ++s) std::tie(p, v) = kOptimizer.update(p, fx::grad(loss)(p, x, y), v);
  return p;
}

/// One DDP step of a member: the gradient of its local loss, averaged over the members, then SGD.
inline std::pair<Mlp, Mlp> ddp_step(const Mlp& p, const Mlp& v, const Tensor& x, const Tensor& y,
                                    const dist::DataParallelOptions& options) {
  return kOptimizer.update(p, dist::all_mean_gradients(fx::grad(loss)(p, x, y), options), v);
}

/// One member's DDP training on its share (x, y); with `jit`, the step runs under fx::jit.
inline Mlp train_ddp(const Tensor& x, const Tensor& y, bool jit, const dist::DataParallelOptions& options) {
  auto step = [options](const Mlp& p, const Mlp& v, const Tensor& xs, const Tensor& ys) {
    return ddp_step(p, v, xs, ys, options);
  };
  auto jitted = fx::jit(step);
  Mlp p = initial(), v = zeros_like(p);
  for (int64_t s = 0; s < kSteps; ++s) std::tie(p, v) = jit ? jitted(p, v, x, y) : step(p, v, x, y);
  return p;
}

/// One member's sharded training: it keeps only its shard of the parameters and of the velocity.
inline Mlp train_fsdp(const Tensor& x, const Tensor& y) {
  const Mlp p0 = initial();
  const dist::ShardedLayout<Mlp> layout(p0, fx::axis_size("world"));
  Tensor shard = dist::shard(p0, layout, "world");
  Tensor velocity = fx::zeros({layout.shard_size()});
  auto sharded_loss = [&](const Tensor& s) {
    return fx::all_mean(loss(dist::gather(s, layout, "world"), x, y), "world");
  };
  for (int64_t s = 0; s < kSteps; ++s) {
    Tensor g = fx::grad(sharded_loss)(shard);  // the shard of the full-batch gradient (reduce_scatter'd)
    REQUIRE(g.shape() == fx::Shape{layout.shard_size()});
    std::tie(shard, velocity) = kOptimizer.update(shard, g, velocity);
  }
  return dist::gather(shard, layout, "world");
}

}  // namespace data_parallel_problem
