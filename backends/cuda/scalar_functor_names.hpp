/// Host-only map from an elementwise primitive to its scalar functor in primitives/scalar_functions.hpp,
/// by name, for code generators (jit's NVRTC kernels call `<name>::apply(...)` on the text of
/// fluxion::scalar::source()). Primitives are compared by handle, never by name.
#pragma once
#include "fluxion/dtype.hpp"
#include "fluxion/primitive.hpp"
#include "primitives/binary.hpp"
#include "primitives/conversion.hpp"
#include "primitives/unary.hpp"

namespace fluxion::cuda {

namespace scalar_names_detail {

struct FunctorName {
  const Primitive& (*handle)();
  const char* name;
  int arity;
};

/// Every elementwise primitive with its functor and operand count. convert_element_type's functor
/// is a template on the result element type: `fluxion::scalar::ConvertElementType<To>::apply(x)`.
inline const FunctorName* functor_table(int& size) {
  namespace u = primitives::unary_family;
  namespace b = primitives::binary_family;
  namespace c = primitives::conversion_family;
  static const FunctorName table[] = {
      {&u::neg_p, "fluxion::scalar::Neg", 1},
      {&u::sin_p, "fluxion::scalar::Sin", 1},
      {&u::cos_p, "fluxion::scalar::Cos", 1},
      {&u::tan_p, "fluxion::scalar::Tan", 1},
      {&u::exp_p, "fluxion::scalar::Exp", 1},
      {&u::log_p, "fluxion::scalar::Log", 1},
      {&u::log1p_p, "fluxion::scalar::Log1p", 1},
      {&u::expm1_p, "fluxion::scalar::Expm1", 1},
      {&u::sqrt_p, "fluxion::scalar::Sqrt", 1},
      {&u::rsqrt_p, "fluxion::scalar::Rsqrt", 1},
      {&u::tanh_p, "fluxion::scalar::Tanh", 1},
      {&u::logistic_p, "fluxion::scalar::Logistic", 1},
      {&u::abs_p, "fluxion::scalar::Abs", 1},
      {&u::sign_p, "fluxion::scalar::Sign", 1},
      {&u::floor_p, "fluxion::scalar::Floor", 1},
      {&u::ceil_p, "fluxion::scalar::Ceil", 1},
      {&u::round_p, "fluxion::scalar::Round", 1},
      {&u::round_nearest_even_p, "fluxion::scalar::RoundNearestEven", 1},
      {&u::logical_not_p, "fluxion::scalar::Not", 1},
      {&u::stop_gradient_p, "fluxion::scalar::StopGradient", 1},
      {&b::add_p, "fluxion::scalar::Add", 2},
      {&b::sub_p, "fluxion::scalar::Sub", 2},
      {&b::mul_p, "fluxion::scalar::Mul", 2},
      {&b::div_p, "fluxion::scalar::Div", 2},
      {&b::pow_p, "fluxion::scalar::Pow", 2},
      {&b::max_p, "fluxion::scalar::Max", 2},
      {&b::min_p, "fluxion::scalar::Min", 2},
      {&b::atan2_p, "fluxion::scalar::Atan2", 2},
      {&b::rem_p, "fluxion::scalar::Rem", 2},
      {&b::lt_p, "fluxion::scalar::Lt", 2},
      {&b::le_p, "fluxion::scalar::Le", 2},
      {&b::gt_p, "fluxion::scalar::Gt", 2},
      {&b::ge_p, "fluxion::scalar::Ge", 2},
      {&b::eq_p, "fluxion::scalar::Eq", 2},
      {&b::ne_p, "fluxion::scalar::Ne", 2},
      {&b::logical_and_p, "fluxion::scalar::LogicalAnd", 2},
      {&b::logical_or_p, "fluxion::scalar::LogicalOr", 2},
      {&c::select_p, "fluxion::scalar::Select", 3},
      {&c::convert_element_type_p, "fluxion::scalar::ConvertElementType", 1},
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

/// The qualified name of `p`'s scalar functor ("fluxion::scalar::Sin"), nullptr when `p` is not
/// elementwise with a functor. For convert_element_type the name is a template taking the result
/// element type (scalar_type_name(new_dtype)).
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
