/// A cursor over one line of an exported text file (or a tree description): small readers that
/// never step past the end and throw fluxion::Error naming the place on anything unexpected.
#pragma once
#include <cstdint>
#include <string>

namespace fluxion::export_detail {

class TextCursor {
 public:
  /// `where` names the text in messages ("file 'f.fxt' line 3").
  TextCursor(const std::string& text, std::string where) : s_(text), where_(std::move(where)) {}

  bool at_end() const { return pos_ >= s_.size(); }
  char peek() const { return at_end() ? '\0' : s_[pos_]; }
  char peek(size_t ahead) const { return pos_ + ahead < s_.size() ? s_[pos_ + ahead] : '\0'; }
  size_t pos() const { return pos_; }
  const std::string& where() const { return where_; }
  void skip_spaces() {
    while (!at_end() && s_[pos_] == ' ') ++pos_;
  }
  /// Consumes `c` if it is next.
  bool accept(char c) {
    if (peek() != c) return false;
    ++pos_;
    return true;
  }
  /// Consumes `word` if it is next.
  bool accept(const char* word);
  void expect(char c);
  void expect(const char* word);
  /// Letters, digits, '_', '.', '-', '+' (names, numbers, dtypes).
  std::string word();
  /// A non-negative decimal integer below 2^62.
  int64_t count();
  /// A signed decimal int64 (range checked).
  int64_t integer();
  /// A quoted string: '...' with \\, \', \n and \xHH escapes.
  std::string quoted();
  /// Everything up to the next space (or the end).
  std::string token();
  [[noreturn]] void fail(const std::string& what) const;

 private:
  const std::string& s_;
  std::string where_;
  size_t pos_ = 0;
};

/// `s` quoted for TextCursor::quoted.
std::string quote(const std::string& s);

}  // namespace fluxion::export_detail
