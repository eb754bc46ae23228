/// cholesky, triangular_solve, cho_solve (issue 31).
#pragma once
#include "fluxion/tensor.hpp"
