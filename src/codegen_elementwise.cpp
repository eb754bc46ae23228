// emit_cpp's elementwise rules: unary, binary, comparison, select, convert_element_type and fma, each
// one loop calling the library's scalar functor (embedded in the generated file), so the formulas are
// the library's own. An elementwise result read once, by another elementwise equation, is not stored:
// its expression is substituted into the reader's (src/codegen_function.cpp decides).
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

bool is_elementwise(const std::string& name) {
  return functors().count(name) || name == "select" || name == "convert_element_type" || name == "fma";
}

// Unary and binary primitives call `scalar_functions::F::apply(operands...)` (literals are typed like
// the other operand, so the functor's template argument is deduced once); select, convert and fma
// their own functions.
std::string elementwise_expression(const Equation& eq, const std::vector<Value>& in, const std::string& i) {
  const std::string& name = eq.primitive->name;
  std::string args;
  for (const Value& v : in) args += (args.empty() ? "" : ", ") + v.at(i);
  if (name == "select") return "scalar_functions::Select::apply(" + args + ")";
  if (name == "fma") return "scalar_functions::fused_multiply_add(" + args + ")";  // a·b + c rounded once
  if (name == "convert_element_type") {
    const DType to = eq.params->as<primitives::conversion_family::ConvertElementTypeParams>().new_dtype;
    return "scalar_functions::ConvertElementType<" + std::string(c_type(to)) + ">::apply(" + args + ")";
  }
  return "scalar_functions::" + functors().at(name) + "::apply(" + args + ")";
}

void emit_elementwise(EmitContext& c) {
  elementwise_loop(c, [&](const std::string& i) { return elementwise_expression(c.eq, c.in, i); });
}

void add_elementwise_rules(std::map<std::string, EmitRule>& table) {
  for (const auto& [name, functor] : functors()) table[name] = &emit_elementwise;
  for (const char* name : {"select", "convert_element_type", "fma"}) table[name] = &emit_elementwise;
}

}  // namespace fluxion::codegen_detail
