// Collectives in one process, through named-axis vmap: their values, and their rules (jvp, transpose,
// batching) run INSIDE the named vmap, where the collective itself is differentiated or batched, checked
// against the global function of all members (finite differences and the dot-product identity). The rule
// suite runs the registry samples (tests/samples_collectives.cpp) with the transforms outside.
#include <doctest/doctest.h>

#include <fluxion/fluxion.hpp>

#include "collective_cases.hpp"
#include "samples.hpp"
#include "test_util.hpp"

namespace fx = fluxion;
using fx::Tensor;

namespace {

Tensor rand(const fx::Shape& s, uint64_t seed) { return fx::testing::random_tensor(s, fx::f64, seed); }

double num(const Tensor& t) { return t.item<double>(); }

// x[..., i, ...] along `axis` (negative from the end), the axis removed.
Tensor index_in_dim(const Tensor& x, int64_t i, int64_t axis) {
  const int64_t a = axis < 0 ? axis + x.ndim() : axis;
  std::vector<int64_t> start(static_cast<size_t>(x.ndim()), 0), limit = x.shape().dims();
  start[static_cast<size_t>(a)] = i;
  limit[static_cast<size_t>(a)] = i + 1;
  std::vector<int64_t> dims = x.shape().dims();
  dims.erase(dims.begin() + a);
  return fx::reshape(fx::slice(x, start, limit), dims);
}
Tensor row(const Tensor& x, int64_t r) { return index_in_dim(x, r, 0); }

void close(const Tensor& got, const Tensor& want, double tol = 1e-12) {
  REQUIRE(got.shape() == want.shape());
  CHECK_MESSAGE(fx::testing::max_diff(got, want) <= tol, "got " << got << "\nwant " << want);
}

using Fn = std::function<Tensor(const Tensor&)>;

// The global function of all members: rows are members.
Tensor named(const Fn& f, const Tensor& xs) { return fx::vmap(f, fx::axis_name("i"))(xs); }

// The shared cases over axis "i" with 3 members; `members` is [3, member...].
struct Case {
  const char* what;
  Fn f;
  fx::Shape members;
  bool replicated;
};

std::vector<Case> cases() {
  std::vector<Case> out;
  for (const fx::testing::CollectiveCase& c : fx::testing::collective_cases("i", 3)) {
    std::vector<int64_t> dims = c.member;
    dims.insert(dims.begin(), 3);
    out.push_back({c.what, c.f, fx::Shape(dims), c.replicated});
  }
  return out;
}

// <a, b> over every element.
double inner(const Tensor& a, const Tensor& b) { return num(fx::sum(a * b)); }

}  // namespace

TEST_CASE("collectives: values under a named vmap") {
  Tensor x = rand({3, 4}, 1);
  close(named([](const Tensor& v) { return fx::all_sum(v, "i"); }, x), fx::broadcast_to(fx::sum(x, {0}), {3, 4}));
  close(named([](const Tensor& v) { return fx::all_mean(v, "i"); }, x), fx::broadcast_to(fx::mean(x, {0}), {3, 4}));
  close(named([](const Tensor& v) { return fx::all_max(v, "i"); }, x), fx::broadcast_to(fx::max(x, {0}), {3, 4}));
  close(named([](const Tensor& v) { return fx::all_min(v, "i"); }, x), fx::broadcast_to(fx::min(x, {0}), {3, 4}));
  // all_gather: every member holds the stack; tiled: the concatenation.
  Tensor g = named([](const Tensor& v) { return fx::all_gather(v, "i"); }, x);
  for (int64_t r = 0; r < 3; ++r) close(row(g, r), x);
  Tensor gt = named([](const Tensor& v) { return fx::all_gather(v, "i", 0, true); }, x);
  close(row(gt, 1), fx::reshape(x, {12}));
  // reduce_scatter: member r keeps block r of the sum.
  Tensor b = rand({3, 3, 2}, 2);
  close(named([](const Tensor& v) { return fx::reduce_scatter(v, "i"); }, b), fx::sum(b, {0}));
  // all_to_all: member j's output block s is member s's block j.
  Tensor a = rand({3, 6, 2}, 3);
  Tensor t = named([](const Tensor& v) { return fx::all_to_all(v, "i", 0, 1); }, a);  // [3, 2, 6]
  for (int64_t j = 0; j < 3; ++j)
    for (int64_t s = 0; s < 3; ++s)
      close(fx::slice(row(t, j), {0, 2 * s}, {2, 2 * s + 2}), fx::slice(row(a, s), {2 * j, 0}, {2 * j + 2, 2}));
  close(named([](const Tensor& v) { return fx::broadcast(v, "i", 2); }, x), fx::broadcast_to(row(x, 2), {3, 4}));
  Tensor idx = fx::vmap([](const Tensor&) { return fx::axis_index("i"); }, fx::axis_name("i"))(x);
  CHECK(idx.to_vector<int32_t>() == std::vector<int32_t>{0, 1, 2});
  CHECK(fx::vmap([](const Tensor&) { return fx::scalar<int64_t>(fx::axis_size("i")); }, fx::axis_name("i"))(x)
            .to_vector<int64_t>() == std::vector<int64_t>{3, 3, 3});
}

TEST_CASE("collectives: unmapped operands are the same on every member") {
  Tensor x = rand({4}, 4), ys = rand({3, 4}, 5);
  // x enters unmapped: all_sum gives 3x, all_gather a stack of copies, reduce_scatter 3 x's blocks.
  auto f = [](const Tensor& shared, const Tensor& y) {
    return std::make_tuple(fx::all_sum(shared, "i") + 0 * y, fx::all_gather(shared, "i") + 0 * fx::sum(y),
                           fx::all_mean(shared, "i"), fx::broadcast(shared, "i", 1));
  };
  auto [s, g, m, b] = fx::vmap(f, fx::in_axes(fx::none, 0), fx::axis_name("i"))(x, ys);
  close(row(s, 0), x * 3.0);
  close(row(g, 2), fx::broadcast_to(x, {3, 4}));
  close(row(m, 1), x);
  close(row(b, 0), x);
}

TEST_CASE("collectives: jvp and transpose rules inside the named vmap match the global function") {
  for (const Case& c : cases()) {
    CAPTURE(c.what);
    Tensor xs = rand(c.members, 10), ts = rand(c.members, 11);
    // jvp inside, against central differences of the global function.
    Tensor jt = fx::vmap(
        [&](const Tensor& x, const Tensor& t) { return fx::jvp(c.f, std::make_tuple(x), std::make_tuple(t)).second; },
        fx::axis_name("i"))(xs, ts);
    const double eps = 1e-6;
    Tensor fd = (named(c.f, xs + ts * eps) - named(c.f, xs - ts * eps)) / (2 * eps);
    close(jt, fd, 1e-7);
    // vjp inside: <ct, J t> over the global output (a replicated output counted once) equals <J^T ct, t>.
    Tensor y = named(c.f, xs);
    if (c.replicated) {
      Tensor ct = rand(fx::Shape(std::vector<int64_t>(y.shape().dims().begin() + 1, y.shape().dims().end())), 12);
      Tensor xbar =
          fx::vmap([&](const Tensor& x, const Tensor& ctv) { return std::get<0>(fx::vjp(c.f, x).second(ctv)); },
                   fx::in_axes(0, fx::none), fx::axis_name("i"))(xs, ct);
      CHECK(inner(ct, row(jt, 0)) == doctest::Approx(inner(xbar, ts)).epsilon(1e-12));
    } else {
      Tensor ct = rand(y.shape(), 12);
      Tensor xbar =
          fx::vmap([&](const Tensor& x, const Tensor& ctv) { return std::get<0>(fx::vjp(c.f, x).second(ctv)); },
                   fx::axis_name("i"))(xs, ct);
      CHECK(inner(ct, jt) == doctest::Approx(inner(xbar, ts)).epsilon(1e-12));
      // Reverse over the vmapped function (the batched equations' rules) agrees with the rules inside.
      Tensor outside = std::get<0>(fx::vjp([&](const Tensor& x) { return named(c.f, x); }, xs).second(ct));
      close(xbar, outside, 1e-12);
    }
    // Second order inside: the jvp of the jvp against differences of first-order jvps.
    Tensor t2 = rand(c.members, 13);
    auto d1 = [&](const Tensor& x, const Tensor& t) {
      return fx::jvp(c.f, std::make_tuple(x), std::make_tuple(t)).second;
    };
    Tensor jj = fx::vmap(
        [&](const Tensor& x, const Tensor& t, const Tensor& u) {
          return fx::jvp([&](const Tensor& z) { return d1(z, t); }, std::make_tuple(x), std::make_tuple(u)).second;
        },
        fx::axis_name("i"))(xs, ts, t2);
    auto jvp_global = [&](const Tensor& x) { return fx::vmap(d1, fx::axis_name("i"))(x, ts); };
    close(jj, (jvp_global(xs + t2 * eps) - jvp_global(xs - t2 * eps)) / (2 * eps), 1e-6);
  }
}

TEST_CASE("collectives: pvary's transpose sums over members, from a replicated operand") {
  Tensor x = rand({4}, 20), ct = rand({3, 4}, 21);
  auto pull = [&](const Tensor& shared, const Tensor& c) {
    return std::get<0>(fx::vjp([](const Tensor& v) { return fx::pvary(v, "i"); }, shared).second(c));
  };
  Tensor xbar = fx::vmap(pull, fx::in_axes(fx::none, 0), fx::out_axes(fx::none), fx::axis_name("i"))(x, ct);
  close(xbar, fx::sum(ct, {0}));
}

TEST_CASE("collectives: the ordinary batching rule, under an unnamed vmap inside the named one") {
  for (const Case& c : cases()) {
    CAPTURE(c.what);
    std::vector<int64_t> dims = c.members.dims();
    dims.insert(dims.begin() + 1, 2);  // [n, 2, ...]: an unnamed batch of 2 inside each member
    Tensor xs = rand(fx::Shape(dims), 30);
    Tensor got = fx::vmap([&](const Tensor& x) { return fx::vmap(c.f)(x); }, fx::axis_name("i"))(xs);
    for (int64_t b = 0; b < 2; ++b) {
      Tensor member_b = index_in_dim(xs, b, 1);
      close(index_in_dim(got, b, 1), named(c.f, member_b));
    }
    // The unnamed batch on a later axis of each member.
    std::vector<int64_t> late = c.members.dims();
    late.push_back(2);
    Tensor ls = rand(fx::Shape(late), 31);
    Tensor got_late =
        fx::vmap([&](const Tensor& x) { return fx::vmap(c.f, fx::in_axes(-1))(x); }, fx::axis_name("i"))(ls);
    close(index_in_dim(got_late, 1, 1), named(c.f, index_in_dim(ls, 1, -1)));
  }
}

TEST_CASE("collectives: jit inside and outside the named vmap, and grad through jit") {
  for (const Case& c : cases()) {
    CAPTURE(c.what);
    Tensor xs = rand(c.members, 40);
    Tensor want = named(c.f, xs);
    close(fx::vmap(fx::jit(c.f), fx::axis_name("i"))(xs), want);
    close(fx::jit([&](const Tensor& x) { return named(c.f, x); })(xs), want);
    auto loss = [&](const Tensor& x) { return fx::sum(c.f(x) * c.f(x)); };
    close(fx::vmap(fx::jit(fx::grad(loss)), fx::axis_name("i"))(xs), fx::vmap(fx::grad(loss), fx::axis_name("i"))(xs));
  }
}

TEST_CASE("collectives: gradients of a replicated loss, as jax.shard_map's (the member's own share)") {
  // d/dx_r of sum_s x_s^2 (held once, by every member) is 2 x_r; jax.shard_map gives [0, 2, 4] for x = [0, 1, 2]
  // (JAX 0.10.2, 3 CPU devices), where jax.vmap(axis_name=...) gives [0, 6, 12].
  Tensor xs = rand({3, 2}, 50);
  auto g = fx::vmap(fx::grad([](const Tensor& x) { return fx::sum(fx::all_sum(x * x, "i")); }), fx::axis_name("i"));
  close(g(xs), xs * 2.0);
  // all_gather'd parameters get their shard of the mean loss's gradient by autodiff (the FSDP pattern), as in
  // jax.shard_map (jax.vmap gives 3 times it).
  Tensor w = rand({3, 2}, 51), data = rand({3, 6}, 52);
  auto shard_grad = fx::vmap(fx::grad([](const Tensor& shard, const Tensor& d) {
                               Tensor full = fx::all_gather(shard, "i", 0, true);  // [6]
                               return fx::all_mean(fx::sum(full * d), "i");
                             }),
                             fx::axis_name("i"));
  close(shard_grad(w, data), fx::reshape(fx::mean(data, {0}), {3, 2}));
}

TEST_CASE("collectives: nested named axes and Jaxprs") {
  Tensor x = rand({2, 3, 4}, 60);
  auto f = [](const Tensor& v) {
    return std::make_tuple(fx::all_sum(v, "outer"), fx::all_sum(v, "inner"), fx::axis_index("outer"),
                           fx::axis_index("inner"));
  };
  auto [so, si, io, ii] = fx::vmap(fx::vmap(f, fx::axis_name("inner")), fx::axis_name("outer"))(x);
  close(so, fx::broadcast_to(fx::sum(x, {0}), {2, 3, 4}));
  close(si, fx::broadcast_to(fx::expand_dims(fx::sum(x, {1}), 1), {2, 3, 4}));
  CHECK(io.to_vector<int32_t>() == std::vector<int32_t>{0, 0, 0, 1, 1, 1});
  CHECK(ii.to_vector<int32_t>() == std::vector<int32_t>{0, 1, 2, 0, 1, 2});
  // Staged inside the named vmap, the collective appears as one equation with its axis name and size.
  std::string printed;
  fx::vmap(
      [&](const Tensor& v) {
        std::ostringstream os;
        os << fx::make_jaxpr([](const Tensor& u) { return fx::all_gather(fx::all_sum(u, "i"), "i", 0, true); })(v);
        printed = os.str();
        return v;
      },
      fx::axis_name("i"))(rand({3, 2}, 61));
  CHECK(printed.find("all_sum[axis_name='i' axis_size=3]") != std::string::npos);
  CHECK(printed.find("all_gather[axis_name='i' axis_size=3 axis=0 tiled=True]") != std::string::npos);
}

TEST_CASE("collectives: errors name the collective and the axis") {
  CHECK_THROWS_WITH_AS(fx::all_sum(fx::ones({2}), "batch"),
                       doctest::Contains("[all_sum] axis name 'batch' is not bound"), fx::Error);
  CHECK_THROWS_WITH_AS(fx::axis_size("batch"), doctest::Contains("[axis_size] axis name 'batch'"), fx::Error);
  // A collective over a name bound by an enclosing vmap of another name still fails.
  CHECK_THROWS_WITH_AS(fx::vmap([](const Tensor& v) { return fx::all_sum(v, "j"); }, fx::axis_name("i"))(fx::ones({3})),
                       doctest::Contains("axis name 'j' is not bound"), fx::Error);
  CHECK_THROWS_AS(
      fx::vmap([](const Tensor& v) { return fx::reduce_scatter(v, "i"); }, fx::axis_name("i"))(fx::ones({3, 4})),
      fx::ShapeError);
}

TEST_CASE("collectives: OverlappedGradients is an identity whose backward pass reports a missing process group") {
  fx::distributed::OverlappedGradients sync("nowhere");
  Tensor w = rand({3}, 70);
  auto loss = [&](const Tensor& v) { return fx::sum(fx::sin(sync.watch(v))); };
  close(fx::grad(loss)(w), fx::cos(w));  // the local gradient flows through unchanged
  CHECK_THROWS_WITH_AS(sync.gradients(0, w), doctest::Contains("axis name 'nowhere' is not bound"), fx::Error);
  CHECK_THROWS_WITH_AS(sync.gradients(5, w), doctest::Contains("group 5 was not watched"), fx::Error);
  // Traced backward passes are refused.
  CHECK_THROWS_WITH_AS(fx::jit(fx::grad(loss))(w),
                       doctest::Contains("[OverlappedGradients] the backward pass is being traced"), fx::Error);
}

TEST_CASE("collectives: inside scan and cond bodies under the named vmap") {
  Tensor xs = rand({3, 4}, 80);  // 3 members, 4 steps each
  // A running sum over steps of the members' total: the scan's batching rule maps the same named axis.
  auto running = [](const Tensor& x) {
    auto step = [](const Tensor& carry, const Tensor& v) {
      Tensor c = carry + fx::all_sum(v, "i");
      return std::make_pair(c, c);
    };
    return fx::scan(step, fx::zeros({}), x).second;
  };
  Tensor got = fx::vmap(running, fx::axis_name("i"))(xs);
  Tensor want = fx::cumsum(fx::sum(xs, {0}), 0);
  for (int64_t r = 0; r < 3; ++r) close(row(got, r), want);
  auto branch = [](const Tensor& x) {
    return fx::cond(
        fx::sum(x) > 0.0, [](const Tensor& v) { return fx::all_max(v, "i"); },
        [](const Tensor& v) { return fx::all_min(v, "i"); }, x);
  };
  Tensor b = fx::vmap(branch, fx::axis_name("i"))(xs);
  for (int64_t r = 0; r < 3; ++r) close(row(b, r), num(fx::sum(row(xs, r))) > 0 ? fx::max(xs, {0}) : fx::min(xs, {0}));
}
