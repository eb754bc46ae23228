// Saved params: ParamsWriter / ParamsReader, the per-type save_param / load_param that ParamsOf uses,
// and Params::save's default (params that cannot be saved say so).
#include <cstring>
#include <typeinfo>

#include "fluxion/errors.hpp"
#include "fluxion/jaxpr.hpp"
#include "fluxion/params_io.hpp"

namespace fluxion {

void Params::save(ParamsWriter&) const {
  detail::fail<Error>("export", "params of type ", typeid(*this).name(),
                      " cannot be saved (they hold C++ functions or have no save()). Export a function "
                      "without this primitive.");
}

const char* param_kind_name(ParamField::Kind k) {
  switch (k) {
    case ParamField::Kind::int64: return "int64";
    case ParamField::Kind::boolean: return "bool";
    case ParamField::Kind::float64: return "float64";
    case ParamField::Kind::dtype: return "dtype";
    case ParamField::Kind::ints: return "ints";
    case ParamField::Kind::axis_pair: return "axis_pair";
    case ParamField::Kind::string: return "string";
    case ParamField::Kind::jaxpr: return "jaxpr";
  }
  return "unknown";
}

// ---------------------------------------------------------------- writer

ParamField& ParamsWriter::add(const char* name, ParamField::Kind kind) {
  fields_.emplace_back();
  fields_.back().name = name;
  fields_.back().kind = kind;
  return fields_.back();
}
void ParamsWriter::int64(const char* name, int64_t v) { add(name, ParamField::Kind::int64).i = v; }
void ParamsWriter::boolean(const char* name, bool v) { add(name, ParamField::Kind::boolean).i = v ? 1 : 0; }
void ParamsWriter::float64(const char* name, double v) {
  uint64_t bits = 0;
  std::memcpy(&bits, &v, sizeof bits);
  add(name, ParamField::Kind::float64).f = bits;
}
void ParamsWriter::dtype(const char* name, DType v) { add(name, ParamField::Kind::dtype).i = static_cast<int64_t>(v); }
void ParamsWriter::ints(const char* name, const std::vector<int64_t>& v) { add(name, ParamField::Kind::ints).ints = v; }
void ParamsWriter::axis_pair(const char* name, const AxisPair& v) { add(name, ParamField::Kind::axis_pair).pair = v; }
void ParamsWriter::string(const char* name, const std::string& v) { add(name, ParamField::Kind::string).str = v; }
void ParamsWriter::jaxpr(const char* name, const Jaxpr& v) {
  add(name, ParamField::Kind::jaxpr).jaxpr = std::make_shared<const Jaxpr>(v);
}

// ---------------------------------------------------------------- reader

ParamsReader::ParamsReader(const std::vector<ParamField>& fields, std::string primitive, std::string where)
    : fields_(fields), read_(fields.size(), false), primitive_(std::move(primitive)), where_(std::move(where)) {}

void ParamsReader::fail(const std::string& what) const {
  detail::fail<Error>("load_exported", where_, ": params of '", primitive_, "': ", what,
                      ". The file is damaged or was written by another version.");
}

const ParamField& ParamsReader::get(const char* name, ParamField::Kind kind) {
  for (size_t i = 0; i < fields_.size(); ++i) {
    if (fields_[i].name != name) continue;
    if (fields_[i].kind != kind)
      fail(std::string("the field '") + name + "' is a " + param_kind_name(fields_[i].kind) + ", expected a " +
           param_kind_name(kind));
    read_[i] = true;
    return fields_[i];
  }
  fail(std::string("the field '") + name + "' (" + param_kind_name(kind) + ") is missing");
}

int64_t ParamsReader::int64(const char* name) { return get(name, ParamField::Kind::int64).i; }
int64_t ParamsReader::int64_in(const char* name, int64_t lo, int64_t hi) {
  int64_t v = int64(name);
  if (v < lo || v > hi)
    fail(std::string("the field '") + name + "' is " + std::to_string(v) + ", outside [" + std::to_string(lo) + ", " +
         std::to_string(hi) + "]");
  return v;
}
bool ParamsReader::boolean(const char* name) { return get(name, ParamField::Kind::boolean).i != 0; }
double ParamsReader::float64(const char* name) {
  uint64_t bits = get(name, ParamField::Kind::float64).f;
  double v = 0;
  std::memcpy(&v, &bits, sizeof v);
  return v;
}
DType ParamsReader::dtype(const char* name) {
  int64_t v = get(name, ParamField::Kind::dtype).i;
  if (v < 0 || v >= kNumDTypes) fail(std::string("the field '") + name + "' is not a dtype");
  return static_cast<DType>(v);
}
std::vector<int64_t> ParamsReader::ints(const char* name) { return get(name, ParamField::Kind::ints).ints; }
AxisPair ParamsReader::axis_pair(const char* name) { return get(name, ParamField::Kind::axis_pair).pair; }
std::string ParamsReader::string(const char* name) { return get(name, ParamField::Kind::string).str; }
std::shared_ptr<const Jaxpr> ParamsReader::jaxpr(const char* name) {
  const ParamField& f = get(name, ParamField::Kind::jaxpr);
  if (!f.jaxpr) fail(std::string("the field '") + name + "' names no Jaxpr");
  return f.jaxpr;
}

void ParamsReader::check_all_read() const {
  for (size_t i = 0; i < fields_.size(); ++i)
    if (!read_[i]) fail("unknown field '" + fields_[i].name + "'");
}

// ---------------------------------------------------------------- ParamsOf's fields

namespace detail {
void save_param(ParamsWriter& w, const char* name, int64_t v) { w.int64(name, v); }
void save_param(ParamsWriter& w, const char* name, bool v) { w.boolean(name, v); }
void save_param(ParamsWriter& w, const char* name, double v) { w.float64(name, v); }
void save_param(ParamsWriter& w, const char* name, DType v) { w.dtype(name, v); }
void save_param(ParamsWriter& w, const char* name, const Shape& v) { w.ints(name, v.dims()); }
void save_param(ParamsWriter& w, const char* name, const std::vector<int64_t>& v) { w.ints(name, v); }
void save_param(ParamsWriter& w, const char* name, const AxisPair& v) { w.axis_pair(name, v); }
void save_param(ParamsWriter& w, const char* name, const std::string& v) { w.string(name, v); }
void load_param(ParamsReader& r, const char* name, int64_t& v) { v = r.int64(name); }
void load_param(ParamsReader& r, const char* name, bool& v) { v = r.boolean(name); }
void load_param(ParamsReader& r, const char* name, double& v) { v = r.float64(name); }
void load_param(ParamsReader& r, const char* name, DType& v) { v = r.dtype(name); }
void load_param(ParamsReader& r, const char* name, Shape& v) {
  std::vector<int64_t> dims = r.ints(name);
  for (int64_t d : dims)
    if (d < 0) r.fail(std::string("the shape '") + name + "' has a negative size");
  v = Shape(std::move(dims));
}
void load_param(ParamsReader& r, const char* name, std::vector<int64_t>& v) { v = r.ints(name); }
void load_param(ParamsReader& r, const char* name, AxisPair& v) { v = r.axis_pair(name); }
void load_param(ParamsReader& r, const char* name, std::string& v) { v = r.string(name); }
}  // namespace detail

}  // namespace fluxion
