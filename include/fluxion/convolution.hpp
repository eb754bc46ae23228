/// conv_general_dilated, conv, conv_transpose (issue 31).
#pragma once
#include "fluxion/tensor.hpp"
