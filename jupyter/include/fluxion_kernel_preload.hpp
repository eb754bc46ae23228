/// What Fluxion's Jupyter kernel parses while a notebook opens (fluxion_kernel_host --preload): the headers a
/// notebook's first cell includes, so that including them again there costs nothing. Declarations only: the
/// library itself is linked into the kernel.
#pragma once
#include <chrono>
#include <cmath>
#include <iomanip>
#include <iostream>
#include <Eigen/Dense>
#include <fluxion/fluxion.hpp>
#include <fluxion/display.hpp>
#include <xcpp/xdisplay.hpp>
