// fx::einsum against a brute-force sum over every label assignment for many subscript patterns
// (contractions, diagonals, traces, transposes, outer products, implicit outputs, 3 and 4 operands),
// ellipsis broadcasting against fx::matmul, dtype promotion, the planner's order, derivatives and
// transforms, and the errors for malformed subscripts, label size mismatches and operand counts.
#include <doctest/doctest.h>

#include <cmath>
#include <map>
#include <string>
#include <vector>

#include <fluxion/fluxion.hpp>

#include "samples.hpp"
#include "test_util.hpp"

namespace fx = fluxion;
using fluxion::testing::message_of;

namespace {

using fluxion::testing::max_diff;

// The definition: out[output labels] = sum over all other labels of the product of the operands'
// elements, by a loop over every assignment of every label (letters only, explicit output).
fx::Tensor brute_force(const std::string& subscripts, const std::vector<fx::Tensor>& xs) {
  const size_t arrow = subscripts.find("->");
  std::vector<std::string> terms(1);
  for (char c : subscripts.substr(0, arrow)) {
    if (c == ',') terms.emplace_back();
    else terms.back() += c;
  }
  const std::string out = subscripts.substr(arrow + 2);
  std::map<char, int64_t> size;
  for (size_t i = 0; i < terms.size(); ++i)
    for (size_t d = 0; d < terms[i].size(); ++d) size[terms[i][d]] = xs[i].shape()[static_cast<int64_t>(d)];
  std::vector<char> labels;
  for (auto& [c, n] : size) labels.push_back(c);
  std::vector<std::vector<double>> data;
  for (const fx::Tensor& x : xs) data.push_back(fx::astype(x, fx::f64).to_vector<double>());
  std::vector<int64_t> out_shape;
  for (char c : out) out_shape.push_back(size[c]);
  int64_t out_size = 1;
  for (int64_t n : out_shape) out_size *= n;
  std::vector<double> result(static_cast<size_t>(out_size), 0.0);
  std::map<char, int64_t> at;
  for (char c : labels) at[c] = 0;
  auto flat = [&](const std::string& term, const fx::Shape& shape) {
    int64_t f = 0;
    for (size_t d = 0; d < term.size(); ++d) f = f * shape[static_cast<int64_t>(d)] + at[term[d]];
    return f;
  };
  bool any_empty = false;
  for (char c : labels) any_empty = any_empty || size[c] == 0;
  for (bool more = !any_empty; more;) {
    double p = 1;
    for (size_t i = 0; i < xs.size(); ++i) p *= data[i][static_cast<size_t>(flat(terms[i], xs[i].shape()))];
    int64_t o = 0;
    for (char c : out) o = o * size[c] + at[c];
    if (out_size > 0) result[static_cast<size_t>(o)] += p;
    more = false;
    for (size_t k = labels.size(); k-- > 0;) {
      if (++at[labels[k]] < size[labels[k]]) {
        more = true;
        break;
      }
      at[labels[k]] = 0;
    }
  }
  return fx::from_vector(result, fx::Shape(out_shape));
}

fx::Tensor rnd(std::vector<int64_t> shape, uint64_t seed) {
  return fx::testing::random_tensor(fx::Shape(shape), fx::f64, seed);
}

}  // namespace

TEST_CASE("einsum: equals the brute-force sum for many subscript patterns") {
  struct Case {
    std::string subscripts;
    std::vector<std::vector<int64_t>> shapes;
  };
  const std::vector<Case> cases{
      {"ij,jk->ik", {{2, 3}, {3, 4}}},
      {"bij,bjk->bik", {{2, 3, 4}, {2, 4, 5}}},
      {"ii->", {{4, 4}}},
      {"ii->i", {{3, 3}}},
      {"iii->i", {{3, 3, 3}}},
      {"ij->ji", {{2, 5}}},
      {"ij->", {{3, 4}}},
      {"ij->j", {{3, 4}}},
      {"i,i->", {{5}, {5}}},
      {"i,j->ij", {{3}, {4}}},
      {"ijk->kji", {{2, 3, 4}}},
      {"iij->ji", {{3, 3, 2}}},
      {"ij,ij->ij", {{2, 3}, {2, 3}}},
      {"ij,ij->i", {{2, 3}, {2, 3}}},
      {"ijk,jkl->il", {{2, 3, 4}, {3, 4, 5}}},
      {"ijj,jk->ik", {{2, 3, 3}, {3, 4}}},
      {"bi,bj->bij", {{2, 3}, {2, 4}}},
      {"ij,jk,kl->il", {{2, 3}, {3, 4}, {4, 5}}},
      {"ij,jk,ki->", {{3, 4}, {4, 2}, {2, 3}}},
      {"ab,bc,cd,de->ae", {{2, 3}, {3, 4}, {4, 2}, {2, 3}}},
      {"i,i,i->i", {{4}, {4}, {4}}},
      {"abc,cd,db->a", {{2, 3, 4}, {4, 5}, {5, 3}}},
      {"Ab,bC->AC", {{2, 3}, {3, 2}}},
      {"ij,kl->ikjl", {{2, 2}, {3, 1}}},
      {"ij,jk->ik", {{2, 0}, {0, 3}}},
      {"ij,jk->ik", {{0, 3}, {3, 2}}},
      {"i->i", {{4}}},
  };
  uint64_t seed = 1;
  for (const Case& c : cases) {
    CAPTURE(c.subscripts);
    std::vector<fx::Tensor> xs;
    for (const auto& s : c.shapes) xs.push_back(rnd(s, seed++));
    CHECK(max_diff(fx::einsum(c.subscripts, xs), brute_force(c.subscripts, xs)) < 1e-12);
  }
}

TEST_CASE("einsum: implicit outputs are the labels used once, sorted, after the ellipsis dims") {
  fx::Tensor a = rnd({2, 3}, 1), b = rnd({3, 4}, 2), m = rnd({3, 3}, 3);
  CHECK(max_diff(fx::einsum("ij,jk", a, b), fx::matmul(a, b)) < 1e-12);
  CHECK(max_diff(fx::einsum("ba", a), fx::transpose(a)) < 1e-15);  // output "ab": a transpose
  CHECK(max_diff(fx::einsum("ii", m), brute_force("ii->", {m})) < 1e-15);
  CHECK(max_diff(fx::einsum("ij,kj", a, a), fx::matmul(a, fx::transpose(a))) < 1e-12);
  CHECK(fx::einsum("i,i", fx::ones({3}), fx::ones({3})).shape() == std::vector<int64_t>{});
  fx::Tensor batched = rnd({5, 2, 3}, 4);
  CHECK(max_diff(fx::einsum("...ij,jk", batched, b), fx::matmul(batched, b)) < 1e-12);
  CHECK(fx::einsum("...ji", batched).shape() == std::vector<int64_t>{5, 3, 2});
}

TEST_CASE("einsum: ellipsis dims broadcast like numpy and are summed when the output omits them") {
  fx::Tensor a = rnd({2, 1, 3, 4}, 5), b = rnd({5, 4, 2}, 6);
  CHECK(max_diff(fx::einsum("...ij,...jk->...ik", a, b), fx::matmul(a, b)) < 1e-12);
  CHECK(max_diff(fx::einsum("...ij,...jk", a, b), fx::matmul(a, b)) < 1e-12);
  fx::Tensor x = rnd({2, 3, 4}, 7);
  CHECK(max_diff(fx::einsum("i...->...i", x), fx::transpose(x, {1, 2, 0})) < 1e-15);
  CHECK(max_diff(fx::einsum("...i->...", x), fx::sum(x, {2})) < 1e-12);
  CHECK(max_diff(fx::einsum("...i->i", x), fx::sum(x, {0, 1})) < 1e-12);
  CHECK(max_diff(fx::einsum("i...i->...", rnd({3, 2, 3}, 8)), brute_force("iji->j", {rnd({3, 2, 3}, 8)})) < 1e-12);
  CHECK(max_diff(fx::einsum("...,...->...", fx::scalar(2.0), x), x * 2.0) < 1e-15);
}

TEST_CASE("einsum: operands are promoted to a common dtype") {
  fx::Tensor a32 = fx::astype(rnd({2, 3}, 9), fx::f32), b64 = rnd({3, 2}, 10);
  CHECK(fx::einsum("ij,jk", a32, b64).dtype() == fx::f64);
  CHECK(fx::einsum("ij,jk", a32, fx::astype(b64, fx::f32)).dtype() == fx::f32);
  fx::Tensor ints = fx::reshape(fx::arange(6), {2, 3});
  fx::Tensor r = fx::einsum("ij,kj->ik", ints, ints);
  CHECK(r.dtype() == fx::i32);
  CHECK(r.to_vector<double>() == std::vector<double>{5, 14, 14, 50});
}

TEST_CASE("einsum: the planner contracts the pair with the smallest result first") {
  using Path = std::vector<std::pair<int64_t, int64_t>>;
  CHECK(fx::einsum_path("ij,jk,kl->il", {{2, 100}, {100, 3}, {3, 50}}) == Path{{0, 1}, {0, 1}});
  CHECK(fx::einsum_path("ij,jk,kl->il", {{100, 2}, {2, 100}, {100, 2}}) == Path{{1, 2}, {0, 1}});
  // A vector-matrix-matrix chain: the vector is contracted first, never the big matrix product.
  CHECK(fx::einsum_path("i,ij,jk->k", {{50}, {50, 60}, {60, 70}}) == Path{{0, 1}, {0, 1}});
  CHECK(fx::einsum_path("ij,jk->ik", {{2, 3}, {3, 4}}) == Path{{0, 1}});
  CHECK(fx::einsum_path("ii", {{3, 3}}).empty());
  // The result does not depend on the order: the chain against explicit products.
  fx::Tensor a = rnd({4, 2}, 11), b = rnd({2, 4}, 12), c = rnd({4, 2}, 13);
  CHECK(max_diff(fx::einsum("ij,jk,kl->il", a, b, c), fx::matmul(a, fx::matmul(b, c))) < 1e-12);
}

TEST_CASE("einsum: derivatives, jit and vmap go through the lowered primitives") {
  fx::Tensor a = rnd({3, 4}, 14), b = rnd({4, 2}, 15), m = rnd({3, 3}, 16);
  auto f = [](const fx::Tensor& x, const fx::Tensor& y) { return fx::sum(fx::sin(fx::einsum("ij,jk->ik", x, y))); };
  auto g = [](const fx::Tensor& x, const fx::Tensor& y) { return fx::sum(fx::sin(fx::matmul(x, y))); };
  CHECK(max_diff(fx::grad(f)(a, b), fx::grad(g)(a, b)) < 1e-12);
  CHECK(max_diff(fx::grad(f, fx::argnums<1>)(a, b), fx::grad(g, fx::argnums<1>)(a, b)) < 1e-12);
  CHECK(max_diff(fx::jit(f)(a, b), f(a, b)) < 1e-12);
  // Trace: the gradient is the identity; the diagonal's hessian of a cubic is diagonal.
  CHECK(max_diff(fx::grad([](const fx::Tensor& x) { return fx::einsum("ii", x); })(m), fx::eye(3)) < 1e-15);
  auto cubic = [](const fx::Tensor& x) { return fx::sum(fx::einsum("ii->i", x) * fx::einsum("ii->i", x)); };
  CHECK(max_diff(fx::grad(cubic)(m), fx::eye(3) * m * 2.0) < 1e-12);
  // vmap over a leading axis equals the batch label.
  fx::Tensor as = rnd({5, 3, 4}, 17), bs = rnd({5, 4, 2}, 18);
  fx::Tensor mapped =
      fx::vmap([](const fx::Tensor& x, const fx::Tensor& y) { return fx::einsum("ij,jk", x, y); })(as, bs);
  CHECK(max_diff(mapped, fx::einsum("bij,bjk->bik", as, bs)) < 1e-12);
  auto diag = [](const fx::Tensor& x) { return fx::einsum("ii->i", x); };
  fx::Tensor ms = rnd({2, 3, 3}, 19);
  CHECK(max_diff(fx::vmap(diag)(ms), fx::einsum("bii->bi", ms)) < 1e-15);
}

TEST_CASE("einsum: errors for malformed subscripts, size mismatches and operand counts") {
  fx::Tensor a = fx::zeros({2, 3}), b = fx::zeros({4, 5});
  CHECK(message_of<fx::Error>([&] {
          fx::einsum("ij,j$->i", a, fx::zeros({3, 1}));
        }) ==
        "[einsum] subscripts \"ij,j$->i\": operand 1's term \"j$\" has the invalid character '$'. Use letters a-z, "
        "A-Z and '...'.");
  CHECK(message_of<fx::Error>([&] { fx::einsum("i..j", a); }).find("has a '.' that is not part of '...'") !=
        std::string::npos);
  CHECK(message_of<fx::Error>([&] { fx::einsum("...i...", a); }).find("has more than one '...'") != std::string::npos);
  CHECK(message_of<fx::Error>([&] { fx::einsum("ij->i->j", a); }).find("more than one '->'") != std::string::npos);
  CHECK(message_of<fx::ShapeError>([&] { fx::einsum("ij,jk->ik", a); }) ==
        "[einsum] subscripts \"ij,jk->ik\" have 2 input term(s) but 1 operand(s) were given. Give one "
        "comma-separated term per operand.");
  CHECK(message_of<fx::ShapeError>([&] { fx::einsum("ij", a, b); }).find("1 input term(s) but 2 operand(s)") !=
        std::string::npos);
  CHECK(message_of<fx::ShapeError>([&] { fx::einsum("ijk", a); }) ==
        "[einsum] subscripts \"ijk\": operand 0's term \"ijk\" has 3 label(s) but the operand has shape [2,3] (rank "
        "2). Give one label per dim, or '...' for the leading ones.");
  CHECK(message_of<fx::ShapeError>([&] { fx::einsum("ij,jk->ik", a, b); }) ==
        "[einsum] subscripts \"ij,jk->ik\": label 'j' has size 3 in operand 0 [2,3] but 4 in operand 1 [4,5]. Every "
        "dim with one label must have one size.");
  CHECK(message_of<fx::ShapeError>([&] { fx::einsum("ii", a); }).find("label 'i' has size 2 in operand 0") !=
        std::string::npos);
  CHECK(message_of<fx::ShapeError>([&] {
          fx::einsum("...i,...i", fx::zeros({2, 3}), fx::zeros({4, 3}));
        }).find("the '...' dims of operand 0 [2,3] and operand 1 [4,3] do not broadcast") != std::string::npos);
  CHECK(message_of<fx::Error>([&] { fx::einsum("ij->ii", a); }).find("the output repeats label 'i'") !=
        std::string::npos);
  CHECK(message_of<fx::Error>([&] { fx::einsum("ij->k", a); }).find("output label 'k' appears in no input term") !=
        std::string::npos);
  CHECK(message_of<fx::ShapeError>([&] { fx::einsum("", std::vector<fx::Tensor>{}); }) ==
        "[einsum] needs at least one operand, got none.");
}
