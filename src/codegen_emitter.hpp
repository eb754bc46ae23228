/// emit_cpp's internals, shared by src/codegen*.cpp: the generated module (functions, constants),
/// the per-Jaxpr function emitter with its workspace planner, and the per-primitive loop emitters.
#pragma once
#include <cstdint>
#include <functional>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "fluxion/codegen.hpp"
#include "fluxion/jaxpr.hpp"

namespace fluxion::codegen_detail {

/// Alignment of every workspace buffer (a cache line; the workspace itself must be this aligned).
inline constexpr int64_t kAlign = 64;

/// The C++ element type of a dtype ("float", "int32_t", ...); throws for a dtype the emitter lacks.
const char* c_type(DType d);
/// An exact C++ expression of type c_type(d) for the element at `p` (hex floats, inf and NaN spelled
/// through std::numeric_limits with the bits kept).
std::string c_literal(DType d, const void* p);
/// An exact C++ expression of type c_type(d) for the integer or floating value `v`.
std::string c_value(DType d, double v);
/// Row-major strides of `shape` in elements.
std::vector<int64_t> strides_of(const Shape& shape);

/// Lines of generated code with indentation.
class Code {
 public:
  void line(const std::string& text);
  void open(const std::string& head);  // `head {` and one level deeper
  void close(const std::string& tail = "}");
  void append(const Code& other);
  std::string str() const { return os_.str(); }

 private:
  std::ostringstream os_;
  int depth_ = 1;
};

/// How generated code reaches an operand: a pointer variable, or (for a literal) a value.
struct Value {
  AbstractValue aval;
  std::string ptr;      // a pointer expression; empty for a literal or a fused value
  std::string literal;  // a literal's value expression
  std::string fused;    // a fused elementwise value: its expression, '@' standing for the index
  /// The element at flat index `idx`; rank-0 operands (and literals) broadcast.
  std::string at(const std::string& idx) const;
  const char* type() const { return c_type(aval.dtype); }
};

/// The whole generated file: the helper functions emitted so far (sub-Jaxprs become functions of
/// their own) and the embedded constants.
class Module {
 public:
  explicit Module(std::string prefix) : prefix_(std::move(prefix)) {}
  /// A new unique identifier starting with `stem`.
  std::string fresh(const std::string& stem) { return stem + std::to_string(next_id_++); }
  /// Declares a constant array at namespace scope holding `t`'s values exactly; returns its name.
  std::string constant(const Tensor& t);
  /// Emits `jaxpr` as a function `static void fN(const T* in..., T* out..., unsigned char* ws)`;
  /// returns its name and sets `*workspace_bytes` to the scratch it needs.
  std::string function(const Jaxpr& jaxpr, int64_t* workspace_bytes);
  void add_definition(const std::string& text) { definitions_ += text; }
  const std::string& definitions() const { return definitions_; }
  const std::string& prefix() const { return prefix_; }

 private:
  std::string prefix_;
  int next_id_ = 0;
  std::string definitions_;
};

/// What a primitive's emitter gets: the operands, the result buffers (distinct from the operands),
/// the code to append to, scratch space valid during this equation, and the module for sub-functions.
struct EmitContext {
  const Equation& eq;
  std::vector<Value> in, out;
  Code& code;
  Module& module;
  /// A `T*` expression to `bytes` of workspace (kAlign-aligned) reserved for this equation only.
  std::function<std::string(int64_t bytes, DType dtype)> scratch;
  /// Like scratch, for a sub-function's untyped workspace (an `unsigned char*` expression).
  std::function<std::string(int64_t bytes)> raw_scratch;
};

using EmitRule = void (*)(EmitContext& c);

/// The emit rule of primitive `name`, or nullptr when the emitter does not support it.
EmitRule find_rule(const std::string& name);
/// Every supported primitive name, sorted.
std::vector<std::string> supported_names();
/// The elementwise primitives (their results may be fused into the elementwise equation reading them).
bool is_elementwise(const std::string& name);
/// An elementwise equation's value at flat index `idx`, from its operands' values.
std::string elementwise_expression(const Equation& eq, const std::vector<Value>& in, const std::string& idx);
/// broadcast_in_dim's value at flat index `idx` of its result (div/mod of the index): how a broadcast
/// read once by an elementwise equation is fused into it.
std::string broadcast_expression(const Equation& eq, const Value& in, const std::string& idx);
/// Primitives whose result is the operand's bytes unchanged (reshape, squeeze, expand_dims,
/// stop_gradient): the function emitter aliases them instead of copying.
bool is_view(const std::string& name);

// Rule families (src/codegen_elementwise.cpp, codegen_shape.cpp, codegen_reduce.cpp,
// codegen_control.cpp) each add their rules to the table.
void add_elementwise_rules(std::map<std::string, EmitRule>& table);
void add_shape_rules(std::map<std::string, EmitRule>& table);
void add_reduce_rules(std::map<std::string, EmitRule>& table);
void add_control_rules(std::map<std::string, EmitRule>& table);

/// Emits a loop nest over `extents` (outermost first) binding index variables `prefix0, prefix1...`
/// and calls `body` inside the innermost loop; returns after closing the loops.
void loop_nest(Code& code, const std::vector<int64_t>& extents, const std::string& prefix,
               const std::function<void()>& body);
/// `sum_k prefix_k * strides[k] + base` as an index expression (terms with stride 0 dropped).
std::string index_expr(const std::string& prefix, const std::vector<int64_t>& strides, int64_t base = 0,
                       size_t first = 0);
/// Copies `n` elements of `from` to `to` (pointer expressions) with memcpy; nothing when n is 0.
void copy_elements(Code& code, const std::string& to, const std::string& from, int64_t n, DType dtype);

}  // namespace fluxion::codegen_detail
