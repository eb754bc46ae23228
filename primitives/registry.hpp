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
void register_control_flow(std::vector<const Primitive*>& list);  // jit_call, cond, loops
void register_checkpoint(std::vector<const Primitive*>& list);    // checkpoint (checkpoint.cpp)
void register_loops(std::vector<const Primitive*>& list);         // cond, while, scan (control_flow.cpp)
void register_custom_rules(std::vector<const Primitive*>& list);  // custom_jvp_call, custom_vjp_call, custom_lin
}  // namespace fluxion::primitives
