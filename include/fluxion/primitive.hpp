/// Primitives: a name, a params struct and rules (shape, kernels per backend, traits), and bind.
#pragma once
#include <array>
#include <functional>
#include <memory>
#include <ostream>
#include <string>
#include <tuple>
#include <type_traits>
#include <typeinfo>
#include <utility>
#include <vector>

#include "fluxion/shape.hpp"
#include "fluxion/tensor.hpp"

namespace fluxion {

class Primitive;
struct Jaxpr;
class ParamsWriter;  // fluxion/params_io.hpp: the fields of saved params (fx::export_fn)
class ParamsReader;

/// Parameters of one primitive application (axes, shapes, dtypes...). Immutable once bound.
class Params {
 public:
  virtual ~Params() = default;
  /// Prints "name=value" pairs separated by spaces (nothing for parameterless primitives).
  virtual void print(std::ostream& os) const = 0;
  virtual bool equals(const Params& other) const = 0;
  virtual size_t hash() const = 0;
  virtual std::shared_ptr<const Params> clone() const = 0;
  virtual bool empty() const { return false; }
  /// The params of the f32 equation computing this one's f16/bf16 version: every DType field naming a
  /// half dtype becomes f32. nullptr (the default) when the equation must not be widened as a whole:
  /// params holding sub-Jaxprs (their equations are widened one by one where they run).
  virtual std::shared_ptr<const Params> with_half_as_f32() const { return nullptr; }
  /// Writes the fields (fx::export_fn's files); the primitive's load_params reads them back. The default
  /// throws: params holding C++ closures (custom rules) cannot be saved.
  virtual void save(ParamsWriter& w) const;
  /// The concrete params struct; a wrong P is a programming error inside a rule.
  template <class P> const P& as() const {
    const P* p = dynamic_cast<const P*>(this);
    if (!p) detail::fail<Error>("params", "internal: expected ", typeid(P).name(), ".");
    return *p;
  }
};

/// Params of primitives that take none.
struct NoParams final : Params {
  void print(std::ostream&) const override {}
  bool equals(const Params& o) const override { return dynamic_cast<const NoParams*>(&o) != nullptr; }
  size_t hash() const override { return 0; }
  std::shared_ptr<const Params> clone() const override { return std::make_shared<NoParams>(); }
  bool empty() const override { return true; }
  std::shared_ptr<const Params> with_half_as_f32() const override { return clone(); }
  void save(ParamsWriter&) const override {}
};
const NoParams& no_params();

/// Pair of axis lists, printed "((1,),(0,))": dot_general's contracting and batch dimensions.
using AxisPair = std::pair<std::vector<int64_t>, std::vector<int64_t>>;

namespace detail {
void print_param(std::ostream& os, int64_t v);
void print_param(std::ostream& os, bool v);
void print_param(std::ostream& os, double v);
void print_param(std::ostream& os, DType v);
void print_param(std::ostream& os, const Shape& v);
void print_param(std::ostream& os, const std::vector<int64_t>& v);
void print_param(std::ostream& os, const AxisPair& v);
void print_param(std::ostream& os, const std::string& v);  // quoted: axis_name='batch'
size_t hash_param(int64_t v);
size_t hash_param(bool v);
size_t hash_param(double v);
size_t hash_param(DType v);
size_t hash_param(const Shape& v);
size_t hash_param(const std::vector<int64_t>& v);
size_t hash_param(const AxisPair& v);
size_t hash_param(const std::string& v);
void save_param(ParamsWriter& w, const char* name, int64_t v);
void save_param(ParamsWriter& w, const char* name, bool v);
void save_param(ParamsWriter& w, const char* name, double v);  // by its bits
void save_param(ParamsWriter& w, const char* name, DType v);
void save_param(ParamsWriter& w, const char* name, const Shape& v);
void save_param(ParamsWriter& w, const char* name, const std::vector<int64_t>& v);
void save_param(ParamsWriter& w, const char* name, const AxisPair& v);
void save_param(ParamsWriter& w, const char* name, const std::string& v);
void load_param(ParamsReader& r, const char* name, int64_t& v);
void load_param(ParamsReader& r, const char* name, bool& v);
void load_param(ParamsReader& r, const char* name, double& v);
void load_param(ParamsReader& r, const char* name, DType& v);
void load_param(ParamsReader& r, const char* name, Shape& v);
void load_param(ParamsReader& r, const char* name, std::vector<int64_t>& v);
void load_param(ParamsReader& r, const char* name, AxisPair& v);
void load_param(ParamsReader& r, const char* name, std::string& v);
inline size_t hash_combine(size_t seed, size_t h) {
  return seed ^ (h + 0x9e3779b97f4a7c15ULL + (seed << 6) + (seed >> 2));
}
}  // namespace detail

/// CRTP base giving print/equals/hash/clone/save/load from two members of Derived:
///   auto fields() const { return std::tie(a, b); }
///   static constexpr const char* names[] = {"a", "b"};
/// load() builds a Derived from the saved fields with its constructor taking them in order (or, without
/// one, default-constructs it and assigns the members).
template <class Derived> struct ParamsOf : Params {
  void print(std::ostream& os) const override {
    const auto& self = static_cast<const Derived&>(*this);
    print_fields(os, self.fields(), std::make_index_sequence<std::tuple_size_v<decltype(self.fields())>>{});
  }
  bool equals(const Params& o) const override {
    const auto* other = dynamic_cast<const Derived*>(&o);
    return other && static_cast<const Derived&>(*this).fields() == other->fields();
  }
  size_t hash() const override {
    size_t h = typeid(Derived).hash_code();
    std::apply([&](const auto&... f) { ((h = detail::hash_combine(h, detail::hash_param(f))), ...); },
               static_cast<const Derived&>(*this).fields());
    return h;
  }
  std::shared_ptr<const Params> clone() const override {
    return std::make_shared<Derived>(static_cast<const Derived&>(*this));
  }
  std::shared_ptr<const Params> with_half_as_f32() const override {
    auto copy = std::make_shared<Derived>(static_cast<const Derived&>(*this));
    // fields() ties const members of the copy; the copy is not const, so writing through them is sound.
    std::apply([](const auto&... f) { (widen_field(const_cast<std::decay_t<decltype(f)>&>(f)), ...); }, copy->fields());
    return copy;
  }
  void save(ParamsWriter& w) const override {
    const auto& self = static_cast<const Derived&>(*this);
    save_fields(w, self.fields(), std::make_index_sequence<std::tuple_size_v<decltype(self.fields())>>{});
  }
  /// The primitive's load_params (PrimitiveBuilder::params<Derived>()).
  static std::shared_ptr<const Params> load(ParamsReader& r) {
    using Fields = decltype(std::declval<const Derived&>().fields());
    return load_fields(r, std::make_index_sequence<std::tuple_size_v<Fields>>{});
  }

 private:
  template <class T> static void widen_field(T& field) {
    if constexpr (std::is_same_v<T, DType>) field = compute_dtype(field);
  }
  template <class Tuple, size_t... I>
  static void save_fields(ParamsWriter& w, const Tuple& t, std::index_sequence<I...>) {
    (detail::save_param(w, Derived::names[I], std::get<I>(t)), ...);
  }
  template <size_t... I> static std::shared_ptr<const Params> load_fields(ParamsReader& r, std::index_sequence<I...>) {
    using Fields = decltype(std::declval<const Derived&>().fields());
    std::tuple<std::decay_t<std::tuple_element_t<I, Fields>>...> v;
    (detail::load_param(r, Derived::names[I], std::get<I>(v)), ...);
    if constexpr (std::is_constructible_v<Derived, std::decay_t<std::tuple_element_t<I, Fields>>...>) {
      return std::make_shared<Derived>(std::move(std::get<I>(v))...);
    } else {  // no such constructor: default-construct, then assign the members fields() names
      auto d = std::make_shared<Derived>();
      auto members = d->fields();
      ((const_cast<std::decay_t<std::tuple_element_t<I, Fields>>&>(std::get<I>(members)) = std::move(std::get<I>(v))),
       ...);
      return d;
    }
  }

  template <class Tuple, size_t... I>
  static void print_fields(std::ostream& os, const Tuple& t, std::index_sequence<I...>) {
    ((os << (I ? " " : "") << Derived::names[I] << "=", detail::print_param(os, std::get<I>(t))), ...);
  }
};

/// Properties read by passes (fusion, CSE, simplifier) instead of lists of primitive types.
struct Traits {
  bool elementwise = false;  // output[i] depends only on inputs[i] (rank-0 operands broadcast)
  bool linear = false;       // linear in every floating input (transpose rule exists)
  bool commutative = false;  // binary and symmetric in its two inputs
  bool view = false;         // output 0 is input 0's bytes reinterpreted: eager makes a view, no kernel
  bool collective = false;   // talks to other processes: runs alone and in program order on every rank
};

/// Computes output avals from input avals and params; the only place output avals are computed.
/// Validates everything and throws ShapeError / DTypeError / AxisError naming the primitive.
using ShapeRule = std::vector<AbstractValue> (*)(const Primitive& self, const std::vector<AbstractValue>& inputs,
                                                 const Params& params);
/// Runs the primitive on concrete inputs; outputs are allocated by the caller with the avals the
/// shape rule computed.
using Kernel = void (*)(const std::vector<Tensor>& inputs, const Params& params, std::vector<Tensor>& outputs);

/// Forward-mode rule. Runs under the parent of the jvp interpreter, so it is written with lax ops
/// and can itself be differentiated. An undefined Tensor in `tangents` is a symbolic zero; the
/// rule may leave an output tangent undefined to say "zero".
using JvpRule = void (*)(const Primitive& self, const std::vector<Tensor>& primals, const std::vector<Tensor>& tangents,
                         const Params& params, std::vector<Tensor>& primals_out, std::vector<Tensor>& tangents_out);

/// Transpose rule of a primitive linear in some inputs. `inputs[i]` is undefined for the linear
/// inputs (their avals are `in_avals[i]`) and holds the value of the others. `cts_out` are the
/// output cotangents (undefined = zero). Fills `cts_in` (sized like inputs; undefined = zero).
using TransposeRule = void (*)(const Primitive& self, const std::vector<Tensor>& cts_out,
                               const std::vector<Tensor>& inputs, const std::vector<AbstractValue>& in_avals,
                               const Params& params, std::vector<Tensor>& cts_in);

/// Batch dimension marker for values that are the same for every batch element.
inline constexpr int64_t kNotMapped = -1;

/// Batching rule: `dims[i]` is the batch axis of values[i] or kNotMapped (at least one is
/// mapped). Moves axes instead of looping over examples; fills outputs and their batch axes.
using BatchRule = void (*)(const Primitive& self, const std::vector<Tensor>& values, const std::vector<int64_t>& dims,
                           const Params& params, std::vector<Tensor>& out, std::vector<int64_t>& out_dims);

/// Collectives (all_sum, all_gather, ...): the axis name in `params` that the primitive communicates over.
using AxisNameRule = const std::string& (*)(const Params& params);
/// A collective's rule under the vmap that binds its axis name (fx::axis_name): the batch axis is the
/// named axis, so the collective becomes ordinary array work across it (all_sum: a sum over the batch
/// axis). Runs even when no input is mapped (all_sum of a shared value is axis_size times it;
/// axis_index, with no inputs, is an iota). `dims` and `out_dims` as in BatchRule.
using CollectiveBatchRule = void (*)(const Primitive& self, const std::vector<Tensor>& values,
                                     const std::vector<int64_t>& dims, int64_t axis_size, const Params& params,
                                     std::vector<Tensor>& out, std::vector<int64_t>& out_dims);

class StageInterpreter;

/// Partial-evaluation rule (linearize's staging with known values): `known[i]` says inputs[i] is
/// known to the parent interpreter. Runs what depends only on known inputs under the parent and
/// stages the rest into `stage`. Primitives without one are staged whole when any input is unknown.
using PartialEvalRule = std::vector<Tensor> (*)(const Primitive& self, StageInterpreter& stage,
                                                const std::vector<Tensor>& inputs, const std::vector<bool>& known,
                                                const Params& params);

/// Rebuilds a primitive's params from the fields its Params::save wrote (fx::load_exported).
using ParamsLoader = std::shared_ptr<const Params> (*)(ParamsReader& r);

/// Call-like primitives (jit_call, custom_jvp_call, custom_vjp_call, checkpoint): the sub-Jaxpr
/// the primitive evaluates on its inputs (its outputs are the primitive's outputs).
using CalleeRule = const Jaxpr& (*)(const Params& params);

/// A primitive operation: defined once (in primitives/, by primitives/builder.hpp's builder), with
/// every rule in one place. How a backend fuses or tiles it is that backend's lowering table's
/// business (runtime/backend.hpp), not the primitive's.
class Primitive {
 public:
  std::string name;
  Traits traits;
  ShapeRule shape_rule = nullptr;
  std::array<Kernel, kNumBackends> kernels{};  // indexed by Backend
  JvpRule jvp = nullptr;
  TransposeRule transpose = nullptr;
  BatchRule batch = nullptr;
  PartialEvalRule partial_eval = nullptr;
  /// Call-like primitives: the sub-Jaxpr; executed plans splice it into the caller.
  CalleeRule callee = nullptr;
  /// Collectives: their axis name and their rule under the vmap that binds it. Under a vmap of
  /// another name (or none), `batch` applies as for any primitive.
  AxisNameRule axis_name = nullptr;
  CollectiveBatchRule collective_batch = nullptr;
  /// True when the primitive's rules are those of its sub-Jaxpr (jit_call), so passes may inline
  /// it before any transform; false when it carries rules of its own (custom rules, checkpoint).
  bool callee_transparent = false;
  /// Reads saved params back (PrimitiveBuilder::params<P>()); null for primitives taking NoParams.
  ParamsLoader load_params = nullptr;
  /// Why a rule is intentionally absent (e.g. "not differentiable: integer output"); the rule
  /// coverage test accepts a missing rule only with a reason.
  std::string missing_rule_reason;

  Kernel kernel(Backend b) const { return kernels[static_cast<size_t>(b)]; }
  /// Runs the shape rule (validation included); absurd output shapes are a ShapeError even when
  /// nothing is allocated (staging).
  std::vector<AbstractValue> abstract_eval(const std::vector<AbstractValue>& in, const Params& p) const {
    std::vector<AbstractValue> out = shape_rule(*this, in, p);
    for (const AbstractValue& a : out) checked_num_elements(name.c_str(), a.shape.dims());
    return out;
  }
};

/// Every registered primitive, in a stable order. The single list every dispatcher and test reads.
const std::vector<const Primitive*>& all_primitives();
/// The registered primitive called `name`, or nullptr.
const Primitive* find_primitive(const std::string& name);

/// Applies `p` under the current interpreter (eager evaluation unless a transform is active).
std::vector<Tensor> bind(const Primitive& p, const std::vector<Tensor>& inputs, const Params& params = no_params());
/// bind() for single-output primitives.
Tensor bind1(const Primitive& p, const std::vector<Tensor>& inputs, const Params& params = no_params());

/// Runs `p` eagerly on concrete inputs with the kernels of `backend` (tests use Backend::reference).
std::vector<Tensor> eval_primitive(const Primitive& p, const std::vector<Tensor>& inputs, const Params& params,
                                   Backend backend);

}  // namespace fluxion
