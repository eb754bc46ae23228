// The optimisation passes of fx::jit: golden Jaxprs before/after dce, cse, simplify and optimize,
// each checked to typecheck and to compute the original's values.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <functional>

#include <fluxion/fluxion.hpp>

#include "passes_util.hpp"
#include "samples.hpp"
#include "test_util.hpp"
#include "passes/passes.hpp"
#include "passes/simplify.hpp"
#include "runtime/switches.hpp"

namespace fx = fluxion;
namespace lax = fluxion::lax;
namespace passes = fluxion::passes;

using fluxion::testing::checked;
using fluxion::testing::compare_tensors;
using fluxion::testing::random_tensor;
using fluxion::testing::to_text;
using Vec = std::vector<fx::Tensor>;

namespace {

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
  fx::Jaxpr j =
      fx::make_jaxpr([&](const fx::Tensor& x) { return std::make_tuple(x * k1, x * k2, x * k3); })(fx::ones({2}));
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
    fx::Tensor t = lax::transpose(lax::transpose(x, {1, 2, 0}), {2, 0, 1});  // identity
    fx::Tensor u = lax::transpose(lax::transpose(x, {1, 0, 2}), {0, 2, 1});  // (1,2,0)
    fx::Tensor r = lax::reshape(lax::reshape(x, {6, 4}), {4, 6});
    fx::Tensor q = lax::squeeze(lax::expand_dims(r, {0}), {0});  // r
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
  CHECK(to_text(passes::dce(
            checked(&passes::simplify, j, {random_tensor({2, 3, 4}, fx::f64, 8), random_tensor({4}, fx::f64, 9)}))) ==
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
    fx::Tensor s = fx::sin(small);        // 3 elements: a constant
    fx::Tensor t = fx::sum(small * 2.0);  // rank 0: a literal
    fx::Tensor u = fx::exp(big);          // 1200 elements: kept
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
    fx::Tensor eye =
        lax::convert_element_type(lax::eq(lax::iota(fx::i32, {40, 40}, 0), lax::iota(fx::i32, {40, 40}, 1)), fx::f64);
    fx::Tensor d = lax::mul(eye, lax::broadcast_in_dim(v, {40, 40}, {1}));
    fx::Tensor l = lax::dot_general(d, x, {{1}, {0}});    // diag(v) x
    fx::Tensor r = lax::dot_general(x, eye, {{0}, {1}});  // x^T I
    fx::Tensor i = lax::iota(fx::i32, {40}, 0);           // jnp.eye's broadcast iotas
    fx::Tensor eye2 = lax::convert_element_type(
        lax::eq(lax::broadcast_in_dim(i, {40, 40}, {1}), lax::broadcast_in_dim(i, {40, 40}, {0})), fx::f64);
    fx::Tensor t = lax::dot_general(lax::mul(fx::scalar(2.0), eye2), x, {{0}, {0}});  // 2 I x
    return std::make_tuple(l, r, t);
  })(fx::ones({40}), fx::ones({40, 3}));
  fx::Jaxpr s = passes::dce(
      checked(&passes::simplify, j, {random_tensor({40}, fx::f64, 14), random_tensor({40, 3}, fx::f64, 15)}));
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

TEST_CASE("switches: the rule table names each rule once; a group or pass switched off is left out") {
  struct AllOnAtExit {
    ~AllOnAtExit() { fx::runtime::set_disabled(""); }
  } restore;
  const auto& table = passes::simplify_detail::rule_table();
  for (size_t i = 0; i < table.size(); ++i)
    for (size_t k = 0; k < i; ++k) CHECK(std::string(table[i].name) != table[k].name);
  using fx::runtime::Switch;
  for (const auto& entry : table) {
    const bool rule_group = entry.group == Switch::algebra || entry.group == Switch::seeds ||
                            entry.group == Switch::products || entry.group == Switch::siblings ||
                            entry.group == Switch::gram;
    CHECK_MESSAGE(rule_group, entry.name);
  }
  const Vec args = layer_args(3, 2, 20);
  fx::runtime::set_disabled("seeds");
  CHECK(basis_products(checked(&passes::optimize, jacrev_jaxpr(args), args), 3) == 1);
  fx::runtime::set_disabled("");
  CHECK(basis_products(checked(&passes::optimize, jacrev_jaxpr(args), args), 3) == 0);
  // x * 1 + x * 1: algebra drops the units, cse merges the products.
  fx::Jaxpr j = fx::make_jaxpr([](const fx::Tensor& x) { return fx::sin(x) * 1.0 + fx::sin(x) * 1.0; })(fx::ones({3}));
  auto count = [](const fx::Jaxpr& o, const char* name) {
    return std::count_if(o.equations.begin(), o.equations.end(),
                         [&](const fx::Equation& e) { return e.primitive->name == name; });
  };
  const Vec x{random_tensor({3}, fx::f64, 30)};
  fx::Jaxpr all_on = checked(&passes::optimize, j, x);
  CHECK(count(all_on, "add") == 0);  // the sum as sin(x) * 2
  CHECK(count(all_on, "sin") == 1);
  for (const char* off : {"algebra", "simplify"}) {
    fx::runtime::set_disabled(off);
    CHECK_MESSAGE(count(checked(&passes::optimize, j, x), "add") == 1, off);  // x * 1 stays
  }
  fx::runtime::set_disabled("cse,algebra");
  CHECK(count(checked(&passes::optimize, j, x), "sin") == 2);
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
      stage([&](const fx::Tensor& w, const fx::Tensor& x) {
        return fx::grad([&](const fx::Tensor& v) { return loss(w, v); })(x);
      }),
      stage([&](const fx::Tensor& w, const fx::Tensor& x) {
        return fx::jacrev([&](const fx::Tensor& v) { return fx::tanh(fx::matmul(v, x)); })(w);
      }),
      stage([&](const fx::Tensor& w, const fx::Tensor& x) {
        return fx::jacfwd([&](const fx::Tensor& v) { return fx::exp(fx::matmul(w, v)); })(x);
      }),
      stage([&](const fx::Tensor& w, const fx::Tensor& x) {
        return fx::hessian([&](const fx::Tensor& v) { return loss(w, v); })(x);
      }),
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
