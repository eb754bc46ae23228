/// Shared by the jit tests (test_jit*.cpp): comparisons of jit's results with eager evaluation.
#pragma once
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include <fluxion/fluxion.hpp>

#include "samples.hpp"

namespace jit_test {
namespace fx = fluxion;

inline double val(const fx::Tensor& t) { return t.item<double>(); }

inline void check_close(const fx::Tensor& got, const fx::Tensor& want) {
  std::string diff = fx::testing::compare_tensors(got, want);
  CHECK_MESSAGE(diff.empty(), diff);
}
inline void check_close(const std::vector<fx::Tensor>& got, const std::vector<fx::Tensor>& want) {
  REQUIRE(got.size() == want.size());
  for (size_t i = 0; i < got.size(); ++i) check_close(got[i], want[i]);
}

// The passes may reorder a product's accumulation (dot_general with swapped operands), which in
// f32 moves a sum of K terms by ~K ulps of its largest term: compare f32 against the scale of the
// whole result; f64 and integers stay exact to compare_tensors' tolerances.
inline void check_close_reordered(const std::vector<fx::Tensor>& got, const std::vector<fx::Tensor>& want) {
  REQUIRE(got.size() == want.size());
  for (size_t i = 0; i < got.size(); ++i) {
    if (want[i].dtype() != fx::f32 || fx::testing::compare_tensors(got[i], want[i]).empty()) {
      check_close(got[i], want[i]);
      continue;
    }
    std::vector<double> g = got[i].to_vector<double>(), w = want[i].to_vector<double>();
    double scale = 1;
    for (double v : w) scale = std::isfinite(v) ? std::max(scale, std::abs(v)) : scale;
    for (size_t k = 0; k < g.size(); ++k) {
      bool same = (std::isnan(g[k]) && std::isnan(w[k])) || g[k] == w[k] || std::abs(g[k] - w[k]) <= 1e-5 * scale;
      if (!same) {
        CHECK_MESSAGE(same, "element " << k << ": got " << g[k] << ", want " << w[k] << " (scale " << scale << ")");
        break;
      }
    }
  }
}

/// Each got[i] within tol * (1 + |want|) of want[i] elementwise (the first miss per output reported).
inline void check_within(const std::vector<fx::Tensor>& got, const std::vector<fx::Tensor>& want, double tol) {
  REQUIRE(got.size() == want.size());
  for (size_t i = 0; i < got.size(); ++i) {
    std::vector<double> g = got[i].to_vector<double>(), w = want[i].to_vector<double>();
    REQUIRE(g.size() == w.size());
    for (size_t k = 0; k < g.size(); ++k)
      if (std::abs(g[k] - w[k]) > tol * (1 + std::abs(w[k]))) {
        CHECK_MESSAGE(false, "output " << i << " element " << k << ": got " << g[k] << ", want " << w[k]);
        break;
      }
  }
}

inline fx::Tensor loss(const fx::Tensor& x, const fx::Tensor& y) {
  return fx::sum(fx::tanh(x) * x + fx::exp(-(x * x)) * y);
}

}  // namespace jit_test
