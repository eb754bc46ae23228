/// Saved params: the typed fields Params::save writes and a primitive's load_params reads back
/// (fx::export_fn's files, docs/export_format.md). Both encodings (text and binary) store these fields.
#pragma once
#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "fluxion/primitive.hpp"

namespace fluxion {

/// One field of saved params. Shapes are saved as int lists; doubles by their bits; enums by name
/// (as strings); nested Jaxprs whole (the encodings write them as separate blocks).
struct ParamField {
  enum class Kind : uint8_t {
    int64 = 0,
    boolean = 1,
    float64 = 2,
    dtype = 3,
    ints = 4,
    axis_pair = 5,
    string = 6,
    jaxpr = 7
  };
  std::string name;
  Kind kind = Kind::int64;
  int64_t i = 0;   // int64, boolean (0/1), dtype (its enum value), jaxpr (index of the block in the file)
  uint64_t f = 0;  // float64: the bits of the double
  std::vector<int64_t> ints;
  AxisPair pair;
  std::string str;
  std::shared_ptr<const Jaxpr> jaxpr;  // jaxpr, in memory (Params::save and load_params)

  bool operator==(const ParamField& o) const;
};

/// "int64", "bool", "float64"...: the kind's name in error messages.
const char* param_kind_name(ParamField::Kind k);

/// Collects the fields of one Params::save, in order.
class ParamsWriter {
 public:
  void int64(const char* name, int64_t v);
  void boolean(const char* name, bool v);
  void float64(const char* name, double v);
  void dtype(const char* name, DType v);
  void ints(const char* name, const std::vector<int64_t>& v);
  void axis_pair(const char* name, const AxisPair& v);
  void string(const char* name, const std::string& v);
  void jaxpr(const char* name, const Jaxpr& v);
  const std::vector<ParamField>& fields() const { return fields_; }
  std::vector<ParamField> take() { return std::move(fields_); }

 private:
  ParamField& add(const char* name, ParamField::Kind kind);
  std::vector<ParamField> fields_;
};

/// Reads the fields of one equation's saved params by name and kind. Every miss (absent field, other
/// kind, a value a loader rejects) throws fluxion::Error naming `where` (file and offset) and the primitive.
class ParamsReader {
 public:
  ParamsReader(const std::vector<ParamField>& fields, std::string primitive, std::string where);
  int64_t int64(const char* name);
  /// int64 in [lo, hi] (counts and sizes a loader trusts before allocating).
  int64_t int64_in(const char* name, int64_t lo, int64_t hi);
  bool boolean(const char* name);
  double float64(const char* name);
  DType dtype(const char* name);
  std::vector<int64_t> ints(const char* name);
  AxisPair axis_pair(const char* name);
  std::string string(const char* name);
  std::shared_ptr<const Jaxpr> jaxpr(const char* name);
  /// Throws: "[load_exported] <where>: params of '<primitive>': <what>".
  [[noreturn]] void fail(const std::string& what) const;
  /// Throws when some field was never read (a field this version does not know).
  void check_all_read() const;

 private:
  const ParamField& get(const char* name, ParamField::Kind kind);
  const std::vector<ParamField>& fields_;
  std::vector<bool> read_;
  std::string primitive_, where_;
};

/// True when `a` and `b` save the same fields (nested Jaxprs compared by their saved form). The test of
/// a params round trip for params whose equals() compares identities (control flow, jit_call).
bool same_saved_params(const Params& a, const Params& b);

}  // namespace fluxion
