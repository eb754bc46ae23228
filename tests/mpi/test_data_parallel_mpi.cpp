// Data-parallel and sharded training across 2 processes (mpirun, tests/mpi/CMakeLists.txt): each rank trains
// on its half of the batch with fx::distributed::all_mean_gradients (eager and under jit) and in the sharded
// mode (ShardedLayout, shard, gather), and after 20 steps holds the parameters of 20 steps on the whole batch,
// which it computes itself without collectives (f64, <= 1e-12 relative). tests/test_data_parallel.cpp runs the
// same training in one process through the named vmap.
//
// init() and finalize(): mpi/mpi_test_support.hpp, as in the other multi-process tests. Every test case calls
// start() (init on first use, so any case can run alone); its doctest listener finalizes after a clean run and
// calls MPI_Abort after a failing one, so that the other rank does not wait for it in MPI_Finalize.
#include <cmath>
#include <vector>

#include "mpi/mpi_test_support.hpp"
#include "data_parallel_problem.hpp"
#include "test_util.hpp"

namespace fx = fluxion;
namespace dist = fluxion::distributed;
using fluxion_mpi_tests::start;
using fx::Tensor;

namespace {

using namespace data_parallel_problem;

/// This rank's half of the batch: rows [r, r + 1) * 32.
std::pair<Tensor, Tensor> my_share() {
  const int64_t r = dist::rank(), rows = kExamples / dist::size();
  Tensor x = inputs(), y = targets(x);
  return {fx::slice(x, {r * rows, 0}, {(r + 1) * rows, kInputs}), fx::slice(y, {r * rows, 0}, {(r + 1) * rows, 1})};
}

}  // namespace

TEST_CASE("two-rank ddp, eager and jit, equals full-batch training") {
  start();
  REQUIRE(dist::size() == 2);
  Tensor x = inputs(), y = targets(x);
  const Mlp full = train_full(x, y);
  auto [xs, ys] = my_share();
  for (bool jit : {false, true}) {
    CAPTURE(jit);
    fx::reset_collective_stats();
    const Mlp got = train_ddp(xs, ys, jit, {});
    CHECK(relative_difference(got, full) <= 1e-12);
    // One all_sum per step (one bucket) carrying the whole gradient: 41 f64 parameters.
    const fx::CollectiveStats stats = fx::collective_stats();
    CHECK(stats.calls == kSteps);
    CHECK(stats.bytes_sent == kSteps * 41 * 8);
  }
  // The half batch alone trains elsewhere: the collectives did the work.
  Mlp p = initial(), v = zeros_like(p);
  for (int64_t s = 0; s < kSteps; ++s) std::tie(p, v) = kOptimizer.update(p, fx::grad(loss)(p, xs, ys), v);
  CHECK(relative_difference(p, full) > 1e-6);
}

TEST_CASE("two-rank ddp with small buckets: one all_sum per bucket, the same parameters") {
  start();
  Tensor x = inputs(), y = targets(x);
  const Mlp full = train_full(x, y);
  auto [xs, ys] = my_share();
  dist::DataParallelOptions options;
  options.bucket_bytes = 8 * 8;  // 8 elements: w1 (24) in three buckets, then b1, w2, b2 one each
  for (bool jit : {false, true}) {
    CAPTURE(jit);
    fx::reset_collective_stats();
    CHECK(relative_difference(train_ddp(xs, ys, jit, options), full) <= 1e-12);
    CHECK(fx::collective_stats().calls == kSteps * 6);
  }
}

TEST_CASE("two-rank sharded training equals full-batch training") {
  start();
  Tensor x = inputs(), y = targets(x);
  const Mlp full = train_full(x, y);
  auto [xs, ys] = my_share();
  CHECK(relative_difference(train_fsdp(xs, ys), full) <= 1e-12);
  // The shards partition the flat parameters: rank r holds elements [r, r + 1) * 21 of the padded 42.
  const dist::ShardedLayout<Mlp> layout(initial(), 2);
  Tensor mine = dist::shard(initial(), layout, "world");
  const int64_t r = dist::rank();
  CHECK(fx::testing::max_diff(mine, fx::slice(layout.flatten_tree(initial()), {r * 21}, {(r + 1) * 21})) == 0.0);
  CHECK_THROWS_WITH_AS(dist::gather(fx::zeros({20}), layout, "world"),
                       doctest::Contains("[gather] the shard is f64[20] but the layout's shards are f64[21]"),
                       fx::ShapeError);
}
