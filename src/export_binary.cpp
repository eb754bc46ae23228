// The binary form of an exported function (docs/export_format.md): magic, version, little-endian
// length-prefixed records, CRC-32. Every count and length is checked against the bytes left before
// anything is allocated, so damaged files fail with an Error naming the byte offset.
#include <array>
#include <cstring>

#include "fluxion/errors.hpp"
#include "src/export_module.hpp"

namespace fluxion::export_detail {

uint32_t crc32(const void* data, size_t n) {
  static const auto table = [] {
    std::array<uint32_t, 256> t{};
    for (uint32_t i = 0; i < 256; ++i) {
      uint32_t c = i;
      for (int k = 0; k < 8; ++k) c = (c & 1) ? 0xEDB88320u ^ (c >> 1) : c >> 1;
      t[i] = c;
    }
    return t;
  }();
  uint32_t c = 0xFFFFFFFFu;
  const auto* p = static_cast<const unsigned char*>(data);
  for (size_t i = 0; i < n; ++i) c = table[(c ^ p[i]) & 0xFF] ^ (c >> 8);
  return c ^ 0xFFFFFFFFu;
}

namespace binary_detail {

enum Tag : uint8_t { kEnd = 0, kName = 1, kInTree = 2, kOutTree = 3, kJaxpr = 4, kTensor = 5 };
constexpr size_t kMaxRank = 64;

// ---------------------------------------------------------------- writing

class Writer {
 public:
  std::string out;
  void u8(uint8_t v) { out += static_cast<char>(v); }
  void u32(uint32_t v) {
    for (int i = 0; i < 4; ++i) u8(static_cast<uint8_t>(v >> (8 * i)));
  }
  void u64(uint64_t v) {
    for (int i = 0; i < 8; ++i) u8(static_cast<uint8_t>(v >> (8 * i)));
  }
  void i64(int64_t v) { u64(static_cast<uint64_t>(v)); }
  void count(size_t n) { u32(static_cast<uint32_t>(n)); }
  void string(const std::string& s) {
    count(s.size());
    out += s;
  }
  void aval(const AbstractValue& a) {
    string(dtype_name(a.dtype));
    count(static_cast<size_t>(a.shape.size()));
    for (int64_t d : a.shape.dims()) i64(d);
  }
  void tensor(const Tensor& t) {
    Tensor c = t.concrete("export");
    aval(c.aval());
    const auto n = static_cast<size_t>(c.size() * dtype_size(c.dtype()));
    u64(n);
    out.append(static_cast<const char*>(c.array("export").data()), n);
  }
  void atom(const Atom& a) {
    if (a.is_literal()) {
      u8(1);
      tensor(a.literal);
    } else {
      u8(0);
      u32(static_cast<uint32_t>(a.var));
    }
  }
  void ints(const std::vector<int64_t>& v) {
    count(v.size());
    for (int64_t x : v) i64(x);
  }
  void field(const ParamField& f) {
    string(f.name);
    u8(static_cast<uint8_t>(f.kind));
    using K = ParamField::Kind;
    switch (f.kind) {
      case K::int64: i64(f.i); break;
      case K::boolean: u8(f.i ? 1 : 0); break;
      case K::float64: u64(f.f); break;
      case K::dtype: string(dtype_name(static_cast<DType>(f.i))); break;
      case K::ints: ints(f.ints); break;
      case K::axis_pair: ints(f.pair.first), ints(f.pair.second); break;
      case K::string: string(f.str); break;
      case K::jaxpr: u32(static_cast<uint32_t>(f.i)); break;
    }
  }
  void jaxpr(const SavedJaxpr& b) {
    count(b.consts.size());
    for (const Tensor& t : b.consts) tensor(t);
    count(b.in_avals.size());
    for (const AbstractValue& a : b.in_avals) aval(a);
    count(b.equations.size());
    for (const SavedEquation& e : b.equations) {
      string(e.primitive);
      count(e.params.size());
      for (const ParamField& f : e.params) field(f);
      count(e.inputs.size());
      for (const Atom& a : e.inputs) atom(a);
      count(e.out_avals.size());
      for (const AbstractValue& a : e.out_avals) aval(a);
    }
    count(b.outputs.size());
    for (const Atom& a : b.outputs) atom(a);
  }
  /// A record: tag, length, payload (written by `fill` into a fresh writer).
  template <class Fill> void record(Tag tag, const Fill& fill) {
    Writer payload;
    fill(payload);
    u8(tag);
    u64(payload.out.size());
    out += payload.out;
  }
  void header() {
    out.append(kBinaryMagic, sizeof kBinaryMagic);
    u32(static_cast<uint32_t>(kExportFormatVersion));
  }
  std::string seal() {
    record(kEnd, [](Writer&) {});
    u32(crc32(out.data(), out.size()));
    return std::move(out);
  }
};

// ---------------------------------------------------------------- reading

class Reader {
 public:
  /// Reads bytes [begin, end) of `s`; offsets in messages are from the start of the file.
  Reader(const std::string& s, size_t begin, size_t end, const std::string& source)
      : s_(s), pos_(begin), end_(end), source_(source) {}
  size_t pos() const { return pos_; }
  size_t left() const { return end_ - pos_; }
  bool done() const { return pos_ == end_; }
  std::string where() const { return "byte " + std::to_string(pos_); }
  [[noreturn]] void fail(const std::string& what) const { fail_at(source_, where(), what); }

  void need(size_t n) const {
    if (n > left())
      fail("the data ends early (" + std::to_string(n) + " bytes needed, " + std::to_string(left()) + " left)");
  }
  void skip(size_t n) {
    need(n);
    pos_ += n;
  }
  uint8_t u8() {
    need(1);
    return static_cast<uint8_t>(s_[pos_++]);
  }
  uint32_t u32() {
    need(4);
    uint32_t v = 0;
    for (int i = 0; i < 4; ++i) v |= uint32_t(static_cast<uint8_t>(s_[pos_++])) << (8 * i);
    return v;
  }
  uint64_t u64() {
    need(8);
    uint64_t v = 0;
    for (int i = 0; i < 8; ++i) v |= uint64_t(static_cast<uint8_t>(s_[pos_++])) << (8 * i);
    return v;
  }
  int64_t i64() { return static_cast<int64_t>(u64()); }
  /// A count of elements each at least `min_size` bytes long: never more than the bytes left allow.
  size_t count(size_t min_size) {
    uint32_t n = u32();
    if (static_cast<uint64_t>(n) * min_size > left())
      fail("a count of " + std::to_string(n) + " exceeds what the " + std::to_string(left()) + " bytes left can hold");
    return n;
  }
  std::string string() {
    size_t n = count(1);
    std::string v = s_.substr(pos_, n);
    pos_ += n;
    return v;
  }
  DType dtype() {
    std::string name = string();
    for (int d = 0; d < kNumDTypes; ++d)
      if (name == dtype_name(static_cast<DType>(d))) return static_cast<DType>(d);
    fail("unknown dtype '" + name + "'");
  }
  AbstractValue aval() {
    DType d = dtype();
    size_t rank = count(8);
    if (rank > kMaxRank) fail("a rank of " + std::to_string(rank));
    std::vector<int64_t> dims;
    for (size_t i = 0; i < rank; ++i) {
      dims.push_back(i64());
      if (dims.back() < 0) fail("a negative size");
    }
    try {
      checked_num_elements("load_exported", dims);
    } catch (const Error&) { fail("a shape with too many elements"); }
    return AbstractValue{Shape(std::move(dims)), d};
  }
  Tensor tensor() {
    AbstractValue a = aval();
    uint64_t n = u64();
    if (n != static_cast<uint64_t>(a.shape.num_elements() * dtype_size(a.dtype)))
      fail("the data of a " + std::string(dtype_name(a.dtype)) + " tensor of " +
           std::to_string(a.shape.num_elements()) + " elements has " + std::to_string(n) + " bytes");
    need(static_cast<size_t>(n));
    Tensor t = empty(a);
    if (n) std::memcpy(t.array().data(), s_.data() + pos_, static_cast<size_t>(n));
    pos_ += static_cast<size_t>(n);
    return t;
  }
  Atom atom() {
    uint8_t kind = u8();
    if (kind == 0) {
      uint32_t v = u32();
      if (v > static_cast<uint32_t>(INT32_MAX)) fail("a variable number out of range");
      return Atom::of_var(static_cast<int32_t>(v));
    }
    if (kind != 1) fail("an operand that is neither a variable nor a literal");
    return Atom::of_literal(tensor());
  }
  std::vector<int64_t> ints() {
    size_t n = count(8);
    std::vector<int64_t> v(n);
    for (int64_t& x : v) x = i64();
    return v;
  }
  ParamField field() {
    ParamField f;
    f.name = string();
    uint8_t kind = u8();
    if (kind > static_cast<uint8_t>(ParamField::Kind::jaxpr)) fail("an unknown params field kind");
    f.kind = static_cast<ParamField::Kind>(kind);
    using K = ParamField::Kind;
    switch (f.kind) {
      case K::int64: f.i = i64(); break;
      case K::boolean:
        f.i = u8();
        if (f.i > 1) fail("a bool that is neither 0 nor 1");
        break;
      case K::float64: f.f = u64(); break;
      case K::dtype: f.i = static_cast<int64_t>(dtype()); break;
      case K::ints: f.ints = ints(); break;
      case K::axis_pair:
        f.pair.first = ints();
        f.pair.second = ints();
        break;
      case K::string: f.str = string(); break;
      case K::jaxpr: f.i = u32(); break;
    }
    return f;
  }
  SavedJaxpr jaxpr() {
    SavedJaxpr b;
    b.where = where();
    for (size_t n = count(13); n > 0; --n) b.consts.push_back(tensor());
    for (size_t n = count(8); n > 0; --n) b.in_avals.push_back(aval());
    for (size_t n = count(16); n > 0; --n) {
      SavedEquation e;
      e.where = where();
      e.primitive = string();
      for (size_t k = count(5); k > 0; --k) e.params.push_back(field());
      for (size_t k = count(5); k > 0; --k) e.inputs.push_back(atom());
      for (size_t k = count(8); k > 0; --k) e.out_avals.push_back(aval());
      b.equations.push_back(std::move(e));
    }
    for (size_t n = count(5); n > 0; --n) b.outputs.push_back(atom());
    return b;
  }

 private:
  const std::string& s_;
  size_t pos_, end_;
  const std::string& source_;
};

/// Checks magic, version and checksum; calls `on_record(tag, reader over its payload)` per record.
template <class OnRecord> void read_records(const std::string& bytes, const std::string& source, OnRecord on_record) {
  const size_t header = sizeof kBinaryMagic + 4;
  if (bytes.size() < sizeof kBinaryMagic || std::memcmp(bytes.data(), kBinaryMagic, sizeof kBinaryMagic) != 0)
    fail_at(source, "byte 0", "no Fluxion binary magic");
  Reader r(bytes, sizeof kBinaryMagic, bytes.size(), source);
  const uint32_t version = r.u32();
  if (version > kExportFormatVersion)
    detail::fail<Error>("load_exported", source, " has format version ", version,
                        " but this build reads versions up to ", kExportFormatVersion,
                        ". Load it with a newer Fluxion, or export it again with this one.");
  if (version < 1) fail_at(source, "byte 8", "format version 0 does not exist");
  if (bytes.size() < header + 9 + 4) fail_at(source, "byte " + std::to_string(bytes.size()), "the file ends early");
  const size_t body_end = bytes.size() - 4;
  Reader tail(bytes, body_end, bytes.size(), source);
  if (tail.u32() != crc32(bytes.data(), body_end))
    fail_at(source, "byte " + std::to_string(body_end), "the checksum does not match the contents");
  Reader records(bytes, header, body_end, source);
  while (true) {
    const size_t at = records.pos();
    const uint8_t tag = records.u8();
    const uint64_t length = records.u64();
    if (length > records.left()) records.fail("a record longer than the file");
    Reader payload(bytes, records.pos(), records.pos() + static_cast<size_t>(length), source);
    records.skip(static_cast<size_t>(length));
    if (tag == kEnd) {
      if (!records.done()) records.fail("data after the end record");
      return;
    }
    if (tag > kTensor) fail_at(source, "byte " + std::to_string(at), "unknown record tag " + std::to_string(tag));
    on_record(static_cast<Tag>(tag), payload);
    if (!payload.done()) payload.fail("unread bytes at the end of a record");
  }
}

std::string rest(Reader& r) {
  std::string s;
  while (!r.done()) s += static_cast<char>(r.u8());
  return s;
}

}  // namespace binary_detail

std::string write_binary(const Module& m) {
  using namespace binary_detail;
  Writer w;
  w.header();
  w.record(kName, [&](Writer& p) { p.out += m.name; });
  w.record(kInTree, [&](Writer& p) { p.out += to_string(m.in_tree); });
  w.record(kOutTree, [&](Writer& p) { p.out += to_string(m.out_tree); });
  for (const SavedJaxpr& b : m.jaxprs) w.record(kJaxpr, [&](Writer& p) { p.jaxpr(b); });
  return w.seal();
}

Module read_binary(const std::string& bytes, const std::string& source) {
  using namespace binary_detail;
  Module m;
  int seen = 0;  // bit per tag among name, in_tree, out_tree
  read_records(bytes, source, [&](Tag tag, Reader& r) {
    const std::string where = source + " " + r.where();
    if (tag != kJaxpr && tag != kTensor) {
      if (seen & (1 << tag)) r.fail("a repeated record");
      seen |= 1 << tag;
    }
    switch (tag) {
      case kName: m.name = rest(r); break;
      case kInTree: m.in_tree = parse_tree_desc(rest(r), where); break;
      case kOutTree: m.out_tree = parse_tree_desc(rest(r), where); break;
      case kJaxpr: m.jaxprs.push_back(r.jaxpr()); break;
      default: r.fail("a record that does not belong in an exported function");
    }
  });
  if (seen != 0b1110) fail_at(source, "", "the name or a structure record is missing");
  return m;
}

}  // namespace fluxion::export_detail

namespace fluxion {

void save_tensors(const std::string& path, const std::vector<Tensor>& tensors) {
  using namespace export_detail::binary_detail;
  Writer w;
  w.header();
  for (const Tensor& t : tensors) w.record(kTensor, [&](Writer& p) { p.tensor(t); });
  export_detail::write_file(path, w.seal());
}

std::vector<Tensor> load_tensors(const std::string& path) {
  using namespace export_detail::binary_detail;
  const std::string bytes = export_detail::read_file(path);
  const std::string source = "file '" + path + "'";
  std::vector<Tensor> out;
  read_records(bytes, source, [&](Tag tag, Reader& r) {
    if (tag != kTensor) r.fail("a record that does not belong in a tensors file");
    out.push_back(r.tensor());
  });
  return out;
}

}  // namespace fluxion
