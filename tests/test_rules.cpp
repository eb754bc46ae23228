// The registry-driven rule suite: for every primitive and sample, derivatives against central
// finite differences to second order in every mode combination, the vjp identity, f32 against
// f64, vmap against a loop for every in_axes choice and batch sizes 0, 1, 3, vmap of vmap, and a
// composition matrix. Prints its counts and the worst relative error per primitive.
#include <doctest/doctest.h>

#include <cmath>
#include <functional>
#include <iostream>
#include <map>
#include <optional>
#include <sstream>

#include "samples.hpp"

namespace fx = fluxion;
using Vec = std::vector<fx::Tensor>;

namespace {

// f64 finite-difference tolerances of the issue (not loosened anywhere below).
constexpr double kRtol = 1e-5, kAtol = 1e-6;

struct Stats {
  int64_t checks = 0, failures = 0;
  std::map<std::string, double> worst;
  void record(const std::string& prim, double got, double want, double rtol = kRtol, double atol = kAtol) {
    ++checks;
    double err = std::fabs(got - want);
    double rel = err / std::max(std::fabs(want), 1e-12);
    worst[prim] = std::max(worst[prim], std::min(rel, err));
    if (!(err <= atol + rtol * std::max(std::fabs(got), std::fabs(want)))) ++failures;
  }
};
Stats& stats() {
  static Stats s;
  return s;
}

bool all_finite(const Vec& v) {
  for (const fx::Tensor& t : v)
    for (double x : t.to_vector<double>())
      if (!std::isfinite(x)) return false;
  return true;
}

// A sample seen as a function of its floating inputs only (indices etc. stay fixed).
struct DiffCase {
  const fx::Primitive* prim;
  fx::testing::Sample sample;
  std::vector<size_t> float_pos;
  Vec x;  // the floating inputs

  Vec g(const Vec& xs) const {
    Vec in = sample.inputs;
    for (size_t k = 0; k < float_pos.size(); ++k) in[float_pos[k]] = xs[k];
    // Integer outputs (lu's pivots, an index output) have no derivative: only floating ones are checked.
    Vec out;
    for (const fx::Tensor& o : sample.fn(in))
      if (fx::is_floating(o.dtype())) out.push_back(o);
    return out;
  }
};

std::optional<DiffCase> differentiable_case(const fx::Primitive* p, const fx::testing::Sample& s) {
  if (!s.differentiable) return std::nullopt;
  DiffCase c{p, s, {}, {}};
  for (size_t i = 0; i < s.inputs.size(); ++i)
    if (fx::is_floating(s.inputs[i].dtype())) c.float_pos.push_back(i), c.x.push_back(s.inputs[i]);
  if (c.x.empty()) return std::nullopt;
  Vec out = c.g(c.x);
  if (out.empty() || !all_finite(s.inputs) || !all_finite(out)) return std::nullopt;
  return c;
}

Vec random_like(const Vec& xs, uint64_t seed) {
  Vec out;
  for (const fx::Tensor& x : xs) out.push_back(fx::testing::random_tensor(x.shape(), x.dtype(), seed++, -1, 1));
  return out;
}

fx::Tensor inner(const Vec& a, const Vec& b) {
  fx::Tensor acc = fx::zeros({}, a.empty() ? fx::f64 : a[0].dtype());
  for (size_t i = 0; i < a.size(); ++i) acc = acc + fx::sum(a[i] * b[i]);
  return acc;
}
double num(const fx::Tensor& t) { return t.item<double>(); }

Vec axpy(const Vec& x, double a, const Vec& t) {
  Vec out;
  for (size_t i = 0; i < x.size(); ++i) out.push_back(x[i] + t[i] * a);
  return out;
}

// Central difference of phi along t.
double central_difference(const std::function<double(const Vec&)>& phi, const Vec& x, const Vec& t) {
  const double eps = 1e-6;
  return (phi(axpy(x, eps, t)) - phi(axpy(x, -eps, t))) / (2 * eps);
}

void check_derivatives(const DiffCase& c, uint64_t seed) {
  const std::string& name = c.prim->name;
  Vec w = random_like(c.g(c.x), seed);
  auto s = [&](const Vec& xs) { return inner(w, c.g(xs)); };
  Vec t1 = random_like(c.x, seed + 100), t2 = random_like(c.x, seed + 200);

  // First order: forward, reverse, and the vjp identity <ct, J t> = <J^T ct, t>.
  double fd1 = central_difference([&](const Vec& xs) { return num(s(xs)); }, c.x, t1);
  double fwd = num(fx::jvp(s, std::make_tuple(c.x), std::make_tuple(t1)).second);
  Vec grads = fx::grad(s)(c.x);
  stats().record(name, fwd, fd1);
  stats().record(name, num(inner(grads, t1)), fd1);
  auto [y, pullback] = fx::vjp([&](const Vec& xs) { return c.g(xs); }, c.x);
  Vec jt = fx::jvp([&](const Vec& xs) { return c.g(xs); }, std::make_tuple(c.x), std::make_tuple(t1)).second;
  Vec jtct = std::get<0>(pullback(w));
  stats().record(name, num(inner(w, jt)), num(inner(jtct, t1)), 1e-10, 1e-10);
  CHECK_MESSAGE(std::fabs(fwd - fd1) <= kAtol + kRtol * std::fabs(fd1),
                name << " " << c.sample.label << ": jvp " << fwd << " vs fd " << fd1);

  // Second order: t2^T H t1 by fwd∘fwd, fwd∘rev, rev∘fwd, rev∘rev against a difference of jvps.
  auto d1 = [&](const Vec& xs) { return fx::jvp(s, std::make_tuple(xs), std::make_tuple(t1)).second; };
  auto d1_rev = [&](const Vec& xs) { return inner(fx::grad(s)(xs), t1); };
  double fd2 = central_difference([&](const Vec& xs) { return num(d1(xs)); }, c.x, t2);
  double ff = num(fx::jvp(d1, std::make_tuple(c.x), std::make_tuple(t2)).second);
  double fr = num(fx::jvp(d1_rev, std::make_tuple(c.x), std::make_tuple(t2)).second);
  double rf = num(inner(fx::grad(d1)(c.x), t2));
  double rr = num(inner(fx::grad(d1_rev)(c.x), t2));
  // Second differences lose about half the digits: 1e-6 steps on a 1e-16 grid.
  for (double v : {ff, fr, rf, rr}) stats().record(name, v, fd2, 1e-4, 1e-4);
  CHECK_MESSAGE(std::fabs(ff - fd2) <= 1e-4 + 1e-4 * std::fabs(fd2),
                name << " " << c.sample.label << ": fwd∘fwd " << ff << " vs fd " << fd2);
  CHECK_MESSAGE(std::fabs(rr - ff) <= 1e-9 + 1e-9 * std::fabs(ff),
                name << " " << c.sample.label << ": rev∘rev " << rr << " vs fwd∘fwd " << ff);
  CHECK_MESSAGE(std::fabs(fr - ff) <= 1e-9 + 1e-9 * std::fabs(ff),
                name << " " << c.sample.label << ": fwd∘rev " << fr << " vs fwd∘fwd " << ff);
  CHECK_MESSAGE(std::fabs(rf - ff) <= 1e-9 + 1e-9 * std::fabs(ff),
                name << " " << c.sample.label << ": rev∘fwd " << rf << " vs fwd∘fwd " << ff);
}

// ---- vmap against a loop ----

// Input i stacked `size` times along `axis`; floating copies are scaled so elements differ.
fx::Tensor batched_input(const fx::Tensor& x, int64_t size, int64_t axis) {
  if (size == 0) {
    std::vector<int64_t> shape = x.shape().dims();
    shape.insert(shape.begin() + axis, 0);
    return fx::zeros(fx::Shape(shape), x.dtype());
  }
  Vec copies;
  for (int64_t b = 0; b < size; ++b)
    copies.push_back(fx::is_floating(x.dtype()) ? x * (1.0 + 0.125 * static_cast<double>(b)) : x);
  return fx::stack(copies, axis);
}

fx::Tensor example(const fx::Tensor& batched, int64_t axis, int64_t b) {
  std::vector<int64_t> start(static_cast<size_t>(batched.ndim()), 0), limit = batched.shape().dims();
  start[axis] = b, limit[axis] = b + 1;
  return fx::squeeze(fx::slice(batched, start, limit), {axis});
}

template <size_t... I> Vec vmap_apply(const fx::testing::Sample& s, const Vec& args,
                                      const std::vector<std::optional<int64_t>>& axes, std::index_sequence<I...>) {
  auto f = [&](const decltype((void)I, fx::Tensor())&... a) { return s.fn(Vec{a...}); };
  fx::InAxes in{axes};
  return fx::vmap(f, in)(args[I]...);
}

Vec vmap_call(const fx::testing::Sample& s, const Vec& args, const std::vector<std::optional<int64_t>>& axes) {
  switch (args.size()) {
    case 1: return vmap_apply(s, args, axes, std::make_index_sequence<1>{});
    case 2: return vmap_apply(s, args, axes, std::make_index_sequence<2>{});
    case 3: return vmap_apply(s, args, axes, std::make_index_sequence<3>{});
    case 4: return vmap_apply(s, args, axes, std::make_index_sequence<4>{});
    case 5: return vmap_apply(s, args, axes, std::make_index_sequence<5>{});
    case 6: return vmap_apply(s, args, axes, std::make_index_sequence<6>{});
    default: FAIL("samples with more than 6 inputs are not supported by the vmap suite"); return {};
  }
}

// The loop-and-stack result of mapping the sample over `size` examples.
Vec loop_and_stack(const fx::testing::Sample& s, const Vec& args, const std::vector<std::optional<int64_t>>& axes,
                   int64_t size) {
  std::vector<Vec> per_example;
  for (int64_t b = 0; b < size; ++b) {
    Vec in;
    for (size_t i = 0; i < args.size(); ++i) in.push_back(axes[i] ? example(args[i], *axes[i], b) : args[i]);
    per_example.push_back(s.fn(in));
  }
  Vec out;
  for (size_t k = 0; k < s.expected.size(); ++k) {
    if (size == 0) {
      std::vector<int64_t> shape{0};
      shape.insert(shape.end(), s.expected[k].shape.begin(), s.expected[k].shape.end());
      out.push_back(fx::zeros(fx::Shape(shape), s.expected[k].dtype));
      continue;
    }
    Vec parts;
    for (const Vec& e : per_example) parts.push_back(e[k]);
    out.push_back(fx::stack(parts, 0));
  }
  return out;
}

void check_vmap(const fx::Primitive* p, const fx::testing::Sample& s, const std::vector<std::optional<int64_t>>& axes,
                int64_t size) {
  Vec args;
  std::vector<std::optional<int64_t>> normalized;
  for (size_t i = 0; i < s.inputs.size(); ++i) {
    if (!axes[i]) {
      args.push_back(s.inputs[i]);
      normalized.push_back(std::nullopt);
      continue;
    }
    int64_t rank = s.inputs[i].ndim() + 1;
    int64_t a = *axes[i] < 0 ? *axes[i] + rank : *axes[i];
    args.push_back(batched_input(s.inputs[i], size, a));
    normalized.push_back(a);
  }
  Vec got = vmap_call(s, args, axes);
  Vec want = loop_and_stack(s, args, normalized, size);
  ++stats().checks;
  REQUIRE(got.size() == want.size());
  for (size_t k = 0; k < got.size(); ++k) {
    std::string diff = fx::testing::compare_tensors(got[k], want[k]);
    if (!diff.empty()) ++stats().failures;
    CHECK_MESSAGE(diff.empty(), p->name << " " << s.label << " size " << size << ": " << diff);
  }
}

}  // namespace

TEST_CASE("rules: every primitive has jvp and batching rules, and transpose rules where linear") {
  for (const fx::Primitive* p : fx::all_primitives()) {
    CAPTURE(p->name);
    bool reasoned = !p->missing_rule_reason.empty();
    bool has_jvp = p->jvp != nullptr, has_batch = p->batch != nullptr, has_transpose = p->transpose != nullptr;
    CHECK_MESSAGE((has_jvp || reasoned), "no jvp rule and no written reason");
    CHECK_MESSAGE(has_batch, "no batching rule");
    if (p->traits.linear) CHECK_MESSAGE((has_transpose || reasoned), "linear but no transpose rule");
  }
}

TEST_CASE("rules: derivatives against finite differences, to second order in every mode") {
  uint64_t seed = 1;
  for (const fx::Primitive* p : fx::all_primitives()) {
    auto it = fx::testing::sample_registry().find(p->name);
    if (it == fx::testing::sample_registry().end() || !p->jvp) continue;
    for (const fx::testing::Sample& s : fx::testing::on_test_device(it->second.make(fx::f64))) {
      CAPTURE(p->name);
      CAPTURE(s.label);
      auto c = differentiable_case(p, s);
      if (!c) continue;
      check_derivatives(*c, seed += 7);
    }
  }
  std::cout << "[rules] derivative checks: " << stats().checks << " run, " << stats().checks - stats().failures
            << " passed\n";
  CHECK(stats().failures == 0);
}

TEST_CASE("rules: f32 derivatives agree with f64 derivatives") {
  int64_t checks = 0;
  for (const fx::Primitive* p : fx::all_primitives()) {
    auto it = fx::testing::sample_registry().find(p->name);
    if (it == fx::testing::sample_registry().end() || !p->jvp) continue;
    auto s64 = fx::testing::on_test_device(it->second.make(fx::f64)),
         s32 = fx::testing::on_test_device(it->second.make(fx::f32));
    if (s64.size() != s32.size()) continue;
    for (size_t i = 0; i < s64.size(); ++i) {
      auto c64 = differentiable_case(p, s64[i]);
      auto c32 = differentiable_case(p, s32[i]);
      if (!c64 || !c32 || c32->x[0].dtype() != fx::f32) continue;
      CAPTURE(p->name);
      CAPTURE(s32[i].label);
      auto s = [](const DiffCase& c) {
        return [&c](const Vec& xs) { return fx::sum(fx::astype(c.g(xs)[0], fx::f64)); };
      };
      Vec g64 = fx::grad(s(*c64))(c64->x), g32 = fx::grad(s(*c32))(c32->x);
      for (size_t k = 0; k < g64.size(); ++k) {
        auto a = g32[k].to_vector<double>(), b = g64[k].to_vector<double>();
        for (size_t e = 0; e < a.size(); ++e) {
          ++checks;
          CHECK_MESSAGE(std::fabs(a[e] - b[e]) <= 1e-3 + 1e-3 * std::fabs(b[e]),
                        p->name << " element " << e << ": f32 " << a[e] << " f64 " << b[e]);
        }
      }
    }
  }
  std::cout << "[rules] f32-vs-f64 gradient element checks: " << checks << "\n";
}

TEST_CASE("rules: vmap equals a loop for every in_axes choice and batch sizes 0, 1, 3") {
  int64_t before = stats().checks, failures_before = stats().failures;
  for (const fx::Primitive* p : fx::all_primitives()) {
    auto it = fx::testing::sample_registry().find(p->name);
    if (it == fx::testing::sample_registry().end() || !p->batch) continue;
    for (const fx::testing::Sample& s : fx::testing::on_test_device(it->second.make(fx::f64))) {
      CAPTURE(p->name);
      CAPTURE(s.label);
      size_t n = s.inputs.size();
      std::vector<std::vector<std::optional<int64_t>>> choices;
      for (size_t i = 0; i < n; ++i) {
        int64_t rank = s.inputs[i].ndim();
        // The batch axis at every position of the batched input (0..rank), and negative.
        for (int64_t a = -1; a <= rank; ++a) {
          std::vector<std::optional<int64_t>> axes(n);
          axes[i] = a;
          choices.push_back(axes);
        }
      }
      if (n > 1) choices.push_back(std::vector<std::optional<int64_t>>(n, int64_t(0)));
      for (const auto& axes : choices)
        for (int64_t size : {0, 1, 3}) check_vmap(p, s, axes, size);
    }
  }
  std::cout << "[rules] vmap-vs-loop checks: " << stats().checks - before << " run, "
            << (stats().checks - before) - (stats().failures - failures_before) << " passed\n";
}

TEST_CASE("rules: vmap of vmap equals a double loop") {
  int64_t checks = 0;
  for (const fx::Primitive* p : fx::all_primitives()) {
    auto it = fx::testing::sample_registry().find(p->name);
    if (it == fx::testing::sample_registry().end() || !p->batch) continue;
    for (const fx::testing::Sample& s : fx::testing::on_test_device(it->second.make(fx::f64))) {
      CAPTURE(p->name);
      CAPTURE(s.label);
      Vec inner_batched, outer_batched;
      for (const fx::Tensor& x : s.inputs) outer_batched.push_back(batched_input(batched_input(x, 3, 0), 2, 0));
      auto f = [&](const Vec& xs) { return s.fn(xs); };
      Vec got = fx::vmap(fx::vmap(f))(outer_batched);
      for (size_t k = 0; k < got.size(); ++k) {
        for (int64_t b2 = 0; b2 < 2; ++b2)
          for (int64_t b1 = 0; b1 < 3; ++b1) {
            Vec in;
            for (const fx::Tensor& x : outer_batched) in.push_back(example(example(x, 0, b2), 0, b1));
            fx::Tensor want = s.fn(in)[k];
            fx::Tensor have = example(example(got[k], 0, b2), 0, b1);
            ++checks;
            CHECK(fx::testing::compare_tensors(have, want).empty());
          }
      }
    }
  }
  std::cout << "[rules] vmap-of-vmap element checks: " << checks << "\n";
}

TEST_CASE("rules: composition matrix per primitive (vmap∘jvp, vmap∘vjp, vjp∘vmap, vmap∘jvp∘vjp, hessian)") {
  int64_t checks = 0;
  for (const fx::Primitive* p : fx::all_primitives()) {
    auto it = fx::testing::sample_registry().find(p->name);
    if (it == fx::testing::sample_registry().end() || !p->jvp || !p->batch) continue;
    int done = 0;
    for (const fx::testing::Sample& sample : fx::testing::on_test_device(it->second.make(fx::f64))) {
      auto c = differentiable_case(p, sample);
      if (!c || done >= 2) continue;
      ++done;
      CAPTURE(p->name);
      CAPTURE(sample.label);
      const DiffCase& dc = *c;
      auto g = [&](const Vec& xs) { return dc.g(xs); };
      Vec w = random_like(dc.g(dc.x), 5);
      auto s = [&](const Vec& xs) { return inner(w, dc.g(xs)); };
      Vec ts0 = random_like(dc.x, 11), ts1 = random_like(dc.x, 13);
      Vec batched_t;
      for (size_t k = 0; k < dc.x.size(); ++k) batched_t.push_back(fx::stack({ts0[k], ts1[k]}, 0));
      auto close = [&](const fx::Tensor& a, const fx::Tensor& b) {
        ++checks;
        std::string d = fx::testing::compare_tensors(a, b);
        CHECK_MESSAGE(d.empty(), p->name << " " << sample.label << ": " << d);
      };
      // vmap∘jvp: a batch of tangents at once.
      Vec vj = fx::vmap([&](const Vec& t) { return fx::jvp(g, std::make_tuple(dc.x), std::make_tuple(t)).second; })(
          batched_t);
      Vec j0 = fx::jvp(g, std::make_tuple(dc.x), std::make_tuple(ts0)).second;
      close(example(vj[0], 0, 0), j0[0]);
      // vmap∘vjp: a batch of cotangents through one pullback.
      auto [y, pullback] = fx::vjp(g, dc.x);
      Vec ct1 = random_like(y, 17);
      Vec batched_ct;
      for (size_t k = 0; k < y.size(); ++k) batched_ct.push_back(fx::stack({w[k], ct1[k]}, 0));
      Vec vv = fx::vmap([&](const Vec& ct) { return std::get<0>(pullback(ct)); })(batched_ct);
      Vec v1 = std::get<0>(pullback(ct1));
      close(example(vv[0], 0, 1), v1[0]);
      // vjp∘vmap: the gradient through a vmapped function equals the per-example gradients.
      Vec batched_x;
      for (const fx::Tensor& x : dc.x) batched_x.push_back(batched_input(x, 2, 0));
      Vec gb = fx::grad([&](const Vec& xs) {
        Vec outs = fx::vmap(g)(xs);
        fx::Tensor acc = fx::zeros({}, fx::f64);
        for (const fx::Tensor& o : outs) acc = acc + fx::sum(o);
        return acc;
      })(batched_x);
      Vec x1;
      for (const fx::Tensor& x : batched_x) x1.push_back(example(x, 0, 1));
      Vec g1 = fx::grad([&](const Vec& xs) {
        fx::Tensor acc = fx::zeros({}, fx::f64);
        for (const fx::Tensor& o : dc.g(xs)) acc = acc + fx::sum(o);
        return acc;
      })(x1);
      close(example(gb[0], 0, 1), g1[0]);
      // vmap∘jvp∘vjp: Hessian-vector products for a batch of vectors.
      Vec hv = fx::vmap([&](const Vec& t) {
        return fx::jvp(fx::grad(s), std::make_tuple(dc.x), std::make_tuple(t)).second;
      })(batched_t);
      Vec h1 = fx::jvp(fx::grad(s), std::make_tuple(dc.x), std::make_tuple(ts1)).second;
      close(example(hv[0], 0, 1), h1[0]);
      // hessian in the first floating input: symmetric, and H·t equals the hvp.
      auto s0 = [&](const fx::Tensor& x0) {
        Vec xs = dc.x;
        xs[0] = x0;
        return s(xs);
      };
      fx::Tensor h = fx::hessian(s0)(dc.x[0]);
      int64_t n = dc.x[0].size();
      fx::Tensor hm = fx::reshape(h, {n, n});
      close(hm, fx::transpose(hm));
      fx::Tensor hvp = fx::hvp(s0, dc.x[0], ts0[0]);
      close(fx::reshape(fx::matmul(hm, fx::reshape(ts0[0], {n})), dc.x[0].shape().dims()), hvp);
    }
  }
  std::cout << "[rules] composition checks: " << checks << "\n";
}

TEST_CASE("rules: report") {
  std::cout << "[rules] total " << stats().checks << " checks, " << stats().checks - stats().failures << " passed\n";
  for (const auto& [name, w] : stats().worst) std::cout << "  worst error " << name << ": " << w << "\n";
}
