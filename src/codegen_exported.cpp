// emit_cpp of an fx::Exported: the C++ of its optimized Jaxpr.
#include "fluxion/codegen.hpp"
#include "fluxion/export.hpp"

namespace fluxion {

std::string emit_cpp(const Exported& exported, const std::string& name) { return emit_cpp(exported.jaxpr(), name); }

}  // namespace fluxion
