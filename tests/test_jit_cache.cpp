// jit's cache: the key (argument types, tree structure, static leaves by value and floating
// statics by bits, avals and devices), its LRU bound and clearing, eviction under concurrent calls,
// and pytrees with static leaves under every transform.
#include <doctest/doctest.h>

#include <atomic>
#include <cmath>
#include <limits>
#include <map>
#include <string>
#include <thread>
#include <vector>

#include <fluxion/fluxion.hpp>

#include "alloc_count.hpp"
#include "samples.hpp"
#include "test_util.hpp"

namespace fx = fluxion;
using fx::Tensor;
using fx::testing::compare_tensors;

namespace {

void check_close(const Tensor& got, const Tensor& want) {
  std::string diff = compare_tensors(got, want);
  CHECK_MESSAGE(diff.empty(), diff);
}
double val(const Tensor& t) { return t.item<double>(); }

/// x^n by repeated multiplication (n a static int).
Tensor power(const Tensor& x, int n) {
  Tensor r = x;
  for (int i = 1; i < n; ++i) r = r * x;
  return r;
}

// A layer with tensors of any shape and a static member choosing the activation.
enum class Activation { identity, negate };
struct Layer {
  Tensor w;
  Tensor b;
  Activation act;
};

}  // namespace
BOOST_HANA_ADAPT_STRUCT(Layer, w, b, act);

using Dict = std::map<std::string, Tensor>;

TEST_CASE("jit cache: a map argument with other keys is traced again, not run with the plan of the old keys") {
  int traces = 0;
  auto f = fx::jit([&traces](const Dict& m) {
    ++traces;
    return m.count("b") ? m.at("a") + m.at("b") * 10.0 : m.at("a") - m.at("c") * 100.0;
  });
  Tensor one = fx::scalar(1.0), two = fx::scalar(2.0);
  CHECK(val(f(Dict{{"a", one}, {"b", two}})) == 21.0);
  CHECK(val(f(Dict{{"a", one}, {"c", two}})) == -199.0);
  CHECK(val(f(Dict{{"a", one}, {"b", two}})) == 21.0);
  CHECK(traces == 2);
  CHECK(f.cache_size() == 2);
  // The output's structure follows the input's keys.
  auto twice = fx::jit([](const Dict& m) {
    Dict r;
    for (const auto& [k, v] : m) r.emplace(k + "2", v * 2.0);
    return r;
  });
  CHECK(twice(Dict{{"x", one}}).count("x2") == 1);
  Dict out = twice(Dict{{"y", one}});
  REQUIRE(out.count("y2") == 1);
  CHECK(val(out.at("y2")) == 2.0);
}

TEST_CASE("jit cache: an int inside a pytree argument is a static leaf of the key") {
  using P = std::pair<Tensor, int>;
  int traces = 0;
  auto f = fx::jit([&traces](const P& p) {
    ++traces;
    return power(p.first, p.second);
  });
  Tensor x = fx::tensor({1.0, 2.0, 3.0});
  check_close(f(P{x, 2}), fx::tensor({1.0, 4.0, 9.0}));
  check_close(f(P{x, 3}), fx::tensor({1.0, 8.0, 27.0}));
  check_close(f(P{x, 2}), fx::tensor({1.0, 4.0, 9.0}));
  CHECK(traces == 2);
}

TEST_CASE("jit cache: a Hana struct argument is keyed by its tensors' shapes and its static member") {
  int traces = 0;
  auto f = fx::jit([&traces](const Layer& l, const Tensor& x) {
    ++traces;
    Tensor y = fx::matmul(l.w, x) + l.b;
    return l.act == Activation::negate ? -y : y;
  });
  Tensor w23 = fx::ones({2, 3}), b2 = fx::ones({2}), x3 = fx::ones({3});
  check_close(f(Layer{w23, b2, Activation::identity}, x3), fx::full({2}, 4.0));
  check_close(f(Layer{fx::ones({4, 3}), fx::ones({4}), Activation::identity}, x3), fx::full({4}, 4.0));
  check_close(f(Layer{w23, b2, Activation::negate}, x3), fx::full({2}, -4.0));
  check_close(f(Layer{w23 * 2.0, b2, Activation::identity}, x3), fx::full({2}, 7.0));
  CHECK(traces == 3);
}

TEST_CASE("jit cache: vectors of other lengths and nested containers are other signatures") {
  int traces = 0;
  auto f = fx::jit([&traces](const std::vector<Tensor>& v) {
    ++traces;
    Tensor r = fx::scalar(0.0);
    for (size_t i = 0; i < v.size(); ++i) r = r + v[i] * static_cast<double>(i + 1);
    return r;
  });
  Tensor one = fx::scalar(1.0);
  using V = std::vector<Tensor>;
  CHECK(val(f(V{one, one})) == 3.0);
  CHECK(val(f(V{one, one, one})) == 6.0);
  CHECK(val(f(V{one, one})) == 3.0);
  CHECK(traces == 2);

  // A map of vectors of (tensor, static power) pairs: every level is in the key.
  using Nested = std::map<std::string, std::vector<std::pair<Tensor, int>>>;
  int nested_traces = 0;
  auto g = fx::jit([&nested_traces](const Nested& n) {
    ++nested_traces;
    Tensor r = fx::scalar(0.0);
    for (const auto& [k, v] : n)
      for (const auto& [t, p] : v) r = r + power(t, p) * (k == "neg" ? -1.0 : 1.0);
    return r;
  });
  Tensor two = fx::scalar(2.0);
  CHECK(val(g(Nested{{"pos", {{two, 2}, {two, 3}}}})) == 12.0);
  CHECK(val(g(Nested{{"pos", {{two, 2}, {two, 1}}}})) == 6.0);     // a static leaf differs
  CHECK(val(g(Nested{{"neg", {{two, 2}, {two, 3}}}})) == -12.0);   // a key differs
  CHECK(val(g(Nested{{"pos", {{two, 2}}}})) == 4.0);               // a length differs
  CHECK(val(g(Nested{{"pos", {{two, 2}}}, {"neg", {}}})) == 4.0);  // an empty entry
  CHECK(val(g(Nested{{"pos", {{two, 2}, {two, 3}}}})) == 12.0);
  CHECK(nested_traces == 5);
}

TEST_CASE("jit cache: static int, double, enum and string arguments, alone and inside pytrees") {
  int traces = 0;
  using T = std::tuple<Tensor, double, Activation, std::string>;
  auto f =
      fx::jit([&traces](const Tensor& x, int n, double scale, Activation act, const std::string& name, const T& t) {
        ++traces;
        Tensor r = power(x, n) * scale + std::get<0>(t) * std::get<1>(t);
        if (act == Activation::negate) r = -r;
        if (std::get<2>(t) == Activation::negate) r = -r;
        return name == std::get<3>(t) ? r : r * 0.0;
      });
  Tensor x = fx::scalar(2.0);
  const auto id = Activation::identity, neg = Activation::negate;
  const std::string a = "a", b = "b";
  CHECK(val(f(x, 2, 1.0, id, a, T{x, 1.0, id, a})) == 6.0);
  CHECK(val(f(x, 3, 1.0, id, a, T{x, 1.0, id, a})) == 10.0);
  CHECK(val(f(x, 2, 0.5, id, a, T{x, 1.0, id, a})) == 4.0);
  CHECK(val(f(x, 2, 1.0, neg, a, T{x, 1.0, id, a})) == -6.0);
  CHECK(val(f(x, 2, 1.0, id, b, T{x, 1.0, id, a})) == 0.0);
  CHECK(val(f(x, 2, 1.0, id, a, T{x, 3.0, id, a})) == 10.0);
  CHECK(val(f(x, 2, 1.0, id, a, T{x, 1.0, neg, a})) == -6.0);
  CHECK(val(f(x, 2, 1.0, id, a, T{x, 1.0, id, b})) == 0.0);
  CHECK(traces == 8);
  CHECK(val(f(x, 2, 1.0, id, a, T{x, 1.0, id, a})) == 6.0);
  CHECK(traces == 8);
}

TEST_CASE("jit cache: a static NaN is one signature, traced once however often it is passed") {
  int traces = 0;
  auto f = fx::jit([&traces](const Tensor& x, double s) {
    ++traces;
    return x + s;
  });
  auto g = fx::jit([](const std::pair<Tensor, double>& p) { return p.first * p.second; });
  const double nan = std::numeric_limits<double>::quiet_NaN();
  Tensor x = fx::tensor({1.0, 2.0});
  for (int i = 0; i < 50; ++i) {
    CHECK(std::isnan(f(x, nan).to_vector<double>()[0]));
    CHECK(std::isnan(g(std::pair{x, nan}).to_vector<double>()[1]));
  }
  CHECK(traces == 1);
  CHECK(f.cache_size() == 1);
  CHECK(g.cache_size() == 1);
}

TEST_CASE("jit cache: static -0.0 and 0.0 are two signatures with their own results") {
  auto f = fx::jit([](const Tensor& x, double b) { return x / b; });
  auto g = fx::jit([](const std::pair<Tensor, float>& p) { return p.first / p.second; });
  const double inf = std::numeric_limits<double>::infinity();
  // Exact comparisons: compare_tensors takes +inf for -inf (their difference is within inf * rtol).
  using V = std::vector<double>;
  Tensor x = fx::tensor({1.0, 2.0});
  CHECK(f(x, 0.0).to_vector<double>() == V{inf, inf});
  CHECK(f(x, -0.0).to_vector<double>() == V{-inf, -inf});
  CHECK(f(x, 0.0).to_vector<double>() == V{inf, inf});
  CHECK(f.cache_size() == 2);
  CHECK(g(std::pair{x, -0.0f}).to_vector<double>() == V{-inf, -inf});
  CHECK(g(std::pair{x, 0.0f}).to_vector<double>() == V{inf, inf});
  CHECK(g.cache_size() == 2);
}

TEST_CASE("jit cache: at most cache_size signatures, the least recently used evicted first") {
  std::map<int, int> traces;
  auto f = fx::jit(
      [&traces](const Tensor& x, int n) {
        ++traces[n];
        return power(x, n);
      },
      fx::cache_size(3));
  CHECK(f.cache_capacity() == 3);
  Tensor x = fx::scalar(2.0);
  auto call = [&](int n) { CHECK(val(f(x, n)) == std::pow(2.0, n)); };
  call(1), call(2), call(3);
  CHECK(f.cache_size() == 3);
  call(1);  // 1 is now more recent than 2 and 3
  call(4);  // evicts 2
  CHECK(f.cache_size() == 3);
  call(1), call(3), call(4);
  CHECK(traces == std::map<int, int>{{1, 1}, {2, 1}, {3, 1}, {4, 1}});
  call(2);  // traced again, evicting 1 (the least recently used of 1, 3, 4)
  call(3), call(4);
  CHECK(traces == std::map<int, int>{{1, 1}, {2, 2}, {3, 1}, {4, 1}});
  call(1);
  CHECK(traces[1] == 2);

  // Shrinking keeps the most recent; clearing empties it; a cleared cache fills again.
  f.set_cache_capacity(1);
  CHECK(f.cache_size() == 1);
  call(1);
  CHECK(traces[1] == 2);
  f.clear_cache();
  CHECK(f.cache_size() == 0);
  call(1);
  CHECK(traces[1] == 3);
  CHECK(f.cache_size() == 1);
  // A capacity of zero is refused with a message saying what to pass.
  CHECK(fx::testing::message_of<fx::Error>([&] { f.set_cache_capacity(0); }).find("[jit] cache size 0") == 0);
}

TEST_CASE("jit cache: the default bound holds a continuously varying static argument") {
  auto f = fx::jit([](const Tensor& x, double s) { return x * s; });
  CHECK(f.cache_capacity() == fx::default_jit_cache_size);
  Tensor x = fx::scalar(1.0);
  const int n = static_cast<int>(fx::default_jit_cache_size) + 20;
  for (int i = 0; i < n; ++i) CHECK(val(f(x, 0.5 * i)) == 0.5 * i);
  CHECK(f.cache_size() == fx::default_jit_cache_size);
  // Copies share one cache.
  auto copy = f;
  copy.clear_cache();
  CHECK(f.cache_size() == 0);
}

TEST_CASE("jit cache: concurrent calls stay right while other threads evict the entries they run") {
  // Capacity 2: threads 0-3 call one hot signature (the lock-free latest-entry path) while threads
  // 4-7 cycle through static arguments, evicting it again and again.
  auto f = fx::jit([](const Tensor& x, int n) { return fx::sum(power(x, n)); }, fx::cache_size(2));
  std::atomic<int> wrong{0};
  std::vector<std::thread> threads;
  const int calls = 150;
  for (int t = 0; t < 8; ++t)
    threads.emplace_back([&, t] {
      Tensor x = fx::tensor({1.0, 2.0});
      for (int i = 0; i < calls; ++i) {
        int n = t < 4 ? 2 : 1 + (t + i) % 5;
        if (f(x, n).item<double>() != 1.0 + std::pow(2.0, n)) ++wrong;
        if (t == 7 && i % 20 == 0) f.clear_cache();
      }
    });
  for (auto& th : threads) th.join();
  CHECK(wrong.load() == 0);
  CHECK(f.cache_size() <= 2);
}

TEST_CASE("jit cache: a steady-state call with pytree and static arguments allocates nothing") {
  auto f = fx::jit([](const Layer& l, const std::pair<Tensor, int>& p, const Dict& m, double s) {
    return fx::sum(fx::matmul(l.w, power(p.first, p.second)) + l.b) * s + m.at("a");
  });
  Layer l{fx::ones({2, 3}), fx::ones({2}), Activation::identity};
  std::pair<Tensor, int> p{fx::tensor({1.0, 2.0, 3.0}), 2};
  Dict m{{"a", fx::scalar(1.0)}};
  CHECK(alloc_count::steady_allocations([&] { return f(l, p, m, 0.5); }) == 0);
  CHECK(val(f(l, p, m, 0.5)) == (2 * 14 + 2) * 0.5 + 1);
}

TEST_CASE("pytrees: ints inside a pytree are static leaves, passed through every transform unchanged") {
  using P = std::pair<Tensor, int>;
  auto f = [](const P& p) { return fx::sum(power(p.first, p.second)); };
  Tensor x = fx::tensor({1.0, 2.0});
  P g = fx::grad(f)(P{x, 3});
  check_close(g.first, 3.0 * x * x);
  CHECK(g.second == 3);  // the static leaf passes through unchanged
  check_close(fx::jit(fx::grad(f))(P{x, 3}).first, 3.0 * x * x);
  check_close(fx::jit(fx::grad(f))(P{x, 2}).first, 2.0 * x);
  Tensor xs = fx::tensor({{1.0, 2.0}, {3.0, 4.0}});
  check_close(fx::vmap(f)(P{xs, 2}), fx::tensor({5.0, 25.0}));
  check_close(fx::vmap(fx::grad(f))(P{xs, 2}).first, 2.0 * xs);
  check_close(fx::jvp(f, std::make_tuple(P{x, 2}), std::make_tuple(P{fx::ones_like(x), 0})).second, fx::scalar(6.0));
  auto [y, pullback] = fx::vjp(f, P{x, 2});
  check_close(y, fx::scalar(5.0));
  check_close(std::get<0>(pullback(fx::scalar(1.0))).first, 2.0 * x);
  check_close(fx::jacfwd(f)(P{x, 2}).first, 2.0 * x);
  // The output's structure outside (grad's P, its static int kept), the input's inside.
  std::pair<P, int> h = fx::hessian(f)(P{x, 3});
  check_close(h.first.first, fx::tensor({{6.0, 0.0}, {0.0, 12.0}}));
  CHECK(h.first.second == 3);
  CHECK(h.second == 3);
  check_close(fx::hvp(f, P{x, 3}, P{fx::ones_like(x), 3}).first, fx::tensor({6.0, 12.0}));
  check_close(fx::jacrev(f)(P{x, 2}).first, 2.0 * x);
  check_close(fx::jacobian(f)(P{x, 2}).first, 2.0 * x);
  auto [value, grad] = fx::value_and_grad(f)(P{x, 2});
  check_close(value, fx::scalar(5.0));
  check_close(grad.first, 2.0 * x);
  auto [primal, f_lin] = fx::linearize(f, P{x, 2});
  check_close(primal, fx::scalar(5.0));
  check_close(f_lin(P{fx::ones_like(x), 2}), fx::scalar(6.0));
  check_close(fx::grad(fx::checkpoint(f))(P{x, 3}).first, 3.0 * x * x);
  // A static leaf chooses the traced program: the outer jit keys on it too.
  check_close(fx::jit(fx::vmap(fx::grad(f)))(P{xs, 3}).first, 3.0 * xs * xs);
}
