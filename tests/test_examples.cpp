// The two worked examples of the transforms issue: the Hessian of an MLP loss with respect to
// parameters held in a Boost.Hana struct, and per-sample gradients with vmap(grad).
#include <doctest/doctest.h>

#include <cmath>

#include <fluxion/fluxion.hpp>

namespace fx = fluxion;

struct Mlp {
  fx::Tensor w1, b1, w2, b2;
};
BOOST_HANA_ADAPT_STRUCT(Mlp, w1, b1, w2, b2);

namespace {

fx::Tensor forward(const Mlp& p, const fx::Tensor& x) {
  return fx::matmul(fx::tanh(fx::matmul(x, p.w1) + p.b1), p.w2) + p.b2;
}

Mlp init(int64_t in, int64_t hidden, int64_t out, uint64_t seed) {
  auto r = [&](std::vector<int64_t> shape, uint64_t s) {
    fx::Tensor u = fx::linspace(-1.0, 1.0, fx::checked_num_elements("init", shape));
    return fx::reshape(fx::sin(u * static_cast<double>(s + 3)) * 0.5, shape);
  };
  return Mlp{r({in, hidden}, seed), r({hidden}, seed + 1), r({hidden, out}, seed + 2), r({out}, seed + 3)};
}

std::vector<double> flat(const Mlp& p) {
  std::vector<double> out;
  for (const fx::Tensor& t : fx::tree_leaves(p))
    for (double v : t.to_vector<double>()) out.push_back(v);
  return out;
}

}  // namespace

TEST_CASE("example: the Hessian of an MLP's mean-squared error w.r.t. a Hana struct of parameters") {
  Mlp params = init(3, 4, 2, 1);
  fx::Tensor x = fx::reshape(fx::linspace(-1.0, 1.0, 15), {5, 3});
  fx::Tensor y = fx::reshape(fx::cos(fx::linspace(0.0, 2.0, 10)), {5, 2});
  // The five lines users know from functorch:
  auto loss = [&](const Mlp& p) {
    fx::Tensor err = forward(p, x) - y;
    return fx::mean(err * err);
  };
  std::vector<Mlp> H = fx::hessian(loss)(params);

  REQUIRE(H.size() == 4);
  CHECK(H[0].w1.shape() == std::vector<int64_t>{3, 4, 3, 4});
  CHECK(H[0].b2.shape() == std::vector<int64_t>{3, 4, 2});
  CHECK(H[3].w1.shape() == std::vector<int64_t>{2, 3, 4});
  // Symmetric: block (i, j) is block (j, i) transposed; flatten both to a dense matrix.
  std::vector<fx::Tensor> leaves = fx::tree_leaves(params);
  int64_t n = 0;
  for (const auto& l : leaves) n += l.size();
  std::vector<std::vector<double>> dense(n, std::vector<double>(n));
  int64_t row = 0;
  for (size_t i = 0; i < 4; ++i) {
    std::vector<fx::Tensor> blocks = fx::tree_leaves(H[i]);
    int64_t col = 0;
    for (size_t j = 0; j < 4; ++j) {
      std::vector<double> b = blocks[j].to_vector<double>();
      int64_t ni = leaves[i].size(), nj = leaves[j].size();
      for (int64_t a = 0; a < ni; ++a)
        for (int64_t c = 0; c < nj; ++c) dense[row + a][col + c] = b[a * nj + c];
      col += nj;
    }
    row += leaves[i].size();
  }
  for (int64_t a = 0; a < n; ++a)
    for (int64_t c = 0; c < a; ++c) CHECK(dense[a][c] == doctest::Approx(dense[c][a]).epsilon(1e-10));
  // H·v from the dense Hessian equals the Hessian-vector product, which never forms H.
  Mlp v = init(3, 4, 2, 7);
  std::vector<double> hv = flat(fx::hvp(loss, params, v)), vf = flat(v);
  for (int64_t a = 0; a < n; ++a) {
    double s = 0;
    for (int64_t c = 0; c < n; ++c) s += dense[a][c] * vf[c];
    CHECK(hv[a] == doctest::Approx(s).epsilon(1e-9));
  }
  // And the gradient (one row of information) matches a central difference along v.
  auto g = fx::grad(loss)(params);
  double eps = 1e-6;
  auto shifted = [&](double h) {
    return fx::tree_map([&](const fx::Tensor& p, const fx::Tensor& d) { return p + d * h; }, params, v);
  };
  double fd = (loss(shifted(eps)).item<double>() - loss(shifted(-eps)).item<double>()) / (2 * eps);
  double dot = 0;
  std::vector<double> gf = flat(g);
  for (int64_t a = 0; a < n; ++a) dot += gf[a] * vf[a];
  CHECK(dot == doctest::Approx(fd).epsilon(1e-6));
}

TEST_CASE("example: per-sample gradients of a classifier with vmap(grad(loss), in_axes(none, 0, 0))") {
  Mlp params = init(4, 8, 3, 2);
  fx::Tensor xs = fx::reshape(fx::sin(fx::linspace(0.0, 9.0, 24)), {6, 4});
  fx::Tensor labels = fx::tensor({0, 2, 1, 1, 0, 2});
  auto loss = [](const Mlp& p, const fx::Tensor& x, const fx::Tensor& label) {
    fx::Tensor logits = forward(p, fx::expand_dims(x, 0));            // [1, 3]
    fx::Tensor onehot = fx::astype(fx::arange(3) == label, fx::f64);  // [3]
    return -fx::sum(fx::log_softmax(logits, -1) * onehot);
  };
  Mlp per_sample = fx::vmap(fx::grad(loss), fx::in_axes(fx::none, 0, 0))(params, xs, labels);
  CHECK(per_sample.w1.shape() == std::vector<int64_t>{6, 4, 8});
  CHECK(per_sample.b2.shape() == std::vector<int64_t>{6, 3});
  for (int64_t i = 0; i < 6; ++i) {
    fx::Tensor x = fx::squeeze(fx::slice(xs, {i, 0}, {i + 1, 4}), {0});
    fx::Tensor label = fx::squeeze(fx::slice(labels, {i}, {i + 1}), {0});
    Mlp g = fx::grad(loss)(params, x, label);
    std::vector<fx::Tensor> got = fx::tree_leaves(per_sample), want = fx::tree_leaves(g);
    for (size_t k = 0; k < got.size(); ++k) {
      std::vector<int64_t> start(got[k].ndim(), 0), limit = got[k].shape().dims();
      start[0] = i, limit[0] = i + 1;
      std::vector<double> a = fx::squeeze(fx::slice(got[k], start, limit), {0}).to_vector<double>();
      std::vector<double> b = want[k].to_vector<double>();
      REQUIRE(a.size() == b.size());
      for (size_t e = 0; e < a.size(); ++e) CHECK(a[e] == doctest::Approx(b[e]).epsilon(1e-12));
    }
  }
}
