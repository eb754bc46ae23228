// The optimisation passes of fx::jit, second part: the product rules (broadcast operands,
// transposes, sums over free dims), symmetric products (gram), factors and negations moved past
// sums and products, and sibling products; each checked to typecheck and to compute the
// original's values.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <functional>

#include <fluxion/fluxion.hpp>

#include "passes_util.hpp"
#include "samples.hpp"
#include "test_util.hpp"
#include "passes/passes.hpp"

namespace fx = fluxion;
namespace lax = fluxion::lax;
namespace passes = fluxion::passes;

using fluxion::testing::checked;
using fluxion::testing::compare_tensors;
using fluxion::testing::random_tensor;
using fluxion::testing::to_text;
using Vec = std::vector<fx::Tensor>;

// ---------------------------------------------------------------- products (simplify_products.cpp)

namespace {

/// The equations of `j` applying primitive `name`.
std::vector<const fx::Equation*> equations_of(const fx::Jaxpr& j, const std::string& name) {
  std::vector<const fx::Equation*> out;
  for (const fx::Equation& e : j.equations)
    if (e.primitive->name == name) out.push_back(&e);
  return out;
}

/// The number of dot_general equations with an operand made by broadcast_in_dim.
int products_of_broadcasts(const fx::Jaxpr& j) {
  std::vector<int32_t> broadcast;
  for (const fx::Equation* e : equations_of(j, "broadcast_in_dim")) broadcast.push_back(e->outputs[0]);
  int count = 0;
  for (const fx::Equation* e : equations_of(j, "dot_general"))
    for (const fx::Atom& a : e->inputs)
      count += !a.is_literal() && std::find(broadcast.begin(), broadcast.end(), a.var) != broadcast.end() ? 1 : 0;
  return count;
}

/// The most elements any output of a `name` equation of `j` has (0 when there is none).
int64_t largest_value(const fx::Jaxpr& j, const std::string& name) {
  int64_t n = 0;
  for (const fx::Equation* e : equations_of(j, name)) n = std::max(n, j.avals[e->outputs[0]].shape.num_elements());
  return n;
}

/// dot_general(broadcast_in_dim(x, shape, dims), y) or, with `on_rhs`, dot_general(y, broadcast(x));
/// with `reduced`, summed over its last dim.
fx::Jaxpr broadcast_product(const fx::Tensor& x, const fx::Tensor& y, const fx::Shape& shape,
                            const std::vector<int64_t>& dims, const fx::AxisPair& contract, const fx::AxisPair& batch,
                            bool on_rhs, bool reduced) {
  return fx::make_jaxpr([&](const fx::Tensor& a, const fx::Tensor& b) {
    fx::Tensor s = lax::broadcast_in_dim(a, shape, dims);
    fx::Tensor p = on_rhs ? lax::dot_general(b, s, contract, batch) : lax::dot_general(s, b, contract, batch);
    return reduced ? lax::reduce_sum(p, {p.ndim() - 1}) : p;
  })(x, y);
}

}  // namespace

TEST_CASE("products: a broadcast operand's constant dims are skipped by the product") {
  // Each case: x, its broadcast (shape, dims), the other operand y, the pairs (broadcast side
  // first); the broadcast operand is tried as the lhs and, with the pairs mirrored, as the rhs.
  struct Case {
    const char* what;
    fx::Shape x, shape;
    std::vector<int64_t> dims;
    fx::Shape y;
    fx::AxisPair contract, batch;
  };
  const std::vector<Case> cases{
      {"new free dim", {3, 4}, {3, 5, 4}, {0, 2}, {4, 6}, {{2}, {0}}, {{}, {}}},
      {"size-1 free dim expanded", {3, 1, 4}, {3, 5, 4}, {0, 1, 2}, {4, 6}, {{2}, {0}}, {{}, {}}},
      {"batch dim (not in front)", {4, 3}, {4, 5, 3}, {0, 2}, {3, 5, 2}, {{2}, {0}}, {{1}, {1}}},
      {"batch dim of size-1 source", {1, 4, 3}, {5, 4, 3}, {0, 1, 2}, {5, 3, 2}, {{2}, {1}}, {{0}, {0}}},
      {"contracted dim", {3}, {3, 4}, {0}, {4, 6}, {{1}, {0}}, {{}, {}}},
      {"contracted and free dims", {4}, {2, 4, 3}, {1}, {3, 5}, {{2}, {0}}, {{}, {}}},
      {"every dim (rank-0 source)", {}, {3, 4}, {}, {4, 2}, {{1}, {0}}, {{}, {}}},
      {"batch, free and contracted", {2}, {5, 2, 3, 4}, {1}, {4, 5, 3, 6}, {{2}, {2}}, {{0, 3}, {1, 0}}},
      {"size-1 dims kept", {1, 4}, {1, 3, 4}, {0, 2}, {4, 1}, {{2}, {0}}, {{}, {}}},
  };
  for (const Case& c : cases) {
    for (fx::DType dtype : {fx::f32, fx::f64, fx::i32}) {
      for (bool on_rhs : {false, true}) {
        const std::string what = c.what, dtype_name = fx::dtype_name(dtype);
        CAPTURE(what);
        CAPTURE(on_rhs);
        CAPTURE(dtype_name);
        auto side = [&](const fx::AxisPair& p) { return on_rhs ? fx::AxisPair{p.second, p.first} : p; };
        Vec args{random_tensor(c.x, dtype, 70), random_tensor(c.y, dtype, 71)};
        // Reduced, the product is always rewritten: a transpose it needs moves into the sum. Not
        // where a float x would be taken out of a sum over a contracted dim (x Σ y for Σ x y).
        fx::Jaxpr j =
            broadcast_product(args[0], args[1], c.shape, c.dims, side(c.contract), side(c.batch), on_rhs, true);
        fx::Jaxpr out = passes::dce(checked(&passes::simplify, j, args));
        bool sums_out_x = false;  // some contracted dim of the broadcast (of size > 1) is constant
        for (int64_t d : c.contract.first) {
          const auto at = std::find(c.dims.begin(), c.dims.end(), d);
          sums_out_x |= c.shape[d] > 1 && (at == c.dims.end() || c.x[at - c.dims.begin()] == 1);
        }
        if (sums_out_x && dtype != fx::i32) {
          CHECK_MESSAGE(products_of_broadcasts(out) == 1, to_text(out));
          // x a constant +2^k: x Σ y is Σ x y summed in another order.
          fx::Jaxpr exact = fx::make_jaxpr([&](const fx::Tensor& b) {
            fx::Tensor sp = lax::broadcast_in_dim(fx::full(c.x, 2.0, dtype), c.shape, c.dims);
            return on_rhs ? lax::dot_general(b, sp, side(c.contract), side(c.batch))
                          : lax::dot_general(sp, b, side(c.contract), side(c.batch));
          })(args[1]);
          CHECK_MESSAGE(products_of_broadcasts(passes::dce(checked(&passes::simplify, exact, {args[1]}))) == 0,
                        to_text(exact));
          continue;
        }
        CHECK_MESSAGE(products_of_broadcasts(out) == 0, to_text(out));
        for (const fx::Equation* e : equations_of(out, "dot_general"))  // reads x itself
          for (const fx::Atom& a : e->inputs) CHECK_MESSAGE(out.aval_of(a).shape != c.shape, to_text(out));
        // Returned as is, the product is rewritten only where no transpose of it is needed.
        j = broadcast_product(args[0], args[1], c.shape, c.dims, side(c.contract), side(c.batch), on_rhs, false);
        out = passes::dce(checked(&passes::simplify, j, args));
        const int64_t size = j.out_avals()[0].shape.num_elements();
        CHECK_MESSAGE(largest_value(out, "transpose") < size, to_text(out));
      }
    }
  }
  // The batch dim not in front, broadcast on the lhs: one GEMM would need a transpose after it.
  Vec args{random_tensor({4, 3}, fx::f64, 72), random_tensor({3, 5, 2}, fx::f64, 73)};
  fx::Jaxpr j = broadcast_product(args[0], args[1], {4, 5, 3}, {0, 2}, {{2}, {0}}, {{1}, {1}}, false, false);
  CHECK(to_text(passes::dce(checked(&passes::simplify, j, args))) == to_text(j));
}

TEST_CASE("products: a difference of broadcasts is distributed over an integer product when cheaper") {
  // The GMM centring (bench W8): |Q_k (x_i - mu_k)|^2 for K components, n points, d dims. For
  // integers the [K, n, d] centred points are never made: x times every Q_k is one product, mu_k
  // times Q_k a small one, and the transpose the first leaves moves into the reduction, onto
  // [n, K]. Floats keep the difference: the two products would cancel where x_i is near mu_k,
  // leaving their rounding errors (issue 28).
  auto product = [](const fx::Tensor& x, const fx::Tensor& means, const fx::Tensor& q) {
    fx::Tensor xc = fx::expand_dims(x, 0) - fx::expand_dims(means, 1);  // [K, n, d]
    return fx::matmul(xc, fx::transpose(q, {0, 2, 1}));
  };
  auto f = [&](const fx::Tensor& x, const fx::Tensor& means, const fx::Tensor& q) {
    return fx::sum(fx::square(product(x, means, q)), {2});
  };
  const int64_t K = 4, n = 7, d = 3;
  for (fx::DType dtype : {fx::i32, fx::f32, fx::f64}) {
    CAPTURE(dtype);
    Vec args{random_tensor({n, d}, dtype, 80), random_tensor({K, d}, dtype, 81), random_tensor({K, d, d}, dtype, 82)};
    fx::Jaxpr j = fx::make_jaxpr(f)(args[0], args[1], args[2]);
    REQUIRE(largest_value(j, "broadcast_in_dim") == K * n * d);
    fx::Jaxpr out = checked(&passes::optimize, j, args);
    fx::Jaxpr p = checked(&passes::optimize, fx::make_jaxpr(product)(args[0], args[1], args[2]), args);
    if (dtype != fx::i32) {
      REQUIRE_MESSAGE(equations_of(out, "dot_general").size() == 1, to_text(out));
      CHECK(out.aval_of(equations_of(out, "dot_general")[0]->inputs[0]).shape == fx::Shape{K, n, d});
      CHECK_MESSAGE(equations_of(p, "dot_general").size() == 1, to_text(p));
      continue;
    }
    CHECK_MESSAGE(products_of_broadcasts(out) == 0, to_text(out));
    CHECK_MESSAGE(equations_of(out, "dot_general").size() == 2, to_text(out));
    CHECK_MESSAGE(largest_value(out, "transpose") < K * n * d, to_text(out));  // [n, K] and Q's, not [K, n, d]
    // What remains [K, n, d]-sized: the products' results, not the centred points.
    for (const fx::Equation* e : equations_of(out, "dot_general"))
      for (const fx::Atom& a : e->inputs) CHECK(out.aval_of(a).shape.num_elements() < K * n * d);
    // The product itself (whose sign the square hid): a transpose of the large product remains.
    CHECK_MESSAGE(products_of_broadcasts(p) == 0, to_text(p));
  }
}

TEST_CASE("products: an integer sum is not distributed when that would cost more") {
  const int64_t K = 4, n = 7, d = 3;
  Vec args{random_tensor({K, n, d}, fx::i32, 83), random_tensor({K, d}, fx::i32, 84),
           random_tensor({K, d, d}, fx::i32, 85)};
  auto count_products = [&](auto f) {
    fx::Jaxpr j = fx::make_jaxpr(f)(args[0], args[1], args[2]);
    return equations_of(checked(&passes::optimize, j, args), "dot_general").size();
  };
  // x is no broadcast: splitting would compute the full product and a small one.
  CHECK(count_products([](const fx::Tensor& x, const fx::Tensor& m, const fx::Tensor& q) {
          return lax::dot_general(x - fx::expand_dims(m, 1), q, {{2}, {1}}, {{0}, {0}});
        }) == 1);
  // The difference is needed anyway (also an output): nothing would be saved.
  CHECK(count_products([](const fx::Tensor& x, const fx::Tensor& m, const fx::Tensor& q) {
          fx::Tensor x0 = lax::reshape(lax::slice(x, {0, 0, 0}, {1, n, d}), {n, d});
          fx::Tensor xc = fx::expand_dims(x0, 0) - fx::expand_dims(m, 1);
          return std::make_tuple(lax::dot_general(xc, q, {{2}, {1}}, {{0}, {0}}), xc);
        }) == 1);
  // Both terms constant only along the batch dim: two full products for one.
  CHECK(count_products([](const fx::Tensor& x, const fx::Tensor& m, const fx::Tensor& q) {
          fx::Tensor a = lax::broadcast_in_dim(lax::slice(x, {0, 0, 0}, {1, n, d}), {K, n, d}, {0, 1, 2});
          fx::Tensor b = lax::broadcast_in_dim(lax::slice(x, {1, 0, 0}, {2, n, d}), {K, n, d}, {0, 1, 2});
          return lax::dot_general(a + b, q, {{2}, {1}}, {{0}, {0}});
        }) == 1);
}

TEST_CASE("products: a transpose moves past elementwise ops into the reduction after them") {
  fx::Jaxpr j = fx::make_jaxpr([](const fx::Tensor& x, const fx::Tensor& v) {
    fx::Tensor t = lax::transpose(x, {1, 2, 0});                                  // [3, 4, 2]
    fx::Tensor y = lax::mul(t, t) - lax::broadcast_in_dim(v, {3, 4, 2}, {0, 1});  // v: [3, 4]
    return lax::reduce_max(lax::exp(y), {1});                                     // [3, 2]
  })(fx::ones({2, 3, 4}), fx::ones({3, 4}));
  fx::Jaxpr out = passes::dce(
      checked(&passes::simplify, j, {random_tensor({2, 3, 4}, fx::f64, 86), random_tensor({3, 4}, fx::f64, 87)}));
  CHECK(to_text(out) ==
        "{ lambda ; a:f64[2,3,4] b:f64[3,4]. let\n"
        "    c:f64[2,3,4] = mul a a\n"
        "    d:f64[2,3,4] = broadcast_in_dim[shape=(2,3,4) broadcast_dimensions=(1,2)] b\n"
        "    e:f64[2,3,4] = sub c d\n"
        "    f:f64[2,3,4] = exp e\n"
        "    g:f64[2,3] = reduce_max[axes=(2,)] f\n"
        "    h:f64[3,2] = transpose[permutation=(1,0)] g\n"
        "  in (h,) }");
}

TEST_CASE("products: a transpose keeping the free dims' order is absorbed by the products reading it") {
  // GMM's factor: r [k, j, l] transposed to [k, l, j] and read by two products, each of which
  // then reads r in place (as a transposed matrix per batch).
  fx::Jaxpr j = fx::make_jaxpr([](const fx::Tensor& x, const fx::Tensor& m, const fx::Tensor& r) {
    fx::Tensor s = lax::transpose(r, {0, 2, 1});                    // [3, 4, 4]
    fx::Tensor t = lax::dot_general(x, s, {{1}, {1}}, {{}, {}});    // [5, 3, 4]
    fx::Tensor u = lax::dot_general(m, s, {{1}, {1}}, {{0}, {0}});  // [3, 4]
    return t - lax::broadcast_in_dim(u, {5, 3, 4}, {1, 2});
  })(fx::ones({5, 4}), fx::ones({3, 4}), fx::ones({3, 4, 4}));
  fx::Jaxpr out = passes::dce(checked(
      &passes::simplify, j,
      {random_tensor({5, 4}, fx::f64, 90), random_tensor({3, 4}, fx::f64, 91), random_tensor({3, 4, 4}, fx::f64, 92)}));
  CHECK(to_text(out) ==
        "{ lambda ; a:f64[5,4] b:f64[3,4] c:f64[3,4,4]. let\n"
        "    d:f64[5,3,4] = dot_general[contract=((1,),(2,)) batch=((),())] a c\n"
        "    e:f64[3,4] = dot_general[contract=((1,),(2,)) batch=((0,),(0,))] b c\n"
        "    f:f64[5,3,4] = broadcast_in_dim[shape=(5,3,4) broadcast_dimensions=(1,2)] e\n"
        "    g:f64[5,3,4] = sub d f\n"
        "  in (g,) }");
}

TEST_CASE("products: a transpose that reorders free dims, or is shared and would be copied, stays") {
  const Vec args{random_tensor({4, 3}, fx::f64, 93), random_tensor({2, 3, 4}, fx::f64, 94),
                 random_tensor({3, 5}, fx::f64, 95)};
  // Swapping the free dims of y would reorder the output: kept.
  fx::Jaxpr swapped = fx::make_jaxpr([](const fx::Tensor& x, const fx::Tensor& y, const fx::Tensor&) {
    return lax::dot_general(x, lax::transpose(y, {2, 0, 1}), {{1}, {2}}, {{}, {}});  // [4, 4, 2]
  })(args[0], args[1], args[2]);
  CHECK(equations_of(passes::dce(checked(&passes::simplify, swapped, args)), "transpose").size() == 1);
  // t = y [2, 3, 4] -> [2, 4, 3], read twice, contracted over its last dim: in y that dim sits
  // between the free dims, which the product would have to copy; the shared transpose stays.
  fx::Jaxpr shared = fx::make_jaxpr([](const fx::Tensor&, const fx::Tensor& y, const fx::Tensor& z) {
    fx::Tensor t = lax::transpose(y, {0, 2, 1});
    fx::Tensor p = lax::dot_general(t, z, {{2}, {0}}, {{}, {}});  // [2, 4, 5]
    return lax::reduce_sum(p, {2}) + lax::reduce_sum(t, {2});
  })(args[0], args[1], args[2]);
  CHECK(equations_of(passes::dce(checked(&passes::simplify, shared, args)), "transpose").size() == 1);
  // Read once, the same transpose is absorbed: the product copies instead of the transpose.
  fx::Jaxpr single = fx::make_jaxpr([](const fx::Tensor&, const fx::Tensor& y, const fx::Tensor& z) {
    return lax::dot_general(lax::transpose(y, {0, 2, 1}), z, {{2}, {0}}, {{}, {}});
  })(args[0], args[1], args[2]);
  fx::Jaxpr absorbed = passes::dce(checked(&passes::simplify, single, args));
  CHECK(equations_of(absorbed, "transpose").empty());
  CHECK(equations_of(absorbed, "dot_general").size() == 1);
}

TEST_CASE("products: a sum over free dims of an integer product is taken on the operands first") {
  // GMM's gradient: a batched [K, n, d] product summed over its n points. Integers only: in
  // floating point (Σ_n a) b rounds unlike Σ_n (a b), and is inf where an infinite b times a zero
  // of a makes eager's NaN.
  auto f = [](const fx::Tensor& x, const fx::Tensor& r) {
    fx::Tensor p = lax::dot_general(x, r, {{2}, {1}}, {{0}, {0}});  // [3, 5, 4]
    return lax::reduce_sum(p, {1});                                 // [3, 4]
  };
  fx::Jaxpr j = fx::make_jaxpr(f)(fx::ones({3, 5, 2}, fx::i32), fx::ones({3, 2, 4}, fx::i32));
  fx::Jaxpr out = passes::dce(
      checked(&passes::simplify, j, {random_tensor({3, 5, 2}, fx::i32, 96), random_tensor({3, 2, 4}, fx::i32, 97)}));
  CHECK(to_text(out) ==
        "{ lambda ; a:i32[3,5,2] b:i32[3,2,4]. let\n"
        "    c:i32[3,2] = reduce_sum[axes=(1,)] a\n"
        "    d:i32[3,4] = dot_general[contract=((1,),(1,)) batch=((0,),(0,))] c b\n"
        "  in (d,) }");
  fx::Jaxpr floats = fx::make_jaxpr(f)(fx::ones({3, 5, 2}), fx::ones({3, 2, 4}));
  CHECK(to_text(passes::dce(checked(&passes::simplify, floats,
                                    {random_tensor({3, 5, 2}, fx::f64, 96), random_tensor({3, 2, 4}, fx::f64, 97)}))) ==
        to_text(floats));
  // Sums over free dims of both sides and a batch dim; the product read twice is left alone.
  const Vec args{random_tensor({3, 5, 2, 6}, fx::i32, 98), random_tensor({3, 7, 2}, fx::i32, 99)};
  fx::Jaxpr mixed = fx::make_jaxpr([](const fx::Tensor& x, const fx::Tensor& y) {
    fx::Tensor p = lax::dot_general(x, y, {{2}, {2}}, {{0}, {0}});  // [3, 5, 6, 7]
    return lax::reduce_sum(p, {0, 2, 3});                           // [5]
  })(args[0], args[1]);
  fx::Jaxpr m = passes::dce(checked(&passes::simplify, mixed, args));
  REQUIRE(equations_of(m, "dot_general").size() == 1);
  CHECK(m.avals[equations_of(m, "dot_general")[0]->outputs[0]].shape == fx::Shape{3, 5});
  fx::Jaxpr shared = fx::make_jaxpr([](const fx::Tensor& x, const fx::Tensor& y) {
    fx::Tensor p = lax::dot_general(x, y, {{2}, {2}}, {{0}, {0}});
    return lax::reduce_sum(p, {2}) + lax::reduce_sum(p, {3});
  })(fx::ones({3, 5, 2, 6}, fx::i32), fx::ones({3, 6, 2}, fx::i32));
  fx::Jaxpr sh = passes::dce(checked(
      &passes::simplify, shared, {random_tensor({3, 5, 2, 6}, fx::i32, 100), random_tensor({3, 6, 2}, fx::i32, 101)}));
  REQUIRE(equations_of(sh, "dot_general").size() == 1);
  CHECK(sh.avals[equations_of(sh, "dot_general")[0]->outputs[0]].shape == fx::Shape{3, 5, 6, 6});
}

// ---------------------------------------------------------------- symmetric products

namespace {

/// The number of gram equations, and of dot_general equations with a [d, d]-element result.
size_t grams(const fx::Jaxpr& j) { return equations_of(j, "gram").size(); }
size_t square_products(const fx::Jaxpr& j, int64_t d) {
  size_t n = 0;
  for (const fx::Equation* e : equations_of(j, "dot_general"))
    n += j.avals[e->outputs[0]].shape.num_elements() == d * d;
  return n;
}

/// +-2^k for k in {-1, 0, 1}: scales whose products and quotients with grid values are exact in
/// f32 (so any summation order gives the same result).
fx::Tensor power_scales(const fx::Shape& shape, fx::DType dtype, uint64_t seed) {
  std::vector<double> v = random_tensor(shape, fx::f64, seed).to_vector<double>();
  for (double& x : v) x = (x < 0 ? -1 : 1) * std::ldexp(1.0, static_cast<int>(std::floor(std::fabs(x) * 1.5)) - 1);
  return fx::astype(fx::from_vector(v, shape), dtype);
}

fx::Tensor logistic_loss(const fx::Tensor& w, const fx::Tensor& x, const fx::Tensor& y) {
  fx::Tensor m = y * fx::matmul(x, w);
  return fx::mean(fx::log1p(fx::exp(-m))) + 0.005 * fx::sum(w * w);
}

}  // namespace

TEST_CASE("symmetric: the Hessian of a logistic loss is one gram product and no transpose") {
  const int64_t n = 50, d = 40;  // n d^2 = 80000 multiply-adds: above the gram threshold
  for (fx::DType dtype : {fx::f32, fx::f64}) {
    CAPTURE(fx::dtype_name(dtype));
    Vec args{random_tensor({d}, dtype, 90, -0.3, 0.3), random_tensor({n, d}, dtype, 91),
             fx::sign(random_tensor({n}, dtype, 92))};
    fx::Jaxpr j = fx::make_jaxpr([](const fx::Tensor& w, const fx::Tensor& x, const fx::Tensor& y) {
      return fx::hessian([&](const fx::Tensor& v) { return logistic_loss(v, x, y); })(w);
    })(args[0], args[1], args[2]);
    fx::Jaxpr out = checked(&passes::optimize, j, args);
    CHECK_MESSAGE(grams(out) == 1, to_text(out));
    CHECK_MESSAGE(square_products(out, d) == 0, to_text(out));
    CHECK_MESSAGE(largest_value(out, "transpose") < d * d, to_text(out));
    // Nothing n x d-sized is computed but what the gram reads: x itself.
    for (const fx::Equation& e : out.equations)
      if (e.primitive->name != "gram")
        CHECK_MESSAGE(out.avals[e.outputs[0]].shape.num_elements() < n * d, to_text(out));
  }
}

TEST_CASE("symmetric: products of one matrix scaled along the contracted dim become gram") {
  const int64_t n = 48, d = 40;
  using F = std::function<fx::Tensor(const fx::Tensor&, const fx::Tensor&, const fx::Tensor&)>;
  auto row = [](const fx::Tensor& v, const fx::Tensor& like) {  // v [n] spread over rows of [n, d]
    return lax::broadcast_in_dim(v, like.shape(), {0});
  };
  const std::vector<std::pair<const char*, F>> rewritten{
      {"x^T x",
       [](const fx::Tensor& x, const fx::Tensor&, const fx::Tensor&) {
         return lax::dot_general(x, x, {{0}, {0}}, {});
       }},
      {"x^T diag(s) x",
       [&](const fx::Tensor& x, const fx::Tensor& s, const fx::Tensor&) {
         return lax::dot_general(lax::mul(x, row(s, x)), x, {{0}, {0}}, {});
       }},
      {"(x s)^T (x t), scales on both sides",
       [&](const fx::Tensor& x, const fx::Tensor& s, const fx::Tensor& t) {
         return lax::dot_general(lax::mul(row(s, x), x), lax::mul(x, row(t, x)), {{0}, {0}}, {});
       }},
      {"transpose(x) as a matrix",
       [&](const fx::Tensor& x, const fx::Tensor& s, const fx::Tensor&) {
         return lax::dot_general(lax::transpose(x, {1, 0}), lax::div(x, row(s, x)), {{1}, {0}}, {});
       }},
      {"x stored [d, n], contracted along dim 1",
       [](const fx::Tensor& x, const fx::Tensor& s, const fx::Tensor&) {
         fx::Tensor xt = lax::transpose(x, {1, 0});
         return lax::dot_general(xt, lax::mul(xt, lax::broadcast_in_dim(s, {d, n}, {1})), {{1}, {1}}, {});
       }},
      {"sum and difference of scaled terms, negated, times a scalar",
       [&](const fx::Tensor& x, const fx::Tensor& s, const fx::Tensor& t) {
         fx::Tensor a = lax::add(lax::mul(x, row(s, x)), lax::neg(lax::mul(row(t, x), x)));
         fx::Tensor b = lax::sub(lax::mul(a, fx::full({}, 0.5, x.dtype())), lax::mul(x, row(t, x)));
         return lax::dot_general(x, b, {{0}, {0}}, {});
       }},
      {"size-1 dims added by broadcast and reshape",
       [&](const fx::Tensor& x, const fx::Tensor& s, const fx::Tensor&) {
         fx::Tensor l = lax::broadcast_in_dim(lax::transpose(x, {1, 0}), {d, 1, n}, {0, 2});
         fx::Tensor sc = lax::broadcast_in_dim(lax::reshape(s, {1, n}), {d, 1, n}, {1, 2});
         return lax::reshape(lax::dot_general(lax::mul(l, sc), x, {{2}, {0}}, {}), {d, d});
       }},
  };
  const std::vector<std::pair<const char*, F>> kept{
      {"x^T y",
       [](const fx::Tensor& x, const fx::Tensor&, const fx::Tensor&) {
         return lax::dot_general(x, lax::exp(x), {{0}, {0}}, {});
       }},
      {"scale along the free dim",
       [](const fx::Tensor& x, const fx::Tensor& s, const fx::Tensor&) {
         fx::Tensor v = lax::slice(lax::concatenate({s, s}, 0), {0}, {d});  // [d]
         return lax::dot_general(lax::mul(x, lax::broadcast_in_dim(v, {n, d}, {1})), x, {{0}, {0}}, {});
       }},
      {"x times x elementwise",
       [](const fx::Tensor& x, const fx::Tensor&, const fx::Tensor&) {
         return lax::dot_general(lax::mul(x, x), x, {{0}, {0}}, {});
       }},
      {"x x^T contracted along d is [n, n]: kept only when below the size threshold",
       [](const fx::Tensor& x, const fx::Tensor&, const fx::Tensor&) {
         fx::Tensor small = lax::slice(x, {0, 0}, {8, 8});
         return lax::dot_general(small, small, {{1}, {1}}, {});
       }},
      {"batched",
       [](const fx::Tensor& x, const fx::Tensor&, const fx::Tensor&) {
         fx::Tensor b = lax::reshape(x, {2, n / 2, d});
         return lax::dot_general(b, b, {{1}, {1}}, {{0}, {0}});
       }},
  };
  for (fx::DType dtype : {fx::f32, fx::f64}) {
    Vec args{fluxion::testing::grid_tensor({n, d}, dtype, 93), power_scales({n}, dtype, 94),
             power_scales({n}, dtype, 95)};
    for (const auto& [what, f] : rewritten) {
      CAPTURE(std::string(what));
      CAPTURE(fx::dtype_name(dtype));
      fx::Jaxpr out = checked(&passes::optimize, fx::make_jaxpr(f)(args[0], args[1], args[2]), args);
      CHECK_MESSAGE(grams(out) == 1, to_text(out));
      CHECK_MESSAGE(equations_of(out, "dot_general").empty(), to_text(out));
    }
    for (const auto& [what, f] : kept) {
      CAPTURE(std::string(what));
      CAPTURE(fx::dtype_name(dtype));
      fx::Jaxpr out = checked(&passes::optimize, fx::make_jaxpr(f)(args[0], args[1], args[2]), args);
      CHECK_MESSAGE(grams(out) == 0, to_text(out));
    }
  }
}

TEST_CASE("symmetric: a transpose swapping dims of a symmetric value is dropped, others stay") {
  const int64_t n = 48, d = 40;
  Vec args{random_tensor({n, d}, fx::f64, 96), random_tensor({d, d}, fx::f64, 97)};
  auto gram_plus = [&](bool symmetric_addend) {
    return fx::make_jaxpr([&](const fx::Tensor& x, const fx::Tensor& a) {
      fx::Tensor g = lax::reshape(lax::dot_general(x, x, {{0}, {0}}, {}), {d, 1, d});
      fx::Tensor other = symmetric_addend ? lax::broadcast_in_dim(fx::eye(d, fx::f64), {d, 1, d}, {0, 2})
                                          : lax::broadcast_in_dim(a, {d, 1, d}, {0, 2});
      fx::Tensor h = lax::reshape(lax::add(lax::mul(other, fx::full({}, 3.0)), g), {d, d});
      return lax::transpose(h, {1, 0});
    })(args[0], args[1]);
  };
  fx::Jaxpr sym = checked(&passes::optimize, gram_plus(true), args);
  CHECK_MESSAGE(equations_of(sym, "transpose").empty(), to_text(sym));
  fx::Jaxpr general = checked(&passes::optimize, gram_plus(false), args);
  CHECK_MESSAGE(equations_of(general, "transpose").size() == 1, to_text(general));
}

TEST_CASE("simplify: +2^k and integer factors move past a sum of the value they scale; others stay") {
  Vec args{random_tensor({4, 50, 3}, fx::f64, 98), random_tensor({}, fx::f64, 99)};
  fx::Jaxpr j = fx::make_jaxpr([](const fx::Tensor& x, const fx::Tensor&) {
    return lax::reduce_sum(lax::mul(fx::scalar(4.0), lax::exp(x)), {0, 2});
  })(args[0], args[1]);
  fx::Jaxpr out = passes::dce(checked(&passes::simplify, j, args));
  CHECK(to_text(out) ==
        "{ lambda ; a:f64[4,50,3] b:f64[]. let\n"
        "    c:f64[4,50,3] = exp a\n"
        "    d:f64[50] = reduce_sum[axes=(0,2)] c\n"
        "    e:f64[50] = mul d 4.0:f64[]\n"
        "  in (e,) }");
  const Vec ints{random_tensor({4, 50, 3}, fx::i32, 98), random_tensor({}, fx::i32, 99)};
  fx::Jaxpr i = fx::make_jaxpr(
      [](const fx::Tensor& x, const fx::Tensor& c) { return lax::reduce_sum(lax::mul(x, c), {1}); })(ints[0], ints[1]);
  CHECK(to_text(passes::dce(checked(&passes::simplify, i, ints))) ==
        "{ lambda ; a:i32[4,50,3] b:i32[]. let\n"
        "    c:i32[4,3] = reduce_sum[axes=(1,)] a\n"
        "    d:i32[4,3] = mul c b\n"
        "  in (d,) }");
  // A negation (a sum cancelling to +0 would be -0), a runtime factor (inf with a zero in x:
  // NaN, not inf), other constants (they round differently), and a scaled value also read
  // elsewhere stay as they are.
  fx::Jaxpr kept = fx::make_jaxpr([](const fx::Tensor& x, const fx::Tensor& c) {
    fx::Tensor n = lax::neg(x), m = lax::mul(x, fx::scalar(4.0));
    return std::make_tuple(lax::reduce_sum(n, {1}), lax::reduce_sum(lax::mul(c, x), {0}),
                           lax::reduce_sum(lax::mul(x, fx::scalar(0.1)), {2}),
                           lax::reduce_sum(lax::mul(x, fx::scalar(-2.0)), {2}), lax::reduce_sum(m, {1}), m);
  })(args[0], args[1]);
  CHECK(to_text(passes::dce(checked(&passes::simplify, kept, args))) == to_text(kept));
}

TEST_CASE("simplify: a negation is absorbed by the add or sub reading it, and moves past a product into one") {
  Vec args{random_tensor({6}, fx::f64, 71), random_tensor({6}, fx::f64, 72), random_tensor({6}, fx::f64, 73)};
  // W1's gradient shape: i + x*neg(d) + x*neg(d), then a - neg(b) and neg(a) + b.
  fx::Jaxpr j = fx::make_jaxpr([](const fx::Tensor& x, const fx::Tensor& d, const fx::Tensor& i) {
    fx::Tensor k = lax::mul(x, lax::neg(d));
    fx::Tensor m = lax::add(lax::add(i, k), k);
    return std::make_tuple(m, lax::sub(x, lax::neg(d)), lax::add(lax::neg(i), d));
  })(args[0], args[1], args[2]);
  fx::Jaxpr out = passes::dce(checked(&passes::simplify, j, args));
  CHECK(to_text(out) ==
        "{ lambda ; a:f64[6] b:f64[6] c:f64[6]. let\n"
        "    d:f64[6] = mul a b\n"
        "    e:f64[6] = sub c d\n"
        "    f:f64[6] = sub e d\n"
        "    g:f64[6] = sub b c\n"
        "    h:f64[6] = add a b\n"
        "  in (f, h, g) }");
  // A negation read twice by products stays where it is (moving it would add an operation).
  fx::Jaxpr kept = fx::make_jaxpr([](const fx::Tensor& x, const fx::Tensor& d, const fx::Tensor&) {
    fx::Tensor n = lax::neg(d);
    return std::make_tuple(lax::mul(x, n), lax::mul(d, n));
  })(args[0], args[1], args[2]);
  CHECK(to_text(passes::dce(checked(&passes::simplify, kept, args))) == to_text(kept));
}

TEST_CASE("simplify: a + a is a * 2, scalar factors fold where exact, size-1 broadcasts are reshapes") {
  Vec args{random_tensor({3, 4}, fx::f64, 61), random_tensor({4}, fx::f64, 62)};
  // The Hessian of an L2 penalty: its identity scaled by the weight, then doubled (not folded:
  // x * 0.005 may round as a subnormal before the doubling). (x * 4) * 3 is x * 12 for every x:
  // x * 4 is exact unless it overflows, and then x * 12 overflows too.
  fx::Jaxpr j = fx::make_jaxpr([](const fx::Tensor& x, const fx::Tensor& v) {
    fx::Tensor n = lax::broadcast_in_dim(x, {3, 1, 4}, {0, 2}) * 0.005;
    fx::Tensor twice = lax::add(n, n);
    fx::Tensor row = lax::broadcast_in_dim(lax::broadcast_in_dim(v, {1, 4}, {1}), {3, 1, 4}, {1, 2});
    return std::make_tuple(twice, v * 4.0 * -3.0, row);
  })(args[0], args[1]);
  CHECK(to_text(passes::dce(checked(&passes::simplify, j, args))) ==
        "{ lambda ; a:f64[3,4] b:f64[4]. let\n"
        "    c:f64[3,1,4] = reshape[new_sizes=(3,1,4)] a\n"
        "    d:f64[3,1,4] = mul c 0.005:f64[]\n"
        "    e:f64[3,1,4] = mul d 2.0:f64[]\n"
        "    f:f64[3,1,4] = broadcast_in_dim[shape=(3,1,4) broadcast_dimensions=(2,)] b\n"
        "    g:f64[4] = mul b -12.0:f64[]\n"
        "  in (e, g, f) }");
  // Kept: factors neither of which is a power of two (they round differently folded); (x*2)*0.5
  // (x*2 overflows for x near the largest value, x does not); (x*0.25)*3 and (x*3)*2 (a subnormal
  // x*0.25 or x*3 is rounded before the second factor); a scaled value read elsewhere.
  fx::Jaxpr kept = fx::make_jaxpr([](const fx::Tensor& x, const fx::Tensor& v) {
    fx::Tensor n = v * 2.0;
    return std::make_tuple(v * 0.1 * 3.0, v * 2.0 * 0.5, v * 0.25 * 3.0, v * 3.0 * 2.0, n * 4.0, n, x);
  })(args[0], args[1]);
  CHECK(to_text(passes::dce(checked(&passes::simplify, kept, args))) == to_text(kept));
}

TEST_CASE("siblings: matrix-vector products of one large matrix are one product of the stacked vectors") {
  // 300 x 300 = 90000 elements: above kMinSharedElements. The matrix as lhs (X a, X b) and as rhs
  // (a X, b X): each pair becomes a stack, one product and a slice per vector; values equal.
  Vec args{random_tensor({300, 300}, fx::f64, 71), random_tensor({300}, fx::f64, 72),
           random_tensor({300}, fx::f64, 73)};
  fx::Jaxpr j = fx::make_jaxpr([](const fx::Tensor& x, const fx::Tensor& a, const fx::Tensor& b) {
    return std::make_tuple(fx::matmul(x, a), fx::matmul(x, b) * 2.0, fx::matmul(a, x), fx::matmul(b, x));
  })(args[0], args[1], args[2]);
  // (make_tuple's arguments are staged last to first here: b X first.)
  CHECK(to_text(passes::dce(passes::cse(checked(&passes::simplify, j, args)))) ==
        "{ lambda ; a:f64[300,300] b:f64[300] c:f64[300]. let\n"
        "    d:f64[300,1] = expand_dims[dimensions=(1,)] c\n"
        "    e:f64[300,1] = expand_dims[dimensions=(1,)] b\n"
        "    f:f64[300,2] = concatenate[dimension=1] d e\n"
        "    g:f64[2,300] = dot_general[contract=((0,),(0,)) batch=((),())] f a\n"
        "    h:f64[1,300] = slice[start_indices=(0,0) limit_indices=(1,300) strides=(1,1)] g\n"
        "    i:f64[300] = squeeze[dimensions=(0,)] h\n"
        "    j:f64[1,300] = slice[start_indices=(1,0) limit_indices=(2,300) strides=(1,1)] g\n"
        "    k:f64[300] = squeeze[dimensions=(0,)] j\n"
        "    l:f64[300,2] = dot_general[contract=((1,),(0,)) batch=((),())] a f\n"
        "    m:f64[300,1] = slice[start_indices=(0,0) limit_indices=(300,1) strides=(1,1)] l\n"
        "    n:f64[300] = squeeze[dimensions=(1,)] m\n"
        "    o:f64[300,1] = slice[start_indices=(0,1) limit_indices=(300,2) strides=(1,1)] l\n"
        "    p:f64[300] = squeeze[dimensions=(1,)] o\n"
        "    q:f64[300] = mul n 2.0:f64[]\n"
        "  in (p, q, k, i) }");
  // A small matrix, vectors of different lengths, or products with other params stay.
  Vec small{random_tensor({100, 100}, fx::f64, 74), random_tensor({100}, fx::f64, 75),
            random_tensor({100}, fx::f64, 76)};
  fx::Jaxpr kept = fx::make_jaxpr([](const fx::Tensor& x, const fx::Tensor& a, const fx::Tensor& b) {
    return std::make_tuple(fx::matmul(x, a), fx::matmul(x, b));
  })(small[0], small[1], small[2]);
  CHECK(to_text(passes::dce(checked(&passes::simplify, kept, small))) == to_text(kept));
  Vec mixed{random_tensor({300, 300}, fx::f64, 77), random_tensor({300}, fx::f64, 78),
            random_tensor({300}, fx::f64, 79)};
  fx::Jaxpr other = fx::make_jaxpr([](const fx::Tensor& x, const fx::Tensor& a, const fx::Tensor& b) {
    return std::make_tuple(fx::matmul(x, a), fx::matmul(b, x), fx::matmul(x, fx::matmul(x, b)));
  })(mixed[0], mixed[1], mixed[2]);
  // X a, b X, X (X b): X b pairs with X a, X (X b) cannot (its vector is X b itself); the
  // equations stay correct and no product more is made.
  const fx::Jaxpr merged = passes::dce(checked(&passes::simplify, other, mixed));
  CHECK_MESSAGE(equations_of(merged, "dot_general").size() <= equations_of(other, "dot_general").size(),
                to_text(merged));
}

TEST_CASE("siblings: three and four products of one matrix are one product each, under jit too") {
  // X a, X b, X c (the matrix as lhs) and a X, b X, c X, d X (as rhs): one dot_general per
  // group, every output its column of the stacked product; jit computes eager's values.
  Vec args{random_tensor({300, 300}, fx::f64, 81), random_tensor({300}, fx::f64, 82), random_tensor({300}, fx::f64, 83),
           random_tensor({300}, fx::f64, 84), random_tensor({300}, fx::f64, 85)};
  auto f = [](const fx::Tensor& x, const fx::Tensor& a, const fx::Tensor& b, const fx::Tensor& c, const fx::Tensor& d) {
    return std::make_tuple(fx::matmul(x, a), fx::matmul(x, b) * 2.0, fx::matmul(x, c), fx::matmul(a, x),
                           fx::matmul(b, x), fx::matmul(c, x) - 1.0, fx::matmul(d, x));
  };
  const fx::Jaxpr j = fx::make_jaxpr(f)(args[0], args[1], args[2], args[3], args[4]);
  REQUIRE(equations_of(j, "dot_general").size() == 7);
  const fx::Jaxpr simplified = passes::dce(passes::cse(checked(&passes::simplify, j, args)));
  CHECK_MESSAGE(equations_of(simplified, "dot_general").size() == 2, to_text(simplified));
  const fx::Jaxpr optimized = passes::optimize(j);
  CHECK_MESSAGE(equations_of(optimized, "dot_general").size() == 2, to_text(optimized));
  std::vector<int64_t> widths;  // the stacked operands: 3 and 4 columns
  for (const fx::Equation* e : equations_of(optimized, "dot_general"))
    for (const fx::Atom& in : e->inputs)
      if (optimized.aval_of(in).shape != fx::Shape{300, 300}) widths.push_back(optimized.aval_of(in).shape.dims()[1]);
  std::sort(widths.begin(), widths.end());
  CHECK(widths == std::vector<int64_t>{3, 4});
  const auto eager = f(args[0], args[1], args[2], args[3], args[4]);
  const auto jitted = fx::jit(f)(args[0], args[1], args[2], args[3], args[4]);
  CHECK(compare_tensors(std::get<0>(jitted), std::get<0>(eager)) == "");
  CHECK(compare_tensors(std::get<1>(jitted), std::get<1>(eager)) == "");
  CHECK(compare_tensors(std::get<2>(jitted), std::get<2>(eager)) == "");
  CHECK(compare_tensors(std::get<3>(jitted), std::get<3>(eager)) == "");
  CHECK(compare_tensors(std::get<4>(jitted), std::get<4>(eager)) == "");
  CHECK(compare_tensors(std::get<5>(jitted), std::get<5>(eager)) == "");
  CHECK(compare_tensors(std::get<6>(jitted), std::get<6>(eager)) == "");
}
