// emit_cpp's elementwise rules: unary, binary, comparison, select and convert_element_type, each one
// loop calling the library's scalar functor (embedded in the generated file), so the formulas are
// the library's own.
#include "primitives/conversion.hpp"
#include "src/codegen_emitter.hpp"

namespace fluxion::codegen_detail {

/// out[i] = expression(i) over every element (one statement for a single element).
void elementwise_loop(EmitContext& c, const std::function<std::string(const std::string&)>& expression) {
  const int64_t n = c.out[0].aval.shape.num_elements();
  if (n == 0) return;
  if (n == 1) {
    c.code.line(c.out[0].ptr + "[0] = " + expression("0") + ";");
    return;
  }
  c.code.open("for (int64_t i = 0; i < " + std::to_string(n) + "; ++i)");
  c.code.line(c.out[0].ptr + "[i] = " + expression("i") + ";");
  c.code.close();
}

/// The scalar functor of each elementwise primitive (primitives/scalar_functions.hpp).
const std::map<std::string, std::string>& functors() {
  static const std::map<std::string, std::string> table = {
      {"neg", "Neg"},        {"sin", "Sin"},        {"cos", "Cos"},
      {"tan", "Tan"},        {"exp", "Exp"},        {"log", "Log"},
      {"log1p", "Log1p"},    {"expm1", "Expm1"},    {"sqrt", "Sqrt"},
      {"rsqrt", "Rsqrt"},    {"tanh", "Tanh"},      {"logistic", "Logistic"},
      {"abs", "Abs"},        {"sign", "Sign"},      {"floor", "Floor"},
      {"ceil", "Ceil"},      {"round", "Round"},    {"round_nearest_even", "RoundNearestEven"},
      {"not", "Not"},        {"erf_inv", "ErfInv"}, {"stop_gradient", "StopGradient"},
      {"add", "Add"},        {"sub", "Sub"},        {"mul", "Mul"},
      {"div", "Div"},        {"rem", "Rem"},        {"pow", "Pow"},
      {"atan2", "Atan2"},    {"max", "Max"},        {"min", "Min"},
      {"lt", "Lt"},          {"le", "Le"},          {"gt", "Gt"},
      {"ge", "Ge"},          {"eq", "Eq"},          {"ne", "Ne"},
      {"and", "LogicalAnd"}, {"or", "LogicalOr"},
  };
  return table;
}

/// Unary and binary primitives: `scalar_functions::F::apply(operands...)`; literals are typed
/// like the other operand, so the functor's template argument is deduced once.
void emit_functor(EmitContext& c) {
  const std::string f = "scalar_functions::" + functors().at(c.eq.primitive->name) + "::apply(";
  elementwise_loop(c, [&](const std::string& i) {
    std::string args;
    for (const Value& v : c.in) args += (args.empty() ? "" : ", ") + v.at(i);
    return f + args + ")";
  });
}

void emit_select(EmitContext& c) {
  elementwise_loop(c, [&](const std::string& i) {
    return "scalar_functions::Select::apply(" + c.in[0].at(i) + ", " + c.in[1].at(i) + ", " + c.in[2].at(i) + ")";
  });
}

void emit_convert(EmitContext& c) {
  const DType to = c.eq.params->as<primitives::conversion_family::ConvertElementTypeParams>().new_dtype;
  elementwise_loop(c, [&](const std::string& i) {
    return "scalar_functions::ConvertElementType<" + std::string(c_type(to)) + ">::apply(" + c.in[0].at(i) + ")";
  });
}

// fma: a·b + c rounded once (the random family's primitive).
void emit_fma(EmitContext& c) {
  elementwise_loop(c, [&](const std::string& i) {
    return "scalar_functions::fused_multiply_add(" + c.in[0].at(i) + ", " + c.in[1].at(i) + ", " + c.in[2].at(i) + ")";
  });
}

void add_elementwise_rules(std::map<std::string, EmitRule>& table) {
  for (const auto& [name, functor] : functors()) table[name] = &emit_functor;
  table["select"] = &emit_select;
  table["convert_element_type"] = &emit_convert;
  table["fma"] = &emit_fma;
}

}  // namespace fluxion::codegen_detail
