/// Shared by the export tests (test_export*.cpp) and the fresh-process reader (export_reader.cpp, which
/// links nothing but fluxion::fluxion): bit-for-bit comparison and the models exported in both.
#pragma once
#include <cstring>
#include <map>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include <fluxion/fluxion.hpp>

namespace export_test {

namespace fx = fluxion;

/// "" when `got` and `want` have the same aval and the same bytes, else what differs.
inline std::string bit_mismatch(const fx::Tensor& got, const fx::Tensor& want) {
  std::ostringstream os;
  if (got.aval() != want.aval()) {
    os << "aval " << got.aval() << " instead of " << want.aval();
    return os.str();
  }
  fx::Tensor a = got.concrete(), b = want.concrete();
  const size_t elem = static_cast<size_t>(fx::dtype_size(a.dtype()));
  const auto* pa = static_cast<const unsigned char*>(a.array().data());
  const auto* pb = static_cast<const unsigned char*>(b.array().data());
  for (size_t i = 0; i < static_cast<size_t>(a.size()); ++i)
    if (std::memcmp(pa + i * elem, pb + i * elem, elem) != 0) {
      os << "different bits at flat index " << i;
      return os.str();
    }
  return "";
}

/// "" when the lists match bit for bit.
inline std::string bit_mismatch(const std::vector<fx::Tensor>& got, const std::vector<fx::Tensor>& want) {
  if (got.size() != want.size())
    return std::to_string(got.size()) + " tensors instead of " + std::to_string(want.size());
  for (size_t i = 0; i < got.size(); ++i) {
    std::string m = bit_mismatch(got[i], want[i]);
    if (!m.empty()) return "output " + std::to_string(i) + ": " + m;
  }
  return "";
}

using Params = std::map<std::string, fx::Tensor>;

/// A two-layer perceptron's mean squared error.
inline fx::Tensor mlp_loss(const Params& p, const fx::Tensor& x, const fx::Tensor& y) {
  fx::Tensor h = fx::tanh(fx::matmul(x, p.at("w1")) + p.at("b1"));
  fx::Tensor d = fx::matmul(h, p.at("w2")) + p.at("b2") - y;
  return fx::mean(d * d);
}

/// A recurrence over the rows of xs (fx::scan), reduced to a scalar.
inline fx::Tensor scan_loss(const fx::Tensor& w, const fx::Tensor& xs) {
  auto body = [w](const fx::Tensor& c, const fx::Tensor& x) {
    fx::Tensor next = fx::tanh(c * w + x);
    return std::make_pair(next, fx::sum(next * c));
  };
  auto [last, ys] = fx::scan(body, fx::zeros_like(w), xs);
  return fx::sum(last) + fx::sum(ys);
}

}  // namespace export_test
