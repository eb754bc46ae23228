// Edge values and misuse at the op layer (issue 36 items 4-6): integers that do not fit their
// dtype are errors naming the op and the value, every reduction and normalisation of an empty
// tensor matches numpy (a result or numpy's error), and errors name the op the user called.
#include <doctest/doctest.h>

#include <cmath>
#include <cstdint>
#include <functional>
#include <limits>
#include <string>
#include <vector>

#include <fluxion/fluxion.hpp>

namespace fx = fluxion;
using doctest::Contains;

namespace {

std::vector<double> vals(const fx::Tensor& t) { return t.to_vector<double>(); }
constexpr double kInf = std::numeric_limits<double>::infinity();
constexpr int64_t kMin64 = std::numeric_limits<int64_t>::min();
constexpr int64_t kMax64 = std::numeric_limits<int64_t>::max();

}  // namespace

// ---- integers that do not fit ----

TEST_CASE("arange: values that do not fit the dtype are a DTypeError naming arange and the value") {
  const int64_t two31 = int64_t(1) << 31;
  CHECK_THROWS_WITH_AS(fx::arange(two31, two31 + 2), Contains("[arange] the value 2147483648 does not fit in i32"),
                       fx::DTypeError);
  CHECK_THROWS_WITH_AS(fx::arange(two31 + 5), Contains("[arange] the value 2147483652 does not fit in i32"),
                       fx::DTypeError);
  CHECK_THROWS_WITH_AS(fx::arange(-two31 - 1, 0), Contains("[arange] the value -2147483649 does not fit in i32"),
                       fx::DTypeError);
  CHECK(fx::arange(two31, two31 + 2, 1, fx::i64).to_vector<int64_t>() == std::vector<int64_t>{two31, two31 + 1});
  CHECK(fx::arange(-two31, -two31 + 1).to_vector<int64_t>() == std::vector<int64_t>{-two31});
  CHECK(fx::arange(two31 - 1, 0, -two31).to_vector<int64_t>() == std::vector<int64_t>{two31 - 1});
  CHECK(fx::arange(2, fx::boolean).to_vector<int64_t>() == std::vector<int64_t>{0, 1});
  CHECK_THROWS_WITH_AS(fx::arange(3, fx::boolean), Contains("[arange] the value 2 does not fit in bool"),
                       fx::DTypeError);
}

TEST_CASE("arange: ranges whose length or end leave int64 give the exact elements or a clear error") {
  CHECK_THROWS_WITH_AS(fx::arange(kMin64, kMax64, 1, fx::i64),
                       Contains("[arange] [-9223372036854775808, 9223372036854775807) with step 1 has more than 2^48"),
                       fx::ShapeError);
  CHECK(fx::arange(0, 5, kMax64).to_vector<int64_t>() == std::vector<int64_t>{0});
  CHECK(fx::arange(5, 0, kMin64).to_vector<int64_t>() == std::vector<int64_t>{5});
  CHECK(fx::arange(kMax64 - 2, kMax64, 1, fx::i64).to_vector<int64_t>() ==
        std::vector<int64_t>{kMax64 - 2, kMax64 - 1});
  CHECK(fx::arange(kMin64, kMin64 + 3, 2, fx::i64).to_vector<int64_t>() == std::vector<int64_t>{kMin64, kMin64 + 2});
  CHECK(fx::arange(0, kMax64, kMax64 / 2, fx::i64).to_vector<int64_t>() ==
        std::vector<int64_t>{0, kMax64 / 2, kMax64 / 2 * 2});
  CHECK(fx::arange(kMax64, kMin64, kMin64, fx::i64).to_vector<int64_t>() == std::vector<int64_t>{kMax64, -1});
}

TEST_CASE("arange: a range of more than 2^48 elements is refused before anything is allocated") {
  CHECK_THROWS_WITH_AS(fx::arange(kMax64, kMin64, -1, fx::i64), Contains("[arange]"), fx::ShapeError);
  CHECK_THROWS_WITH_AS(fx::arange(int64_t(1) << 50), Contains("has more than 2^48 elements"), fx::ShapeError);
}

TEST_CASE("full, full_like and linspace: a value that does not fit the dtype is a DTypeError with the value") {
  CHECK_THROWS_WITH_AS(fx::full({2}, 3e9, fx::i32), Contains("[full] the value 3e+09 does not fit in i32"),
                       fx::DTypeError);
  CHECK_THROWS_WITH_AS(fx::full({2}, int64_t(1) << 40, fx::i32),
                       Contains("[full] the value 1099511627776 does not fit in i32"), fx::DTypeError);
  CHECK_THROWS_WITH_AS(fx::full({1}, std::numeric_limits<uint64_t>::max(), fx::i64),
                       Contains("[full] the value 18446744073709551615 does not fit in i64"), fx::DTypeError);
  CHECK_THROWS_WITH_AS(fx::full({1}, std::nan(""), fx::i64), Contains("[full] the value nan does not fit in i64"),
                       fx::DTypeError);
  CHECK_THROWS_WITH_AS(fx::full({1}, 1e39, fx::f32), Contains("[full] the value 1e+39 does not fit in f32"),
                       fx::DTypeError);
  CHECK_THROWS_WITH_AS(fx::full_like(fx::tensor({1, 2}), 1e10),
                       Contains("[full_like] the value 1e+10 does not fit in i32"), fx::DTypeError);
  CHECK_THROWS_WITH_AS(fx::linspace(0, 3e9, 3, fx::i32), Contains("[linspace] the value 3e+09 does not fit in i32"),
                       fx::DTypeError);
  CHECK_THROWS_WITH_AS(fx::linspace(0, 1e39, 2, fx::f32), Contains("[linspace] the value 1e+39 does not fit in f32"),
                       fx::DTypeError);
  // What fits is exact: integers are not routed through a double.
  CHECK(fx::full({1}, (int64_t(1) << 53) + 1, fx::i64).item<int64_t>() == (int64_t(1) << 53) + 1);
  CHECK(fx::full({1}, kMax64, fx::i64).item<int64_t>() == kMax64);
  CHECK(fx::full({1}, -2147483648.0, fx::i32).item<int64_t>() == -2147483648LL);
  CHECK(fx::full({2}, 2.7, fx::i32).to_vector<int64_t>() == std::vector<int64_t>{2, 2});  // truncated like numpy
  CHECK(fx::full({1}, -kInf, fx::f32).item<double>() == -kInf);
  CHECK(vals(fx::full({2}, 5, fx::boolean)) == std::vector<double>{1, 1});  // the value's truth, like numpy
  CHECK(vals(fx::full({1}, 3, fx::f64)) == std::vector<double>{3});
  CHECK(fx::linspace(-1, 0, 3, fx::i32).to_vector<int64_t>() == std::vector<int64_t>{-1, -1, 0});  // floor
}

TEST_CASE("tensor() keeps the C++ element type and weak scalars never wrap into an integer dtype") {
  fx::Tensor big = fx::tensor({int64_t(2147483648)});
  CHECK(big.dtype() == fx::i64);
  CHECK(big.item<int64_t>() == 2147483648);
  CHECK_THROWS_WITH_AS(fx::tensor({1}) + 3000000000LL, Contains("[add] the integer 3000000000 does not fit in i32"),
                       fx::DTypeError);
  CHECK_THROWS_WITH_AS(fx::tensor({int64_t(1)}) * std::numeric_limits<uint64_t>::max(),
                       Contains("[multiply] the integer 18446744073709551615 does not fit in i64"), fx::DTypeError);
  CHECK(vals(fx::tensor({1.0}) + std::numeric_limits<uint64_t>::max())[0] == doctest::Approx(1.8446744073709552e19));
}

// ---- errors name the op the user called ----

TEST_CASE("creation functions name themselves in their shape errors, never an internal primitive") {
  const int64_t big = int64_t(1) << 40;
  CHECK_THROWS_WITH_AS(fx::zeros({big, big}),
                       Contains("[zeros] shape [1099511627776,1099511627776] has more than 2^48 elements"),
                       fx::ShapeError);
  CHECK_THROWS_WITH_AS(fx::ones({big, big}, fx::f32), Contains("[ones] shape"), fx::ShapeError);
  CHECK_THROWS_WITH_AS(fx::full({big, big}, 2.0), Contains("[full] shape"), fx::ShapeError);
  CHECK_THROWS_WITH_AS(fx::eye(big), Contains("[eye] shape [1099511627776,1099511627776] has more than 2^48"),
                       fx::ShapeError);
  CHECK_THROWS_WITH_AS(fx::eye(-2), Contains("[eye] negative dimension -2"), fx::ShapeError);
  CHECK_THROWS_WITH_AS(fx::zeros({3, -1}), Contains("[zeros] negative dimension -1 in shape [3,-1]"), fx::ShapeError);
  CHECK_THROWS_WITH_AS(fx::linspace(0.0, 1.0, int64_t(1) << 50), Contains("[linspace] shape [1125899906842624]"),
                       fx::ShapeError);
  CHECK_THROWS_WITH_AS(fx::linspace(0.0, 1.0, -1), Contains("[linspace] num must be >= 0"), fx::ShapeError);
  CHECK_THROWS_WITH_AS(fx::arange(0, 5, 0), Contains("[arange] step must not be 0"), fx::Error);
}

TEST_CASE("composite ops name themselves: clip, var, std, any, all, nonzero") {
  fx::Tensor x = fx::ones({2, 3});
  CHECK_THROWS_WITH_AS(fx::clip(x, fx::zeros({4}), fx::ones({3})),
                       Contains("[clip] shapes f64[2,3], f64[4] and f64[3]"), fx::ShapeError);
  CHECK_THROWS_WITH_AS(fx::var(x, {2}), Contains("[var] axis 2 is out of range for rank 2"), fx::AxisError);
  CHECK_THROWS_WITH_AS(fx::std(x, {0, 0}), Contains("[std] axis 0 is repeated"), fx::AxisError);
  CHECK_THROWS_WITH_AS(fx::any(x, {-3}), Contains("[any] axis -3 is out of range"), fx::AxisError);
  CHECK_THROWS_WITH_AS(fx::all(x, {5}), Contains("[all] axis 5"), fx::AxisError);
  CHECK_THROWS_WITH_AS(fx::nonzero(x, -1), Contains("[nonzero] size must be >= 0, got -1"), fx::ShapeError);
  CHECK_THROWS_WITH_AS(fx::nonzero(x, 2, int64_t(1) << 40), Contains("[nonzero] fill_value 1099511627776 does not fit"),
                       fx::DTypeError);
}

// ---- empty tensors ----

namespace {

/// One reduction case: a shape, the reduced axes ({} = all) and keepdims.
struct EmptyCase {
  std::vector<int64_t> shape, axes;
  bool keepdims;
};

std::vector<EmptyCase> empty_cases() {
  std::vector<EmptyCase> cases;
  for (const std::vector<int64_t>& shape : {std::vector<int64_t>{0}, {0, 3}, {3, 0}})
    for (bool keepdims : {false, true}) {
      cases.push_back({shape, {}, keepdims});
      for (int64_t a = 0; a < static_cast<int64_t>(shape.size()); ++a) cases.push_back({shape, {a}, keepdims});
    }
  return cases;
}

/// numpy's result shape and the number of elements each result element reduces.
std::vector<int64_t> out_shape(const EmptyCase& c, int64_t& reduced) {
  std::vector<int64_t> out;
  reduced = 1;
  for (int64_t d = 0; d < static_cast<int64_t>(c.shape.size()); ++d) {
    bool r = c.axes.empty() || c.axes[0] == d;
    if (r) reduced *= c.shape[d];
    if (!r) out.push_back(c.shape[d]);
    else if (c.keepdims) out.push_back(1);
  }
  return out;
}

/// Every element of `t` satisfies `pred` (vacuously true for an empty result).
bool every(const fx::Tensor& t, const std::function<bool(double)>& pred) {
  for (double v : vals(t))
    if (!pred(v)) return false;
  return true;
}

}  // namespace

TEST_CASE("reductions of empty tensors: numpy's identities and shapes, over every axis, with keepdims") {
  for (const EmptyCase& c : empty_cases()) {
    CAPTURE(fx::Shape(c.shape));
    CAPTURE(fx::Shape(c.axes));
    CAPTURE(c.keepdims);
    int64_t reduced = 0;
    std::vector<int64_t> want = out_shape(c, reduced);
    fx::Tensor x = fx::zeros(c.shape);
    auto check = [&](const fx::Tensor& r, const std::function<bool(double)>& pred) {
      CHECK(r.shape() == want);
      CHECK(every(r, pred));
    };
    check(fx::sum(x, c.axes, c.keepdims), [](double v) { return v == 0; });
    check(fx::prod(x, c.axes, c.keepdims), [](double v) { return v == 1; });
    check(fx::any(x, c.axes, c.keepdims), [](double v) { return v == 0; });
    check(fx::all(x, c.axes, c.keepdims), [](double v) { return v == 1; });
    check(fx::norm(x, c.axes, c.keepdims), [](double v) { return v == 0; });
    check(fx::logsumexp(x, c.axes, c.keepdims), [](double v) { return v == -kInf; });
    // Means of nothing are NaN (numpy warns); the results are empty unless nothing is reduced.
    for (const fx::Tensor& r :
         {fx::mean(x, c.axes, c.keepdims), fx::var(x, c.axes, c.keepdims), fx::std(x, c.axes, c.keepdims, 1)})
      check(r, [](double v) { return std::isnan(v); });
    for (auto op : {+[](const fx::Tensor&t, const std::vector<int64_t>&a, bool k) { return fx::max(t, a, k); },
                    +[](const fx::Tensor&t, const std::vector<int64_t>&a, bool k) { return fx::min(t, a, k); }}) {
      if (reduced == 0) CHECK_THROWS_WITH_AS(op(x, c.axes, c.keepdims), Contains("is empty and"), fx::ShapeError);
      else check(op(x, c.axes, c.keepdims), [](double) { return false; });
    }
  }
}

TEST_CASE("max, min, argmax and argmin of an empty axis are errors naming the op, like numpy's") {
  CHECK_THROWS_WITH_AS(fx::max(fx::zeros({0})), Contains("[max] axis 0 of f64[0] is empty and max has no identity"),
                       fx::ShapeError);
  CHECK_THROWS_WITH_AS(fx::min(fx::zeros({0, 3}), {0}), Contains("[min] axis 0 of f64[0,3] is empty"), fx::ShapeError);
  CHECK_THROWS_WITH_AS(fx::argmax(fx::zeros({0})), Contains("[argmax] axis 0 of f64[0] is empty"), fx::ShapeError);
  CHECK_THROWS_WITH_AS(fx::argmin(fx::zeros({3, 0}), 1), Contains("[argmin] axis 1 of f64[3,0] is empty"),
                       fx::ShapeError);
  CHECK(fx::argmax(fx::zeros({3, 0}), 0).shape() == std::vector<int64_t>{0});
  CHECK(fx::argmin(fx::zeros({0, 3}), 1, true).shape() == std::vector<int64_t>{0, 1});
  CHECK(fx::max(fx::zeros({3, 0}), {0}).shape() == std::vector<int64_t>{0});
}

TEST_CASE("softmax, log_softmax and cumsum of empty tensors return empty results along every axis") {
  for (const std::vector<int64_t>& shape : {std::vector<int64_t>{0}, {0, 3}, {3, 0}})
    for (int64_t axis = 0; axis < static_cast<int64_t>(shape.size()); ++axis) {
      CAPTURE(fx::Shape(shape));
      CAPTURE(axis);
      fx::Tensor x = fx::zeros(shape, fx::f32);
      CHECK(fx::softmax(x, axis).shape() == shape);
      CHECK(fx::log_softmax(x, axis).shape() == shape);
      CHECK(fx::softmax(x, axis).dtype() == fx::f32);
      CHECK(fx::cumsum(x, axis).shape() == shape);
    }
}

TEST_CASE("empty tensors under jit, vmap and grad give what eager gives") {
  fx::Tensor e = fx::zeros({0});
  auto lse = [](const fx::Tensor& v) { return fx::logsumexp(v); };
  CHECK(fx::jit(lse)(e).item<double>() == -kInf);
  CHECK(vals(fx::vmap(lse)(fx::zeros({2, 0}))) == std::vector<double>{-kInf, -kInf});
  CHECK(fx::grad(lse)(e).shape() == std::vector<int64_t>{0});
  auto norm_all = [](const fx::Tensor& v) {
    return std::make_tuple(fx::softmax(v), fx::log_softmax(v, 0), fx::sum(v), fx::any(v), fx::all(v), fx::mean(v));
  };
  for (const auto& [sm, lsm, s, an, al, m] : {fx::jit(norm_all)(fx::zeros({0, 3})), norm_all(fx::zeros({0, 3}))}) {
    CHECK(sm.shape() == std::vector<int64_t>{0, 3});
    CHECK(lsm.shape() == std::vector<int64_t>{0, 3});
    CHECK(s.item<double>() == 0);
    CHECK_FALSE(an.item<bool>());
    CHECK(al.item<bool>());
    CHECK(std::isnan(m.item<double>()));
  }
  auto per_row = fx::vmap([](const fx::Tensor& v) { return fx::softmax(v); })(fx::zeros({2, 0}));
  CHECK(per_row.shape() == std::vector<int64_t>{2, 0});
}
