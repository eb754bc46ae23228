/// <xcpp/xdisplay.hpp> of Fluxion's Jupyter kernel (kernel name fluxion-cpp17): the xeus-cling / xeus-cpp API, so
/// that a notebook written for those kernels runs unchanged here.
///
///   xcpp::display(value)   shows `value` as the cell's display_data: the mime bundle of `mime_bundle_repr(value)`
///                          (found by argument-dependent lookup, as xeus does), else its operator<< text as
///                          text/plain.
///
/// The bundle goes to the kernel through fluxion_kernel_display, a function of the kernel's host process
/// (jupyter/host/fluxion_kernel_host.cpp), after what the cell printed before it.
#pragma once
#include <cstddef>
#include <iostream>
#include <sstream>
#include <string>
#include <type_traits>
#include <utility>

#include <nlohmann/json.hpp>

extern "C" void fluxion_kernel_display(const char* json, std::size_t size);
extern "C" void fluxion_kernel_display_result(const char* json, std::size_t size);

namespace xcpp {
namespace detail {
template <class T, class = void> struct has_mime_bundle_repr : std::false_type {};
template <class T> struct has_mime_bundle_repr<T, std::void_t<decltype(mime_bundle_repr(std::declval<const T&>()))>>
    : std::true_type {};

template <class T, class = void> struct is_printable : std::false_type {};
template <class T>
struct is_printable<T, std::void_t<decltype(std::declval<std::ostream&>() << std::declval<const T&>())>>
    : std::true_type {};

inline void publish(const nlohmann::json& bundle, bool is_result) {
  std::cout.flush();
  const std::string text = bundle.dump();
  if (is_result) fluxion_kernel_display_result(text.data(), text.size());
  else fluxion_kernel_display(text.data(), text.size());
}

/// The mime bundle of `value`: mime_bundle_repr(value), else its operator<< text.
template <class T> nlohmann::json bundle_of(const T& value) {
  if constexpr (has_mime_bundle_repr<T>::value) {
    return mime_bundle_repr(value);
  } else {
    static_assert(is_printable<T>::value,
                  "xcpp::display(value): the type has neither a mime_bundle_repr(const T&) overload (found by "
                  "argument-dependent lookup) nor operator<<; define one of them");
    std::ostringstream os;
    os << value;
    nlohmann::json bundle;
    bundle["text/plain"] = os.str();
    return bundle;
  }
}

/// Shows `value` as the cell's result (Out[n]): what the kernel runs for a cell ending in an expression without ';'.
template <class T> void display_result(const T& value) { publish(bundle_of(value), /*is_result=*/true); }
}  // namespace detail

/// Displays `value` in the notebook (see the file comment).
template <class T> void display(const T& value) { detail::publish(detail::bundle_of(value), /*is_result=*/false); }

}  // namespace xcpp
