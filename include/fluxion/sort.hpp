/// sort, argsort, top_k, cumulative ops, associative_scan (issue 31).
#pragma once
#include "fluxion/tensor.hpp"
