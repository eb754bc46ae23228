/// linalg_solve's handle and its singular-matrix error, shared by every backend's kernel (defined
/// in linalg.cpp).
#pragma once
#include <cstdint>

#include "fluxion/primitive.hpp"

namespace fluxion::primitives::linalg_detail {
/// x with a x = b (a: B... x n x n, b: B... x n x k); NoParams.
const Primitive& solve_p();
/// Throws the singular-matrix Error for matrix `index` (row-major over the batch dims) of `a`,
/// whose LU factorization met a zero pivot in `column`.
[[noreturn]] void fail_singular(const AbstractValue& a, int64_t index, int64_t column);
}  // namespace fluxion::primitives::linalg_detail
