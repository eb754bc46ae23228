/// linalg_solve's handle and its singular-matrix error, shared by every backend's kernel (defined
/// in linalg.cpp).
#pragma once
#include <cstdint>
#include <string>

#include "fluxion/primitive.hpp"

namespace fluxion::primitives::linalg_detail {
/// x with a x = b (a: B... x n x n, b: B... x n x k); NoParams.
const Primitive& solve_p();
/// "the matrix at batch index 3 of f64[4,2,2]" (several batch dims: "(1,2)"), or "the matrix f64[2,2]":
/// matrix `index` (row-major over the batch dims) of `a`, for the linalg primitives' errors.
std::string matrix_location(const AbstractValue& a, int64_t index);
/// Throws the singular-matrix Error for matrix `index` (row-major over the batch dims) of `a`,
/// whose LU factorization met a zero pivot in `column`.
[[noreturn]] void fail_singular(const AbstractValue& a, int64_t index, int64_t column);
}  // namespace fluxion::primitives::linalg_detail
