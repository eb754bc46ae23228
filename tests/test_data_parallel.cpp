// Data-parallel and sharded training (fx::distributed::all_mean_gradients, ShardedLayout, shard, gather,
// SgdMomentum) in one process: fx::vmap(train, fx::axis_name("world")) runs N members that each train on their
// contiguous share of the batch, and 20 steps of DDP (eager and jit) and of the sharded mode must give the
// parameters of 20 steps on the whole batch (f64, <= 1e-12 relative). Bucketing, the staged all_sums and the
// errors are checked too. tests/mpi/test_data_parallel_mpi.cpp runs the same training over 2 processes.
#include <doctest/doctest.h>

#include <fluxion/fluxion.hpp>

#include <cmath>

#include "data_parallel_problem.hpp"
#include "test_util.hpp"

namespace fx = fluxion;
namespace dist = fluxion::distributed;
using fx::Tensor;

namespace {

using namespace data_parallel_problem;

/// `train` run by n members of a named vmap, member r on examples [r, r + 1) * 64 / n; the result is held alike.
template <class Train> Mlp emulate(int64_t n, Train train) {
  Tensor x = inputs(), y = targets(x);
  Tensor xs = fx::reshape(x, {n, kExamples / n, kInputs}), ys = fx::reshape(y, {n, kExamples / n, 1});
  return fx::vmap(train, fx::in_axes(0, 0), fx::out_axes(fx::none), fx::axis_name("world"))(xs, ys);
}

/// all_sum equations in `j` and the sub-Jaxprs of its jit_calls.
int count_all_sums(const fx::Jaxpr& j) {
  int n = 0;
  for (const fx::Equation& e : j.equations) {
    if (e.primitive->name == "all_sum") ++n;
    if (const auto* call = dynamic_cast<const fx::JitCallParams*>(e.params.get())) n += count_all_sums(call->jaxpr());
  }
  return n;
}

}  // namespace

TEST_CASE("data parallel: ddp, ddp under jit and the sharded mode equal full-batch training") {
  Tensor x = inputs(), y = targets(x);
  const Mlp full = train_full(x, y);
  CHECK(loss(full, x, y).item<double>() < 0.5 * loss(initial(), x, y).item<double>());  // it does train
  for (int64_t n : {2, 4}) {
    CAPTURE(n);
    const Mlp ddp = emulate(n, [](const Tensor& xs, const Tensor& ys) { return train_ddp(xs, ys, false, {}); });
    const Mlp ddp_jit = emulate(n, [](const Tensor& xs, const Tensor& ys) { return train_ddp(xs, ys, true, {}); });
    const Mlp fsdp = emulate(n, train_fsdp);
    CHECK(relative_difference(ddp, full) <= 1e-12);
    CHECK(relative_difference(ddp_jit, full) <= 1e-12);
    CHECK(relative_difference(fsdp, full) <= 1e-12);
    // Not trivially equal: one member's share alone trains elsewhere.
    Tensor half_x = fx::slice(x, {0, 0}, {kExamples / n, kInputs}), half_y = fx::slice(y, {0, 0}, {kExamples / n, 1});
    CHECK(relative_difference(train_full(half_x, half_y), full) > 1e-6);
  }
}

TEST_CASE("data parallel: every bucket size gives the same parameters and one all_sum per bucket") {
  Tensor x = inputs(), y = targets(x);
  const Mlp full = train_full(x, y);
  const Mlp p = initial();
  // Leaves of 24, 8, 8 and 1 f64 elements (8 bytes each).
  struct Case {
    int64_t bucket_bytes;
    int expected;
  };
  const Case cases[] = {
      {int64_t{25} << 20, 1},  // everything in one bucket
      {24 * 8, 2},             // w1 alone, then b1 + w2 + b2
      {100, 4},                // 12 elements: w1 split in two, b1, then w2 + b2
      {8 * 8, 6},              // 8 elements: w1 split in three, then one leaf per bucket
      {3, 41},                 // below one element: one element per bucket
  };
  for (const Case& c : cases) {
    CAPTURE(c.bucket_bytes);
    dist::DataParallelOptions options;
    options.bucket_bytes = c.bucket_bytes;
    CHECK(dist::gradient_bucket_count(p, options) == c.expected);
    for (bool jit : {false, true}) {
      CAPTURE(jit);
      const Mlp got = emulate(2, [&](const Tensor& xs, const Tensor& ys) { return train_ddp(xs, ys, jit, options); });
      CHECK(relative_difference(got, full) <= 1e-12);
    }
    // The staged step (make_jaxpr of the jit'd step, inside the named vmap) has one all_sum per bucket.
    int staged = -1;
    auto jitted = fx::jit([options](const Mlp& q, const Mlp& v, const Tensor& xs, const Tensor& ys) {
      return ddp_step(q, v, xs, ys, options);
    });
    fx::vmap(
        [&](const Tensor& xs, const Tensor& ys) {
          fx::Jaxpr j = fx::make_jaxpr([&](const std::vector<Tensor>& leaves, const Tensor& a, const Tensor& b) {
            auto q = fx::tree_unflatten(fx::tree_flatten(p).second, leaves);
            return fx::tree_leaves(jitted(q, zeros_like(q), a, b).first);
          })(fx::tree_leaves(p), xs, ys);
          staged = count_all_sums(j);
          return xs;
        },
        fx::axis_name("world"))(fx::reshape(x, {2, 32, kInputs}), fx::reshape(y, {2, 32, 1}));
    CHECK(staged == c.expected);
  }
}

TEST_CASE("data parallel: jit around the named vmap stages the same step") {
  Tensor x = inputs(), y = targets(x);
  Tensor xs = fx::reshape(x, {2, 32, kInputs}), ys = fx::reshape(y, {2, 32, 1});
  const Mlp p = initial(), v = zeros_like(p);
  auto members = [](const Mlp& q, const Mlp& w, const Tensor& a, const Tensor& b) {
    auto step = [](const Mlp& q1, const Mlp& w1, const Tensor& a1, const Tensor& b1) {
      return ddp_step(q1, w1, a1, b1, {});
    };
    return fx::vmap(step, fx::in_axes(fx::none, fx::none, 0, 0), fx::out_axes(fx::none), fx::axis_name("world"))(q, w,
                                                                                                                 a, b);
  };
  auto [eager_p, eager_v] = members(p, v, xs, ys);
  auto [jit_p, jit_v] = fx::jit(members)(p, v, xs, ys);
  CHECK(relative_difference(jit_p, eager_p) <= 1e-14);
  CHECK(relative_difference(jit_v, eager_v) <= 1e-14);
  // One step on the whole batch moves the parameters the same way.
  auto [full_p, full_v] = kOptimizer.update(p, fx::grad(loss)(p, x, y), v);
  CHECK(relative_difference(eager_p, full_p) <= 1e-14);
}

TEST_CASE("data parallel: a gradient leaf that every member holds alike is averaged to itself") {
  // Under the named vmap a leaf that does not depend on the member is unmapped: its all_sum is n times it.
  Tensor shared = fx::tensor({1.0, -2.0, 3.0}), mine = fx::reshape(fx::linspace(0.0, 1.0, 6), {2, 3});
  auto [a, b] = fx::vmap([&](const Tensor& m) { return dist::all_mean_gradients(std::make_pair(shared, m)); },
                         fx::in_axes(0), fx::out_axes(fx::none), fx::axis_name("world"))(mine);
  CHECK(fx::testing::max_diff(a, shared) <= 1e-15);
  CHECK(fx::testing::max_diff(b, fx::mean(mine, {0})) <= 1e-15);
}

TEST_CASE("data parallel: mixed f32 and f64 leaves are reduced in one buffer per dtype") {
  std::vector<fx::AbstractValue> avals = {{fx::Shape{3}, fx::f32}, {fx::Shape{2, 2}, fx::f64}, {fx::Shape{5}, fx::f32}};
  std::vector<dist::GradientBucket> b = dist::plan_gradient_buckets(avals, 1 << 20);
  REQUIRE(b.size() == 2);
  CHECK((b[0].dtype == fx::f32 && b[0].begin == 0 && b[0].end == 8));
  CHECK((b[1].dtype == fx::f64 && b[1].begin == 0 && b[1].end == 4));
  // Values: the mean over 3 members of each leaf, dtypes kept.
  Tensor a = fx::astype(fx::reshape(fx::arange(9), {3, 3}), fx::f32),
         m = fx::reshape(fx::linspace(-1.0, 1.0, 12), {3, 2, 2});
  auto reduced = fx::vmap(
      [](const Tensor& u, const Tensor& w) {
        return dist::all_mean_gradients(std::make_tuple(u, w, u * 2.f), {"i", 16});
      },
      fx::in_axes(0, 0), fx::out_axes(fx::none), fx::axis_name("i"))(a, m);
  CHECK(std::get<0>(reduced).dtype() == fx::f32);
  CHECK(fx::testing::max_diff(std::get<0>(reduced), fx::mean(a, {0})) <= 1e-6);
  CHECK(fx::testing::max_diff(std::get<1>(reduced), fx::mean(m, {0})) <= 1e-15);
  CHECK(fx::testing::max_diff(std::get<2>(reduced), fx::mean(a, {0}) * 2.f) <= 1e-6);
  auto summed = fx::vmap([](const Tensor& w) { return dist::all_sum_gradients(std::vector<Tensor>{w}, {"i"}); },
                         fx::in_axes(0), fx::out_axes(fx::none), fx::axis_name("i"))(m);
  CHECK(fx::testing::max_diff(summed[0], fx::sum(m, {0})) <= 1e-15);
}

TEST_CASE("data parallel: the sharded layout pads, shards and gathers") {
  const Mlp p = initial();  // 41 parameters
  const dist::ShardedLayout<Mlp> layout(p, 4);
  CHECK(layout.size() == 41);
  CHECK(layout.shard_size() == 11);
  CHECK(layout.padded_size() == 44);
  Tensor flat = layout.flatten_tree(p);
  CHECK(fx::testing::max_diff(fx::slice(flat, {41}, {44}), fx::zeros({3})) == 0.0);
  CHECK(relative_difference(layout.unflatten_tree(flat), p) == 0.0);
  Tensor members = fx::arange(4);
  Tensor shards =
      fx::vmap([&](const Tensor&) { return dist::shard(p, layout, "world"); }, fx::axis_name("world"))(members);
  CHECK(fx::testing::max_diff(shards, fx::reshape(flat, {4, 11})) == 0.0);
  const Mlp back = fx::vmap([&](const Tensor& s) { return dist::gather(s, layout, "world"); }, fx::in_axes(0),
                            fx::out_axes(fx::none), fx::axis_name("world"))(shards);
  CHECK(relative_difference(back, p) == 0.0);
}

TEST_CASE("data parallel: errors") {
  using fx::testing::message_of;
  Tensor ones = fx::ones({4, 2});
  // A non-floating leaf among the gradients.
  CHECK(message_of<fx::DTypeError>([&] {
          fx::vmap([](const Tensor& g) { return dist::all_mean_gradients(std::make_tuple(g, fx::astype(g, fx::i32))); },
                   fx::axis_name("world"))(ones);
        }).find("[all_mean_gradients] leaf 1 of the gradients is i32[2]") != std::string::npos);
  // bucket_bytes <= 0.
  CHECK(message_of<fx::Error>([&] {
          fx::vmap(
              [](const Tensor& g) {
                return dist::all_sum_gradients(g, {"world", 0});
              },
              fx::axis_name("world"))(ones);
        }).find("[all_sum_gradients] bucket_bytes is 0") != std::string::npos);
  CHECK_THROWS_WITH_AS(dist::plan_gradient_buckets({}, -5), doctest::Contains("bucket_bytes is -5"), fx::Error);
  // An axis name that nothing binds.
  CHECK_THROWS_WITH_AS(dist::all_mean_gradients(ones, {"nowhere"}), doctest::Contains("'nowhere'"), fx::Error);
  // The sharded mode: a shard of the wrong size, a layout for another member count, mixed dtypes.
  const Mlp p = initial();
  const dist::ShardedLayout<Mlp> layout(p, 4);
  CHECK(message_of<fx::ShapeError>([&] {
          fx::vmap([&](const Tensor& s) { return dist::gather(s, layout, "world"); }, fx::in_axes(0),
                   fx::out_axes(fx::none), fx::axis_name("world"))(fx::zeros({4, 10}));
        }).find("[gather] the shard is f64[10] but the layout's shards are f64[11]") != std::string::npos);
  CHECK(message_of<fx::Error>([&] {
          fx::vmap([&](const Tensor&) { return dist::shard(p, layout, "world"); },
                   fx::axis_name("world"))(fx::arange(2));
        }).find("[shard] axis 'world' has 2 members but the layout was made for 4 shards") != std::string::npos);
  CHECK_THROWS_WITH_AS(dist::ShardedLayout<std::vector<Tensor>>({fx::ones({2}), fx::ones({2}, fx::f32)}, 2),
                       doctest::Contains("[ShardedLayout] leaf 1 is f32[2]"), fx::DTypeError);
  CHECK_THROWS_WITH_AS(dist::ShardedLayout<Mlp>(p, 0), doctest::Contains("num_shards is 0"), fx::Error);
  CHECK_THROWS_WITH_AS(layout.flatten({fx::ones({3})}), doctest::Contains("[ShardedLayout::flatten]"), fx::ShapeError);
  CHECK_THROWS_WITH_AS(kOptimizer.update(fx::ones({2}), fx::ones({3}), fx::ones({2})),
                       doctest::Contains("[SgdMomentum::update]"), fx::ShapeError);
}
