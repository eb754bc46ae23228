/// The reduction primitives' handles and params (defined in reduction.cpp).
#pragma once
#include <tuple>
#include <vector>

#include "fluxion/primitive.hpp"

namespace fluxion::primitives::reduction_family {

/// Params of reduce_sum/max/min/prod: the reduced axes (sorted, unique), printed "axes=(0,1)".
struct ReduceParams final : ParamsOf<ReduceParams> {
  std::vector<int64_t> axes;
  explicit ReduceParams(std::vector<int64_t> a) : axes(std::move(a)) {}
  auto fields() const { return std::tie(axes); }
  static constexpr const char* names[] = {"axes"};
};

/// Params of argmax/argmin: one axis (as JAX, a 1-tuple) and the index dtype (i32 or i64).
struct ArgParams final : ParamsOf<ArgParams> {
  std::vector<int64_t> axes;
  DType index_dtype;
  ArgParams(std::vector<int64_t> a, DType d) : axes(std::move(a)), index_dtype(d) {}
  auto fields() const { return std::tie(axes, index_dtype); }
  static constexpr const char* names[] = {"axes", "index_dtype"};
};

/// Params of cumsum: printed "axis=1 reverse=False".
struct CumsumParams final : ParamsOf<CumsumParams> {
  int64_t axis;
  bool reverse;
  CumsumParams(int64_t a, bool r) : axis(a), reverse(r) {}
  auto fields() const { return std::tie(axis, reverse); }
  static constexpr const char* names[] = {"axis", "reverse"};
};

const Primitive& reduce_sum_p();   // ReduceParams
const Primitive& reduce_max_p();   // ReduceParams
const Primitive& reduce_min_p();   // ReduceParams
const Primitive& reduce_prod_p();  // ReduceParams
const Primitive& argmax_p();       // ArgParams
const Primitive& argmin_p();       // ArgParams
const Primitive& cumsum_p();       // CumsumParams

}  // namespace fluxion::primitives::reduction_family
