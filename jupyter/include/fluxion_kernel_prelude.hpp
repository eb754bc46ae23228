/// What Fluxion's Jupyter kernel precompiles (jupyter/CMakeLists.txt, fluxion_kernel.pch): the headers a notebook's
/// first cell includes, so that including them again costs nothing.
#pragma once
#include <chrono>
#include <cmath>
#include <iomanip>
#include <iostream>
#include <Eigen/Dense>
#include <fluxion/fluxion.hpp>
#include <fluxion/display.hpp>
#include <xcpp/xdisplay.hpp>
