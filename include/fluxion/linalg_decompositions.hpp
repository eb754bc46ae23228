/// lu, qr, det, slogdet, matrix_power, expm (issue 31).
#pragma once
#include "fluxion/tensor.hpp"
