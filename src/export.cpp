// fx::Exported: building one from a jit signature, calling it (arguments checked against the recorded
// avals and structure, then one jit_call), saving it and loading it back.
#include <cerrno>
#include <cstdlib>
#include <fstream>
#include <sstream>

#include "fluxion/errors.hpp"
#include "src/export_module.hpp"

namespace fluxion {

namespace export_detail {

std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) detail::fail<Error>("load_exported", "cannot open '", path, "'. Check the path.");
  std::ostringstream ss;
  ss << in.rdbuf();
  if (in.bad()) detail::fail<Error>("load_exported", "cannot read '", path, "'. Check the file.");
  return ss.str();
}

void write_file(const std::string& path, const std::string& bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  if (!out) detail::fail<Error>("export", "cannot open '", path, "' for writing. Check the directory exists.");
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  out.close();
  if (!out) detail::fail<Error>("export", "cannot write '", path, "'. Check the disk.");
}

void fail_structure(const std::string& name, const std::string& path, const TreeDesc& d, const char* wanted) {
  detail::fail<Error>(("exported '" + name + "'").c_str(), "the ", path, " is ", to_string(d), " but call<T> asks for ",
                      wanted, " there. Use a T with the structure the function returns (see out_tree()).");
}

double parse_static_number(const std::string& name, const std::string& path, const std::string& text) {
  if (text == "true") return 1;
  if (text == "false") return 0;
  errno = 0;
  char* end = nullptr;
  double v = std::strtod(text.c_str(), &end);
  if (errno != 0 || text.empty() || end != text.c_str() + text.size())
    detail::fail<Error>(("exported '" + name + "'").c_str(), "the ", path, " was recorded as '", text,
                        "', which is not a number. Ask call<T> for a T whose member there is not a number.");
  return v;
}

Exported make_exported(const std::shared_ptr<const JitCallParams>& call, TreeDesc in_tree, TreeDesc out_tree) {
  ExportedState traced;
  traced.name = "exported";
  traced.call = call;
  traced.in_tree = std::move(in_tree);
  traced.out_tree = std::move(out_tree);
  // What a file would hold, read back: the function runs exactly as a loaded copy would.
  Module m = to_module(traced);
  return Exported(from_module(m, "the exported function"));
}

}  // namespace export_detail

using export_detail::ExportedState;

const ExportedState& Exported::state() const {
  if (!state_)
    detail::fail<Error>("exported", "this Exported is empty. Make one with fx::export_fn or fx::load_exported.");
  return *state_;
}

const std::string& Exported::name() const { return state().name; }
const Jaxpr& Exported::jaxpr() const { return state().call->jaxpr(); }
const std::vector<AbstractValue>& Exported::in_avals() const { return state().in_avals; }
const std::vector<AbstractValue>& Exported::out_avals() const { return state().out_avals; }
const TreeDesc& Exported::in_tree() const { return state().in_tree; }
const TreeDesc& Exported::out_tree() const { return state().out_tree; }

Exported Exported::named(const std::string& name) const {
  auto s = std::make_shared<ExportedState>(state());
  s->name = name;
  s->call = std::make_shared<const JitCallParams>(state().call->jaxpr_ptr(), name, /*optimized=*/true);
  return Exported(std::move(s));
}

namespace export_call_detail {

std::string plural(size_t n, const char* what) { return std::to_string(n) + " " + what + (n == 1 ? "" : "s"); }

/// Compares the call's argument structure with the recorded one: argument count, containers and
/// static values (baked into the Jaxpr), then every leaf's dtype and shape.
void check_arguments(const ExportedState& s, const std::vector<Tensor>& leaves, const TreeDesc& args) {
  const std::string op = "exported '" + s.name + "'";
  const TreeDesc& want = s.in_tree;
  if (args.children.size() != want.children.size())
    detail::fail<Error>(op.c_str(), "called with ", plural(args.children.size(), "argument"), ", expected ",
                        want.children.size(), " (", to_string(want), "). Pass the arguments it was exported with.");
  size_t leaf = 0;
  for (size_t i = 0; i < want.children.size(); ++i) {
    const TreeDesc &got = args.children[i], &rec = want.children[i];
    if (got != rec) {
      const bool is_static = rec.kind == TreeDesc::Kind::value && got.kind == TreeDesc::Kind::value;
      detail::fail<Error>(op.c_str(), "argument ", i, " is ", to_string(got), ", expected ", to_string(rec),
                          is_static ? ". Static arguments are part of the exported function; export it again for "
                                      "another value."
                                    : ". Pass an argument of the structure it was exported with.");
    }
    const size_t n = rec.num_leaves();
    for (size_t k = 0; k < n; ++k, ++leaf) {
      const AbstractValue& a = leaves[leaf].aval();
      const AbstractValue& w = s.in_avals[leaf];
      if (a == w) continue;
      std::ostringstream msg;
      msg << "argument " << i;
      if (rec.kind != TreeDesc::Kind::leaf) msg << " (leaf " << k << " of " << n << ")";
      msg << " has " << a << ", expected " << w;
      detail::fail<Error>(op.c_str(), msg.str(),
                          ". Exported functions take the shapes and dtypes they were exported for; ",
                          "export again for others.");
    }
  }
}

}  // namespace export_call_detail

std::vector<Tensor> Exported::call_leaves(std::vector<Tensor> leaves, const TreeDesc& args) const {
  const ExportedState& s = state();
  export_call_detail::check_arguments(s, leaves, args);
  return fluxion::bind(jit_call_p(), leaves, *s.call);
}

std::vector<Tensor> Exported::call_flat(const std::vector<Tensor>& leaves) const {
  const ExportedState& s = state();
  const std::string op = "exported '" + s.name + "'";
  if (leaves.size() != s.in_avals.size())
    detail::fail<Error>(op.c_str(), "called with ", export_call_detail::plural(leaves.size(), "tensor"), ", expected ",
                        s.in_avals.size(), " (the leaves of ", to_string(s.in_tree), "). Pass every leaf in order.");
  for (size_t i = 0; i < leaves.size(); ++i)
    if (leaves[i].aval() != s.in_avals[i]) {
      std::ostringstream msg;
      msg << "leaf " << i << " has " << leaves[i].aval() << ", expected " << s.in_avals[i];
      detail::fail<Error>(op.c_str(), msg.str(), ". Pass the shapes and dtypes it was exported for.");
    }
  return fluxion::bind(jit_call_p(), leaves, *s.call);
}

std::string Exported::serialize(ExportFormat format) const {
  export_detail::Module m = export_detail::to_module(state());
  return format == ExportFormat::binary ? export_detail::write_binary(m) : export_detail::write_text(m);
}

void Exported::save(const std::string& path, ExportFormat format) const {
  if (format == ExportFormat::by_extension) {
    const bool binary = path.size() >= 4 && path.compare(path.size() - 4, 4, ".fxb") == 0;
    format = binary ? ExportFormat::binary : ExportFormat::text;
  }
  export_detail::write_file(path, serialize(format));
}

Exported parse_exported(const std::string& bytes, const std::string& source) {
  using namespace export_detail;
  const bool binary = bytes.size() >= sizeof kBinaryMagic &&
                      bytes.compare(0, sizeof kBinaryMagic, kBinaryMagic, sizeof kBinaryMagic) == 0;
  Module m = binary ? read_binary(bytes, source) : read_text(bytes, source);
  return Exported(from_module(m, source));
}

Exported load_exported(const std::string& path) {
  return parse_exported(export_detail::read_file(path), "file '" + path + "'");
}

}  // namespace fluxion
