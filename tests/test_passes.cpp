// The optimisation passes of fx::jit: golden Jaxprs before/after dce, cse, simplify and optimize,
// each checked to typecheck and to compute the original's values.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <functional>

#include <fluxion/fluxion.hpp>

#include "samples.hpp"
#include "test_util.hpp"
#include "transforms/passes.hpp"

namespace fx = fluxion;
namespace lax = fluxion::lax;
namespace passes = fluxion::passes;

using fluxion::testing::compare_tensors;
using fluxion::testing::random_tensor;
using fluxion::testing::to_text;
using Vec = std::vector<fx::Tensor>;

namespace {

/// `pass(original)`, after checking it typechecks and computes the original's values on `args`.
fx::Jaxpr checked(fx::Jaxpr (*pass)(const fx::Jaxpr&), const fx::Jaxpr& original, const Vec& args) {
  fx::typecheck(original);
  fx::Jaxpr out = pass(original);
  fx::typecheck(out);
  Vec want = fx::eval_jaxpr(original, args), got = fx::eval_jaxpr(out, args);
  REQUIRE(got.size() == want.size());
  for (size_t i = 0; i < got.size(); ++i) CHECK_MESSAGE(compare_tensors(got[i], want[i]) == "", "output " << i);
  return out;
}

/// The number of dot_general equations with an operand of shape [m, m] other than an input (the
/// identity of the standard basis, or a diagonal made from it).
int basis_products(const fx::Jaxpr& j, int64_t m) {
  int count = 0;
  for (const fx::Equation& e : j.equations) {
    if (e.primitive->name != "dot_general") continue;
    for (const fx::Atom& a : e.inputs)
      if (j.aval_of(a).shape == fx::Shape{m, m} &&
          (a.is_literal() || std::find(j.invars.begin(), j.invars.end(), a.var) == j.invars.end()))
        ++count;
  }
  return count;
}

/// The number of equations computing an [m, m] value.
int square_values(const fx::Jaxpr& j, int64_t m) {
  int count = 0;
  for (const fx::Equation& e : j.equations)
    for (int32_t v : e.outputs) count += j.avals[v].shape == fx::Shape{m, m} ? 1 : 0;
  return count;
}

fx::Tensor dense_layer(const fx::Tensor& w, const fx::Tensor& b, const fx::Tensor& x) {
  return fx::tanh(fx::matmul(w, x) + b);
}

fx::Jaxpr jacrev_jaxpr(const Vec& args) {
  return fx::make_jaxpr([](const fx::Tensor& w, const fx::Tensor& b, const fx::Tensor& x) {
    return fx::jacrev([&](const fx::Tensor& v) { return dense_layer(w, b, v); })(x);
  })(args[0], args[1], args[2]);
}

fx::Jaxpr jacfwd_jaxpr(const Vec& args) {
  return fx::make_jaxpr([](const fx::Tensor& w, const fx::Tensor& b, const fx::Tensor& x) {
    return fx::jacfwd([&](const fx::Tensor& v) { return dense_layer(w, b, v); })(x);
  })(args[0], args[1], args[2]);
}

Vec layer_args(int64_t m, int64_t n, uint64_t seed) {
  return {random_tensor({m, n}, fx::f32, seed), random_tensor({m}, fx::f32, seed + 1),
          random_tensor({n}, fx::f32, seed + 2)};
}

}  // namespace

// ---------------------------------------------------------------- dce

TEST_CASE("dce: drops an unused sin and its constant") {
  fx::Tensor k = fx::tensor({1.0, 2.0, 3.0});
  fx::Jaxpr j = fx::make_jaxpr([&](const fx::Tensor& x) {
    fx::Tensor unused = fx::sin(x * k);
    (void)unused;
    return x * 2.0;
  })(fx::ones({3}));
  CHECK(to_text(j) ==
        "{ lambda a:f64[3] ; b:f64[3]. let\n"
        "    c:f64[3] = mul b a\n"
        "    d:f64[3] = sin c\n"
        "    e:f64[3] = mul b 2.0:f64[]\n"
        "  in (e,) }");
  CHECK(to_text(checked(&passes::dce, j, {random_tensor({3}, fx::f64, 1)})) ==
        "{ lambda ; a:f64[3]. let\n"
        "    b:f64[3] = mul a 2.0:f64[]\n"
        "  in (b,) }");
}

TEST_CASE("dce: keeps inputs and outputs as they are, even unused or repeated") {
  fx::Jaxpr j = fx::make_jaxpr([](const fx::Tensor& x, const fx::Tensor&) {
    fx::Tensor dead = fx::exp(x);
    (void)dead;
    return std::make_tuple(x, x, fx::scalar(2.0));
  })(fx::ones({2}), fx::ones({3}));
  CHECK(to_text(checked(&passes::dce, j, {random_tensor({2}, fx::f64, 1), random_tensor({3}, fx::f64, 2)})) ==
        "{ lambda ; a:f64[2] b:f64[3]. let\n"
        "  in (a, a, 2.0:f64[]) }");
}

// ---------------------------------------------------------------- cse

TEST_CASE("cse: a repeated expression and a commuted add are computed once") {
  fx::Jaxpr j = fx::make_jaxpr([](const fx::Tensor& x, const fx::Tensor& y) {
    fx::Tensor a = fx::sin(x) + y;
    fx::Tensor b = y + fx::sin(x);
    fx::Tensor c = fx::sin(x) - y;  // sub is not commutative: y - sin(x) would differ
    return a * b + c;
  })(fx::ones({3}), fx::ones({3}));
  CHECK(to_text(j) ==
        "{ lambda ; a:f64[3] b:f64[3]. let\n"
        "    c:f64[3] = sin a\n"
        "    d:f64[3] = add c b\n"
        "    e:f64[3] = sin a\n"
        "    f:f64[3] = add b e\n"
        "    g:f64[3] = sin a\n"
        "    h:f64[3] = sub g b\n"
        "    i:f64[3] = mul d f\n"
        "    j:f64[3] = add i h\n"
        "  in (j,) }");
  CHECK(to_text(checked(&passes::cse, j, {random_tensor({3}, fx::f64, 1), random_tensor({3}, fx::f64, 2)})) ==
        "{ lambda ; a:f64[3] b:f64[3]. let\n"
        "    c:f64[3] = sin a\n"
        "    d:f64[3] = add c b\n"
        "    e:f64[3] = sub c b\n"
        "    f:f64[3] = mul d d\n"
        "    g:f64[3] = add f e\n"
        "  in (g,) }");
}

TEST_CASE("cse: literals compare by dtype and value, params must be equal") {
  fx::Jaxpr j = fx::make_jaxpr([](const fx::Tensor& x) {
    fx::Tensor a = x * 2.0, b = x * 2.0, c = x * 3.0;
    fx::Tensor s0 = fx::sum(x, {0}), s1 = fx::sum(x, {1}), s2 = fx::sum(x, {0});
    return std::make_tuple(a + b + c, s0 + s2, s1);
  })(fx::ones({2, 2}));
  CHECK(to_text(checked(&passes::cse, j, {random_tensor({2, 2}, fx::f64, 3)})) ==
        "{ lambda ; a:f64[2,2]. let\n"
        "    b:f64[2,2] = mul a 2.0:f64[]\n"
        "    c:f64[2,2] = mul a 3.0:f64[]\n"
        "    d:f64[2] = reduce_sum[axes=(0,)] a\n"
        "    e:f64[2] = reduce_sum[axes=(1,)] a\n"
        "    f:f64[2] = add d d\n"
        "    g:f64[2,2] = add b b\n"
        "    h:f64[2,2] = add g c\n"
        "  in (h, f, e) }");
}

TEST_CASE("cse: constants with equal values merge") {
  fx::Tensor k1 = fx::tensor({1.0, 2.0}), k2 = fx::tensor({1.0, 2.0}), k3 = fx::tensor({1.0, 5.0});
  fx::Jaxpr j = fx::make_jaxpr([&](const fx::Tensor& x) { return std::make_tuple(x * k1, x * k2, x * k3); })(fx::ones({2}));
  CHECK(to_text(j) ==
        "{ lambda a:f64[2] b:f64[2] c:f64[2] ; d:f64[2]. let\n"
        "    e:f64[2] = mul d a\n"
        "    f:f64[2] = mul d b\n"
        "    g:f64[2] = mul d c\n"
        "  in (g, f, e) }");
  CHECK(to_text(checked(&passes::cse, j, {random_tensor({2}, fx::f64, 4)})) ==
        "{ lambda a:f64[2] b:f64[2] ; c:f64[2]. let\n"
        "    d:f64[2] = mul c a\n"
        "    e:f64[2] = mul c b\n"
        "  in (e, e, d) }");
}

// ---------------------------------------------------------------- simplify

TEST_CASE("simplify: multiplying by one, adding -0, subtracting +0, double negation disappear; x*-1 is neg") {
  fx::Jaxpr j = fx::make_jaxpr([](const fx::Tensor& x) {
    fx::Tensor a = lax::mul(lax::add(x, fx::scalar(-0.0)), fx::scalar(1.0));
    fx::Tensor b = lax::div(lax::sub(lax::mul(fx::scalar(1.0), a), fx::scalar(0.0)), fx::scalar(1.0));
    fx::Tensor c = lax::neg(lax::neg(lax::add(fx::scalar(-0.0), b)));
    return lax::mul(c, fx::scalar(-1.0));
  })(fx::ones({3}));
  CHECK(to_text(j) ==
        "{ lambda ; a:f64[3]. let\n"
        "    b:f64[3] = add a -0.0:f64[]\n"
        "    c:f64[3] = mul b 1.0:f64[]\n"
        "    d:f64[3] = mul 1.0:f64[] c\n"
        "    e:f64[3] = sub d 0.0:f64[]\n"
        "    f:f64[3] = div e 1.0:f64[]\n"
        "    g:f64[3] = add -0.0:f64[] f\n"
        "    h:f64[3] = neg g\n"
        "    i:f64[3] = neg h\n"
        "    j:f64[3] = mul i -1.0:f64[]\n"
        "  in (j,) }");
  CHECK(to_text(passes::dce(checked(&passes::simplify, j, {random_tensor({3}, fx::f64, 5)}))) ==
        "{ lambda ; a:f64[3]. let\n"
        "    b:f64[3] = neg a\n"
        "  in (b,) }");
}

TEST_CASE("simplify: adding +0 or subtracting -0 stays for floats (-0 + 0 is +0), goes for integers") {
  const fx::Tensor x = fx::tensor({-0.0, 0.0, 1.0});
  for (auto f : {+[](const fx::Tensor& v) { return lax::add(v, fx::scalar(0.0)); },
                 +[](const fx::Tensor& v) { return lax::add(fx::scalar(0.0), v); },
                 +[](const fx::Tensor& v) { return lax::sub(v, fx::scalar(-0.0)); }}) {
    fx::Jaxpr j = fx::make_jaxpr(f)(x);
    fx::Jaxpr s = checked(&passes::simplify, j, {x});
    CHECK(to_text(s) == to_text(j));
    CHECK_FALSE(std::signbit(fx::eval_jaxpr(s, {x})[0].to_vector<double>()[0]));  // -0 + 0 = +0
  }
  fx::Jaxpr ints = fx::make_jaxpr([](const fx::Tensor& v) {
    return lax::sub(lax::add(v, fx::scalar(int32_t{0})), fx::scalar(int32_t{0}));
  })(fx::zeros({3}, fx::i32));
  CHECK(to_text(passes::dce(checked(&passes::simplify, ints, {fx::tensor({1, -2, 3})}))) ==
        "{ lambda ; a:i32[3]. let\n"
        "  in (a,) }");
}

TEST_CASE("simplify: x*0 is never folded (NaN and inf must propagate)") {
  fx::Jaxpr j = fx::make_jaxpr([](const fx::Tensor& x) { return lax::mul(x, fx::scalar(0.0)); })(fx::ones({2}));
  fx::Jaxpr s = checked(&passes::simplify, j, {fx::tensor({std::nan(""), 1.0})});
  CHECK(to_text(s) == to_text(j));
  CHECK(std::isnan(fx::eval_jaxpr(s, {fx::tensor({std::nan(""), 1.0})})[0].to_vector<double>()[0]));
}

TEST_CASE("simplify: ones and -0 constants act like the literals 1 and -0; mixed zeros are no splat") {
  fx::Tensor ones = fx::ones({3}), zeros = fx::full({3}, -0.0);
  fx::Jaxpr j = fx::make_jaxpr([&](const fx::Tensor& x) {
    fx::Tensor b = lax::broadcast_in_dim(fx::scalar(1.0), {3}, {});
    return lax::mul(lax::add(lax::mul(x, ones), zeros), b);
  })(fx::ones({3}));
  CHECK(to_text(j) ==
        "{ lambda a:f64[3] b:f64[3] ; c:f64[3]. let\n"
        "    d:f64[3] = broadcast_in_dim[shape=(3,) broadcast_dimensions=()] 1.0:f64[]\n"
        "    e:f64[3] = mul c a\n"
        "    f:f64[3] = add e b\n"
        "    g:f64[3] = mul f d\n"
        "  in (g,) }");
  CHECK(to_text(checked(&passes::dce, checked(&passes::simplify, j, {random_tensor({3}, fx::f64, 6)}),
                        {random_tensor({3}, fx::f64, 6)})) ==
        "{ lambda ; a:f64[3]. let\n"
        "  in (a,) }");
  // [-0, +0, -0] is not a splat -0 (its elements differ in their bits): x + it stays.
  const fx::Tensor mixed = fx::tensor({-0.0, 0.0, -0.0});
  fx::Jaxpr m = fx::make_jaxpr([&](const fx::Tensor& x) { return lax::add(x, mixed); })(fx::ones({3}));
  const fx::Tensor x = fx::full({3}, -0.0);
  fx::Jaxpr ms = checked(&passes::simplify, m, {x});
  CHECK(to_text(ms) == to_text(m));
  CHECK_FALSE(std::signbit(fx::eval_jaxpr(ms, {x})[0].to_vector<double>()[1]));
}

TEST_CASE("simplify: a rewrite that would change the aval is not made") {
  // x is rank 0: x * ones[3] is the broadcast of x, not x.
  fx::Tensor ones = fx::ones({3});
  fx::Jaxpr j = fx::make_jaxpr([&](const fx::Tensor& x) { return lax::mul(x, ones); })(fx::scalar(2.0));
  CHECK(to_text(checked(&passes::simplify, j, {fx::scalar(3.0)})) == to_text(j));
}

TEST_CASE("simplify: a broadcast scalar feeding an elementwise op is used directly") {
  fx::Jaxpr j = fx::make_jaxpr([](const fx::Tensor& x, const fx::Tensor& s) {
    fx::Tensor b = lax::broadcast_in_dim(s, {2, 3}, {});
    fx::Tensor p = lax::broadcast_in_dim(lax::gt(s, fx::scalar(0.0)), {2, 3}, {});
    return lax::select(p, lax::sub(b, x), x);
  })(fx::ones({2, 3}), fx::scalar(1.0));
  CHECK(to_text(j) ==
        "{ lambda ; a:f64[2,3] b:f64[]. let\n"
        "    c:f64[2,3] = broadcast_in_dim[shape=(2,3) broadcast_dimensions=()] b\n"
        "    d:bool[] = gt b 0.0:f64[]\n"
        "    e:bool[2,3] = broadcast_in_dim[shape=(2,3) broadcast_dimensions=()] d\n"
        "    f:f64[2,3] = sub c a\n"
        "    g:f64[2,3] = select e f a\n"
        "  in (g,) }");
  CHECK(to_text(passes::dce(checked(&passes::simplify, j, {random_tensor({2, 3}, fx::f64, 7), fx::scalar(0.5)}))) ==
        "{ lambda ; a:f64[2,3] b:f64[]. let\n"
        "    c:bool[] = gt b 0.0:f64[]\n"
        "    d:f64[2,3] = sub b a\n"
        "    e:f64[2,3] = select c d a\n"
        "  in (e,) }");
}

TEST_CASE("simplify: transpose, reshape and broadcast chains compose") {
  fx::Jaxpr j = fx::make_jaxpr([](const fx::Tensor& x, const fx::Tensor& v) {
    fx::Tensor t = lax::transpose(lax::transpose(x, {1, 2, 0}), {2, 0, 1});      // identity
    fx::Tensor u = lax::transpose(lax::transpose(x, {1, 0, 2}), {0, 2, 1});      // (1,2,0)
    fx::Tensor r = lax::reshape(lax::reshape(x, {6, 4}), {4, 6});
    fx::Tensor q = lax::squeeze(lax::expand_dims(r, {0}), {0});                  // r
    fx::Tensor b = lax::broadcast_in_dim(lax::broadcast_in_dim(v, {3, 4}, {1}), {2, 3, 4}, {1, 2});
    return std::make_tuple(t, u, q, b);
  })(fx::ones({2, 3, 4}), fx::ones({4}));
  CHECK(to_text(j) ==
        "{ lambda ; a:f64[2,3,4] b:f64[4]. let\n"
        "    c:f64[3,4,2] = transpose[permutation=(1,2,0)] a\n"
        "    d:f64[2,3,4] = transpose[permutation=(2,0,1)] c\n"
        "    e:f64[3,2,4] = transpose[permutation=(1,0,2)] a\n"
        "    f:f64[3,4,2] = transpose[permutation=(0,2,1)] e\n"
        "    g:f64[6,4] = reshape[new_sizes=(6,4)] a\n"
        "    h:f64[4,6] = reshape[new_sizes=(4,6)] g\n"
        "    i:f64[1,4,6] = expand_dims[dimensions=(0,)] h\n"
        "    j:f64[4,6] = squeeze[dimensions=(0,)] i\n"
        "    k:f64[3,4] = broadcast_in_dim[shape=(3,4) broadcast_dimensions=(1,)] b\n"
        "    l:f64[2,3,4] = broadcast_in_dim[shape=(2,3,4) broadcast_dimensions=(1,2)] k\n"
        "  in (d, f, j, l) }");
  CHECK(to_text(passes::dce(checked(&passes::simplify, j, {random_tensor({2, 3, 4}, fx::f64, 8), random_tensor({4}, fx::f64, 9)}))) ==
        "{ lambda ; a:f64[2,3,4] b:f64[4]. let\n"
        "    c:f64[3,4,2] = transpose[permutation=(1,2,0)] a\n"
        "    d:f64[4,6] = reshape[new_sizes=(4,6)] a\n"
        "    e:f64[2,3,4] = broadcast_in_dim[shape=(2,3,4) broadcast_dimensions=(2,)] b\n"
        "  in (a, c, d, e) }");
}

TEST_CASE("simplify: a transposed sum of products is a sum of swapped products") {
  // Weight gradients of two paths (a @ b + c @ d)^T and a scaled one: the products write the
  // transposed layout; a transpose remains only where an operand cannot absorb it.
  auto f = [](const fx::Tensor& a, const fx::Tensor& b, const fx::Tensor& c, const fx::Tensor& d) {
    fx::Tensor sum = lax::transpose(fx::matmul(a, b) + fx::matmul(c, d), {1, 0});
    fx::Tensor scaled = lax::transpose(fx::matmul(a, b) * 2.0 - fx::matmul(c, d), {1, 0});
    fx::Tensor mixed = lax::transpose(fx::matmul(a, b) + a, {1, 0});  // a is no product: kept
    return std::make_tuple(sum, scaled, mixed);
  };
  for (fx::DType dtype : {fx::f32, fx::f64}) {
    Vec args = {random_tensor({3, 5}, dtype, 1), random_tensor({5, 5}, dtype, 2), random_tensor({3, 4}, dtype, 3),
                random_tensor({4, 5}, dtype, 4)};
    args[0] = random_tensor({5, 5}, dtype, 1);
    args[2] = random_tensor({5, 4}, dtype, 3);
    fx::Jaxpr j = fx::make_jaxpr(f)(args[0], args[1], args[2], args[3]);
    fx::Jaxpr out = passes::dce(checked(&passes::simplify, j, args));
    int transposes = 0, products = 0;
    for (const fx::Equation& e : out.equations) {
      transposes += e.primitive->name == "transpose" ? 1 : 0;
      products += e.primitive->name == "dot_general" ? 1 : 0;
    }
    CHECK_MESSAGE(transposes == 1, to_text(out));
    CHECK_MESSAGE(products == 5, to_text(out));
  }
}

TEST_CASE("simplify: movement, conversion and reduction that change nothing are removed") {
  fx::Jaxpr j = fx::make_jaxpr([](const fx::Tensor& x) {
    fx::Tensor a = lax::broadcast_in_dim(x, {2, 3}, {0, 1});
    fx::Tensor b = lax::reshape(a, {2, 3});
    fx::Tensor c = lax::convert_element_type(b, fx::f32);
    fx::Tensor d = lax::reduce_sum(c, {});
    fx::Tensor e = lax::slice(d, {0, 0}, {2, 3});
    return lax::transpose(e, {0, 1});
  })(fx::ones({2, 3}, fx::f32));
  CHECK(to_text(j) ==
        "{ lambda ; a:f32[2,3]. let\n"
        "    b:f32[2,3] = broadcast_in_dim[shape=(2,3) broadcast_dimensions=(0,1)] a\n"
        "    c:f32[2,3] = reshape[new_sizes=(2,3)] b\n"
        "    d:f32[2,3] = convert_element_type[new_dtype=f32] c\n"
        "    e:f32[2,3] = reduce_sum[axes=()] d\n"
        "    f:f32[2,3] = slice[start_indices=(0,0) limit_indices=(2,3) strides=(1,1)] e\n"
        "    g:f32[2,3] = transpose[permutation=(0,1)] f\n"
        "  in (g,) }");
  CHECK(to_text(passes::dce(checked(&passes::simplify, j, {random_tensor({2, 3}, fx::f32, 10)}))) ==
        "{ lambda ; a:f32[2,3]. let\n"
        "  in (a,) }");
}

TEST_CASE("simplify: select with a known predicate picks its branch") {
  fx::Jaxpr j = fx::make_jaxpr([](const fx::Tensor& x, const fx::Tensor& y) {
    fx::Tensor a = lax::select(fx::scalar(true), x, y);
    fx::Tensor b = lax::select(fx::full({3}, 0.0, fx::boolean), x, y);
    fx::Tensor c = lax::select(lax::lt(x, y), a, a);
    return std::make_tuple(a, b, c);
  })(fx::ones({3}), fx::ones({3}));
  CHECK(to_text(j) ==
        "{ lambda a:bool[3] ; b:f64[3] c:f64[3]. let\n"
        "    d:f64[3] = select True:bool[] b c\n"
        "    e:f64[3] = select a b c\n"
        "    f:bool[3] = lt b c\n"
        "    g:f64[3] = select f d d\n"
        "  in (d, e, g) }");
  CHECK(to_text(checked(&passes::simplify, j, {random_tensor({3}, fx::f64, 11), random_tensor({3}, fx::f64, 12)})) ==
        "{ lambda a:bool[3] ; b:f64[3] c:f64[3]. let\n"
        "    d:bool[3] = lt b c\n"
        "  in (b, c, b) }");
}

TEST_CASE("simplify: small constant results are folded, large ones are not") {
  fx::Tensor small = fx::tensor({0.5, 1.0, 2.0}), big = fx::ones({40, 30});
  fx::Jaxpr j = fx::make_jaxpr([&](const fx::Tensor& x) {
    fx::Tensor s = fx::sin(small);                 // 3 elements: a constant
    fx::Tensor t = fx::sum(small * 2.0);           // rank 0: a literal
    fx::Tensor u = fx::exp(big);                   // 1200 elements: kept
    return std::make_tuple(x * s + t, fx::sum(u), lax::mul(fx::scalar(2.0), fx::scalar(3.0)));
  })(fx::ones({3}));
  CHECK(to_text(j) ==
        "{ lambda a:f64[3] b:f64[40,30] ; c:f64[3]. let\n"
        "    d:f64[3] = sin a\n"
        "    e:f64[3] = mul a 2.0:f64[]\n"
        "    f:f64[] = reduce_sum[axes=(0,)] e\n"
        "    g:f64[40,30] = exp b\n"
        "    h:f64[] = mul 2.0:f64[] 3.0:f64[]\n"
        "    i:f64[] = reduce_sum[axes=(0,1)] g\n"
        "    j:f64[3] = mul c d\n"
        "    k:f64[3] = add j f\n"
        "  in (k, i, h) }");
  fx::Jaxpr s = checked(&passes::simplify, j, {random_tensor({3}, fx::f64, 13)});
  CHECK(to_text(passes::dce(s)) ==
        "{ lambda a:f64[40,30] b:f64[3] ; c:f64[3]. let\n"
        "    d:f64[40,30] = exp a\n"
        "    e:f64[] = reduce_sum[axes=(0,1)] d\n"
        "    f:f64[3] = mul c b\n"
        "    g:f64[3] = add f 7.0:f64[]\n"
        "  in (g, e, 6.0:f64[]) }");
}

TEST_CASE("simplify: an iota-built identity times a broadcast vector, contracted, is a scaled copy") {
  // 40 x 40 = 1600 elements: too large to fold, so the iota pattern itself is recognised.
  fx::Jaxpr j = fx::make_jaxpr([](const fx::Tensor& v, const fx::Tensor& x) {
    fx::Tensor eye = lax::convert_element_type(
        lax::eq(lax::iota(fx::i32, {40, 40}, 0), lax::iota(fx::i32, {40, 40}, 1)), fx::f64);
    fx::Tensor d = lax::mul(eye, lax::broadcast_in_dim(v, {40, 40}, {1}));
    fx::Tensor l = lax::dot_general(d, x, {{1}, {0}});        // diag(v) x
    fx::Tensor r = lax::dot_general(x, eye, {{0}, {1}});      // x^T I
    fx::Tensor i = lax::iota(fx::i32, {40}, 0);              // jnp.eye's broadcast iotas
    fx::Tensor eye2 = lax::convert_element_type(
        lax::eq(lax::broadcast_in_dim(i, {40, 40}, {1}), lax::broadcast_in_dim(i, {40, 40}, {0})), fx::f64);
    fx::Tensor t = lax::dot_general(lax::mul(fx::scalar(2.0), eye2), x, {{0}, {0}});  // 2 I x
    return std::make_tuple(l, r, t);
  })(fx::ones({40}), fx::ones({40, 3}));
  fx::Jaxpr s = passes::dce(checked(&passes::simplify, j, {random_tensor({40}, fx::f64, 14), random_tensor({40, 3}, fx::f64, 15)}));
  CHECK(basis_products(s, 40) == 0);
  CHECK(to_text(s) ==
        "{ lambda ; a:f64[40] b:f64[40,3]. let\n"
        "    c:f64[40,3] = broadcast_in_dim[shape=(40,3) broadcast_dimensions=(0,)] a\n"
        "    d:f64[40,3] = mul c b\n"
        "    e:f64[3,40] = transpose[permutation=(1,0)] b\n"
        "    f:f64[40,3] = mul 2.0:f64[] b\n"
        "  in (d, e, f) }");
}

// ---------------------------------------------------------------- Jacobian seeds

TEST_CASE("seeds: jacrev of tanh(W x + b) multiplies no identity densely") {
  fx::Jaxpr j = jacrev_jaxpr(layer_args(3, 2, 20));
  CHECK(basis_products(j, 3) == 1);
  CHECK(to_text(j) ==
        "{ lambda a:f32[3,3] ; b:f32[3,2] c:f32[3] d:f32[2]. let\n"
        "    e:f32[3] = dot_general[contract=((1,),(0,)) batch=((),())] b d\n"
        "    f:f32[3] = add e c\n"
        "    g:f32[3] = tanh f\n"
        "    h:f32[3] = mul g g\n"
        "    i:f32[3] = sub 1.0:f32[] h\n"
        "    j:f32[3,3] = slice[start_indices=(0,0) limit_indices=(3,3) strides=(1,1)] a\n"
        "    k:f32[3,3] = reshape[new_sizes=(3,3)] j\n"
        "    l:f32[3,3] = broadcast_in_dim[shape=(3,3) broadcast_dimensions=(1,)] i\n"
        "    m:f32[3,3] = mul k l\n"
        "    n:f32[3,2] = dot_general[contract=((1,),(0,)) batch=((),())] m b\n"
        "    o:f32[3,2] = slice[start_indices=(0,0) limit_indices=(3,2) strides=(1,1)] n\n"
        "    p:f32[3,2] = reshape[new_sizes=(3,2)] o\n"
        "  in (p,) }");
  fx::Jaxpr o = checked(&passes::optimize, j, layer_args(3, 2, 20));
  CHECK(basis_products(o, 3) == 0);
  CHECK(to_text(o) ==
        "{ lambda ; a:f32[3,2] b:f32[3] c:f32[2]. let\n"
        "    d:f32[3] = dot_general[contract=((1,),(0,)) batch=((),())] a c\n"
        "    e:f32[3] = add d b\n"
        "    f:f32[3] = tanh e\n"
        "    g:f32[3] = mul f f\n"
        "    h:f32[3] = sub 1.0:f32[] g\n"
        "    i:f32[3,2] = broadcast_in_dim[shape=(3,2) broadcast_dimensions=(0,)] h\n"
        "    j:f32[3,2] = mul i a\n"
        "  in (j,) }");
  checked(&passes::optimize, jacrev_jaxpr(layer_args(17, 9, 30)), layer_args(17, 9, 30));
}

TEST_CASE("seeds: jacfwd of tanh(W x + b) multiplies no identity densely") {
  fx::Jaxpr j = jacfwd_jaxpr(layer_args(3, 2, 40));
  CHECK(basis_products(j, 2) == 1);
  CHECK(to_text(j) ==
        "{ lambda a:f32[2,2] ; b:f32[3,2] c:f32[3] d:f32[2]. let\n"
        "    e:f32[2,2] = slice[start_indices=(0,0) limit_indices=(2,2) strides=(1,1)] a\n"
        "    f:f32[2,2] = reshape[new_sizes=(2,2)] e\n"
        "    g:f32[3] = dot_general[contract=((1,),(0,)) batch=((),())] b d\n"
        "    h:f32[3,2] = dot_general[contract=((1,),(1,)) batch=((),())] b f\n"
        "    i:f32[3] = add g c\n"
        "    j:f32[3] = tanh i\n"
        "    k:f32[3] = mul j j\n"
        "    l:f32[3] = sub 1.0:f32[] k\n"
        "    m:f32[2,3] = transpose[permutation=(1,0)] h\n"
        "    n:f32[2,3] = broadcast_in_dim[shape=(2,3) broadcast_dimensions=(1,)] l\n"
        "    o:f32[2,3] = mul m n\n"
        "    p:f32[2,3] = slice[start_indices=(0,0) limit_indices=(2,3) strides=(1,1)] o\n"
        "    q:f32[3,2] = transpose[permutation=(1,0)] p\n"
        "    r:f32[3,2] = reshape[new_sizes=(3,2)] q\n"
        "  in (r,) }");
  fx::Jaxpr o = checked(&passes::optimize, j, layer_args(3, 2, 40));
  CHECK(basis_products(o, 2) == 0);
  CHECK(to_text(o) ==
        "{ lambda ; a:f32[3,2] b:f32[3] c:f32[2]. let\n"
        "    d:f32[3] = dot_general[contract=((1,),(0,)) batch=((),())] a c\n"
        "    e:f32[3] = add d b\n"
        "    f:f32[3] = tanh e\n"
        "    g:f32[3] = mul f f\n"
        "    h:f32[3] = sub 1.0:f32[] g\n"
        "    i:f32[3,2] = broadcast_in_dim[shape=(3,2) broadcast_dimensions=(0,)] h\n"
        "    j:f32[3,2] = mul a i\n"
        "  in (j,) }");
  checked(&passes::optimize, jacfwd_jaxpr(layer_args(9, 17, 50)), layer_args(9, 17, 50));
}

TEST_CASE("seeds: at 1024 x 1024 the optimized jacrev and jacfwd have no m x m product") {
  const int64_t m = 1024;
  Vec args{fx::ones({m, m}, fx::f32), fx::ones({m}, fx::f32), fx::ones({m}, fx::f32)};
  for (fx::Jaxpr j : {jacrev_jaxpr(args), jacfwd_jaxpr(args)}) {
    CHECK(basis_products(j, m) == 1);
    fx::Jaxpr o = passes::optimize(j);
    CHECK(basis_products(o, m) == 0);
    CHECK(square_values(o, m) == 2);  // broadcast(1 - tanh^2) * W: the O(mn) Jacobian
    CHECK(o.consts.empty());          // the 1024 x 1024 identity is gone
  }
}

// ---------------------------------------------------------------- optimize

TEST_CASE("optimize: simplify, cse and dce together") {
  fx::Tensor k = fx::ones({3});
  fx::Jaxpr j = fx::make_jaxpr([&](const fx::Tensor& x) {
    fx::Tensor a = fx::exp(x * k) + fx::exp(x);
    fx::Tensor unused = fx::log(a);
    (void)unused;
    return fx::sum(fx::transpose(fx::transpose(fx::reshape(a, {3, 1}))));
  })(fx::ones({3}));
  CHECK(to_text(j) ==
        "{ lambda a:f64[3] ; b:f64[3]. let\n"
        "    c:f64[3] = exp b\n"
        "    d:f64[3] = mul b a\n"
        "    e:f64[3] = exp d\n"
        "    f:f64[3] = add e c\n"
        "    g:f64[3] = log f\n"
        "    h:f64[3,1] = reshape[new_sizes=(3,1)] f\n"
        "    i:f64[1,3] = transpose[permutation=(1,0)] h\n"
        "    j:f64[3,1] = transpose[permutation=(1,0)] i\n"
        "    k:f64[] = reduce_sum[axes=(0,1)] j\n"
        "  in (k,) }");
  CHECK(to_text(checked(&passes::optimize, j, {random_tensor({3}, fx::f64, 16)})) ==
        "{ lambda ; a:f64[3]. let\n"
        "    b:f64[3] = exp a\n"
        "    c:f64[3] = mul b 2.0:f64[]\n"
        "    d:f64[3,1] = reshape[new_sizes=(3,1)] c\n"
        "    e:f64[] = reduce_sum[axes=(0,1)] d\n"
        "  in (e,) }");
}

TEST_CASE("optimize: derivatives of a small network keep their values") {
  // grad, jacrev, jacfwd and hessian Jaxprs are full of units, broadcasts and identities.
  auto loss = [](const fx::Tensor& w, const fx::Tensor& x) {
    fx::Tensor h = fx::tanh(fx::matmul(w, x) + 0.5);
    return fx::sum(fx::log_softmax(h) * fx::sigmoid(h)) + fx::logsumexp(fx::square(h));
  };
  Vec args{random_tensor({4, 3}, fx::f64, 60), random_tensor({3}, fx::f64, 61)};
  auto stage = [&](auto f) { return fx::make_jaxpr(f)(args[0], args[1]); };
  std::vector<fx::Jaxpr> jaxprs{
      stage([&](const fx::Tensor& w, const fx::Tensor& x) { return fx::grad([&](const fx::Tensor& v) { return loss(w, v); })(x); }),
      stage([&](const fx::Tensor& w, const fx::Tensor& x) { return fx::jacrev([&](const fx::Tensor& v) { return fx::tanh(fx::matmul(v, x)); })(w); }),
      stage([&](const fx::Tensor& w, const fx::Tensor& x) { return fx::jacfwd([&](const fx::Tensor& v) { return fx::exp(fx::matmul(w, v)); })(x); }),
      stage([&](const fx::Tensor& w, const fx::Tensor& x) { return fx::hessian([&](const fx::Tensor& v) { return loss(w, v); })(x); }),
  };
  for (const fx::Jaxpr& j : jaxprs) {
    fx::Jaxpr o = checked(&passes::optimize, j, args);
    CHECK(o.equations.size() <= j.equations.size());
  }
}

TEST_CASE("optimize: every primitive's samples keep their values, staged and with constant inputs") {
  int checks = 0;
  for (const auto& [name, samples] : fluxion::testing::sample_registry()) {
    for (fx::DType dt : {fx::f32, fx::f64}) {
      for (const fluxion::testing::Sample& s : samples.make(dt)) {
        CAPTURE(name);
        CAPTURE(s.label);
        auto fn = s.fn;
        // Inputs as Jaxpr inputs: little to rewrite, but nothing may break.
        fx::Jaxpr staged = fx::make_jaxpr([&](const Vec& xs) { return fn(xs); })(s.inputs);
        checked(&passes::optimize, staged, s.inputs);
        // Inputs captured as constants: constant folding and the value-based rules apply.
        fx::Jaxpr closed = fx::make_jaxpr([&](const Vec&) { return fn(s.inputs); })(Vec{});
        checked(&passes::optimize, closed, {});
        // Around the primitive, units and no-op movement the simplifier must see through.
        fx::Jaxpr wrapped = fx::make_jaxpr([&](const Vec& xs) {
          Vec in;
          for (const fx::Tensor& x : xs) in.push_back(lax::reshape(x, x.shape()));
          Vec out = fn(in);
          for (fx::Tensor& y : out)
            if (y.dtype() != fx::boolean) y = lax::mul(y, lax::convert_element_type(fx::scalar(1.0), y.dtype()));
          return out;
        })(s.inputs);
        checked(&passes::optimize, wrapped, s.inputs);
        checks += 3;
      }
    }
  }
  MESSAGE("optimize sample checks: " << checks);
  CHECK(checks > 100);
}

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
fx::Jaxpr broadcast_product(const fx::Tensor& x, const fx::Tensor& y, const fx::Shape& shape, const std::vector<int64_t>& dims,
                            const fx::AxisPair& contract, const fx::AxisPair& batch, bool on_rhs, bool reduced) {
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
        fx::Jaxpr j = broadcast_product(args[0], args[1], c.shape, c.dims, side(c.contract), side(c.batch), on_rhs, true);
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
  Vec args{random_tensor({K, n, d}, fx::i32, 83), random_tensor({K, d}, fx::i32, 84), random_tensor({K, d, d}, fx::i32, 85)};
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
    fx::Tensor t = lax::transpose(x, {1, 2, 0});                                // [3, 4, 2]
    fx::Tensor y = lax::mul(t, t) - lax::broadcast_in_dim(v, {3, 4, 2}, {0, 1});  // v: [3, 4]
    return lax::reduce_max(lax::exp(y), {1});                                    // [3, 2]
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
    fx::Tensor s = lax::transpose(r, {0, 2, 1});                          // [3, 4, 4]
    fx::Tensor t = lax::dot_general(x, s, {{1}, {1}}, {{}, {}});           // [5, 3, 4]
    fx::Tensor u = lax::dot_general(m, s, {{1}, {1}}, {{0}, {0}});         // [3, 4]
    return t - lax::broadcast_in_dim(u, {5, 3, 4}, {1, 2});
  })(fx::ones({5, 4}), fx::ones({3, 4}), fx::ones({3, 4, 4}));
  fx::Jaxpr out = passes::dce(checked(&passes::simplify, j,
                                      {random_tensor({5, 4}, fx::f64, 90), random_tensor({3, 4}, fx::f64, 91),
                                       random_tensor({3, 4, 4}, fx::f64, 92)}));
  CHECK(to_text(out) ==
        "{ lambda ; a:f64[5,4] b:f64[3,4] c:f64[3,4,4]. let\n"
        "    d:f64[5,3,4] = dot_general[contract=((1,),(2,)) batch=((),())] a c\n"
        "    e:f64[3,4] = dot_general[contract=((1,),(2,)) batch=((0,),(0,))] b c\n"
        "    f:f64[5,3,4] = broadcast_in_dim[shape=(5,3,4) broadcast_dimensions=(1,2)] e\n"
        "    g:f64[5,3,4] = sub d f\n"
        "  in (g,) }");
}

TEST_CASE("products: a transpose that reorders free dims, or is shared and would be copied, stays") {
  const Vec args{random_tensor({4, 3}, fx::f64, 93), random_tensor({2, 3, 4}, fx::f64, 94), random_tensor({3, 5}, fx::f64, 95)};
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
    return lax::reduce_sum(p, {0, 2, 3});                          // [5]
  })(args[0], args[1]);
  fx::Jaxpr m = passes::dce(checked(&passes::simplify, mixed, args));
  REQUIRE(equations_of(m, "dot_general").size() == 1);
  CHECK(m.avals[equations_of(m, "dot_general")[0]->outputs[0]].shape == fx::Shape{3, 5});
  fx::Jaxpr shared = fx::make_jaxpr([](const fx::Tensor& x, const fx::Tensor& y) {
    fx::Tensor p = lax::dot_general(x, y, {{2}, {2}}, {{0}, {0}});
    return lax::reduce_sum(p, {2}) + lax::reduce_sum(p, {3});
  })(fx::ones({3, 5, 2, 6}, fx::i32), fx::ones({3, 6, 2}, fx::i32));
  fx::Jaxpr sh = passes::dce(checked(&passes::simplify, shared,
                                     {random_tensor({3, 5, 2, 6}, fx::i32, 100), random_tensor({3, 6, 2}, fx::i32, 101)}));
  REQUIRE(equations_of(sh, "dot_general").size() == 1);
  CHECK(sh.avals[equations_of(sh, "dot_general")[0]->outputs[0]].shape == fx::Shape{3, 5, 6, 6});
}

// ---------------------------------------------------------------- symmetric products

namespace {

/// The number of gram equations, and of dot_general equations with a [d, d]-element result.
size_t grams(const fx::Jaxpr& j) { return equations_of(j, "gram").size(); }
size_t square_products(const fx::Jaxpr& j, int64_t d) {
  size_t n = 0;
  for (const fx::Equation* e : equations_of(j, "dot_general")) n += j.avals[e->outputs[0]].shape.num_elements() == d * d;
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
      if (e.primitive->name != "gram") CHECK_MESSAGE(out.avals[e.outputs[0]].shape.num_elements() < n * d, to_text(out));
  }
}

TEST_CASE("symmetric: products of one matrix scaled along the contracted dim become gram") {
  const int64_t n = 48, d = 40;
  using F = std::function<fx::Tensor(const fx::Tensor&, const fx::Tensor&, const fx::Tensor&)>;
  auto row = [](const fx::Tensor& v, const fx::Tensor& like) {  // v [n] spread over rows of [n, d]
    return lax::broadcast_in_dim(v, like.shape(), {0});
  };
  const std::vector<std::pair<const char*, F>> rewritten{
      {"x^T x", [](const fx::Tensor& x, const fx::Tensor&, const fx::Tensor&) {
         return lax::dot_general(x, x, {{0}, {0}}, {});
       }},
      {"x^T diag(s) x", [&](const fx::Tensor& x, const fx::Tensor& s, const fx::Tensor&) {
         return lax::dot_general(lax::mul(x, row(s, x)), x, {{0}, {0}}, {});
       }},
      {"(x s)^T (x t), scales on both sides", [&](const fx::Tensor& x, const fx::Tensor& s, const fx::Tensor& t) {
         return lax::dot_general(lax::mul(row(s, x), x), lax::mul(x, row(t, x)), {{0}, {0}}, {});
       }},
      {"transpose(x) as a matrix", [&](const fx::Tensor& x, const fx::Tensor& s, const fx::Tensor&) {
         return lax::dot_general(lax::transpose(x, {1, 0}), lax::div(x, row(s, x)), {{1}, {0}}, {});
       }},
      {"x stored [d, n], contracted along dim 1", [](const fx::Tensor& x, const fx::Tensor& s, const fx::Tensor&) {
         fx::Tensor xt = lax::transpose(x, {1, 0});
         return lax::dot_general(xt, lax::mul(xt, lax::broadcast_in_dim(s, {d, n}, {1})), {{1}, {1}}, {});
       }},
      {"sum and difference of scaled terms, negated, times a scalar",
       [&](const fx::Tensor& x, const fx::Tensor& s, const fx::Tensor& t) {
         fx::Tensor a = lax::add(lax::mul(x, row(s, x)), lax::neg(lax::mul(row(t, x), x)));
         fx::Tensor b = lax::sub(lax::mul(a, fx::full({}, 0.5, x.dtype())), lax::mul(x, row(t, x)));
         return lax::dot_general(x, b, {{0}, {0}}, {});
       }},
      {"size-1 dims added by broadcast and reshape", [&](const fx::Tensor& x, const fx::Tensor& s, const fx::Tensor&) {
         fx::Tensor l = lax::broadcast_in_dim(lax::transpose(x, {1, 0}), {d, 1, n}, {0, 2});
         fx::Tensor sc = lax::broadcast_in_dim(lax::reshape(s, {1, n}), {d, 1, n}, {1, 2});
         return lax::reshape(lax::dot_general(lax::mul(l, sc), x, {{2}, {0}}, {}), {d, d});
       }},
  };
  const std::vector<std::pair<const char*, F>> kept{
      {"x^T y", [](const fx::Tensor& x, const fx::Tensor&, const fx::Tensor&) {
         return lax::dot_general(x, lax::exp(x), {{0}, {0}}, {});
       }},
      {"scale along the free dim", [](const fx::Tensor& x, const fx::Tensor& s, const fx::Tensor&) {
         fx::Tensor v = lax::slice(lax::concatenate({s, s}, 0), {0}, {d});  // [d]
         return lax::dot_general(lax::mul(x, lax::broadcast_in_dim(v, {n, d}, {1})), x, {{0}, {0}}, {});
       }},
      {"x times x elementwise", [](const fx::Tensor& x, const fx::Tensor&, const fx::Tensor&) {
         return lax::dot_general(lax::mul(x, x), x, {{0}, {0}}, {});
       }},
      {"x x^T contracted along d is [n, n]: kept only when below the size threshold",
       [](const fx::Tensor& x, const fx::Tensor&, const fx::Tensor&) {
         fx::Tensor small = lax::slice(x, {0, 0}, {8, 8});
         return lax::dot_general(small, small, {{1}, {1}}, {});
       }},
      {"batched", [](const fx::Tensor& x, const fx::Tensor&, const fx::Tensor&) {
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
  fx::Jaxpr i = fx::make_jaxpr([](const fx::Tensor& x, const fx::Tensor& c) { return lax::reduce_sum(lax::mul(x, c), {1}); })(
      ints[0], ints[1]);
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
  Vec args{random_tensor({300, 300}, fx::f64, 71), random_tensor({300}, fx::f64, 72), random_tensor({300}, fx::f64, 73)};
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
  Vec small{random_tensor({100, 100}, fx::f64, 74), random_tensor({100}, fx::f64, 75), random_tensor({100}, fx::f64, 76)};
  fx::Jaxpr kept = fx::make_jaxpr([](const fx::Tensor& x, const fx::Tensor& a, const fx::Tensor& b) {
    return std::make_tuple(fx::matmul(x, a), fx::matmul(x, b));
  })(small[0], small[1], small[2]);
  CHECK(to_text(passes::dce(checked(&passes::simplify, kept, small))) == to_text(kept));
  Vec mixed{random_tensor({300, 300}, fx::f64, 77), random_tensor({300}, fx::f64, 78), random_tensor({300}, fx::f64, 79)};
  fx::Jaxpr other = fx::make_jaxpr([](const fx::Tensor& x, const fx::Tensor& a, const fx::Tensor& b) {
    return std::make_tuple(fx::matmul(x, a), fx::matmul(b, x), fx::matmul(x, fx::matmul(x, b)));
  })(mixed[0], mixed[1], mixed[2]);
  // X a, b X, X (X b): X b pairs with X a, X (X b) cannot (its vector is X b itself); the
  // equations stay correct and no product more is made.
  const fx::Jaxpr merged = passes::dce(checked(&passes::simplify, other, mixed));
  CHECK_MESSAGE(equations_of(merged, "dot_general").size() <= equations_of(other, "dot_general").size(), to_text(merged));
}
