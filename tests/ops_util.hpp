/// Shared by the op-layer tests (test_ops*.cpp): values, dims and closeness of results.
#pragma once
#include <cmath>
#include <cstdint>
#include <limits>
#include <vector>

#include <fluxion/fluxion.hpp>

namespace ops_test {
namespace fx = fluxion;

inline std::vector<double> vals(const fx::Tensor& t) { return t.to_vector<double>(); }
inline std::vector<int64_t> dims(const fx::Tensor& t) { return t.shape().dims(); }

// Element-wise closeness for floating results.
inline bool close(const std::vector<double>& got, const std::vector<double>& want, double tol = 1e-6) {
  if (got.size() != want.size()) return false;
  for (size_t i = 0; i < got.size(); ++i) {
    if (std::isinf(want[i]) || std::isinf(got[i])) {
      if (got[i] != want[i]) return false;
    } else if (std::fabs(got[i] - want[i]) > tol * (1 + std::fabs(want[i]))) {
      return false;
    }
  }
  return true;
}

inline const fx::DType kAll[] = {fx::boolean, fx::i32, fx::i64, fx::f32, fx::f64};
inline constexpr double kInf = std::numeric_limits<double>::infinity();

}  // namespace ops_test
