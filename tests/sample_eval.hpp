// Running one registry sample's primitive directly on a backend's kernels: the sample staged to
// its single equation, that equation's concrete inputs, and the sign-of-zero comparison that
// compare_tensors' tolerance cannot make. Shared by the suites that compare backends.
#pragma once
#include <cmath>
#include <map>
#include <string>
#include <vector>

#include "samples.hpp"

namespace fluxion::testing {

// Stages the sample and returns its Jaxpr (one equation: the primitive under test).
inline Jaxpr stage_sample(const Sample& s) {
  return make_jaxpr([&](const std::vector<Tensor>& in) { return s.fn(in); })(s.inputs);
}

// The concrete inputs of the staged equation: Jaxpr inputs map to the sample's tensors.
inline std::vector<Tensor> equation_inputs(const Jaxpr& j, const Sample& s) {
  std::map<int32_t, Tensor> env;
  for (size_t i = 0; i < j.invars.size(); ++i) env[j.invars[i]] = s.inputs[i];
  for (size_t i = 0; i < j.constvars.size(); ++i) env[j.constvars[i]] = j.consts[i];
  std::vector<Tensor> in;
  for (const Atom& a : j.equations[0].inputs) in.push_back(a.is_literal() ? a.literal : env.at(a.var));
  return in;
}

// The first position where `a` and `b` both hold a zero, with different signs ("" if none): the
// tolerance of compare_tensors cannot see the sign of zero (neg(+0) = -0, sqrt(-0) = -0).
inline std::string zero_sign_mismatch(const Tensor& a, const Tensor& b) {
  if (!is_floating(a.dtype()) || a.dtype() != b.dtype() || a.size() != b.size()) return "";
  const std::vector<double> x = astype(a, f64).to_vector<double>(), y = astype(b, f64).to_vector<double>();
  for (size_t i = 0; i < x.size(); ++i)
    if (x[i] == 0 && y[i] == 0 && std::signbit(x[i]) != std::signbit(y[i]))
      return "zeros of different signs at flat index " + std::to_string(i);
  return "";
}

}  // namespace fluxion::testing
