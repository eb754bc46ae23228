// The interpreter core: eager eval, staging into Jaxprs, levels, leaks and roll-back on errors.
#include <doctest/doctest.h>

#include <sstream>

#include <fluxion/fluxion.hpp>

#include "test_util.hpp"

namespace fx = fluxion;
namespace lax = fluxion::lax;

using fluxion::testing::message_of;
std::string str(const fx::Jaxpr& j) { return fluxion::testing::to_text(j); }

TEST_CASE("make_jaxpr: inputs are numbered in argument order and static arguments pass through") {
  fx::Tensor x = fx::tensor({1.0f, 2.0f}), y = fx::tensor({1.0, 2.0, 3.0});
  auto j = fx::make_jaxpr([](const fx::Tensor& a, int times, const fx::Tensor& b) {
    fx::Tensor s = a;
    for (int i = 0; i < times; ++i) s = lax::sin(s);
    return std::make_tuple(s, lax::exp(b));
  })(x, 2, y);
  CHECK(str(j) ==
        "{ lambda ; a:f32[2] b:f64[3]. let\n"
        "    c:f32[2] = sin a\n"
        "    d:f32[2] = sin c\n"
        "    e:f64[3] = exp b\n"
        "  in (d, e) }");
  fx::typecheck(j);
}

TEST_CASE("make_jaxpr: captured arrays become constants, captured scalars literals") {
  fx::Tensor w = fx::tensor({1.0f, 2.0f});
  fx::Tensor s = fx::scalar(3.0f);
  auto j = fx::make_jaxpr([&](const fx::Tensor& a) { return std::make_tuple(lax::sin(w), a, s); })(fx::tensor({0.f}));
  CHECK(str(j) ==
        "{ lambda a:f32[2] ; b:f32[1]. let\n"
        "    c:f32[2] = sin a\n"
        "  in (c, b, 3.0:f32[]) }");
  REQUIRE(j.consts.size() == 1);
  CHECK(j.consts[0].impl() == w.impl());
  fx::typecheck(j);
}

TEST_CASE("make_jaxpr: variable names continue a..z, ba, bb like JAX") {
  auto j = fx::make_jaxpr([](const fx::Tensor& a) {
    fx::Tensor t = a;
    for (int i = 0; i < 27; ++i) t = lax::sin(t);
    return t;
  })(fx::scalar(1.0));
  std::string s = str(j);
  CHECK(s.find("    z:f64[] = sin y\n") != std::string::npos);
  CHECK(s.find("    ba:f64[] = sin z\n") != std::string::npos);
  CHECK(s.find("    bb:f64[] = sin ba\n") != std::string::npos);
}

TEST_CASE("make_jaxpr: converting a traced value to a number is a ConcretizationError") {
  auto f = [](const fx::Tensor& a) {
    if (lax::sin(a).item<double>() > 0) return a;
    return lax::exp(a);
  };
  std::string msg = message_of<fx::ConcretizationError>([&] { fx::make_jaxpr(f)(fx::scalar(1.0)); });
  CHECK(msg.find("[item] cannot convert a value traced by make_jaxpr (f64[])") == 0);
  CHECK(msg.find("fx::where, fx::cond or fx::while_loop") != std::string::npos);
  // The failed trace left the eager interpreter current.
  CHECK(&fx::current_interpreter() == &fx::eval_interpreter());
  CHECK(lax::sin(fx::scalar(0.0)).item<double>() == 0.0);
}

TEST_CASE("make_jaxpr: a tracer used after its transform returned is a LeakedTracerError") {
  fx::Tensor leaked;
  fx::make_jaxpr([&](const fx::Tensor& a) {
    leaked = lax::sin(a);
    return a;
  })(fx::scalar(1.0));
  std::string msg = message_of<fx::LeakedTracerError>([&] { lax::exp(leaked); });
  CHECK(msg ==
        "[exp] a value traced by make_jaxpr (f64[]) was used after its transform returned. Return "
        "values from the transformed function instead of storing them in captured or global variables.");
  CHECK_THROWS_AS(leaked.item<double>(), fx::ConcretizationError);
}

TEST_CASE("make_jaxpr: nested staging sees the outer tracer as a constant of the inner Jaxpr") {
  fx::Jaxpr inner;
  auto outer = fx::make_jaxpr([&](const fx::Tensor& a) {
    inner = fx::make_jaxpr([&](const fx::Tensor& b) { return lax::sin(a); })(fx::scalar(0.0f));
    return fx::eval_jaxpr(inner, {fx::scalar(0.0f)})[0];
  })(fx::tensor({1.0f, 2.0f}));
  CHECK(str(inner) ==
        "{ lambda a:f32[2] ; b:f32[]. let\n"
        "    c:f32[2] = sin a\n"
        "  in (c,) }");
  // Replaying the inner Jaxpr under the outer trace stages its equation there.
  CHECK(str(outer) ==
        "{ lambda ; a:f32[2]. let\n"
        "    b:f32[2] = sin a\n"
        "  in (b,) }");
}

TEST_CASE("eval_jaxpr: replays eagerly and checks input avals") {
  auto j = fx::make_jaxpr([](const fx::Tensor& a) { return lax::tanh(lax::sin(a)); })(fx::tensor({0.5, 1.0}));
  fx::Tensor x = fx::tensor({0.25, -3.0});
  auto out = fx::eval_jaxpr(j, {x});
  CHECK(out[0].to_vector<double>() == lax::tanh(lax::sin(x)).to_vector<double>());
  CHECK(message_of<fx::ShapeError>([&] {
          fx::eval_jaxpr(j, {fx::tensor({1.0f, 2.0f})});
        }) ==
        "[eval_jaxpr] input 0 is f32[2] but the Jaxpr expects f64[2]. Pass inputs with the traced shapes and dtypes.");
  CHECK_THROWS_AS(fx::eval_jaxpr(j, {}), fx::Error);
}

TEST_CASE("typecheck: a corrupted Jaxpr is rejected, naming the equation") {
  auto j = fx::make_jaxpr([](const fx::Tensor& a) { return lax::sin(lax::exp(a)); })(fx::tensor({0.5f}));
  fx::typecheck(j);
  fx::Jaxpr bad_type = j;
  bad_type.avals[bad_type.equations[1].outputs[0]] = fx::AbstractValue{fx::Shape{2}, fx::f32};
  CHECK(message_of<fx::Error>([&] { fx::typecheck(bad_type); }) ==
        "[typecheck] equation 1 (sin) output 0 is f32[1] by the shape rule but typed f32[2].");
  fx::Jaxpr use_before_def = j;
  std::swap(use_before_def.equations[0], use_before_def.equations[1]);
  CHECK(message_of<fx::Error>([&] { fx::typecheck(use_before_def); }).find("uses variable id") != std::string::npos);
  fx::Jaxpr bad_dtype = j;
  bad_dtype.avals[bad_dtype.invars[0]].dtype = fx::i32;
  CHECK(message_of<fx::DTypeError>([&] { fx::typecheck(bad_dtype); }).find("[exp]") == 0);
}

TEST_CASE("eager: inputs on different devices or empty handles are rejected with fluxion errors") {
  CHECK(message_of<fx::Error>([] { lax::sin(fx::Tensor()); }) ==
        "[sin] an input is an empty (default-constructed) Tensor. Assign it a value first.");
  CHECK(message_of<fx::DTypeError>([] { lax::sin(fx::arange(3)); }) ==
        "[sin] got an operand of type i32[3]; sin accepts f32, f64, f16, bf16. Convert it with fx::astype first.");
}
