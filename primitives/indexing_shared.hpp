/// Internal to the indexing family (indexing_*.cpp): shared checks, rule helpers and the kernel
/// macro. Defined in indexing_common.cpp.
#pragma once
#include <string>
#include <vector>

#include "backends/cpu/indexing.hpp"
#include "backends/reference/indexing.hpp"
#include "primitives/builder.hpp"
#include "primitives/elementwise.hpp"
#include "primitives/indexing.hpp"
#include "primitives/registry.hpp"

namespace fluxion::primitives::indexing_family {

// ---- checks of the shape rules ----

/// "(0,2)" — integer lists in messages, printed like the Jaxpr params.
std::string ints_str(const Ints& v);
/// A per-dimension parameter list must have one entry per operand dimension.
void check_per_dim(const char* nm, const char* what, const Ints& v, const AbstractValue& x);
/// `axis` must name a dimension of the rank-`rank` value described by `of`.
void check_axis(const char* nm, const char* what, int64_t axis, int64_t rank, const AbstractValue& of);
/// Inputs [first, end) are rank-0 integer start indices, one per dimension of `x`.
void check_start_indices(const char* nm, const std::vector<AbstractValue>& in, size_t first, const AbstractValue& x);

// ---- helpers of the rules ----

/// The inputs from `first` on.
std::vector<Tensor> tail(const std::vector<Tensor>& in, size_t first);
/// Start indices: the inputs from `first` on.
std::vector<Tensor> starts_of(const std::vector<Tensor>& in, size_t first);
/// `value` broadcast to `shape` (a staged op rather than a materialised constant).
Tensor filled(const Shape& shape, double value, DType dtype);
Tensor zeros_of(const AbstractValue& a);
/// Integer `t` as i64.
Tensor as_i64(const Tensor& t);
/// i64 `t` clamped elementwise to [lo, hi].
Tensor clamp_i64(const Tensor& t, int64_t lo, int64_t hi);
/// Index lists with `value` inserted at position `at`.
Ints inserted(Ints v, int64_t at, int64_t value);
/// The permutation moving the `count` axes starting at `from` so that they start at `to`.
Ints move_block(int64_t rank, int64_t from, int64_t count, int64_t to);
/// `x` transposed by `perm` (x itself for the identity).
Tensor permuted(const Tensor& x, const Ints& perm);
/// Per-example gather along axis `a` >= 1 of x (batch axis 0) with clamped i64 indices [B, I...].
Tensor batched_take(const Tensor& x, const Tensor& idx, int64_t a);
/// Per-example scatter_add, the transpose of batched_take.
Tensor batched_scatter_add(const Tensor& o, const Tensor& idx, const Tensor& updates, int64_t a);
/// A mapped rank-0 start index (physical shape [B]) as i64 clamped to [0, hi].
Tensor batched_start(const Tensor& s, int64_t bd, int64_t hi);
/// The primal output; true when it is floating (integer/bool results have zero tangents).
bool float_primal_out(const Primitive& self, const std::vector<Tensor>& primals, const Params& params,
                      std::vector<Tensor>& primals_out, std::vector<Tensor>& tangents_out);
/// slice, pad, concatenate: linear in every input.
void all_linear_jvp(const Primitive& self, const std::vector<Tensor>& primals, const std::vector<Tensor>& tangents,
                    const Params& params, std::vector<Tensor>& primals_out, std::vector<Tensor>& tangents_out);
/// `axis` counted from the end when negative; AxisError naming `where` when out of range.
int64_t normalized_axis(const char* where, int64_t axis, int64_t rank);

}  // namespace fluxion::primitives::indexing_family

// name_cpu and name_reference: unpack params, call the backend's kernel (namespace k).
#define FLUXION_INDEXING_KERNELS(name, ...)                                                              \
  void name##_cpu(const std::vector<Tensor>& in, const Params& params, std::vector<Tensor>& out) {       \
    namespace k = cpu::indexing_kernels;                                                                 \
    __VA_ARGS__;                                                                                         \
  }                                                                                                      \
  void name##_reference(const std::vector<Tensor>& in, const Params& params, std::vector<Tensor>& out) { \
    namespace k = reference::indexing_kernels;                                                           \
    __VA_ARGS__;                                                                                         \
  }
