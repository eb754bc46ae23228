// fx::distributed: the process-group registry (axis names to transports), init/finalize and groups.
// TEMPORARY (lead's branch): only transport_for_axis with nothing registered; the MPI helper's file replaces it.
#include "backends/distributed/transport.hpp"
#include "fluxion/errors.hpp"

namespace fluxion::distributed_detail {

Transport& transport_for_axis(const std::string& name, const char* op) {
  detail::fail<Error>(op, "axis name '", name, "' is not bound: no enclosing fx::vmap(f, ..., fx::axis_name(\"", name,
                      "\")) and no process group registered under it. Bind it with such a vmap, or call ",
                      "fx::distributed::init() (or new_group) under that name.");
}

}  // namespace fluxion::distributed_detail
