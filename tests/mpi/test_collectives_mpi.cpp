// The collective primitives across 2 processes (mpirun, tests/mpi/CMakeLists.txt): each rank runs a
// collective on its member's operand, eagerly and under jit, with gradients, and gets the row of the
// named-axis vmap emulation that it computes locally, without collectives. Also the errors a rank sees when
// the ranks disagree, the byte counter, and OverlappedGradients against plain gradient averaging.
#include <string>
#include <vector>

#include "collective_cases.hpp"
#include "mpi/mpi_test_support.hpp"
#include "samples.hpp"
#include "test_util.hpp"

namespace fx = fluxion;
using fluxion_mpi_tests::start;
using fx::Tensor;

namespace {

// Row r of x along axis 0.
Tensor row(const Tensor& x, int64_t r) {
  std::vector<int64_t> start(static_cast<size_t>(x.ndim()), 0), limit = x.shape().dims();
  start[0] = r;
  limit[0] = r + 1;
  std::vector<int64_t> dims(x.shape().dims().begin() + 1, x.shape().dims().end());
  return fx::reshape(fx::slice(x, start, limit), dims);
}

void close(const Tensor& got, const Tensor& want, double tol = 1e-14) {
  REQUIRE(got.shape() == want.shape());
  CHECK_MESSAGE(fx::testing::max_diff(got, want) <= tol, "got " << got << "\nwant " << want);
}

// Every rank draws the same members (same seed), so each knows the whole input.
Tensor members(const std::vector<int64_t>& member, int64_t n, uint64_t seed) {
  std::vector<int64_t> dims = member;
  dims.insert(dims.begin(), n);
  return fx::testing::random_tensor(fx::Shape(dims), fx::f64, seed);
}

}  // namespace

TEST_CASE("collectives across processes equal the named-axis vmap emulation: eager, jit and gradients") {
  start();
  const int64_t n = fx::distributed::size(), r = fx::distributed::rank();
  REQUIRE(n == 2);
  uint64_t seed = 1;
  for (const fx::testing::CollectiveCase& c : fx::testing::collective_cases("world", n)) {
    CAPTURE(c.what);
    Tensor xs = members(c.member, n, seed++);
    Tensor want = fx::vmap(c.f, fx::axis_name("world"))(xs);
    close(c.f(row(xs, r)), row(want, r));
    close(fx::jit(c.f)(row(xs, r)), row(want, r));
    auto loss = [&c](const Tensor& x) { return fx::sum(c.f(x) * c.f(x)); };
    Tensor grads = fx::vmap(fx::grad(loss), fx::axis_name("world"))(xs);
    close(fx::grad(loss)(row(xs, r)), row(grads, r), 1e-13);
    close(fx::jit(fx::grad(loss))(row(xs, r)), row(grads, r), 1e-13);
  }
  // Integers and f32 go through the same kernels.
  Tensor ints = fx::arange(6, fx::i32) * static_cast<int32_t>(r + 1);
  CHECK(fx::all_sum(ints, "world").to_vector<int32_t>() == (fx::arange(6, fx::i32) * 3).to_vector<int32_t>());
  CHECK(fx::all_max(fx::full({2}, 1.5f * static_cast<float>(r), fx::f32), "world").to_vector<float>() ==
        std::vector<float>{1.5f, 1.5f});
  CHECK(fx::axis_size("world") == 2);
}

TEST_CASE("collectives across processes: ranks that disagree get the same error, naming the collective") {
  start();
  const int64_t r = fx::distributed::rank();
  // On a group of its own: after a disagreement a group is unusable (the world stays healthy).
  fx::distributed::new_group({0, 1}, "pair");
  std::string message;
  try {
    fx::all_sum(fx::ones({r == 0 ? 3 : 4}), "pair");
  } catch (const fx::Error& e) { message = e.what(); }
  CHECK(message.find("[all_sum]") != std::string::npos);
  CHECK(message.find("f64[3]") != std::string::npos);
  CHECK(message.find("f64[4]") != std::string::npos);
  CHECK_THROWS_WITH_AS(fx::all_sum(fx::ones({2}), "pair"), doctest::Contains("unusable"), fx::Error);
}

TEST_CASE("collectives across processes: collective_stats counts what this rank sends") {
  start();
  fx::reset_collective_stats();
  fx::all_sum(fx::ones({100}), "world");
  fx::all_gather(fx::ones({10}, fx::f32), "world");
  const fx::CollectiveStats s = fx::collective_stats();
  CHECK(s.calls == 2);
  CHECK(s.bytes_sent == 100 * 8 + 10 * 4);
}

TEST_CASE("OverlappedGradients: averaged gradients equal all_mean of the local gradients") {
  start();
  const int64_t r = fx::distributed::rank();
  Tensor w1 = fx::testing::random_tensor({4, 3}, fx::f64, 90), w2 = fx::testing::random_tensor({3}, fx::f64, 91);
  Tensor x = fx::testing::random_tensor({5, 4}, fx::f64, 92 + static_cast<uint64_t>(r));  // each rank its data
  fx::distributed::OverlappedGradients sync("world");
  for (int step = 0; step < 3; ++step) {
    auto loss = [&](const Tensor& a, const Tensor& b) {
      Tensor h = fx::tanh(fx::matmul(x, sync.watch(a)));
      return fx::sum(fx::matmul(h, sync.watch(b)));
    };
    auto plain = [&](const Tensor& a, const Tensor& b) { return fx::sum(fx::matmul(fx::tanh(fx::matmul(x, a)), b)); };
    fx::grad(loss, fx::argnums<0, 1>)(w1, w2);
    auto [g1, g2] = fx::grad(plain, fx::argnums<0, 1>)(w1, w2);
    Tensor m1 = sync.gradients(0, w1), m2 = sync.gradients(1, w2);
    close(m1, fx::all_mean(g1, "world"));
    close(m2, fx::all_mean(g2, "world"));
    w1 = w1 - m1 * 0.1;
    w2 = w2 - m2 * 0.1;
  }
}
