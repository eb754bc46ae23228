// emit_cpp: one Jaxpr as one generated function. Every intermediate gets a buffer in the caller's
// workspace, planned here by liveness (a buffer is reused once its last reader ran); view
// primitives alias their operand; results the function returns are written straight into the
// caller's output pointers.
#include <algorithm>

#include "src/codegen_emitter.hpp"

namespace fluxion::codegen_detail {

/// Offsets in one workspace, reused by liveness. A block freed keeps the dtype it was allocated for
/// and is reused only for that dtype, so no two types ever share bytes (strict aliasing).
class WorkspacePlanner {
 public:
  /// `tag` is the dtype, or -1 for a sub-function's untyped workspace.
  int64_t allocate(int64_t bytes, int tag) {
    bytes = round_up(bytes);
    if (bytes == 0) return 0;
    for (size_t i = 0; i < free_.size(); ++i) {
      Block& b = free_[i];
      if (b.tag != tag || b.size < bytes) continue;
      const int64_t at = b.offset;
      b.offset += bytes;
      b.size -= bytes;
      if (b.size == 0) free_.erase(free_.begin() + static_cast<std::ptrdiff_t>(i));
      return at;
    }
    const int64_t at = high_;
    high_ += bytes;
    return at;
  }
  void release(int64_t offset, int64_t bytes, int tag) {
    bytes = round_up(bytes);
    if (bytes == 0) return;
    free_.push_back(Block{offset, bytes, tag});
    std::sort(free_.begin(), free_.end(), [](const Block& a, const Block& b) { return a.offset < b.offset; });
    for (size_t i = 0; i + 1 < free_.size();) {  // merge neighbours of the same tag
      if (free_[i].tag == free_[i + 1].tag && free_[i].offset + free_[i].size == free_[i + 1].offset) {
        free_[i].size += free_[i + 1].size;
        free_.erase(free_.begin() + static_cast<std::ptrdiff_t>(i + 1));
      } else {
        ++i;
      }
    }
  }
  int64_t high_water() const { return high_; }

 private:
  struct Block {
    int64_t offset, size;
    int tag;
  };
  static int64_t round_up(int64_t n) { return (n + kAlign - 1) / kAlign * kAlign; }
  std::vector<Block> free_;
  int64_t high_ = 0;
};

class FunctionEmitter {
 public:
  FunctionEmitter(Module& module, const Jaxpr& jaxpr) : module_(module), j_(jaxpr) {}

  std::string emit(int64_t* workspace_bytes) {
    const size_t nvars = j_.avals.size(), neq = j_.equations.size();
    const int64_t end = static_cast<int64_t>(neq);
    std::vector<int> returned(nvars, 0), reads(nvars, 0);
    std::vector<int64_t> reader(nvars, -1);
    for (const Atom& a : j_.outputs)
      if (!a.is_literal()) ++returned[static_cast<size_t>(a.var)];
    for (size_t k = 0; k < neq; ++k)
      for (const Atom& a : j_.equations[k].inputs)
        if (!a.is_literal())
          ++reads[static_cast<size_t>(a.var)], reader[static_cast<size_t>(a.var)] = static_cast<int64_t>(k);
    // Fusion: an elementwise or broadcast_in_dim result read once, by an elementwise equation, and not
    // returned, becomes an expression in its reader's loop. `at_[k]` is where equation k's operands are read: its
    // own position, or (fused) its reader's.
    fused_into_.assign(neq, -1);
    for (size_t k = 0; k < neq; ++k) {
      const Equation& e = j_.equations[k];
      const bool broadcast = e.primitive->name == "broadcast_in_dim";
      if (e.outputs.size() != 1 || !(is_elementwise(e.primitive->name) || broadcast)) continue;
      const size_t v = static_cast<size_t>(e.outputs[0]);
      if (returned[v] || reads[v] != 1) continue;
      const Equation& r = j_.equations[static_cast<size_t>(reader[v])];
      if (is_elementwise(r.primitive->name) && !is_view(r.primitive->name)) fused_into_[k] = reader[v];
    }
    std::vector<int64_t> at(neq);
    for (size_t k = neq; k-- > 0;)
      at[k] = fused_into_[k] >= 0 ? at[static_cast<size_t>(fused_into_[k])] : static_cast<int64_t>(k);
    // Aliases (views whose result is not returned) share their operand's root buffer; a root lives
    // until the last equation reading it or any alias of it.
    root_.resize(nvars);
    for (size_t v = 0; v < nvars; ++v) root_[v] = static_cast<int32_t>(v);
    last_use_.assign(nvars, -1);
    for (size_t k = 0; k < neq; ++k) {
      const Equation& e = j_.equations[k];
      for (const Atom& a : e.inputs)
        if (!a.is_literal()) last_use_[root(a.var)] = std::max(last_use_[root(a.var)], at[k]);
      if (aliases(k, returned)) root_[static_cast<size_t>(e.outputs[0])] = root_[static_cast<size_t>(e.inputs[0].var)];
    }
    for (const Atom& a : j_.outputs)
      if (!a.is_literal()) last_use_[root(a.var)] = end;
    // Buffers released after each equation: those it read last, and its results nobody reads.
    release_after_.assign(neq, {});
    for (size_t k = 0; k < neq; ++k)
      for (int32_t v : j_.equations[k].outputs) {
        const size_t r = root(v);
        if (r != static_cast<size_t>(v)) continue;  // an alias: its root is released
        const int64_t last = last_use_[r];
        if (last < end) release_after_[static_cast<size_t>(last < 0 ? static_cast<int64_t>(k) : last)].push_back(r);
      }

    const std::string fn = module_.fresh("f");
    std::string params;
    env_.resize(nvars);
    for (size_t i = 0; i < j_.invars.size(); ++i) {
      const AbstractValue& av = j_.avals[static_cast<size_t>(j_.invars[i])];
      const bool unused =
          reads[static_cast<size_t>(j_.invars[i])] == 0 && returned[static_cast<size_t>(j_.invars[i])] == 0;
      params += std::string("const ") + c_type(av.dtype) + (unused ? "* /*in" : "* in") + std::to_string(i) +
                (unused ? "*/, " : ", ");
      env_[static_cast<size_t>(j_.invars[i])] = Value{av, "in" + std::to_string(i), ""};
    }
    // An equation result returned by the function is computed in the caller's output buffer (its
    // first occurrence among the outputs; later ones are copies).
    std::vector<int> direct_output(nvars, -1);
    for (size_t i = 0; i < j_.outputs.size(); ++i) {
      const Atom& a = j_.outputs[i];
      const AbstractValue& av = j_.aval_of(a);
      params += std::string(c_type(av.dtype)) + "* out" + std::to_string(i) + ", ";
      if (!a.is_literal() && direct_output[static_cast<size_t>(a.var)] < 0)
        direct_output[static_cast<size_t>(a.var)] = static_cast<int>(i);
    }
    for (int32_t v : j_.invars) direct_output[static_cast<size_t>(v)] = -1;
    for (size_t i = 0; i < j_.constvars.size(); ++i) {
      const int32_t v = j_.constvars[i];
      direct_output[static_cast<size_t>(v)] = -1;
      env_[static_cast<size_t>(v)] = Value{j_.avals[static_cast<size_t>(v)], module_.constant(j_.consts[i]), ""};
    }
    params += "unsigned char* ws";

    offsets_.assign(nvars, -1);
    for (size_t k = 0; k < neq; ++k) emit_equation(k, returned, direct_output);

    // Results that are not computed in place: inputs, constants, literals, repeated outputs.
    for (size_t i = 0; i < j_.outputs.size(); ++i) {
      const Atom& a = j_.outputs[i];
      const AbstractValue& av = j_.aval_of(a);
      const std::string out = "out" + std::to_string(i);
      if (a.is_literal()) {
        code_.line(out + "[0] = " + c_literal(av.dtype, a.literal.concrete("emit_cpp").array().data()) + ";");
      } else if (direct_output[static_cast<size_t>(a.var)] != static_cast<int>(i)) {
        copy_elements(code_, out, env_[static_cast<size_t>(a.var)].ptr, av.shape.num_elements(), av.dtype);
      }
    }
    *workspace_bytes = planner_.high_water();
    module_.add_definition("\nstatic void " + fn + "(" + params + ") {\n" +
                           (planner_.high_water() ? "" : "  (void)ws;\n") + code_.str() + "}\n");
    return fn;
  }

 private:
  size_t root(int32_t v) const { return static_cast<size_t>(root_[static_cast<size_t>(v)]); }

  /// True when equation k is a view of a stored operand whose result is not returned.
  bool aliases(size_t k, const std::vector<int>& returned) const {
    const Equation& e = j_.equations[k];
    if (!is_view(e.primitive->name) || e.inputs[0].is_literal() || e.outputs.size() != 1 || fused_into_[k] >= 0)
      return false;
    if (returned[static_cast<size_t>(e.outputs[0])] != 0) return false;
    const int32_t in = e.inputs[0].var;  // an operand fused away has no buffer to alias
    for (size_t p = 0; p < k; ++p)
      if (fused_into_[p] >= 0 && j_.equations[p].outputs[0] == in) return false;
    return true;
  }

  Value value_of(const Atom& a) const {
    if (!a.is_literal()) return env_[static_cast<size_t>(a.var)];
    Tensor lit = a.literal.concrete("emit_cpp");
    if (!lit.device().is_cpu()) lit = detail::copy_to_host(lit);
    return Value{lit.aval(), "", c_literal(lit.dtype(), lit.array().data())};
  }

  void emit_equation(size_t k, const std::vector<int>& returned, const std::vector<int>& direct_output) {
    const Equation& e = j_.equations[k];
    const Primitive& p = *e.primitive;
    std::vector<Value> in;
    for (const Atom& a : e.inputs) in.push_back(value_of(a));
    std::string comment = "// ";
    for (int32_t v : e.outputs) comment += "v" + std::to_string(v) + " ";
    comment += "= " + p.name;
    for (const Atom& a : e.inputs) comment += a.is_literal() ? " " + value_of(a).literal : " v" + std::to_string(a.var);
    if (fused_into_[k] >= 0) {
      const int32_t v = e.outputs[0];
      code_.line(comment + "  (computed in its reader's loop)");
      const std::string expr =
          p.name == "broadcast_in_dim" ? broadcast_expression(e, in[0], "@") : elementwise_expression(e, in, "@");
      env_[static_cast<size_t>(v)] = Value{j_.avals[static_cast<size_t>(v)], "", "", expr};
      return;
    }
    code_.line(comment);
    if (aliases(k, returned)) {
      const int32_t v = e.outputs[0];
      const AbstractValue& av = j_.avals[static_cast<size_t>(v)];
      code_.line(std::string("const ") + c_type(av.dtype) + "* v" + std::to_string(v) + " = " + in[0].ptr + ";");
      env_[static_cast<size_t>(v)] = Value{av, "v" + std::to_string(v), ""};
      release_after(k);
      return;
    }
    EmitRule rule = find_rule(p.name);
    if (!rule) fail_unsupported(p.name);
    std::vector<Value> out;
    for (int32_t v : e.outputs) {
      const AbstractValue& av = j_.avals[static_cast<size_t>(v)];
      const std::string var = "v" + std::to_string(v);
      if (direct_output[static_cast<size_t>(v)] >= 0) {
        code_.line(std::string(c_type(av.dtype)) + "* " + var + " = out" +
                   std::to_string(direct_output[static_cast<size_t>(v)]) + ";");
      } else {
        const int64_t bytes = av.shape.num_elements() * dtype_size(av.dtype);
        offsets_[static_cast<size_t>(v)] = planner_.allocate(bytes, static_cast<int>(av.dtype));
        code_.line(std::string(c_type(av.dtype)) + "* " + var + " = reinterpret_cast<" + c_type(av.dtype) + "*>(ws + " +
                   std::to_string(offsets_[static_cast<size_t>(v)]) + ");");
      }
      env_[static_cast<size_t>(v)] = Value{av, var, ""};
      out.push_back(env_[static_cast<size_t>(v)]);
    }
    struct Held {
      int64_t offset, bytes;
      int tag;
    };
    std::vector<Held> held;
    EmitContext ctx{e, in, out, code_, module_, nullptr, nullptr};
    ctx.scratch = [&](int64_t bytes, DType dtype) {
      held.push_back(Held{planner_.allocate(bytes, static_cast<int>(dtype)), bytes, static_cast<int>(dtype)});
      return "reinterpret_cast<" + std::string(c_type(dtype)) + "*>(ws + " + std::to_string(held.back().offset) + ")";
    };
    ctx.raw_scratch = [&](int64_t bytes) {
      held.push_back(Held{planner_.allocate(bytes, -1), bytes, -1});
      return "(ws + " + std::to_string(held.back().offset) + ")";
    };
    code_.open("");
    rule(ctx);
    code_.close();
    for (const Held& h : held) planner_.release(h.offset, h.bytes, h.tag);
    release_after(k);
  }

  void release_after(size_t k) {
    for (size_t r : release_after_[k]) {
      if (offsets_[r] < 0) continue;
      const AbstractValue& av = j_.avals[r];
      planner_.release(offsets_[r], av.shape.num_elements() * dtype_size(av.dtype), static_cast<int>(av.dtype));
      offsets_[r] = -1;
    }
  }

  [[noreturn]] void fail_unsupported(const std::string& name) const {
    std::string list;
    for (const std::string& s : supported_names()) list += (list.empty() ? "" : ", ") + s;
    detail::fail<NotImplementedError>("emit_cpp", "primitive '", name,
                                      "' is not supported by the C++ emitter (supported: ", list,
                                      "). Keep it out of the exported function, or run that part with fx::jit.");
  }

  Module& module_;
  const Jaxpr& j_;
  Code code_;
  std::vector<Value> env_;
  std::vector<int32_t> root_;
  std::vector<int64_t> last_use_, offsets_, fused_into_;
  std::vector<std::vector<size_t>> release_after_;
  WorkspacePlanner planner_;
};

std::string Module::function(const Jaxpr& jaxpr, int64_t* workspace_bytes) {
  return FunctionEmitter(*this, jaxpr).emit(workspace_bytes);
}

}  // namespace fluxion::codegen_detail
