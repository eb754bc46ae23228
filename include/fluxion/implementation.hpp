/// The whole implementation, for the header-only switch (see fluxion.hpp). Include it in one
/// translation unit only. Every implementation file keeps its helpers in a named namespace so
/// that they can share this one translation unit.
#pragma once
#include "src/dtype_shape.cpp"
#include "src/jaxpr_print.cpp"
#include "src/params.cpp"
#include "src/tensor.cpp"
#include "transforms/eval.cpp"
#include "transforms/eval_jaxpr.cpp"
#include "transforms/stage.cpp"
#include "transforms/typecheck.cpp"
#include "primitives/elementwise_common.cpp"
#include "primitives/registry.cpp"
#include "primitives/unary.cpp"
#include "primitives/binary.cpp"
#include "primitives/conversion.cpp"
#include "primitives/shape.cpp"
#include "primitives/indexing.cpp"
#include "primitives/reduction.cpp"
#include "primitives/dot_general.cpp"
#include "src/ops.cpp"
