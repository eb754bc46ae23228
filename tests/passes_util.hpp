/// Shared by the pass tests (test_passes*.cpp): a pass applied to a Jaxpr, checked.
#pragma once
#include <doctest/doctest.h>

#include <fluxion/fluxion.hpp>

#include "samples.hpp"

namespace fluxion::testing {

/// `pass(original)`, after checking it typechecks and computes the original's values on `args`.
inline Jaxpr checked(Jaxpr (*pass)(Jaxpr), const Jaxpr& original, const std::vector<Tensor>& args) {
  typecheck(original);
  Jaxpr out = pass(original);  // a copy: the passes take their Jaxpr by value
  typecheck(out);
  std::vector<Tensor> want = eval_jaxpr(original, args), got = eval_jaxpr(out, args);
  REQUIRE(got.size() == want.size());
  for (size_t i = 0; i < got.size(); ++i) CHECK_MESSAGE(compare_tensors(got[i], want[i]) == "", "output " << i);
  return out;
}

}  // namespace fluxion::testing
