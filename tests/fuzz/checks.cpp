// The checks run on every random program. Tolerances are relative to the result's largest
// magnitude (a reassociated sum may differ from eager evaluation by a few ulps of its largest
// terms, not of its smallest); f32 anywhere in the program takes the f32 tolerances.
#include <cmath>
#include <cstring>
#include <typeinfo>
#include <limits>
#include <random>
#include <sstream>

#include "fuzz/checks.hpp"
#include "samples.hpp"

namespace fluxion::fuzz {

const char* check_name(Check c) {
  static const char* const names[] = {"eager = jit",
                                      "vmap = loop",
                                      "jvp = finite differences",
                                      "<w, J v> = <J^T w, v> (vjp)",
                                      "jacfwd = jacrev",
                                      "grad(jit) = jit(grad) = grad"};
  return names[static_cast<size_t>(c)];
}

namespace {

using Values = std::vector<Tensor>;

Tensor random_like(const AbstractValue& a, uint64_t seed, double lo, double hi) {
  return testing::random_tensor(a.shape, a.dtype, seed, lo, hi);
}

Values random_like(const Values& xs, uint64_t seed, double lo, double hi) {
  Values out;
  for (size_t i = 0; i < xs.size(); ++i) out.push_back(random_like(xs[i].aval(), seed * 31 + i, lo, hi));
  return out;
}

// Distance in units in the last place of `dt` (0 for equal values, infinity for NaN vs number).
double ulps(double a, double b, DType dt) {
  if (a == b || (std::isnan(a) && std::isnan(b))) return 0;
  if (std::isnan(a) || std::isnan(b)) return std::numeric_limits<double>::infinity();
  auto ordered64 = [](double x) {
    int64_t i;
    std::memcpy(&i, &x, sizeof i);
    return i < 0 ? std::numeric_limits<int64_t>::min() - i : i;
  };
  auto ordered32 = [](float x) {
    int32_t i;
    std::memcpy(&i, &x, sizeof i);
    return static_cast<int64_t>(i < 0 ? std::numeric_limits<int32_t>::min() - i : i);
  };
  int64_t d =
      dt == f32 ? ordered32(static_cast<float>(a)) - ordered32(static_cast<float>(b)) : ordered64(a) - ordered64(b);
  return std::fabs(static_cast<double>(d));
}

// Elementwise tolerance; `precision` is the dtype ulps are counted in (f32 when the program
// computes anything in f32, even if its result is f64).
struct Tol {
  double rtol, atol;
  DType precision = f64;
};

std::string text(const Tensor& t) {
  std::ostringstream os;
  os.precision(17);
  os << t;
  return os.str();
}

// Compares got with want: |g - w| <= atol + rtol * max(|g|, |w|, max |want|) elementwise. Fills
// the outcome (error ratio, ulps, and on failure a description naming both results).
void compare(Outcome& o, const std::string& what, const char* got_name, const Tensor& got, const char* want_name,
             const Tensor& want, Tol tol) {
  std::ostringstream os;
  os.precision(17);
  if (got.aval() != want.aval()) {
    o.kind = Outcome::Failed;
    os << what << ": " << got_name << " is " << got.aval() << " but " << want_name << " is " << want.aval() << '\n';
    o.detail += os.str();
    return;
  }
  std::vector<double> g = got.to_vector<double>(), w = want.to_vector<double>();
  double scale = 0;
  for (double x : w) scale = std::max(scale, std::fabs(x));
  double worst = 0;
  size_t at = 0;
  const DType unit = got.dtype() == f32 ? f32 : tol.precision;
  const double eps = unit == f32 ? 0x1p-23 : 0x1p-52;
  for (size_t i = 0; i < g.size(); ++i) {
    if (g[i] == w[i] || (std::isnan(g[i]) && std::isnan(w[i]))) continue;
    double err = std::fabs(g[i] - w[i]);
    // Ulps of the element, or of the result's largest element where it cancelled to a small one
    // (at least of the magnitude below which atol dominates: results near 0 are compared absolutely).
    double floor = tol.rtol > 0 ? tol.atol / tol.rtol : 0;
    o.ulps = std::max(o.ulps, std::min(ulps(g[i], w[i], unit), err / (eps * std::max(scale, floor))));
    double ratio = err / (tol.atol + tol.rtol * std::max({std::fabs(g[i]), std::fabs(w[i]), scale}));
    if (!(ratio <= worst)) worst = ratio, at = i;  // NaN ratios win
  }
  o.error_ratio = std::max(o.error_ratio, worst);
  if (!(worst <= 1)) {
    o.kind = Outcome::Failed;
    os << what << ": element " << at << " differs: " << got_name << " " << g[at] << ", " << want_name << " " << w[at]
       << " (" << ulps(g[at], w[at], unit) << " " << unit << " ulps; " << worst << " times the tolerance, rtol "
       << tol.rtol << ", atol " << tol.atol << ")\n"
       << "  " << got_name << ": " << text(got) << "\n  " << want_name << ": " << text(want) << '\n';
    o.detail += os.str();
  }
}

double dot(const Values& a, const Values& b, double* magnitude) {
  double s = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    std::vector<double> x = a[i].to_vector<double>(), y = b[i].to_vector<double>();
    for (size_t k = 0; k < x.size(); ++k) s += x[k] * y[k], *magnitude += std::fabs(x[k] * y[k]);
  }
  return s;
}

// Tolerances of the value checks (eager = jit, vmap = loop) and of the derivative checks.
// f32: about 340 ulps of the largest element (the worst of 100,000 programs was 164, a batched
// f32 jvp of gram products that cancel); f64: about 4500 ulps.
Tol value_tol(const Program& p) { return p.has_f32 ? Tol{4e-5, 4e-6, f32} : Tol{1e-12, 1e-13, f64}; }
Tol derivative_tol(const Program& p) { return p.has_f32 ? Tol{2e-3, 1e-4, f32} : Tol{1e-9, 1e-11, f64}; }

// Sets the predicate log for the duration of a scope.
struct PredicateLog {
  explicit PredicateLog(std::vector<int>* log) { set_predicate_log(log); }
  ~PredicateLog() { set_predicate_log(nullptr); }
};

Outcome eager_jit(const Program& p, const Values& xs) {
  Outcome o;
  Tensor y = run1(p, xs);
  auto f = [&p](const Values& v) { return run1(p, v); };
  typecheck(make_jaxpr(f)(xs));
  auto jf = jit(f);
  Tensor first = jf(xs), again = jf(xs);
  compare(o, "eager = jit", "jit", first, "eager", y, value_tol(p));
  if (y.aval() != p.aval_of(p.outputs[0])) {
    o.kind = Outcome::Failed;
    std::ostringstream os;
    os << "eager result is " << y.aval() << " but the generator's abstract evaluation gave " << p.aval_of(p.outputs[0])
       << '\n';
    o.detail += os.str();
  }
  Outcome cached;
  compare(cached, "the cached plan's second call = its first", "second call", again, "first call", first, Tol{0, 0});
  if (cached.kind == Outcome::Failed) o.kind = Outcome::Failed, o.detail += cached.detail;
  return o;
}

Outcome vmap_loop(const Program& p, const Values& xs, uint64_t seed) {
  std::mt19937_64 rng(seed);
  auto uni = [&](int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); };
  int examples = uni(1, 3);
  std::vector<bool> mapped(xs.size());
  for (size_t i = 0; i < xs.size(); ++i) mapped[i] = uni(0, 3) > 0;
  mapped[static_cast<size_t>(uni(0, static_cast<int>(xs.size()) - 1))] = true;
  int64_t in_axis = uni(0, 3) == 0 ? -1 : 0, out_axis = uni(0, 3) == 0 ? -1 : 0;
  int variant = uni(0, 2);
  std::vector<Values> ex{xs};
  for (int b = 1; b < examples; ++b) ex.push_back(random_like(xs, seed + static_cast<uint64_t>(b), -2, 2));
  Values batched, fixed;
  for (size_t i = 0; i < xs.size(); ++i) {
    if (!mapped[i]) {
      fixed.push_back(xs[i]);
      for (Values& e : ex) e[i] = xs[i];
      continue;
    }
    Values slices;
    for (const Values& e : ex) slices.push_back(e[i]);
    batched.push_back(stack(slices, in_axis == 0 ? 0 : xs[i].ndim()));
  }
  auto g = [&p, &mapped](const Values& b, const Values& u) {
    Values all;
    size_t bi = 0, ui = 0;
    for (bool m : mapped) all.push_back(m ? b[bi++] : u[ui++]);
    return run1(p, all);
  };
  InAxes axes = in_axes(in_axis, none);
  OutAxes oa = out_axes(out_axis);
  Tensor got = variant == 0   ? vmap(g, axes, oa)(batched, fixed)
               : variant == 1 ? vmap(jit(g), axes, oa)(batched, fixed)
                              : jit(vmap(g, axes, oa))(batched, fixed);
  typecheck(make_jaxpr(vmap(g, axes, oa))(batched, fixed));
  Values ys;
  for (const Values& e : ex) ys.push_back(run1(p, e));
  Tensor want = stack(ys, out_axis == 0 ? 0 : ys[0].ndim());
  Outcome o;
  static const char* const names[] = {"vmap(f)", "vmap(jit(f))", "jit(vmap(f))"};
  std::ostringstream what;
  what << "vmap = loop (" << examples << " examples, mapped inputs";
  for (size_t i = 0; i < mapped.size(); ++i)
    if (mapped[i]) what << " v" << i;
  what << ", in_axes " << in_axis << ", out_axes " << out_axis << ")";
  compare(o, what.str(), names[variant], got, "loop", want, value_tol(p));
  return o;
}

Outcome jvp_finite_differences(const Program& p, const Values& xs, uint64_t seed) {
  Outcome o;
  if (p.has_f32) {  // f32 cannot resolve finite differences
    o.kind = Outcome::Skipped;
    return o;
  }
  Values vs = random_like(xs, seed, -1, 1);
  auto f = [&p](const Values& v) { return run1(p, v); };
  Tensor t = jvp(f, std::make_tuple(xs), std::make_tuple(vs)).second;
  std::vector<int> base, log;
  {
    PredicateLog scope(&base);
    run1(p, xs);
  }
  // Fourth-order central differences at decreasing steps h until two in a row agree: a kink
  // (a near tie of maximum) or a branch boundary within 2h of x makes the larger steps disagree.
  // The last two estimates' difference bounds the error of the finite differences themselves.
  auto at = [&](double step, bool& crossed) {
    Values moved;
    for (size_t i = 0; i < xs.size(); ++i) moved.push_back(xs[i] + vs[i] * step);
    log.clear();
    PredicateLog scope(&log);
    std::vector<double> y = run1(p, moved).to_vector<double>();
    crossed = crossed || log != base;
    return y;
  };
  // Empty when a point of the stencil takes another branch than x.
  auto stencil = [&](double h) {
    bool crossed = false;
    std::vector<double> a = at(h, crossed), b = at(-h, crossed), c = at(2 * h, crossed), d = at(-2 * h, crossed);
    std::vector<double> r(a.size());
    for (size_t i = 0; i < a.size(); ++i) r[i] = (8 * (a[i] - b[i]) - (c[i] - d[i])) / (12 * h);
    return crossed ? std::vector<double>() : r;
  };
  std::vector<double> tv = t.to_vector<double>(), prev, cur;
  auto scale_of = [&]() {
    double s = 1;
    for (size_t i = 0; i < tv.size(); ++i) s = std::max({s, std::fabs(tv[i]), std::fabs(cur[i])});
    return s;
  };
  bool converged = false;
  double scale = 1;
  for (double h : {2e-3, 1e-3, 4e-4, 1.6e-4, 6.4e-5, 2.56e-5, 1e-5}) {
    prev = std::move(cur);
    cur = stencil(h);
    if (prev.empty() || cur.empty()) continue;
    scale = scale_of();
    double gap = 0;
    for (size_t i = 0; i < cur.size(); ++i) gap = std::max(gap, std::fabs(prev[i] - cur[i]));
    if (gap <= 1e-8 * scale) {  // a tenth of the tolerance below: a kink's blur must not pass
      converged = true;
      break;
    }
  }
  if (!converged) {  // a kink or a branch boundary closer than 2e-5 to x
    o.kind = Outcome::Skipped;
    return o;
  }
  double worst = 0;
  size_t worst_at = 0;
  for (size_t i = 0; i < tv.size(); ++i) {
    double ratio = std::fabs(tv[i] - cur[i]) / (1e-7 * scale + 4 * std::fabs(prev[i] - cur[i]));
    if (!(ratio <= worst)) worst = ratio, worst_at = i;
  }
  o.error_ratio = worst;
  if (!(worst <= 1)) {
    o.kind = Outcome::Failed;
    std::ostringstream os;
    os.precision(17);
    os << "jvp = finite differences: element " << worst_at << ": jvp " << tv[worst_at] << ", finite differences "
       << cur[worst_at] << " (" << prev[worst_at] << " at the previous, larger step)\n  jvp: " << text(t)
       << "\n  tangents:";
    for (const Tensor& v : vs) os << ' ' << text(v);
    os << '\n';
    o.detail = os.str();
  }
  return o;
}

Outcome vjp_jvp(const Program& p, const Values& xs, uint64_t seed) {
  Outcome o;
  auto f = [&p](const Values& v) { return run1(p, v); };
  Values vs = random_like(xs, seed, -1, 1);
  auto [y, t] = jvp(f, std::make_tuple(xs), std::make_tuple(vs));
  Tensor w = random_like(y.aval(), seed + 7, -1, 1);
  auto pulled = vjp(f, xs);
  Values ct = std::get<0>(pulled.second(w));
  compare(o, "linearize = jvp", "linearize", linearize(f, xs).second(vs), "jvp", t, derivative_tol(p));
  double mag = 0;
  double lhs = dot({w}, {t}, &mag), rhs = dot(ct, vs, &mag);
  Tol tol = derivative_tol(p);
  double ratio = std::fabs(lhs - rhs) / (tol.atol + tol.rtol * mag);
  o.error_ratio = std::max(o.error_ratio, ratio);
  if (!(ratio <= 1)) {
    o.kind = Outcome::Failed;
    std::ostringstream os;
    os.precision(17);
    os << "<w, J v> = " << lhs << " but <J^T w, v> = " << rhs << " (sum of |terms| " << mag << ")\n  J v: " << text(t)
       << "\n  J^T w:";
    for (const Tensor& c : ct) os << ' ' << text(c);
    os << "\n  w: " << text(w) << "\n  v:";
    for (const Tensor& v : vs) os << ' ' << text(v);
    os << '\n';
    o.detail = os.str();
  }
  return o;
}

Outcome jacfwd_jacrev(const Program& p, const Values& xs) {
  Outcome o;
  int64_t n = 0;
  for (const Tensor& x : xs) n += x.size();
  if (n > 24 || p.aval_of(p.outputs[0]).shape.num_elements() > 24) {
    o.kind = Outcome::Skipped;
    return o;
  }
  auto f = [&p](const Values& v) { return run1(p, v); };
  Values fwd = jacfwd(f)(xs), rev = jacrev(f)(xs);
  DType out = p.aval_of(p.outputs[0]).dtype;
  for (size_t i = 0; i < xs.size(); ++i) {
    // Like JAX: forward mode's blocks take the output's dtype, reverse mode's the input's.
    std::string what = "jacfwd = jacrev, block of input v" + std::to_string(i);
    if (fwd[i].dtype() != out || rev[i].dtype() != xs[i].dtype()) {
      std::ostringstream os;
      os << what << ": jacfwd is " << fwd[i].aval() << " (want the output's dtype " << out << "), jacrev is "
         << rev[i].aval() << " (want the input's dtype " << xs[i].dtype() << ")\n";
      o.kind = Outcome::Failed;
      o.detail += os.str();
      continue;
    }
    compare(o, what, "jacrev", astype(rev[i], out), "jacfwd", fwd[i], derivative_tol(p));
  }
  return o;
}

Outcome grad_jit(const Program& p, const Values& xs, uint64_t seed) {
  Outcome o;
  Tensor w = random_like(p.aval_of(p.outputs[0]), seed, -1, 1);
  auto s = [&p, w](const Values& v) { return sum(run1(p, v) * w); };
  Values g = grad(s)(xs), gj = grad(jit(s))(xs), jg = jit(grad(s))(xs);
  typecheck(make_jaxpr(grad(s))(xs));
  for (size_t i = 0; i < xs.size(); ++i) {
    std::string block = " (input v" + std::to_string(i) + ")";
    compare(o, "grad(jit(f)) = grad(f)" + block, "grad(jit(f))", gj[i], "grad(f)", g[i], derivative_tol(p));
    compare(o, "jit(grad(f)) = grad(f)" + block, "jit(grad(f))", jg[i], "grad(f)", g[i], derivative_tol(p));
  }
  return o;
}

}  // namespace

Values make_inputs(const Program& p, uint64_t seed) {
  Values xs;
  for (size_t i = 0; i < p.inputs.size(); ++i) xs.push_back(random_like(p.inputs[i], seed * 131 + i, -2, 2));
  return xs;
}

Outcome run_check(Check c, const Program& p, const Values& xs, uint64_t seed) {
  bool reverse = c == Check::VjpJvp || c == Check::JacfwdJacrev || c == Check::GradJit;
  if (reverse && !p.reverse_ok) {
    Outcome o;
    o.kind = Outcome::Skipped;
    return o;
  }
  try {
    switch (c) {
      case Check::EagerJit: return eager_jit(p, xs);
      case Check::VmapLoop: return vmap_loop(p, xs, seed);
      case Check::JvpFiniteDifferences: return jvp_finite_differences(p, xs, seed);
      case Check::VjpJvp: return vjp_jvp(p, xs, seed);
      case Check::JacfwdJacrev: return jacfwd_jacrev(p, xs);
      default: return grad_jit(p, xs, seed);
    }
  } catch (const std::exception& e) {
    set_predicate_log(nullptr);
    Outcome o;
    o.kind = Outcome::Failed;
    o.detail = std::string(check_name(c)) + ": threw " + typeid(e).name() + ": " + e.what() + '\n';
    return o;
  }
}

}  // namespace fluxion::fuzz
