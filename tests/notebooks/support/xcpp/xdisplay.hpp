/// Stand-in for xeus-cling's / xeus-cpp's <xcpp/xdisplay.hpp> when the notebook runner executes a
/// notebook outside Jupyter: xcpp::display(value) records the mime bundle of `value` as the cell's
/// display_data output. In a real kernel the kernel's own header is found instead.
#pragma once
#include "fluxion_notebook_runner.hpp"

namespace xcpp {
template <class T> void display(const T& value) { fluxion_notebook::display(value); }
}  // namespace xcpp
