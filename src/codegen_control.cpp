// emit_cpp's rules for primitives holding sub-Jaxprs: calls (jit_call and the other call-like
// primitives), scan, cond and while. Each sub-Jaxpr becomes a generated function of its own, with
// its workspace carved from the caller's; loop carries live in two buffers that swap each step.
#include "primitives/control_flow_params.hpp"
#include "src/codegen_emitter.hpp"

namespace fluxion::codegen_detail {

/// A pointer to `v`'s elements: its buffer, or (a literal) a one-element local array.
std::string pointer_of(EmitContext& c, const Value& v) {
  if (!v.ptr.empty()) return v.ptr;
  const std::string name = c.module.fresh("lit");
  c.code.line("const " + std::string(v.type()) + " " + name + "[1] = {" + v.literal + "};");
  return name;
}

/// Emits `sub` as a function and returns its name; `*scratch` receives its workspace expression.
std::string sub_function(EmitContext& c, const Jaxpr& sub, std::string* scratch) {
  int64_t bytes = 0;
  const std::string fn = c.module.function(sub, &bytes);
  *scratch = c.raw_scratch(bytes);
  return fn;
}

/// Throws unless `sub` takes `n_in` inputs and returns `n_out` results (a malformed equation).
void check_arity(const Jaxpr& sub, size_t n_in, size_t n_out, const char* what) {
  if (sub.invars.size() != n_in || sub.outputs.size() != n_out)
    detail::fail<Error>("emit_cpp", "internal: the ", what, " takes ", sub.invars.size(), " inputs and returns ",
                        sub.outputs.size(), " results where the equation has ", n_in, " and ", n_out, ".");
}

std::string joined(const std::vector<std::string>& parts) {
  std::string s;
  for (const std::string& p : parts) s += p + ", ";
  return s;
}

/// Call-like primitives (jit_call, custom_jvp_call, custom_vjp_call, checkpoint): their sub-Jaxpr
/// (Primitive::callee) called on the operands, writing the results in place.
void emit_call(EmitContext& c) {
  const Primitive& p = *c.eq.primitive;
  const Jaxpr& sub =
      p.callee ? p.callee(*c.eq.params) : c.eq.params->as<checkpoint_detail::CheckpointParams>().body.jaxpr();
  check_arity(sub, c.in.size(), c.out.size(), c.eq.primitive->name.c_str());
  std::string ws;
  const std::string fn = sub_function(c, sub, &ws);
  std::vector<std::string> args;
  for (const Value& v : c.in) args.push_back(pointer_of(c, v));
  for (const Value& v : c.out) args.push_back(v.ptr);
  c.code.line(fn + "(" + joined(args) + ws + ");");
}

/// Two buffers per carry (`ca<k>` read, `cb<k>` written, swapped after each step), the first
/// holding `init`.
void declare_carries(EmitContext& c, const std::vector<Value>& init) {
  for (size_t k = 0; k < init.size(); ++k) {
    const AbstractValue& av = init[k].aval;
    const int64_t n = av.shape.num_elements();
    const std::string t = c_type(av.dtype), id = std::to_string(k);
    c.code.line(t + "* ca" + id + " = " + c.scratch(n * dtype_size(av.dtype), av.dtype) + ";");
    c.code.line(t + "* cb" + id + " = " + c.scratch(n * dtype_size(av.dtype), av.dtype) + ";");
    if (init[k].ptr.empty()) c.code.line("ca" + id + "[0] = " + init[k].literal + ";");
    else copy_elements(c.code, "ca" + id, init[k].ptr, n, av.dtype);
  }
}
void swap_carries(EmitContext& c, const std::vector<Value>& init) {
  for (size_t k = 0; k < init.size(); ++k) {
    const std::string id = std::to_string(k);
    c.code.line("{ " + std::string(init[k].type()) + "* t = ca" + id + "; ca" + id + " = cb" + id + "; cb" + id +
                " = t; }");
  }
}
void copy_carries_out(EmitContext& c, const std::vector<Value>& init) {
  for (size_t k = 0; k < init.size(); ++k)
    copy_elements(c.code, c.out[k].ptr, "ca" + std::to_string(k), init[k].aval.shape.num_elements(),
                  init[k].aval.dtype);
}

// scan: consts, carry, xs -> carry, ys; step i reads row i of each x and writes row i of each y.
void emit_scan(EmitContext& c) {
  const auto& p = c.eq.params->as<scan_detail::ScanParams>();
  const Jaxpr& body = p.body.jaxpr();
  const size_t nc = p.nc(), ncar = p.ncar();
  check_arity(body, c.in.size(), c.out.size(), "scan body");
  std::string ws;
  const std::string fn = sub_function(c, body, &ws);
  std::vector<std::string> consts;
  for (size_t k = 0; k < nc; ++k) consts.push_back(pointer_of(c, c.in[k]));
  const std::vector<Value> init(c.in.begin() + static_cast<std::ptrdiff_t>(nc),
                                c.in.begin() + static_cast<std::ptrdiff_t>(nc + ncar));
  declare_carries(c, init);
  std::vector<std::string> args = consts;
  for (size_t k = 0; k < ncar; ++k) args.push_back("ca" + std::to_string(k));
  const int64_t length = std::max<int64_t>(p.length, 1);
  for (size_t k = nc + ncar; k < c.in.size(); ++k)
    args.push_back(c.in[k].ptr + " + i * " + std::to_string(c.in[k].aval.shape.num_elements() / length));
  for (size_t k = 0; k < ncar; ++k) args.push_back("cb" + std::to_string(k));
  for (size_t k = ncar; k < c.out.size(); ++k)
    args.push_back(c.out[k].ptr + " + i * " + std::to_string(c.out[k].aval.shape.num_elements() / length));
  c.code.open("for (int64_t step = 0; step < " + std::to_string(p.length) + "; ++step)");
  c.code.line("const int64_t i = " + (p.reverse ? std::to_string(p.length - 1) + " - step" : std::string("step")) +
              ";");
  c.code.line(fn + "(" + joined(args) + ws + ");");
  swap_carries(c, init);
  c.code.close();
  copy_carries_out(c, init);
}

// cond: the branch index clamped into range (a bool is 0 or 1), then that branch's function.
void emit_cond(EmitContext& c) {
  const auto& p = c.eq.params->as<cond_detail::CondParams>();
  std::vector<std::string> args;
  for (size_t k = 1; k < c.in.size(); ++k) args.push_back(pointer_of(c, c.in[k]));
  for (const Value& v : c.out) args.push_back(v.ptr);
  const int64_t n = static_cast<int64_t>(p.branches.size());
  c.code.line("const int64_t branch = std::min<int64_t>(std::max<int64_t>(static_cast<int64_t>(" + c.in[0].at("0") +
              "), 0), " + std::to_string(n - 1) + ");");
  c.code.open("switch (branch)");
  for (int64_t b = 0; b < n; ++b) {
    const Jaxpr& sub = p.branches[static_cast<size_t>(b)].jaxpr();
    check_arity(sub, c.in.size() - 1, c.out.size(), "cond branch");
    std::string ws;
    const std::string fn = sub_function(c, sub, &ws);
    c.code.line((b == n - 1 ? std::string("default") : "case " + std::to_string(b)) + ": " + fn + "(" + joined(args) +
                ws + "); break;");
  }
  c.code.close();
}

// while: cond_consts, body_consts, carry -> carry; at most max_steps steps when it is >= 0.
void emit_while(EmitContext& c) {
  const auto& p = c.eq.params->as<while_detail::WhileParams>();
  const size_t ncc = p.ncc(), nbc = p.nbc(), ncar = c.out.size();
  check_arity(p.cond.jaxpr(), ncc + ncar, 1, "while cond");
  check_arity(p.body.jaxpr(), nbc + ncar, ncar, "while body");
  std::string cond_ws, body_ws;
  const std::string cond_fn = sub_function(c, p.cond.jaxpr(), &cond_ws);
  const std::string body_fn = sub_function(c, p.body.jaxpr(), &body_ws);
  std::vector<std::string> cond_args, body_args;
  for (size_t k = 0; k < ncc; ++k) cond_args.push_back(pointer_of(c, c.in[k]));
  for (size_t k = ncc; k < ncc + nbc; ++k) body_args.push_back(pointer_of(c, c.in[k]));
  const std::vector<Value> init(c.in.begin() + static_cast<std::ptrdiff_t>(ncc + nbc), c.in.end());
  declare_carries(c, init);
  for (size_t k = 0; k < ncar; ++k) {
    cond_args.push_back("ca" + std::to_string(k));
    body_args.push_back("ca" + std::to_string(k));
  }
  for (size_t k = 0; k < ncar; ++k) body_args.push_back("cb" + std::to_string(k));
  c.code.line("bool keep_going[1];");
  c.code.open(p.max_steps < 0 ? std::string("for (;;)")
                              : "for (int64_t step = 0; step < " + std::to_string(p.max_steps) + "; ++step)");
  c.code.line(cond_fn + "(" + joined(cond_args) + "keep_going, " + cond_ws + ");");
  c.code.line("if (!keep_going[0]) break;");
  c.code.line(body_fn + "(" + joined(body_args) + body_ws + ");");
  swap_carries(c, init);
  c.code.close();
  copy_carries_out(c, init);
}

void add_control_rules(std::map<std::string, EmitRule>& table) {
  // The call-like primitives whose callee takes the operands and returns the results as they are.
  for (const char* call : {"jit_call", "custom_jvp_call", "custom_vjp_call", "checkpoint"}) table[call] = &emit_call;
  table["scan"] = &emit_scan;
  table["cond"] = &emit_cond;
  table["while"] = &emit_while;
}

}  // namespace fluxion::codegen_detail
