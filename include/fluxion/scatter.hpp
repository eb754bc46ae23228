/// general gather/scatter, take/put_along_axis, segment_sum, einsum (issue 31).
#pragma once
#include "fluxion/tensor.hpp"
