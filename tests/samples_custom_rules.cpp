// Samples of the custom-rule primitives: custom_jvp_call, custom_vjp_call and custom_lin. The
// user rules here are the true derivatives, so the rule suite's finite-difference, vmap-vs-loop
// and composition checks test the machinery (batched rules, bwd transposed, custom_lin's jvp).
#include "samples.hpp"

namespace fluxion::testing {
namespace custom_rule_samples {

using Fn = std::function<std::vector<Tensor>(const std::vector<Tensor>&)>;

std::string aval_text(const Tensor& t) {
  std::ostringstream o;
  o << t.aval();
  return o.str();
}

// sin(x)·x with its derivative written by hand.
auto sin_times_x() {
  return custom_jvp([](const Tensor& x) { return sin(x) * x; },
                    [](const std::tuple<Tensor>& p, const std::tuple<Tensor>& t) {
                      const Tensor& x = std::get<0>(p);
                      return std::pair<Tensor, Tensor>{sin(x) * x, (cos(x) * x + sin(x)) * std::get<0>(t)};
                    });
}

// Two arguments and two outputs: (x·exp(y), sum(y)).
auto two_by_two() {
  return custom_jvp([](const Tensor& x, const Tensor& y) { return std::make_tuple(x * exp(y), sum(y)); },
                    [](const std::tuple<Tensor, Tensor>& p, const std::tuple<Tensor, Tensor>& t) {
                      const auto& [x, y] = p;
                      const auto& [dx, dy] = t;
                      Tensor e = exp(y);
                      return std::pair<std::tuple<Tensor, Tensor>, std::tuple<Tensor, Tensor>>{
                          {x * e, sum(y)}, {dx * e + x * e * dy, sum(dy)}};
                    });
}

std::vector<Sample> custom_jvp_samples(DType dt) {
  std::vector<Sample> s;
  auto f = sin_times_x();
  for (const Shape& shape : {Shape{3}, Shape{}, Shape{2, 3}}) {
    Tensor x = random_tensor(shape, dt, 21);
    s.push_back(Sample{"sin(x)*x " + aval_text(x), {x}, unary_fn(f), {AbstractValue{shape, dt}}});
  }
  auto g = two_by_two();
  s.push_back(Sample{"two arguments, two outputs",
                     {random_tensor({2, 2}, dt, 22), random_tensor({2, 2}, dt, 23)},
                     [g](const std::vector<Tensor>& in) {
                       auto [a, b] = g(in[0], in[1]);
                       return std::vector<Tensor>{a, b};
                     },
                     {AbstractValue{{2, 2}, dt}, AbstractValue{{}, dt}}});
  return s;
}

std::vector<BadInput> custom_jvp_bad() {
  auto wrong_rule = custom_jvp([](const Tensor& x) { return sin(x); },
                               [](const std::tuple<Tensor>& p, const std::tuple<Tensor>&) {
                                 return std::pair<Tensor, Tensor>{sin(std::get<0>(p)), zeros({2}, f32)};
                               });
  return {bad<ShapeError>("rule returns a wrong tangent aval", "[custom_jvp] the jvp rule returned (f32[3], f32[2])",
                          [wrong_rule] { jvp(wrong_rule, zeros({3}, f32), ones({3}, f32)); }),
          bad<Error>("function closes over a tracer", "[custom_jvp] the function closes over a value traced", [] {
            grad([](const Tensor& w) {
              auto f = custom_jvp([&w](const Tensor& x) { return sum(x * w); },
                                  [](const std::tuple<Tensor>& p, const std::tuple<Tensor>& t) {
                                    return std::pair<Tensor, Tensor>{sum(std::get<0>(p)), sum(std::get<0>(t))};
                                  });
              return f(ones({3}, f32));
            })(ones({3}, f32));
          })};
}

const bool registered_jvp = register_samples("custom_jvp_call", {&custom_jvp_samples, custom_jvp_bad()});

// tanh with its vjp from the saved output.
auto tanh_vjp() {
  return custom_vjp([](const Tensor& x) { return tanh(x); },
                    [](const Tensor& x) {
                      Tensor y = tanh(x);
                      return std::pair<Tensor, Tensor>{y, y};
                    },
                    [](const Tensor& y, const Tensor& ct) { return ct * (1.0 - y * y); });
}

// A matrix product with residuals held in a tuple and cotangents for both arguments.
auto matmul_vjp() {
  return custom_vjp([](const Tensor& w, const Tensor& x) { return matmul(w, x); },
                    [](const Tensor& w, const Tensor& x) {
                      return std::pair<Tensor, std::tuple<Tensor, Tensor>>{matmul(w, x), {w, x}};
                    },
                    [](const std::tuple<Tensor, Tensor>& res, const Tensor& ct) {
                      const auto& [w, x] = res;
                      return std::make_tuple(matmul(ct, transpose(x)), matmul(transpose(w), ct));
                    });
}

std::vector<Sample> custom_vjp_samples(DType dt) {
  std::vector<Sample> s;
  auto f = tanh_vjp();
  for (const Shape& shape : {Shape{4}, Shape{}, Shape{2, 2}}) {
    Tensor x = random_tensor(shape, dt, 31);
    s.push_back(Sample{"tanh " + aval_text(x), {x}, unary_fn(f), {AbstractValue{shape, dt}}});
  }
  auto m = matmul_vjp();
  s.push_back(Sample{"matmul with tuple residuals",
                     {random_tensor({3, 4}, dt, 32), random_tensor({4, 2}, dt, 33)},
                     binary_fn(m),
                     {AbstractValue{{3, 2}, dt}}});
  return s;
}

std::vector<BadInput> custom_vjp_bad() {
  auto wrong_bwd = custom_vjp([](const Tensor& x) { return sin(x); },
                              [](const Tensor& x) {
                                return std::pair<Tensor, Tensor>{sin(x), x};
                              },
                              [](const Tensor&, const Tensor&) { return zeros({2}, f32); });
  auto wrong_fwd = custom_vjp([](const Tensor& x) { return sin(x); },
                              [](const Tensor& x) {
                                return std::pair<Tensor, Tensor>{sum(x), x};
                              },
                              [](const Tensor&, const Tensor& ct) { return ct; });
  return {bad<ShapeError>(
              "bwd returns a wrong cotangent aval", "[custom_vjp] bwd returned (f32[2])",
              [wrong_bwd] { grad([wrong_bwd](const Tensor& x) { return sum(wrong_bwd(x)); })(ones({3}, f32)); }),
          bad<ShapeError>("fwd returns a wrong output aval", "[custom_vjp] fwd's output returned (f32[])", [wrong_fwd] {
            grad([wrong_fwd](const Tensor& x) { return sum(wrong_fwd(x)); })(ones({3}, f32));
          })};
}

const bool registered_vjp = register_samples("custom_vjp_call", {&custom_vjp_samples, custom_vjp_bad()});

// custom_lin bound directly: residual A, argument tangent t, output tangent A·t (bwd: Aᵀ·ct).
Fn lin_fn() {
  return [](const std::vector<Tensor>& in) {
    const Tensor& a = in[0];
    AbstractValue arg = in[1].aval(), out{Shape{a.shape()[0]}, a.dtype()};
    return custom_detail::custom_lin_flat(
        [](const std::vector<Tensor>& v) { return std::vector<Tensor>{matmul(transpose(v[0]), v[1])}; }, {a}, {in[1]},
        {arg}, {out});
  };
}

std::vector<Sample> custom_lin_samples(DType dt) {
  std::vector<Sample> s;
  for (int64_t m : {1, 3}) {
    Tensor a = random_tensor({m, 4}, dt, 41), t = random_tensor({4}, dt, 42);
    s.push_back(Sample{"A t with A " + aval_text(a), {a, t}, lin_fn(), {AbstractValue{{m}, dt}}});
  }
  return s;
}

std::vector<BadInput> custom_lin_bad() {
  auto lin = lin_fn();
  return {bad<ShapeError>("tangent of the wrong aval", "[custom_lin] the inputs are (f32[2,4], f32[3])",
                          [] {
                            custom_detail::custom_lin_flat([](const std::vector<Tensor>& v) { return v; },
                                                           {zeros({2, 4}, f32)}, {zeros({3}, f32)},
                                                           {AbstractValue{{4}, f32}}, {AbstractValue{{2}, f32}});
                          }),
          bad<ShapeError>("bwd of the wrong aval", "[custom_vjp] bwd returned (f32[2,4])", [] {
            custom_detail::custom_lin_flat([](const std::vector<Tensor>& v) { return std::vector<Tensor>{v[0]}; },
                                           {zeros({2, 4}, f32)}, {zeros({4}, f32)}, {AbstractValue{{4}, f32}},
                                           {AbstractValue{{2}, f32}});
          })};
}

const bool registered_lin = register_samples("custom_lin", {&custom_lin_samples, custom_lin_bad()});

}  // namespace custom_rule_samples
}  // namespace fluxion::testing
