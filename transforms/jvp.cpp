// The jvp interpreter: each primitive's jvp rule, run under the parent interpreter.
#include "transforms/jvp.hpp"

#include <atomic>
#include <cstdlib>
#include <iostream>
#include <new>
#include <sstream>
#include <string>

namespace fluxion {

// A floating value with a tangent depends on a differentiated input. Read into a C++ number it
// becomes a constant to the transform: right for control flow on values (the eager transforms'
// promise), silently wrong where the number feeds the result. So the read is allowed and counted,
// and the first one of the process warns (once: a Newton loop reads on every step). Bool and
// integer values (comparisons) never carry a tangent.
namespace jvp_detail {
std::atomic<int64_t> derivative_dropping_reads{0};
}  // namespace jvp_detail

int64_t derivative_dropping_reads() { return jvp_detail::derivative_dropping_reads.load(std::memory_order_relaxed); }

FLUXION_REPL_INLINE Tensor JvpTracer::value_for_read(const char* what) const {
  if (tangent_.defined() && is_floating(aval().dtype)) {
    const bool first = jvp_detail::derivative_dropping_reads.fetch_add(1, std::memory_order_relaxed) == 0;
    const char* quiet = std::getenv("FLUXION_WARN_READS");
    if (first && !(quiet != nullptr && std::string(quiet) == "0")) {
      const char* transform = owner()->transform;
      std::ostringstream os;
      os << "fluxion warning: [" << what << "] reading " << aval() << " as a C++ number under " << transform
         << " gives its value without its derivative (the number is a constant to " << transform
         << "). Right for control flow on values; where the number feeds the result, keep computing with "
         << "Tensors. Write fx::stop_gradient(x)." << what << "<double>() to say the derivative is meant to be "
         << "dropped. (Shown once per process; FLUXION_WARN_READS=0 hides it.)\n";
      std::cerr << os.str();
    }
  }
  return primal_;
}

Tensor JvpInterpreter::lift(const Tensor& primal, const Tensor& tangent) {
  return Tensor(std::make_shared<JvpTracer>(primal, tangent, tag()));
}

std::pair<Tensor, Tensor> JvpInterpreter::split(const Tensor& t) const {
  if (owns(t)) {
    const auto& tr = static_cast<const JvpTracer&>(*t.impl());
    return {tr.primal(), tr.tangent()};
  }
  return {t, Tensor()};
}

FLUXION_REPL_INLINE std::vector<Tensor> JvpInterpreter::process(const Primitive& p, const std::vector<Tensor>& inputs,
                                                                const Params& params) try {
  std::vector<Tensor> primals, tangents;
  primals.reserve(inputs.size());
  tangents.reserve(inputs.size());
  bool any_tangent = false;
  for (const Tensor& t : inputs) {
    check_visible(t, p.name.c_str());
    auto [primal, tangent] = split(t);
    any_tangent |= tangent.defined();
    primals.push_back(std::move(primal));
    tangents.push_back(std::move(tangent));
  }
  InterpreterScope parent_scope(*parent());
  if (!any_tangent) return fluxion::bind(p, primals, params);
  if (!p.jvp)
    detail::fail<NotImplementedError>(tag()->transform, "no jvp rule for primitive '", p.name, "'.",
                                      p.missing_rule_reason.empty() ? "" : " ", p.missing_rule_reason);
  std::vector<Tensor> primals_out, tangents_out;
  p.jvp(p, primals, tangents, params, primals_out, tangents_out);
  std::vector<Tensor> out;
  out.reserve(primals_out.size());
  for (size_t i = 0; i < primals_out.size(); ++i) {
    const Tensor& t = i < tangents_out.size() ? tangents_out[i] : Tensor();
    out.push_back(t.defined() ? lift(primals_out[i], t) : primals_out[i]);
  }
  return out;
} catch (const std::bad_alloc&) {
  detail::fail<OutOfMemoryError>(tag()->transform, "out of memory in the jvp rule of '", p.name,
                                 "'. Free memory, or make the program smaller.");
}

}  // namespace fluxion
