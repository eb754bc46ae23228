// Catalogue: each control-flow construct alone (mirrors single() in cat_control.py), and the inner
// and outer constructs that cat_nested.cpp nests in each other.
#include <functional>
#include <tuple>

#include "control.hpp"

namespace diff {

using Pair = std::pair<Tensor, Tensor>;
using Branch = std::function<Tensor(const Tensor&)>;

Tensor at(const Tensor& v, int64_t i) { return fx::reshape(fx::slice(v, {i}, {i + 1}), {}); }
Tensor as_i32(const Tensor& b) { return fx::astype(b, fx::i32); }

Tensor half_tanh(const Tensor& v) {
  static const auto f = fx::custom_jvp([](const Tensor& x) { return fx::tanh(x); },
                                       [](const std::tuple<Tensor>& p, const std::tuple<Tensor>& t) {
                                         Tensor y = fx::tanh(std::get<0>(p));
                                         return Pair{y, (1.0 - y * y) * 0.5 * std::get<0>(t)};
                                       });
  return f(v);
}

Tensor sin2(const Tensor& v) {
  static const auto f = fx::custom_vjp([](const Tensor& x) { return fx::sin(x) * 2.0; },
                                       [](const Tensor& x) {
                                         return Pair{fx::sin(x) * 2.0, fx::cos(x)};
                                       },
                                       [](const Tensor& r, const Tensor& ct) { return r * ct * 3.0; });
  return f(v);
}

// ---- inner constructs: h [3] -> [3] ----
Tensor in_cond(const Tensor& h) {
  return fx::cond(
      fx::sum(h) > 0, [](const Tensor& v) { return fx::sin(v) * 1.1; },
      [](const Tensor& v) { return fx::cos(v) - 0.5 * v; }, h);
}

Tensor in_switch(const Tensor& h) {
  Tensor k = as_i32(fx::sum(h) > 0) + as_i32(at(h, 0) > 0.3);
  return fx::switch_(
      k,
      {Branch([](const Tensor& v) { return v * 1.2; }), Branch([](const Tensor& v) { return fx::sin(v) + 0.1; }),
       Branch([](const Tensor& v) { return 0.5 * v * v - 0.2; })},
      h);
}

Tensor in_scan(const Tensor& h) {
  Tensor xs = fx::astype(fx::tensor({{0.1, -0.2, 0.3}, {0.0, 0.2, -0.1}}), h.dtype());
  auto r = fx::scan(
      [](const Tensor& c, const Tensor& x) {
        Tensor c2 = fx::tanh(c * 0.9 + x);
        return Pair{c2, fx::sum(c2)};
      },
      h, xs);
  return r.first + 0.1 * fx::sum(r.second);
}

Tensor in_fori(const Tensor& h) {
  return fx::fori_loop(
      0, 3,
      [](const Tensor& i, const Tensor& v) { return v * 0.8 + fx::sin(v) * 0.3 + fx::astype(i, v.dtype()) * 0.01; }, h);
}

Tensor in_while(const Tensor& h) {
  Pair out = fx::while_loop([](const Pair& s) { return s.first < 3; },
                            [](const Pair& s) {
                              return Pair{s.first + 1, s.second * 0.9 + 0.1 * fx::sin(s.second)};
                            },
                            Pair{fx::scalar<int32_t>(0), h}, fx::max_steps(5));
  return out.second;
}

Tensor in_checkpoint(const Tensor& h) {
  return fx::checkpoint([](const Tensor& v) { return fx::sin(v) * v + 0.5; })(h);
}

Tensor in_jit(const Tensor& h) {
  static const auto helper = fx::jit([](const Tensor& v) { return fx::tanh(v) * 1.3 - 0.2 * v; });
  return helper(h);
}

Tensor in_custom_jvp(const Tensor& h) { return half_tanh(h) + 0.1 * h; }
Tensor in_custom_vjp(const Tensor& h) { return sin2(h) * 0.5 + 0.2 * h; }

const std::vector<std::pair<const char*, Inner>>& inners() {
  static const std::vector<std::pair<const char*, Inner>> v{
      {"cond", in_cond}, {"switch", in_switch},         {"scan", in_scan},
      {"fori", in_fori}, {"while", in_while},           {"checkpoint", in_checkpoint},
      {"jit", in_jit},   {"custom_jvp", in_custom_jvp}, {"custom_vjp", in_custom_vjp}};
  return v;
}

// ---- outer constructs: (inner g, inputs) -> [3] ----
Tensor out_scan(Inner g, const Args& a) {
  auto r = fx::scan(
      [g](const Tensor& h, const Tensor& row) {
        Tensor h2 = g(h * 0.7 + row * 0.3);
        return Pair{h2, fx::sum(h2 * h2)};
      },
      a[0], a[1]);
  return r.first + 0.1 * fx::sum(r.second);
}

Tensor out_fori(Inner g, const Args& a) {
  Tensor x = a[0];
  return fx::fori_loop(
      0, 3, [g, x](const Tensor&, const Tensor& h) { return g(h) * 0.9 + 0.1 * x; }, x);
}

Tensor out_while(Inner g, const Args& a) {
  Tensor x = a[0];
  Pair out = fx::while_loop([](const Pair& s) { return s.first < 3; },
                            [g, x](const Pair& s) {
                              return Pair{s.first + 1, g(s.second) + 0.05 * x};
                            },
                            Pair{fx::scalar<int32_t>(0), x}, fx::max_steps(4));
  return out.second;
}

Tensor out_cond(Inner g, const Args& a) {
  return fx::cond(
      fx::sum(a[0]) > 0.1, [g](const Tensor& v) { return g(v); }, [g](const Tensor& v) { return g(v * 0.5) * 2.0; },
      a[0]);
}

Tensor out_switch(Inner g, const Args& a) {
  Tensor k = as_i32(at(a[0], 0) > -0.3) + as_i32(at(a[0], 0) > 0.3);
  return fx::switch_(
      k,
      {Branch([g](const Tensor& v) { return g(v); }), Branch([g](const Tensor& v) { return g(-v) * 0.5; }),
       Branch([g](const Tensor& v) { return v * 2.0 + g(v * 0.3); })},
      a[0]);
}

Tensor out_checkpoint(Inner g, const Args& a) {
  return fx::checkpoint([g](const Tensor& v) { return g(g(v) * 0.8); })(a[0]);
}

Tensor out_jit(Inner g, const Args& a) {
  return fx::jit([g](const Tensor& v) { return g(v) * 1.5 + v; })(a[0]);
}

const std::vector<std::pair<const char*, Outer>>& outers() {
  static const std::vector<std::pair<const char*, Outer>> v{{"scan", out_scan},     {"fori", out_fori},
                                                            {"while", out_while},   {"cond", out_cond},
                                                            {"switch", out_switch}, {"checkpoint", out_checkpoint},
                                                            {"jit", out_jit}};
  return v;
}

// ---- each construct alone ----
void add_control(Catalogue& c) {
  c.add("cf/cond", [](const Args& a) {
    return fx::cond(
        fx::sum(a[0]) > 0, [](const Tensor& v) { return fx::sin(v) * v; },
        [](const Tensor& v) { return fx::exp(v) - 1.0; }, a[0]);
  });
  c.add("cf/cond_pytree_and_closure", [](const Args& a) {
    Tensor y = a[1];
    Pair r = fx::cond(
        at(a[0], 0) > 0.0,
        [y](const Pair& p) {
          return Pair{p.first * y, fx::sum(p.second)};
        },
        [y](const Pair& p) {
          return Pair{p.first + y, fx::prod(p.second)};
        },
        Pair{a[0], a[0] * 2.0});
    return r.first + r.second;
  });
  c.add("cf/switch", [](const Args& a) {
    return fx::switch_(as_i32(at(a[0], 1) > 0) * 2,
                       {Branch([](const Tensor& v) { return v; }), Branch([](const Tensor& v) { return v * 5.0; }),
                        Branch([](const Tensor& v) { return fx::cos(v); })},
                       a[0]);
  });
  c.add("cf/switch_index_clamped", [](const Args& a) {
    Branch sin = [](const Tensor&v) { return fx::sin(v); }, cos = [](const Tensor&v) { return fx::cos(v); },
           exp = [](const Tensor&v) { return fx::exp(v); };
    return fx::switch_(fx::scalar<int32_t>(7), {sin, cos}, a[0]) +
           fx::switch_(fx::scalar<int32_t>(-2), {exp, sin}, a[0]);
  });
  auto grow_cond = [](const Tensor& v) { return fx::sum(v * v) < 10.0; };
  auto grow_body = [](const Tensor& v) { return v * 1.5 + 0.1; };
  c.add("cf/while_max_steps_data_dependent",
        [=](const Args& a) { return fx::while_loop(grow_cond, grow_body, a[0], fx::max_steps(8)); });
  c.add("cf/while_forward_only", [=](const Args& a) { return fx::while_loop(grow_cond, grow_body, a[0]); });
  c.add("cf/while_pytree_carry", [](const Args& a) {
    using S = std::tuple<Tensor, Tensor, Tensor>;
    S out = fx::while_loop(
        [](const S& s) { return std::get<0>(s) < 4; },
        [](const S& s) {
          return S{std::get<0>(s) + 1, std::get<1>(s) * 0.9 + fx::sin(std::get<2>(s)), std::get<2>(s) * 1.1};
        },
        S{fx::scalar<int32_t>(0), a[0], a[1]}, fx::max_steps(6));
    return std::get<1>(out);
  });
  c.add("cf/fori", [](const Args& a) {
    return fx::fori_loop(
        0, 4, [](const Tensor& i, const Tensor& h) { return fx::sin(h) * 1.2 + fx::astype(i, h.dtype()) * 0.1; }, a[0]);
  });
  c.add("cf/fori_tensor_bounds", [](const Args& a) {
    return fx::fori_loop(
        fx::scalar<int32_t>(1), fx::scalar<int32_t>(4),
        [](const Tensor& i, const Tensor& h) { return h * 0.5 + fx::cos(h) * fx::astype(i, h.dtype()); }, a[0]);
  });
  c.add("cf/scan", [](const Args& a) {
    auto r = fx::scan(
        [](const Tensor& h, const Tensor& x) {
          return Pair{fx::tanh(h + x), fx::sum(h * x)};
        },
        a[0], a[1]);
    return r.first * 2.0 + fx::sum(r.second);
  });
  c.add("cf/scan_reverse", [](const Args& a) {
    return fx::scan(
               [](const Tensor& h, const Tensor& x) {
                 return Pair{h * 0.5 + fx::sin(x), h * x};
               },
               a[0], a[1], fx::reverse)
        .second;
  });
  c.add("cf/scan_pytree", [](const Args& a) {
    auto r = fx::scan(
        [](const Pair& h, const Pair& x) {
          return std::pair<Pair, Pair>{{h.first * fx::cos(x.first), h.second + h.first * x.second},
                                       {h.first * x.second, fx::sin(h.second)}};
        },
        Pair{a[0], a[1]}, Pair{a[2], a[2] * 0.5});
    return r.first.first + r.first.second * 2.0 + fx::sum(r.second.first) - fx::sum(r.second.second);
  });
  c.add("cf/scan_rnn", [](const Args& a) {
    Tensor w = a[0];
    return fx::scan(
               [w](const Tensor& h, const Tensor& x) {
                 return Pair{fx::tanh(fx::matmul(w, h) + x), fx::sum(h * h)};
               },
               fx::astype(fx::zeros({3}), w.dtype()), a[1])
        .second;
  });
  c.add("cf/checkpoint", [](const Args& a) {
    return fx::checkpoint([](const Tensor& v, const Tensor& w) { return fx::sin(v * w) * fx::exp(w); })(a[0], a[1]);
  });
  c.add("cf/custom_jvp", [](const Args& a) { return half_tanh(a[0] * 2.0) * a[0]; });
  c.add("cf/custom_vjp", [](const Args& a) { return sin2(a[0]) * a[0]; });
  c.add("cf/jit_helper", [](const Args& a) {
    return fx::jit([](const Tensor& v, const Tensor& w) { return fx::sin(v) * w + v; })(a[0], a[1]) * 2.0;
  });
}

}  // namespace diff
