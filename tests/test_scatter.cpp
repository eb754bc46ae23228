// The scatter family beyond the registry samples: the numpy-style helpers against hand-written
// loops, the documented semantics (modes, duplicate order, tie-averaged min/max tangents), the
// embedding-bag pattern with its gradient, the Jaxpr spelling of the params, and the errors.
#include <doctest/doctest.h>

#include <cmath>
#include <limits>

#include "primitives/scatter.hpp"
#include "samples.hpp"
#include "test_util.hpp"

namespace fx = fluxion;
using fx::testing::message_of;
using V = std::vector<double>;

namespace {

const double kNaN = std::numeric_limits<double>::quiet_NaN();

fx::Tensor i32s(std::vector<int32_t> v, const fx::Shape& s) { return fx::from_vector<int32_t>(v, s); }

void check_equal(const fx::Tensor& got, const V& want) {
  const V g = got.to_vector<double>();
  REQUIRE(g.size() == want.size());
  for (size_t i = 0; i < g.size(); ++i) {
    CAPTURE(i);
    if (std::isnan(want[i])) CHECK(std::isnan(g[i]));
    else if (std::isinf(want[i])) CHECK(g[i] == want[i]);
    else CHECK(g[i] == doctest::Approx(want[i]).epsilon(1e-12));
  }
}

fx::Tensor grid(const fx::Shape& s) { return fx::testing::grid_tensor(s, fx::f64, 7); }

}  // namespace

TEST_CASE("take: negative indices count from the end; fill mode fills, clip mode clamps") {
  fx::Tensor x = fx::reshape(fx::arange(12, fx::f64), {4, 3});
  fx::Tensor i = i32s({2, -1, 7}, {3});
  check_equal(fx::take(x, i, 0, fx::GatherScatterMode::fill_or_drop), {6, 7, 8, 9, 10, 11, kNaN, kNaN, kNaN});
  check_equal(fx::take(x, i, 0, fx::GatherScatterMode::clip), {6, 7, 8, 9, 10, 11, 9, 10, 11});
  check_equal(fx::take(x, i, 1, fx::GatherScatterMode::fill_or_drop, -1.0), {2, 2, -1, 5, 5, -1, 8, 8, -1, 11, 11, -1});
  CHECK(fx::take(x, i32s({0, 1, 2, 3}, {2, 2}), 1, fx::GatherScatterMode::clip).shape() ==
        std::vector<int64_t>{4, 2, 2});
}

TEST_CASE("take_along_axis equals a hand-written loop, broadcasting and out-of-range included") {
  fx::Tensor x = grid({3, 5});
  fx::Tensor idx = fx::testing::random_tensor({3, 4}, fx::i32, 11, -5, 7);  // -5..6: negatives and 5, 6 out
  fx::Tensor got = fx::take_along_axis(x, idx, 1);
  const V xv = x.to_vector<double>();
  const std::vector<int64_t> iv = idx.to_vector<int64_t>();
  V want;
  for (int64_t r = 0; r < 3; ++r)
    for (int64_t j = 0; j < 4; ++j) {
      int64_t k = iv[static_cast<size_t>(r * 4 + j)];
      k = k < 0 ? k + 5 : k;
      want.push_back(k >= 0 && k < 5 ? xv[static_cast<size_t>(r * 5 + k)] : kNaN);
    }
  check_equal(got, want);
  // Indices of shape [1, 2] broadcast over x's rows; clip mode.
  fx::Tensor row = fx::take_along_axis(x, i32s({4, 9}, {1, 2}), -1, fx::GatherScatterMode::clip);
  check_equal(row, {xv[4], xv[4], xv[9], xv[9], xv[14], xv[14]});
  // A size-1 dim of x broadcasts against the indices (also against an empty one).
  CHECK(fx::take_along_axis(grid({1, 5}), i32s({0, 1, 2, 3, 4, 0}, {3, 2}), 1).shape() == std::vector<int64_t>{3, 2});
  CHECK(fx::take_along_axis(grid({1, 5}), i32s({}, {0, 2}), 1).shape() == std::vector<int64_t>{0, 2});
  // Along axis 0 of a 3-d tensor.
  fx::Tensor y = grid({2, 3, 2});
  fx::Tensor along0 = fx::take_along_axis(y, i32s({1, 0, 0, 1, 1, 1}, {1, 3, 2}), 0);
  const V yv = y.to_vector<double>();
  check_equal(along0, {yv[6], yv[1], yv[2], yv[9], yv[10], yv[11]});
}

TEST_CASE("put_along_axis: replace keeps the last duplicate, add accumulates, out-of-range is dropped") {
  fx::Tensor x = fx::zeros({2, 4});
  fx::Tensor idx = i32s({1, 1, 9, -1, 0, 2, 2, 2}, {2, 4});
  fx::Tensor vals = fx::from_vector<double>({1, 2, 3, 4, 5, 6, 7, 8}, {2, 4});
  check_equal(fx::put_along_axis(x, idx, vals, 1), {0, 2, 0, 4, 5, 0, 8, 0});
  check_equal(fx::put_along_axis(x, idx, vals, 1, fx::PutMode::add), {0, 3, 0, 4, 5, 0, 21, 0});
  check_equal(fx::put_along_axis(x, idx, vals, 1, fx::PutMode::add, fx::GatherScatterMode::clip),
              {0, 3, 0, 7, 5, 0, 21, 0});
  // A scalar value broadcasts to the indices' shape.
  check_equal(fx::put_along_axis(x, i32s({3, 0}, {2, 1}), fx::scalar(1.0), 1), {0, 0, 0, 1, 1, 0, 0, 0});
}

TEST_CASE("index: several integer arrays broadcast together and index the leading axes") {
  fx::Tensor x = grid({3, 4, 2});
  fx::Tensor i0 = i32s({2, -3}, {2, 1}), i1 = i32s({0, 3, -1}, {3});
  fx::Tensor got = fx::index(x, {i0, i1});
  CHECK(got.shape() == std::vector<int64_t>{2, 3, 2});
  const V xv = x.to_vector<double>();
  V want;
  for (int64_t a : {2, 0})
    for (int64_t b : {0, 3, 3})
      for (int64_t c = 0; c < 2; ++c) want.push_back(xv[static_cast<size_t>((a * 4 + b) * 2 + c)]);
  check_equal(got, want);
  check_equal(fx::index(fx::arange(5, fx::f64), {i32s({4, 5}, {2})}), {4, kNaN});
}

TEST_CASE("segment reductions equal hand-written loops; bad ids are dropped, empty segments hold the identity") {
  fx::Tensor data = grid({6, 2});
  fx::Tensor ids = i32s({0, 2, 0, -1, 2, 4}, {6});
  const V dv = data.to_vector<double>();
  const std::vector<int32_t> iv{0, 2, 0, -1, 2, 4};
  const double inf = std::numeric_limits<double>::infinity();
  V sum(8, 0.0), prod(8, 1.0), mx(8, -inf), mn(8, inf);
  for (size_t r = 0; r < 6; ++r) {
    if (iv[r] < 0 || iv[r] >= 4) continue;
    for (size_t c = 0; c < 2; ++c) {
      const size_t o = static_cast<size_t>(iv[r]) * 2 + c;
      sum[o] += dv[r * 2 + c];
      prod[o] *= dv[r * 2 + c];
      mx[o] = std::max(mx[o], dv[r * 2 + c]);
      mn[o] = std::min(mn[o], dv[r * 2 + c]);
    }
  }
  check_equal(fx::segment_sum(data, ids, 4), sum);
  check_equal(fx::segment_prod(data, ids, 4), prod);
  check_equal(fx::segment_max(data, ids, 4), mx);
  check_equal(fx::segment_min(data, ids, 4), mn);
  CHECK(fx::segment_max(i32s({3, 1}, {2}), i32s({1, 1}, {2}), 2).to_vector<int64_t>() ==
        std::vector<int64_t>{std::numeric_limits<int32_t>::min(), 3});
  CHECK(fx::segment_sum(data, ids, 0).shape() == std::vector<int64_t>{0, 2});
}

TEST_CASE("embedding bag: segment_sum of gathered rows, and its gradient scatters back into the table") {
  fx::Tensor table = grid({6, 3});
  fx::Tensor ids = i32s({4, 1, 4, 0, 5}, {5});
  fx::Tensor bags = i32s({0, 0, 1, 2, 2}, {5});
  fx::Tensor w = fx::testing::random_tensor({3, 3}, fx::f64, 5);
  auto loss = [&](const fx::Tensor& t) { return fx::sum(w * fx::segment_sum(fx::take(t, ids, 0), bags, 3)); };
  const V tv = table.to_vector<double>(), wv = w.to_vector<double>();
  const std::vector<int> iv{4, 1, 4, 0, 5}, bv{0, 0, 1, 2, 2};
  V bag(9, 0.0), grad(18, 0.0);
  for (size_t j = 0; j < 5; ++j)
    for (size_t c = 0; c < 3; ++c) {
      bag[static_cast<size_t>(bv[j]) * 3 + c] += tv[static_cast<size_t>(iv[j]) * 3 + c];
      grad[static_cast<size_t>(iv[j]) * 3 + c] += wv[static_cast<size_t>(bv[j]) * 3 + c];
    }
  check_equal(fx::segment_sum(fx::take(table, ids, 0), bags, 3), bag);
  check_equal(fx::grad(loss)(table), grad);
  check_equal(fx::jit(fx::grad(loss))(table), grad);
  // Per-example tables under vmap equal the loop.
  fx::Tensor tables = fx::stack({table, table * 2.0}, 0);
  fx::Tensor g2 = fx::vmap(fx::grad(loss))(tables);
  check_equal(g2, [&] {
    V both = grad;
    both.insert(both.end(), grad.begin(), grad.end());
    return both;
  }());
}

TEST_CASE("lax scatters: the last duplicate wins, mul multiplies in order, out-of-range windows drop whole") {
  const fx::lax::ScatterDimensionNumbers points{{}, {0}, {0}, {}, {}};
  fx::Tensor x = fx::from_vector<double>({1, 2, 3, 4});
  fx::Tensor i = i32s({1, 3, 1, 4}, {4, 1});
  fx::Tensor u = fx::from_vector<double>({10, 20, 30, 40});
  check_equal(fx::lax::scatter(x, i, u, points), {1, 30, 3, 20});
  check_equal(fx::lax::scatter_add(x, i, u, points), {1, 42, 3, 24});
  check_equal(fx::lax::scatter_mul(x, i, u, points), {1, 600, 3, 80});
  check_equal(fx::lax::scatter_min(x, i, u, points), {1, 2, 3, 4});
  check_equal(fx::lax::scatter_max(x, i, u, points), {1, 30, 3, 20});
  check_equal(fx::lax::scatter(x, i, u, points, fx::GatherScatterMode::clip), {1, 30, 3, 40});
  // A window of 2 starting at 3 of 4 does not fit: dropped whole (clip would start it at 2).
  const fx::lax::ScatterDimensionNumbers windows{{1}, {}, {0}, {}, {}};
  fx::Tensor w2 = fx::from_vector<double>({7, 8}, {1, 2});
  check_equal(fx::lax::scatter(x, i32s({3}, {1, 1}), w2, windows), {1, 2, 3, 4});
  check_equal(fx::lax::scatter(x, i32s({3}, {1, 1}), w2, windows, fx::GatherScatterMode::clip), {1, 2, 7, 8});
  // Gather fills a window that is partly out of range, whole.
  const fx::lax::GatherDimensionNumbers gw{{1}, {}, {0}, {}, {}};
  check_equal(fx::lax::gather(x, i32s({2, 3}, {2, 1}), gw, {2}), {3, 4, kNaN, kNaN});
}

TEST_CASE("scatter gradients: losing duplicates get no cotangent, min/max ties share the tangent") {
  const fx::lax::ScatterDimensionNumbers points{{}, {0}, {0}, {}, {}};
  fx::Tensor x = fx::from_vector<double>({1, 2, 3});
  fx::Tensor i = i32s({1, 1, 2}, {3, 1});
  fx::Tensor u = fx::from_vector<double>({5, 6, 7});
  fx::Tensor w = fx::from_vector<double>({2, 3, 4});
  auto f = [&](const fx::Tensor& xs, const fx::Tensor& us) { return fx::sum(w * fx::lax::scatter(xs, i, us, points)); };
  auto [gx, gu] = fx::grad(f, fx::argnums<0, 1>)(x, u);
  check_equal(gx, {2, 0, 0});
  check_equal(gu, {0, 3, 4});
  // max: operand 5 ties with update 5 at element 1; the other update loses.
  fx::Tensor xm = fx::from_vector<double>({0, 5, 0});
  fx::Tensor um = fx::from_vector<double>({5, 1, 9});
  auto g = [&](const fx::Tensor& xs, const fx::Tensor& us) {
    return fx::sum(w * fx::lax::scatter_max(xs, i, us, points));
  };
  auto [gxm, gum] = fx::grad(g, fx::argnums<0, 1>)(xm, um);
  check_equal(gxm, {2, 1.5, 0});
  check_equal(gum, {1.5, 0, 4});
  // mul with a zero update: d/du of the other duplicate is op * 0, of the zero one op * the other.
  fx::Tensor uz = fx::from_vector<double>({0, 6, 7});
  auto h = [&](const fx::Tensor& us) { return fx::sum(w * fx::lax::scatter_mul(x, i, us, points)); };
  check_equal(fx::grad(h)(uz), {3 * 2 * 6, 0, 4 * 3});
}

TEST_CASE("gather_general prints its dimension numbers in the Jaxpr") {
  const fx::lax::GatherDimensionNumbers rows{{1}, {0}, {0}, {}, {}};
  auto f = [&](const fx::Tensor& x) { return fx::lax::gather(x, i32s({1}, {1, 1}), rows, {1, 2}); };
  const std::string text = fx::testing::jaxpr_text(f, fx::zeros({3, 2}));
  CHECK(text.find("gather_general[offset_dims=(1,) collapsed_slice_dims=(0,) start_index_map=(0,) "
                  "operand_batching_dims=() start_indices_batching_dims=() slice_sizes=(1,2) mode=fill_or_drop "
                  "fill_value=nan]") != std::string::npos);
}

TEST_CASE("scatter helpers: errors say what is wrong and how to fix it") {
  fx::Tensor x = fx::zeros({3, 4});
  CHECK(message_of<fx::ShapeError>([&] {
          fx::take_along_axis(x, i32s({0}, {1}), 1);
        }).find("[take_along_axis] indices i32[1] must have the rank of x f64[3,4] (2)") != std::string::npos);
  CHECK(message_of<fx::ShapeError>([&] {
          fx::take_along_axis(x, i32s({0, 0}, {2, 1}), 1);
        }).find("differ in dim 0 (2 vs 3) off axis 1") != std::string::npos);
  CHECK(message_of<fx::DTypeError>([&] {
          fx::take_along_axis(x, fx::zeros({3, 1}), 1);
        }).find("[take_along_axis] indices must be i32 or i64, got f64[3,1]") != std::string::npos);
  CHECK(message_of<fx::ShapeError>([&] {
          fx::put_along_axis(x, i32s({0, 0}, {1, 2}), fx::scalar(1.0), 0);
        }).find("[put_along_axis] indices i32[1,2] and x f64[3,4] differ in dim 1") != std::string::npos);
  CHECK(message_of<fx::ShapeError>([&] {
          fx::index(x, {i32s({0}, {1}), i32s({0}, {1}), i32s({0}, {1})});
        }).find("[index] got 3 index arrays for f64[3,4]") != std::string::npos);
  CHECK(message_of<fx::ShapeError>([&] {
          fx::index(x, {i32s({0, 1}, {2}), i32s({0, 1, 2}, {3})});
        }).find("[index]") != std::string::npos);
  CHECK(message_of<fx::ShapeError>([&] {
          fx::segment_sum(x, i32s({0, 1}, {2}), 2);
        }).find("[segment_sum] segment_ids i32[2] must be 1-d with one id per row of data f64[3,4] (3)") !=
        std::string::npos);
  CHECK(message_of<fx::ShapeError>([&] {
          fx::segment_sum(x, i32s({0, 1, 2}, {3}), -1);
        }).find("num_segments must be >= 0, got -1") != std::string::npos);
  CHECK(message_of<fx::ShapeError>([&] {
          fx::take(fx::zeros({0, 2}), i32s({0}, {1}), 0, fx::GatherScatterMode::clip);
        }).find("[take] cannot take indices i32[1] from axis 0 of f64[0,2], which is empty") != std::string::npos);
}

TEST_CASE("kernels: CPU and cuda_emulated equal the reference on a large scatter with many duplicates") {
  // Beyond one 256-index block, so the emulation's block order differs from a loop; ids in [-5, 45)
  // of 40 rows: many duplicates and out-of-range rows in both modes.
  namespace sf = fx::primitives::scatter_family;
  fx::Tensor x = fx::testing::grid_tensor({40, 8}, fx::f64, 21);
  fx::Tensor ids = fx::reshape(fx::testing::random_tensor({300}, fx::i32, 22, -5, 45), {300, 1});
  fx::Tensor u = fx::testing::grid_tensor({300, 8}, fx::f64, 23);
  for (fx::GatherScatterMode mode : {fx::GatherScatterMode::clip, fx::GatherScatterMode::fill_or_drop}) {
    const sf::ScatterParams sp({{1}, {0}, {0}, {}, {}}, mode);
    const sf::GatherParams gp({{1}, {0}, {0}, {}, {}}, {1, 8}, mode, -7.0);
    std::vector<std::pair<const fx::Primitive*, std::vector<fx::Tensor>>> runs{{&sf::gather_general_p(), {x, ids}}};
    for (const fx::Primitive* p : {&sf::scatter_p(), &sf::scatter_add_general_p(), &sf::scatter_mul_p(),
                                   &sf::scatter_min_p(), &sf::scatter_max_p()})
      runs.push_back({p, {x, ids, u}});
    for (const auto& [p, in] : runs) {
      CAPTURE(p->name);
      const fx::Params& params = in.size() == 2 ? static_cast<const fx::Params&>(gp) : sp;
      const fx::Tensor ref = fx::eval_primitive(*p, in, params, fx::Backend::reference)[0];
      for (fx::Backend b : {fx::Backend::cpu, fx::Backend::cuda_emulated}) {
        const std::string backend = fx::backend_name(b);
        CAPTURE(backend);
        const fx::Tensor got = fx::eval_primitive(*p, in, params, b)[0];
        // Grid values: sums of a few hundred are exact in any order, so even scatter_add is bitwise.
        CHECK(got.to_vector<double>() == ref.to_vector<double>());
      }
    }
  }
}
