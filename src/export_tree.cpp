// The text cursor of the exported text form, and TreeDesc's text ("tuple(leaf, map{'b': leaf})").
#include <cerrno>
#include <cstdlib>

#include "fluxion/errors.hpp"
#include "src/export_cursor.hpp"
#include "src/export_module.hpp"

namespace fluxion {

namespace export_detail {

void TextCursor::fail(const std::string& what) const { fail_at(where_, "column " + std::to_string(pos_ + 1), what); }

bool TextCursor::accept(const char* word) {
  size_t n = std::char_traits<char>::length(word);
  if (s_.compare(pos_, n, word) != 0) return false;
  pos_ += n;
  return true;
}

void TextCursor::expect(char c) {
  if (!accept(c)) fail(std::string("expected '") + c + "'");
}

void TextCursor::expect(const char* word) {
  if (!accept(word)) fail(std::string("expected '") + word + "'");
}

std::string TextCursor::word() {
  size_t start = pos_;
  while (!at_end()) {
    char c = s_[pos_];
    bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' || c == '.' ||
              c == '-' || c == '+';
    if (!ok) break;
    ++pos_;
  }
  if (pos_ == start) fail("expected a name or a number");
  return s_.substr(start, pos_ - start);
}

int64_t TextCursor::count() {
  size_t start = pos_;
  int64_t v = 0;
  while (!at_end() && s_[pos_] >= '0' && s_[pos_] <= '9') {
    if (v > (int64_t(1) << 58)) fail("a number too large");
    v = v * 10 + (s_[pos_++] - '0');
  }
  if (pos_ == start) fail("expected a count");
  return v;
}

int64_t TextCursor::integer() {
  std::string w = word();
  errno = 0;
  char* end = nullptr;
  long long v = std::strtoll(w.c_str(), &end, 10);
  if (errno != 0 || end != w.c_str() + w.size()) fail("'" + w + "' is not an int64");
  return static_cast<int64_t>(v);
}

std::string TextCursor::token() {
  size_t start = pos_;
  while (!at_end() && s_[pos_] != ' ') ++pos_;
  return s_.substr(start, pos_ - start);
}

std::string TextCursor::quoted() {
  expect('\'');
  std::string out;
  while (true) {
    if (at_end()) fail("an unterminated string");
    char c = s_[pos_++];
    if (c == '\'') return out;
    if (c != '\\') {
      out += c;
      continue;
    }
    if (at_end()) fail("an unterminated escape");
    char e = s_[pos_++];
    if (e == '\\' || e == '\'') {
      out += e;
    } else if (e == 'n') {
      out += '\n';
    } else if (e == 'x') {
      auto digit = [&](char h) -> int {
        if (h >= '0' && h <= '9') return h - '0';
        if (h >= 'a' && h <= 'f') return h - 'a' + 10;
        fail("a bad \\x escape");
      };
      if (pos_ + 2 > s_.size()) fail("a bad \\x escape");
      out += static_cast<char>(digit(s_[pos_]) * 16 + digit(s_[pos_ + 1]));
      pos_ += 2;
    } else {
      fail("an unknown escape");
    }
  }
}

std::string quote(const std::string& s) {
  static const char* digits = "0123456789abcdef";
  std::string out = "'";
  for (char c : s) {
    auto u = static_cast<unsigned char>(c);
    if (c == '\\' || c == '\'') {
      out += '\\';
      out += c;
    } else if (c == '\n') {
      out += "\\n";
    } else if (u < 32 || u >= 127) {
      out += "\\x";
      out += digits[u >> 4];
      out += digits[u & 15];
    } else {
      out += c;
    }
  }
  return out + "'";
}

namespace tree_text_detail {

constexpr int kMaxDepth = 64;

const char* kind_word(TreeDesc::Kind k) {
  switch (k) {
    case TreeDesc::Kind::leaf: return "leaf";
    case TreeDesc::Kind::tuple: return "tuple";
    case TreeDesc::Kind::pair: return "pair";
    case TreeDesc::Kind::array: return "array";
    case TreeDesc::Kind::vector: return "vector";
    case TreeDesc::Kind::map: return "map";
    case TreeDesc::Kind::structure: return "struct";
    case TreeDesc::Kind::value: return "value";
  }
  return "?";
}

void write(const TreeDesc& d, std::string& out) {
  out += kind_word(d.kind);
  if (d.kind == TreeDesc::Kind::leaf) return;
  if (d.kind == TreeDesc::Kind::value) {
    out += "(" + quote(d.value) + ")";
    return;
  }
  bool keyed = d.kind == TreeDesc::Kind::map || d.kind == TreeDesc::Kind::structure;
  out += keyed ? "{" : "(";
  for (size_t i = 0; i < d.children.size(); ++i) {
    if (i) out += ", ";
    if (keyed) out += quote(i < d.keys.size() ? d.keys[i] : std::string()) + ": ";
    write(d.children[i], out);
  }
  out += keyed ? "}" : ")";
}

TreeDesc read(TextCursor& c, int depth) {
  if (depth > kMaxDepth) c.fail("a structure nested deeper than " + std::to_string(kMaxDepth));
  std::string w = c.word();
  TreeDesc d;
  using K = TreeDesc::Kind;
  static const std::pair<const char*, K> kinds[] = {{"leaf", K::leaf},        {"tuple", K::tuple},   {"pair", K::pair},
                                                    {"array", K::array},      {"vector", K::vector}, {"map", K::map},
                                                    {"struct", K::structure}, {"value", K::value}};
  bool known = false;
  for (const auto& [name, kind] : kinds)
    if (w == name) d.kind = kind, known = true;
  if (!known) c.fail("unknown structure '" + w + "'");
  if (d.kind == K::leaf) return d;
  if (d.kind == K::value) {
    c.expect('(');
    d.value = c.quoted();
    c.expect(')');
    return d;
  }
  bool keyed = d.kind == K::map || d.kind == K::structure;
  char close = keyed ? '}' : ')';
  c.expect(keyed ? '{' : '(');
  while (!c.accept(close)) {
    if (!d.children.empty()) {
      c.expect(',');
      c.skip_spaces();
    }
    if (keyed) {
      d.keys.push_back(c.quoted());
      c.expect(':');
      c.skip_spaces();
    }
    d.children.push_back(read(c, depth + 1));
  }
  if (d.kind == K::pair && d.children.size() != 2) c.fail("a pair without two members");
  return d;
}

}  // namespace tree_text_detail

}  // namespace export_detail

size_t TreeDesc::num_leaves() const {
  if (kind == Kind::leaf) return 1;
  size_t n = 0;
  for (const TreeDesc& c : children) n += c.num_leaves();
  return n;
}

std::string to_string(const TreeDesc& d) {
  std::string out;
  export_detail::tree_text_detail::write(d, out);
  return out;
}

TreeDesc parse_tree_desc(const std::string& text, const std::string& where) {
  export_detail::TextCursor c(text, where);
  TreeDesc d = export_detail::tree_text_detail::read(c, 0);
  if (!c.at_end()) c.fail("unexpected text after the structure");
  return d;
}

}  // namespace fluxion
