/// eigh, svd (issue 31).
#pragma once
#include "fluxion/tensor.hpp"
