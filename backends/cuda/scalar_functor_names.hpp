/// Host-only map from an elementwise primitive to its scalar functor in
/// primitives/scalar_functions.hpp, by name, for code generators (jit's NVRTC kernels call
/// `<name>::apply(...)` after the text of fluxion::scalar_functions::source()). Primitives are
/// compared by handle, never by name.
#pragma once
#include "fluxion/dtype.hpp"
#include "fluxion/primitive.hpp"
#include "primitives/binary.hpp"
#include "primitives/conversion.hpp"
#include "primitives/random.hpp"
#include "primitives/unary.hpp"

namespace fluxion::cuda {

namespace scalar_names_detail {

struct FunctorName {
  const Primitive& (*handle)();
  const char* name;
  int arity;
};

/// Every elementwise primitive with its functor and operand count. convert_element_type's functor
/// is a template on the result element type: `fluxion::scalar_functions::ConvertElementType<To>`.
inline const FunctorName* functor_table(int& size) {
  namespace u = primitives::unary_family;
  namespace b = primitives::binary_family;
  namespace c = primitives::conversion_family;
  static const FunctorName table[] = {
      {&u::neg_p, "fluxion::scalar_functions::Neg", 1},
      {&u::sin_p, "fluxion::scalar_functions::Sin", 1},
      {&u::cos_p, "fluxion::scalar_functions::Cos", 1},
      {&u::tan_p, "fluxion::scalar_functions::Tan", 1},
      {&u::exp_p, "fluxion::scalar_functions::Exp", 1},
      {&u::log_p, "fluxion::scalar_functions::Log", 1},
      {&u::log1p_p, "fluxion::scalar_functions::Log1p", 1},
      {&u::expm1_p, "fluxion::scalar_functions::Expm1", 1},
      {&u::sqrt_p, "fluxion::scalar_functions::Sqrt", 1},
      {&u::rsqrt_p, "fluxion::scalar_functions::Rsqrt", 1},
      {&u::tanh_p, "fluxion::scalar_functions::Tanh", 1},
      {&u::logistic_p, "fluxion::scalar_functions::Logistic", 1},
      {&u::abs_p, "fluxion::scalar_functions::Abs", 1},
      {&u::sign_p, "fluxion::scalar_functions::Sign", 1},
      {&u::floor_p, "fluxion::scalar_functions::Floor", 1},
      {&u::ceil_p, "fluxion::scalar_functions::Ceil", 1},
      {&u::round_p, "fluxion::scalar_functions::Round", 1},
      {&u::round_nearest_even_p, "fluxion::scalar_functions::RoundNearestEven", 1},
      {&u::logical_not_p, "fluxion::scalar_functions::Not", 1},
      {&u::stop_gradient_p, "fluxion::scalar_functions::StopGradient", 1},
      {&b::add_p, "fluxion::scalar_functions::Add", 2},
      {&b::sub_p, "fluxion::scalar_functions::Sub", 2},
      {&b::mul_p, "fluxion::scalar_functions::Mul", 2},
      {&b::div_p, "fluxion::scalar_functions::Div", 2},
      {&b::pow_p, "fluxion::scalar_functions::Pow", 2},
      {&b::max_p, "fluxion::scalar_functions::Max", 2},
      {&b::min_p, "fluxion::scalar_functions::Min", 2},
      {&b::atan2_p, "fluxion::scalar_functions::Atan2", 2},
      {&b::rem_p, "fluxion::scalar_functions::Rem", 2},
      {&b::lt_p, "fluxion::scalar_functions::Lt", 2},
      {&b::le_p, "fluxion::scalar_functions::Le", 2},
      {&b::gt_p, "fluxion::scalar_functions::Gt", 2},
      {&b::ge_p, "fluxion::scalar_functions::Ge", 2},
      {&b::eq_p, "fluxion::scalar_functions::Eq", 2},
      {&b::ne_p, "fluxion::scalar_functions::Ne", 2},
      {&b::logical_and_p, "fluxion::scalar_functions::LogicalAnd", 2},
      {&b::logical_or_p, "fluxion::scalar_functions::LogicalOr", 2},
      {&c::select_p, "fluxion::scalar_functions::Select", 3},
      {&c::convert_element_type_p, "fluxion::scalar_functions::ConvertElementType", 1},
      {&primitives::random_detail::erf_inv_p, "fluxion::scalar_functions::ErfInv", 1},
  };
  size = static_cast<int>(sizeof(table) / sizeof(table[0]));
  return table;
}

inline const FunctorName* find_functor(const Primitive& p) {
  int size = 0;
  const FunctorName* table = functor_table(size);
  for (int k = 0; k < size; ++k)
    if (&table[k].handle() == &p) return &table[k];
  return nullptr;
}

}  // namespace scalar_names_detail

/// The qualified name of `p`'s scalar functor ("fluxion::scalar_functions::Sin"), nullptr when `p`
/// is not an elementwise primitive. For convert_element_type the name is a template taking the
/// result element type: append `<` scalar_type_name(new_dtype) `>`.
inline const char* scalar_functor_name(const Primitive& p) {
  const scalar_names_detail::FunctorName* f = scalar_names_detail::find_functor(p);
  return f ? f->name : nullptr;
}

/// Operand count of `p`'s scalar functor (1, 2, or 3 for select: pred, on_true, on_false); 0 when
/// `p` has none.
inline int scalar_functor_arity(const Primitive& p) {
  const scalar_names_detail::FunctorName* f = scalar_names_detail::find_functor(p);
  return f ? f->arity : 0;
}

/// The element type of `d` as NVRTC spells it (no <cstdint> there): bool, int, long long, float,
/// double.
inline const char* scalar_type_name(DType d) {
  switch (d) {
    case DType::boolean: return "bool";
    case DType::i32: return "int";
    case DType::i64: return "long long";
    case DType::f32: return "float";
    case DType::f64: return "double";
  }
  return nullptr;
}

}  // namespace fluxion::cuda
