/// The saved form of an exported function, shared by the text and binary encodings
/// (docs/export_format.md): Jaxprs as blocks with dense variable numbers, params as typed fields.
#pragma once
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "fluxion/export.hpp"
#include "fluxion/params_io.hpp"

namespace fluxion::export_detail {

/// What an Exported holds.
class ExportedState {
 public:
  std::string name;
  std::shared_ptr<const JitCallParams> call;  // the Jaxpr, run as a jit_call
  std::vector<AbstractValue> in_avals, out_avals;
  TreeDesc in_tree, out_tree;
};

/// One equation. Its outputs are the next variable numbers of the block, in order.
struct SavedEquation {
  std::string primitive;
  std::vector<ParamField> params;  // jaxpr fields: `i` is the index of an earlier block
  std::vector<Atom> inputs;
  std::vector<AbstractValue> out_avals;
  std::string where;  // "line 12" / "byte 345": for messages while loading
};

/// One Jaxpr. Variables are numbered densely: constants first, then inputs, then equation outputs.
struct SavedJaxpr {
  std::vector<Tensor> consts;
  std::vector<AbstractValue> in_avals;
  std::vector<SavedEquation> equations;
  std::vector<Atom> outputs;
  std::string where;
};

/// A whole file. Blocks referenced by params come before the block using them; the last is the function.
struct Module {
  int64_t version = kExportFormatVersion;
  std::string name;
  TreeDesc in_tree, out_tree;
  std::vector<SavedJaxpr> jaxprs;
};

/// The saved form of `state`: calls carrying C++ rules (custom_jvp_call...) are replaced by their
/// primal sub-Jaxprs; params that cannot be saved throw naming the primitive.
Module to_module(const ExportedState& state);
/// Rebuilds the function: primitives found by name, params loaded, every block typechecked. Throws
/// fluxion::Error naming `source` and the offending line or byte on any inconsistency.
std::shared_ptr<const ExportedState> from_module(const Module& m, const std::string& source);

/// Encodings. `source` names the bytes in messages.
std::string write_text(const Module& m);
Module read_text(const std::string& bytes, const std::string& source);
std::string write_binary(const Module& m);
Module read_binary(const std::string& bytes, const std::string& source);
/// The binary form's magic, first bytes of every binary file.
inline constexpr char kBinaryMagic[8] = {'\x89', 'F', 'X', 'E', 'X', 'P', '\r', '\n'};

/// Variable names of the text form: a..z, ba..zz, ... (like the Jaxpr printer) for dense ids.
std::string var_name(size_t id);
/// The text of one saved params field's value ("(0,1)", "'batch'", "@2"...).
std::string field_text(const ParamField& f);
/// Literal and tensor bytes, little-endian, as lowercase hex.
std::string hex_of(const void* data, size_t n);

/// Whole files; Error naming the path when they cannot be read or written.
std::string read_file(const std::string& path);
void write_file(const std::string& path, const std::string& bytes);

/// Throws "[load_exported] <source> <where>: <what>. <hint>".
[[noreturn]] void fail_at(const std::string& source, const std::string& where, const std::string& what);

}  // namespace fluxion::export_detail
