/// threefry2x32 keys and distributions (fx::random::) (issue 31).
#pragma once
#include "fluxion/tensor.hpp"
