// Jaxpr <-> the saved form (export_module.hpp): custom-rule calls replaced by their primal Jaxprs,
// variables renumbered densely, params saved as fields; loading finds primitives by name, loads params
// and typechecks every block.
#include "src/export_module.hpp"

#include <cstring>
#include <exception>
#include <sstream>

#include "fluxion/errors.hpp"
#include "passes/passes.hpp"

namespace fluxion::export_detail {

void fail_at(const std::string& source, const std::string& where, const std::string& what) {
  detail::fail<Error>("load_exported", source, where.empty() ? "" : " ", where, ": ", what,
                      ". The file is damaged, or was not written by fx::Exported::save.");
}

std::string var_name(size_t id) {
  std::string s;
  do {
    s.insert(s.begin(), static_cast<char>('a' + id % 26));
    id /= 26;
  } while (id > 0);
  return s;
}

std::string hex_of(const void* data, size_t n) {
  static const char* digits = "0123456789abcdef";
  const auto* p = static_cast<const unsigned char*>(data);
  std::string s(2 * n, '0');
  for (size_t i = 0; i < n; ++i) {
    s[2 * i] = digits[p[i] >> 4];
    s[2 * i + 1] = digits[p[i] & 15];
  }
  return s;
}

// ---------------------------------------------------------------- saving

namespace module_detail {

/// A call whose rules are C++ closures (no params loader): export keeps only its primal sub-Jaxpr.
bool replaced_by_callee(const Equation& e) { return e.primitive->callee && !e.primitive->load_params; }

/// The Jaxpr with every custom-rule call replaced by its primal sub-Jaxpr, recursively.
Jaxpr without_custom_calls(const Jaxpr& j) { return passes::inline_calls_where(j, &replaced_by_callee); }

std::vector<ParamField> saved_params(const Equation& e) {
  const Primitive& p = *e.primitive;
  if (!e.params->empty() && !p.load_params)
    detail::fail<Error>("export", "the primitive '", p.name, "' has params but no loader (.params<P>() in its ",
                        "definition), so a saved file could not be read. Export a function without it.");
  ParamsWriter w;
  try {
    e.params->save(w);
  } catch (const Error& err) {
    detail::fail<Error>("export", "the params of '", p.name, "' cannot be saved: ", err.what(),
                        " Export a function without this primitive.");
  }
  return w.take();
}

/// Adds `j` (and the Jaxprs its params hold, first) to `m`; returns its block index.
size_t add_block(Module& m, const Jaxpr& original) {
  Jaxpr j = without_custom_calls(original);
  SavedJaxpr block;
  std::vector<int32_t> renumber(j.avals.size(), -1);
  int32_t next = 0;
  for (size_t i = 0; i < j.constvars.size(); ++i) {
    renumber[j.constvars[i]] = next++;
    block.consts.push_back(j.consts[i]);
  }
  for (int32_t v : j.invars) {
    renumber[v] = next++;
    block.in_avals.push_back(j.avals[v]);
  }
  auto atom = [&](const Atom& a) { return a.is_literal() ? a : Atom::of_var(renumber[a.var]); };
  for (const Equation& e : j.equations) {
    SavedEquation s;
    s.primitive = e.primitive->name;
    s.params = saved_params(e);
    for (ParamField& f : s.params)
      if (f.kind == ParamField::Kind::jaxpr) {
        f.i = static_cast<int64_t>(add_block(m, *f.jaxpr));
        f.jaxpr.reset();
      }
    for (const Atom& a : e.inputs) s.inputs.push_back(atom(a));
    for (int32_t v : e.outputs) {
      renumber[v] = next++;
      s.out_avals.push_back(j.avals[v]);
    }
    block.equations.push_back(std::move(s));
  }
  for (const Atom& a : j.outputs) block.outputs.push_back(atom(a));
  m.jaxprs.push_back(std::move(block));
  return m.jaxprs.size() - 1;
}

}  // namespace module_detail

Module to_module(const ExportedState& state) {
  Module m;
  m.name = state.name;
  m.in_tree = state.in_tree;
  m.out_tree = state.out_tree;
  module_detail::add_block(m, state.call->jaxpr());
  return m;
}

// ---------------------------------------------------------------- loading

namespace module_detail {

std::shared_ptr<const Params> load_params(const SavedEquation& s, const Primitive& p,
                                          const std::vector<std::shared_ptr<const Jaxpr>>& built,
                                          const std::string& source) {
  std::vector<ParamField> fields = s.params;
  for (ParamField& f : fields)
    if (f.kind == ParamField::Kind::jaxpr) {
      if (f.i < 0 || static_cast<size_t>(f.i) >= built.size())
        fail_at(source, s.where,
                "the params of '" + s.primitive + "' name Jaxpr block " + std::to_string(f.i) +
                    ", which is not an earlier block");
      f.jaxpr = built[static_cast<size_t>(f.i)];
    }
  if (!p.load_params) {
    if (!fields.empty()) fail_at(source, s.where, "the primitive '" + s.primitive + "' takes no params");
    return std::make_shared<NoParams>();
  }
  ParamsReader r(fields, s.primitive, source + " " + s.where);
  std::shared_ptr<const Params> params = p.load_params(r);
  r.check_all_read();
  return params;
}

Jaxpr build_block(const SavedJaxpr& b, const std::vector<std::shared_ptr<const Jaxpr>>& built,
                  const std::string& source) {
  Jaxpr j;
  for (const Tensor& c : b.consts) {
    j.constvars.push_back(j.new_var(c.aval()));
    j.consts.push_back(c);
  }
  for (const AbstractValue& a : b.in_avals) j.invars.push_back(j.new_var(a));
  auto atom = [&](const Atom& a, const std::string& where) {
    if (!a.is_literal() && static_cast<size_t>(a.var) >= j.avals.size())
      fail_at(source, where, "variable " + var_name(static_cast<size_t>(a.var)) + " is used before it is defined");
    if (a.is_literal() && !a.literal.defined()) fail_at(source, where, "an empty literal");
    return a;
  };
  for (const SavedEquation& s : b.equations) {
    Equation e;
    e.primitive = find_primitive(s.primitive);
    if (!e.primitive)
      fail_at(source, s.where, "unknown primitive '" + s.primitive + "' (this build does not define it)");
    e.params = load_params(s, *e.primitive, built, source);
    for (const Atom& a : s.inputs) e.inputs.push_back(atom(a, s.where));
    for (const AbstractValue& a : s.out_avals) e.outputs.push_back(j.new_var(a));
    j.equations.push_back(std::move(e));
  }
  for (const Atom& a : b.outputs) j.outputs.push_back(atom(a, b.where));
  try {
    typecheck(j);
  } catch (const std::exception& err) {
    fail_at(source, b.where, std::string("the Jaxpr does not typecheck: ") + err.what());
  }
  return j;
}

}  // namespace module_detail

std::shared_ptr<const ExportedState> from_module(const Module& m, const std::string& source) {
  if (m.jaxprs.empty()) fail_at(source, "", "the file holds no Jaxpr");
  std::vector<std::shared_ptr<const Jaxpr>> built;
  try {
    for (const SavedJaxpr& b : m.jaxprs)
      built.push_back(std::make_shared<const Jaxpr>(module_detail::build_block(b, built, source)));
  } catch (const Error&) {
    throw;
  } catch (const std::exception& err) {  // a loader or shape rule meeting values no tracer makes
    fail_at(source, "", std::string("the file's contents are inconsistent: ") + err.what());
  }
  auto state = std::make_shared<ExportedState>();
  state->name = m.name;
  state->in_tree = m.in_tree;
  state->out_tree = m.out_tree;
  state->call = std::make_shared<const JitCallParams>(built.back(), m.name, /*optimized=*/true);
  state->in_avals = built.back()->in_avals();
  state->out_avals = built.back()->out_avals();
  if (m.in_tree.kind != TreeDesc::Kind::tuple || m.in_tree.num_leaves() != state->in_avals.size())
    fail_at(source, "",
            "the argument structure " + to_string(m.in_tree) + " does not have one leaf per input (" +
                std::to_string(state->in_avals.size()) + ")");
  if (m.out_tree.num_leaves() != state->out_avals.size())
    fail_at(source, "",
            "the result structure " + to_string(m.out_tree) + " does not have one leaf per output (" +
                std::to_string(state->out_avals.size()) + ")");
  return state;
}

}  // namespace fluxion::export_detail

namespace fluxion {

using export_detail::ExportedState;
using export_detail::to_module;
using export_detail::write_text;

bool ParamField::operator==(const ParamField& o) const {
  if (name != o.name || kind != o.kind) return false;
  if (kind != Kind::jaxpr) return i == o.i && f == o.f && ints == o.ints && pair == o.pair && str == o.str;
  if (!jaxpr || !o.jaxpr) return jaxpr == o.jaxpr && i == o.i;
  // Nested Jaxprs compare by their saved text.
  auto text = [](const Jaxpr& j) {
    ExportedState s;
    s.call = std::make_shared<const JitCallParams>(std::make_shared<const Jaxpr>(j), "sub");
    s.in_tree.kind = TreeDesc::Kind::tuple;
    return write_text(to_module(s));
  };
  return text(*jaxpr) == text(*o.jaxpr);
}

bool same_saved_params(const Params& a, const Params& b) {
  ParamsWriter wa, wb;
  a.save(wa);
  b.save(wb);
  return wa.fields() == wb.fields();
}

}  // namespace fluxion
