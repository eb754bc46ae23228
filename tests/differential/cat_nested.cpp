// Catalogue: every control-flow construct nested in every other (nest/<inner>_in_<outer>), and the
// deeper nests and transforms inside loop bodies (deep/*). Mirrors nested() and deep() in
// cat_control.py.
#include <string>
#include <tuple>

#include "control.hpp"

namespace diff {
namespace {

using Pair = std::pair<Tensor, Tensor>;

Tensor scan_of_inner_scan(const Tensor& h) { return out_scan(in_scan, {h, fx::stack({h, h * 0.5})}); }
Tensor while_of_cond(const Tensor& h) { return out_while(in_cond, {h}); }
Tensor checkpoint_of_fori(const Tensor& h) { return out_checkpoint(in_fori, {h}); }
Tensor cond_of_switch(const Tensor& h) { return out_cond(in_switch, {h}); }
Tensor jit_of_custom_vjp(const Tensor& h) { return out_jit(in_custom_vjp, {h}); }

}  // namespace

void add_nested(Catalogue& c) {
  for (const auto& [oname, outer] : outers())
    for (const auto& [iname, inner] : inners())
      c.add(std::string("nest/") + iname + "_in_" + oname, [o = outer, g = inner](const Args& a) { return o(g, a); });

  c.add("deep/scan_in_scan_in_scan", [](const Args& a) { return out_scan(scan_of_inner_scan, a); });
  c.add("deep/cond_in_while_in_scan", [](const Args& a) { return out_scan(while_of_cond, a); });
  c.add("deep/fori_in_checkpoint_in_scan", [](const Args& a) { return out_scan(checkpoint_of_fori, a); });
  c.add("deep/switch_in_cond_in_fori", [](const Args& a) { return out_fori(cond_of_switch, a); });
  c.add("deep/custom_vjp_in_jit_in_while", [](const Args& a) { return out_while(jit_of_custom_vjp, a); });
  c.add("deep/while_forward_only_holding_scan", [](const Args& a) {
    return fx::while_loop([](const Pair& s) { return s.first < 3; },
                          [](const Pair& s) {
                            return Pair{s.first + 1, in_scan(s.second)};
                          },
                          Pair{fx::scalar<int32_t>(0), a[0]})
        .second;
  });
  c.add("deep/while_forward_only_holding_cond", [](const Args& a) {
    return fx::while_loop([](const Tensor& v) { return fx::sum(v * v) < 8.0; },
                          [](const Tensor& v) { return in_cond(v) * 1.7 + 0.2; }, a[0]);
  });
  c.add("deep/vmap_in_scan_body", [](const Args& a) {
    auto body = [](const Tensor& h, const Tensor& x) {
      Tensor rows = fx::vmap([](const Tensor& r) { return fx::sin(r) * fx::sum(r); })(fx::outer(x, h));
      return std::pair<Tensor, std::tuple<>>{h + fx::sum(rows, {0}) * 0.1, {}};
    };
    return fx::scan(body, a[0], a[1]).first;
  });
  c.add("deep/grad_in_scan_body", [](const Args& a) {
    auto body = [](const Tensor& h, const Tensor& x) {
      Tensor g = fx::grad([x](const Tensor& v) { return fx::sum(fx::sin(v * x) * v); })(h);
      return std::pair<Tensor, std::tuple<>>{h - 0.1 * g, {}};
    };
    return fx::scan(body, a[0], a[1]).first;
  });
  c.add("deep/jvp_in_fori_body", [](const Args& a) {
    Tensor t = a[1];
    return fx::fori_loop(
        0, 3,
        [t](const Tensor&, const Tensor& h) {
          auto tanh = [](const Tensor& v) { return fx::tanh(v); };
          return h + 0.2 * fx::jvp(tanh, std::make_tuple(h), std::make_tuple(t)).second;
        },
        a[0]);
  });
}

}  // namespace diff
