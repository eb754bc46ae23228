/// The families' registration functions, called once by all_primitives() in registry.cpp.
#pragma once
#include <vector>

#include "fluxion/primitive.hpp"

namespace fluxion::primitives {
// Each appends its family's primitives; registry.cpp calls them in this order.
void register_unary(std::vector<const Primitive*>& list);
void register_binary(std::vector<const Primitive*>& list);
void register_conversion(std::vector<const Primitive*>& list);
void register_shape(std::vector<const Primitive*>& list);
void register_reduction(std::vector<const Primitive*>& list);
void register_dot_general(std::vector<const Primitive*>& list);
void register_linalg(std::vector<const Primitive*>& list);  // linalg_solve
void register_gram(std::vector<const Primitive*>& list);    // gram (xᵀ diag(s) x)
void register_indexing(std::vector<const Primitive*>& list);
void register_control_flow(std::vector<const Primitive*>& list);       // jit_call, cond, loops
void register_checkpoint(std::vector<const Primitive*>& list);         // checkpoint (checkpoint.cpp)
void register_loops(std::vector<const Primitive*>& list);              // cond, while, scan (control_flow.cpp)
void register_custom_rules(std::vector<const Primitive*>& list);       // custom_jvp_call, custom_vjp_call, custom_lin
void register_linalg_triangular(std::vector<const Primitive*>& list);  // cholesky, triangular_solve, cho_solve
void register_linalg_decompositions(std::vector<const Primitive*>& list);  // lu, qr, det, slogdet, matrix_power, expm
void register_linalg_spectral(std::vector<const Primitive*>& list);        // eigh, svd
void register_random(std::vector<const Primitive*>& list);  // threefry2x32 keys and distributions (fx::random::)
void register_sort(std::vector<const Primitive*>& list);    // sort, argsort, top_k, cumulative ops, associative_scan
void register_scatter(
    std::vector<const Primitive*>& list);  // general gather/scatter, take/put_along_axis, segment_sum, einsum
void register_convolution(std::vector<const Primitive*>& list);  // conv_general_dilated, conv, conv_transpose
void register_collectives(std::vector<const Primitive*>& list);  // all_sum, all_gather, ... over named axes
}  // namespace fluxion::primitives
