/// The control-flow building blocks shared by cat_control.cpp and cat_nested.cpp: the inner
/// constructs (h [3] -> [3]) and outer constructs (inner, inputs) -> [3] of cat_control.py.
#pragma once
#include <utility>

#include "harness.hpp"

namespace diff {

using Inner = Tensor (*)(const Tensor&);
using Outer = Tensor (*)(Inner, const Args&);

/// Element i of a vector as a rank-0 tensor.
Tensor at(const Tensor& v, int64_t i);
Tensor as_i32(const Tensor& b);

/// The inner constructs, by the names cat_control.py's INNERS uses.
const std::vector<std::pair<const char*, Inner>>& inners();
/// The outer constructs, by the names of OUTERS.
const std::vector<std::pair<const char*, Outer>>& outers();

Tensor in_cond(const Tensor& h);
Tensor in_switch(const Tensor& h);
Tensor in_scan(const Tensor& h);
Tensor in_fori(const Tensor& h);
Tensor in_checkpoint(const Tensor& h);
Tensor in_custom_vjp(const Tensor& h);
Tensor out_scan(Inner g, const Args& a);
Tensor out_fori(Inner g, const Args& a);
Tensor out_while(Inner g, const Args& a);
Tensor out_cond(Inner g, const Args& a);
Tensor out_checkpoint(Inner g, const Args& a);
Tensor out_jit(Inner g, const Args& a);

/// tanh with a jvp rule giving half its true derivative (cat_control.py's half_tanh).
Tensor half_tanh(const Tensor& v);
/// 2 sin(v) with a vjp rule 3 cos(v) ct (cat_control.py's sin2).
Tensor sin2(const Tensor& v);

}  // namespace diff
