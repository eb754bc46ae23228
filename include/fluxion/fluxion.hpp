/// Fluxion: composable function transformations for C++ — the umbrella header.
///
/// Link the CMake target fluxion::fluxion, or, with nothing but include paths (notebooks, quick
/// experiments), `#define FLUXION_IMPLEMENTATION` before including this header in exactly one
/// translation unit (or the first notebook cell) to compile the implementation into it. Where the library is
/// already linked into the process that compiles the code (Fluxion's Jupyter kernel, jupyter/, predefines
/// FLUXION_IMPLEMENTATION_LINKED), FLUXION_IMPLEMENTATION is ignored.
#pragma once

#include "fluxion/checkpoint.hpp"
#include "fluxion/codegen.hpp"
#include "fluxion/control_flow.hpp"
#include "fluxion/cuda.hpp"
#include "fluxion/custom_rules.hpp"
#include "fluxion/device.hpp"
#include "fluxion/dtype.hpp"
#include "fluxion/eigen.hpp"
#include "fluxion/errors.hpp"
#include "fluxion/interpreter.hpp"
#include "fluxion/jaxpr.hpp"
#include "fluxion/jit.hpp"
#include "fluxion/lax.hpp"
#include "fluxion/ops.hpp"
#include "fluxion/primitive.hpp"
#include "fluxion/pytree.hpp"
#include "fluxion/shape.hpp"
#include "fluxion/tensor.hpp"
#include "fluxion/transforms.hpp"
#include "fluxion/linalg_triangular.hpp"
#include "fluxion/linalg_decompositions.hpp"
#include "fluxion/linalg_spectral.hpp"
#include "fluxion/random.hpp"
#include "fluxion/sort.hpp"
#include "fluxion/einsum.hpp"
#include "fluxion/scatter.hpp"
#include "fluxion/convolution.hpp"
#include "fluxion/collectives.hpp"
#include "fluxion/distributed.hpp"
#include "fluxion/data_parallel.hpp"
#include "fluxion/overlapped_gradients.hpp"
#include "fluxion/export.hpp"
#include "fluxion/amp.hpp"

#if defined(FLUXION_IMPLEMENTATION) && !defined(FLUXION_IMPLEMENTATION_LINKED)
#include "fluxion/implementation.hpp"
#endif
