/// Support code the notebook runner (run_notebooks.py) loads before a notebook's first cell: it
/// marks where a cell's output ends, where a rich display begins, and what a cell threw, on stdout,
/// so that one interpreter process can run every cell and the runner can tell their outputs apart.
/// Not part of Fluxion; notebooks never include it (they include <xcpp/xdisplay.hpp>).
#pragma once
#include <cstdio>
#include <cstdlib>
#include <cxxabi.h>
#include <exception>
#include <iostream>
#include <memory>
#include <sstream>
#include <string>
#include <type_traits>
#include <typeinfo>
#include <utility>

namespace fluxion_notebook {

inline void flush_all() {
  std::cout.flush();
  std::fflush(stdout);
}

/// Printed after every cell (the runner splits the output there).
inline void end_of_cell() {
  flush_all();
  std::fputs("\n@@fluxion-cell-end@@\n", stdout);
  std::fflush(stdout);
}

/// The demangled name of a type_info ("fluxion::ShapeError").
inline std::string type_name(const std::type_info& t) {
  int status = 0;
  std::unique_ptr<char, void (*)(void*)> name(abi::__cxa_demangle(t.name(), nullptr, nullptr, &status), std::free);
  return status == 0 && name ? name.get() : t.name();
}

/// What a cell tagged raises-exception threw (the runner wraps such cells in try/catch).
inline void report_exception(const std::string& ename, const std::string& what) {
  flush_all();
  std::printf("\n@@fluxion-error-begin@@\n%s\n%s\n@@fluxion-error-end@@\n", ename.c_str(), what.c_str());
  std::fflush(stdout);
}

template <class T, class = void> struct has_mime_bundle : std::false_type {};
template <class T> struct has_mime_bundle<T, std::void_t<decltype(mime_bundle_repr(std::declval<const T&>()))>>
    : std::true_type {};

/// A display_data output: the mime bundle that xeus-cling / xeus-cpp would show for `value`
/// (mime_bundle_repr found by ADL), else its operator<< text.
template <class T> void display(const T& value) {
  flush_all();
  std::string json;
  if constexpr (has_mime_bundle<T>::value) {
    json = mime_bundle_repr(value).dump();
  } else {
    std::ostringstream os;
    os << value;
    std::string escaped;
    for (char c : os.str()) {
      if (c == '"' || c == '\\') escaped += '\\', escaped += c;
      else if (c == '\n') escaped += "\\n";
      else if (static_cast<unsigned char>(c) < 0x20) escaped += ' ';
      else escaped += c;
    }
    json = "{\"text/plain\": \"" + escaped + "\"}";
  }
  std::printf("\n@@fluxion-display-begin@@\n%s\n@@fluxion-display-end@@\n", json.c_str());
  std::fflush(stdout);
}

}  // namespace fluxion_notebook
