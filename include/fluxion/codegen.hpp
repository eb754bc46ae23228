/// emit_cpp: a Jaxpr as one dependency-free C++17 source file (plain loops) to deploy anywhere.
#pragma once
#include <string>
#include <vector>

#include "fluxion/jaxpr.hpp"

namespace fluxion {

/// Writes one self-contained C++17 source file computing `jaxpr` (no Fluxion, no Eigen: only
/// <cmath>, <cstdint>, <cstring>, <algorithm>, <limits>), the way CasADi and CppADCodeGen deploy
/// derivatives into embedded and real-time code. The file defines, with C linkage:
///   `size_t name_workspace_size()`   bytes of scratch the function needs for its intermediates;
///   `void name_with_workspace(const T0* in0, ..., U0* out0, ..., void* workspace)` which never
///                                    allocates (workspace: name_workspace_size() bytes, 64-aligned);
///   `void name(const T0* in0, ..., U0* out0, ...)` which allocates that workspace once per call.
/// Pointers are row-major, contiguous buffers typed by each aval's dtype (bool, int32_t,
/// int64_t, float, double); outputs may not alias inputs. Elementwise formulas are the library's
/// (primitives/scalar_functions.hpp), so results match fx::jit's bit for bit where the evaluation
/// order is the same; constants are embedded exactly (hex floats). Throws fluxion::Error at emit
/// time for a primitive the emitter does not support (the message lists the supported ones) or a
/// `name` that is not a C identifier.
std::string emit_cpp(const Jaxpr& jaxpr, const std::string& name);

class Exported;
/// emit_cpp of an exported (or loaded) function's Jaxpr (fluxion/export.hpp); the entry's arguments are its
/// flattened input leaves, in order.
std::string emit_cpp(const Exported& exported, const std::string& name);

/// The primitive names emit_cpp supports, sorted.
std::vector<std::string> emit_cpp_supported_primitives();

}  // namespace fluxion
