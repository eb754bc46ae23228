/// The internal boundary between fx::distributed (src/distributed.cpp: registry, settings, groups;
/// no mpi.h) and the engine that talks to other processes (fluxion::mpi, backends/distributed/mpi_*.cpp).
/// Without MPI the engine is a stub in src/distributed.cpp whose init throws saying how to get MPI.
#pragma once
#include <memory>
#include <string>
#include <vector>

#include "backends/distributed/transport.hpp"

namespace fluxion::distributed_detail {

/// True when the MPI engine is linked in (fluxion::mpi), false for the stub.
bool engine_compiled();
/// Starts MPI (MPI_Init_thread, unless the program initialized MPI itself) and returns the world
/// transport over a duplicate of MPI_COMM_WORLD named `axis_name`. Throws fluxion::Error on failure.
std::shared_ptr<Transport> engine_init(const std::string& axis_name);
/// A transport over `world_ranks` (in that rank order) named `axis_name`, made from `world`; null on
/// ranks that are not members. Every world rank calls it with the same arguments (checked by the caller).
std::shared_ptr<Transport> engine_new_group(Transport& world, const std::vector<int>& world_ranks,
                                            const std::string& axis_name);
/// Ends MPI (MPI_Finalize when engine_init started it). Every transport must be destroyed before.
void engine_finalize();

/// The axis-name registry that transport_for_axis reads. register_axis throws when `name` is taken.
/// Also the seam for in-process transports (tests, other engines).
void register_axis(const std::string& name, std::shared_ptr<Transport> transport);
void unregister_axis(const std::string& name);
bool axis_registered(const std::string& name);

/// FLUXION_DISTRIBUTED_CHECKS: false when set to 0 (then the cross-rank check of every call is
/// skipped, only the payload runs; a missing rank is still a timeout error). Read once.
bool call_checks_enabled();

}  // namespace fluxion::distributed_detail
