/// einsum: numpy/JAX subscripts lowered to dot_general, transpose, reduce_sum, slice and reshape.
///
///   fx::einsum("bij,bjk->bik", a, b)     // batched matmul
///   fx::einsum("ii", a)                  // trace;  "ii->i": the diagonal
///   fx::einsum("...ij,...jk", a, b)      // '...' stands for broadcast leading dims
///   fx::einsum("ij,jk,kl->il", a, b, c)  // any number of operands, contracted pairwise
///
/// Semantics of jnp.einsum: without '->' the output holds the labels used once, in sorted (ASCII)
/// order, after the ellipsis dims; a label repeated within one term takes that operand's diagonal;
/// labels missing from the output are summed; ellipsis dims broadcast like numpy (size 1 stretches)
/// and are summed when an explicit output leaves '...' out. Operands are promoted to their common
/// dtype first. With three or more operands the pairs are contracted in a greedy order: at each step
/// the pair whose result has the fewest elements (then the fewest multiply-adds, then the first pair).
/// Labels used by one operand only are summed out before any contraction. Every step is a
/// primitive with all its rules, so grad, vmap and jit apply.
#pragma once
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "fluxion/tensor.hpp"

namespace fluxion {

/// einsum over a list of operands (one per comma-separated input term).
Tensor einsum(const std::string& subscripts, const std::vector<Tensor>& operands);

/// einsum over operands given as arguments.
template <class... Ts, class = std::enable_if_t<(sizeof...(Ts) > 0) && (std::is_convertible_v<Ts, Tensor> && ...)>>
Tensor einsum(const std::string& subscripts, const Ts&... operands) {
  return einsum(subscripts, std::vector<Tensor>{Tensor(operands)...});
}

/// The contraction order einsum uses for operands of these shapes, like np.einsum_path's: each pair
/// (i, j), i < j, indexes the current operand list; the two are removed and their result appended.
std::vector<std::pair<int64_t, int64_t>> einsum_path(const std::string& subscripts, const std::vector<Shape>& shapes);

}  // namespace fluxion
