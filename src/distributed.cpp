// fx::distributed: the process-group registry (axis names to transports), init/finalize and groups.
// Everything here compiles without mpi.h; the MPI engine (fluxion::mpi) is reached through
// backends/distributed/engine.hpp, and a stub stands in for it when Fluxion is built without MPI.
#include <atomic>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <vector>

#include "backends/distributed/engine.hpp"
#include "backends/distributed/transport.hpp"
#include "fluxion/distributed.hpp"
#include "fluxion/errors.hpp"

namespace fluxion::distributed_detail {

namespace registry_detail {

struct State {
  std::mutex mutex;
  std::map<std::string, std::shared_ptr<Transport>> axes;
  std::shared_ptr<Transport> world;  // also in `axes`, under world_name
  std::string world_name;
  std::vector<int> world_ranks;  // 0..size-1, for world()
  bool finalized = false;
  double timeout_s = -1;  // < 0: not set yet (env or the 60 s default)
};

inline State& state() {
  static State s;
  return s;
}

// The value of an environment variable, or "" when unset.
inline std::string env(const char* name) {
  const char* v = std::getenv(name);
  return v ? std::string(v) : std::string();
}

// FNV-1a over the bytes of `data`, folded into `h`: the digest new_group compares across ranks.
inline uint64_t fnv1a(uint64_t h, const void* data, size_t n) {
  const auto* p = static_cast<const unsigned char*>(data);
  for (size_t i = 0; i < n; ++i) h = (h ^ p[i]) * 1099511628211ull;
  return h;
}

}  // namespace registry_detail

void register_axis(const std::string& name, std::shared_ptr<Transport> transport) {
  auto& s = registry_detail::state();
  std::lock_guard<std::mutex> lock(s.mutex);
  if (s.axes.count(name)) {
    detail::fail<Error>("distributed", "the axis name '", name, "' is already registered to ", s.axes[name]->describe(),
                        ". Choose another name for the new group.");
  }
  s.axes[name] = std::move(transport);
}

void unregister_axis(const std::string& name) {
  auto& s = registry_detail::state();
  std::lock_guard<std::mutex> lock(s.mutex);
  s.axes.erase(name);
}

bool axis_registered(const std::string& name) {
  auto& s = registry_detail::state();
  std::lock_guard<std::mutex> lock(s.mutex);
  return s.axes.count(name) > 0;
}

bool call_checks_enabled() {
  static const bool enabled = registry_detail::env("FLUXION_DISTRIBUTED_CHECKS") != "0";
  return enabled;
}

Transport& transport_for_axis(const std::string& name, const char* op) {
  auto& s = registry_detail::state();
  std::lock_guard<std::mutex> lock(s.mutex);
  auto it = s.axes.find(name);
  if (it == s.axes.end()) {
    std::string known;
    for (const auto& [axis, transport] : s.axes) known += (known.empty() ? "" : ", ") + ("'" + axis + "'");
    // The wording the collectives' tests match (tests/samples_collectives.cpp, tests/test_collectives.cpp).
    detail::fail<AxisError>(op, "axis name '", name, "' is not bound: no enclosing fx::vmap(f, ..., fx::axis_name(\"",
                            name, "\")) and no process group registered under it (",
                            known.empty() ? std::string("none is registered") : "registered: " + known,
                            "). Bind it with such a vmap, or call fx::distributed::init() (or new_group) under that ",
                            "name.");
  }
  return *it->second;
}

#ifndef FLUXION_WITH_MPI
// The engine of a build without MPI (FLUXION_MPI=OFF, or AUTO where MPI was not found; or header-only
// mode without linking fluxion::mpi): nothing can start.
bool engine_compiled() { return false; }
std::shared_ptr<Transport> engine_init(const std::string&) {
  detail::fail<Error>("distributed.init", "this build of Fluxion has no MPI, so it cannot run collectives across ",
                      "processes. Install Open MPI (apt-get install libopenmpi-dev openmpi-bin) and reconfigure ",
                      "(FLUXION_MPI=AUTO finds it; FLUXION_MPI=ON insists), or link fluxion::mpi in header-only mode.");
}
std::shared_ptr<Transport> engine_new_group(Transport&, const std::vector<int>&, const std::string&) {
  detail::fail<Error>("distributed.new_group", "this build of Fluxion has no MPI.");
}
void engine_finalize() {}
#endif  // FLUXION_WITH_MPI

}  // namespace fluxion::distributed_detail

namespace fluxion::distributed {

namespace dd = fluxion::distributed_detail;

bool compiled() { return dd::engine_compiled(); }

bool launched() {
  using dd::registry_detail::env;
  // Open MPI's mpirun; MPICH/Intel MPI (hydra) and PMI-based launchers; PMIx (Open MPI 5, srun
  // --mpi=pmix); srun itself (a job step: a batch script alone has no SLURM_STEP_NUM_TASKS).
  for (const char* var : {"OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "PMI_RANK", "PMIX_RANK", "MPI_LOCALNRANKS"}) {
    if (!env(var).empty()) return true;
  }
  return !env("SLURM_STEP_NUM_TASKS").empty() && !env("SLURM_PROCID").empty();
}

void init(Backend backend, const std::string& axis_name) {
  auto& s = dd::registry_detail::state();
  {
    std::lock_guard<std::mutex> lock(s.mutex);
    if (s.world) {
      detail::fail<Error>("distributed.init", "the process group is already initialized (axis '", s.world_name,
                          "'). Call init() once per process.");
    }
    if (s.finalized) {
      detail::fail<Error>("distributed.init", "finalize() has already ended the process group, and MPI cannot ",
                          "start twice in one process. Call init() once, at the start of the program.");
    }
  }
  if (!dd::engine_compiled()) dd::engine_init(axis_name);  // throws the "no MPI in this build" error
  if (backend == Backend::automatic && !launched()) {
    detail::fail<Error>("distributed.init", "this process was not started by mpirun/mpiexec or srun (none of ",
                        "OMPI_COMM_WORLD_SIZE, PMI_SIZE, PMIX_RANK, SLURM_STEP_NUM_TASKS is set), so there is no ",
                        "process group to join. Launch it with `mpirun -np 2 ./program`, or call ",
                        "init(fx::distributed::Backend::mpi) to run as a world of one process.");
  }
  std::shared_ptr<dd::Transport> world = dd::engine_init(axis_name);
  dd::register_axis(axis_name, world);
  std::lock_guard<std::mutex> lock(s.mutex);
  s.world = world;
  s.world_name = axis_name;
  s.world_ranks.clear();
  for (int r = 0; r < world->size(); ++r) s.world_ranks.push_back(r);
}

bool initialized() {
  auto& s = dd::registry_detail::state();
  std::lock_guard<std::mutex> lock(s.mutex);
  return s.world != nullptr;
}

void finalize() {
  auto& s = dd::registry_detail::state();
  std::map<std::string, std::shared_ptr<dd::Transport>> axes;
  {
    std::lock_guard<std::mutex> lock(s.mutex);
    if (!s.world) return;  // never initialized, or finalized already
    // A transport of an in-process engine registered by hand is dropped too: the axis names die
    // with the process group.
    axes.swap(s.axes);
    s.world.reset();
    s.world_ranks.clear();
    s.finalized = true;
  }
  // Every transport (communicator) goes before MPI_Finalize; destroyed outside the registry's lock,
  // which a collective in flight may need (timeout()) while it holds the engine's lock.
  axes.clear();
  dd::engine_finalize();
}

int rank() {
  auto& s = dd::registry_detail::state();
  std::lock_guard<std::mutex> lock(s.mutex);
  return s.world ? s.world->rank() : 0;
}

int size() {
  auto& s = dd::registry_detail::state();
  std::lock_guard<std::mutex> lock(s.mutex);
  return s.world ? s.world->size() : 1;
}

Group world() {
  auto& s = dd::registry_detail::state();
  std::lock_guard<std::mutex> lock(s.mutex);
  if (!s.world) {
    detail::fail<Error>("distributed.world", "the process group is not initialized. Call ",
                        "fx::distributed::init() first.");
  }
  return Group(s.world_name, s.world_ranks, s.world->rank());
}

Group new_group(const std::vector<int>& world_ranks, const std::string& axis_name) {
  const char* op = "distributed.new_group";
  auto& s = dd::registry_detail::state();
  std::shared_ptr<dd::Transport> world_transport;
  {
    std::lock_guard<std::mutex> lock(s.mutex);
    world_transport = s.world;
  }
  if (!world_transport) detail::fail<Error>(op, "the process group is not initialized. Call init() first.");
  const int n = world_transport->size();
  if (world_ranks.empty()) detail::fail<Error>(op, "a group needs at least one rank, got none.");
  std::set<int> seen;
  for (int r : world_ranks) {
    if (r < 0 || r >= n) {
      detail::fail<Error>(op, "rank ", r, " is not a rank of the world (", n, " ranks: 0..", n - 1, ").");
    }
    if (!seen.insert(r).second) detail::fail<Error>(op, "rank ", r, " is listed twice in the group's ranks.");
  }
  // Every rank must pass the same ranks and name, and the name must be free everywhere: compared
  // through an all_gather of {digest, name taken here} on the world (checked, with the timeout), so
  // that all ranks throw the same error instead of making different communicators.
  uint64_t digest = 1469598103934665603ull;
  digest = dd::registry_detail::fnv1a(digest, world_ranks.data(), world_ranks.size() * sizeof(int));
  digest = dd::registry_detail::fnv1a(digest, axis_name.data(), axis_name.size());
  int64_t mine[2] = {static_cast<int64_t>(digest), dd::axis_registered(axis_name) ? 1 : 0};
  std::vector<int64_t> all(2 * static_cast<size_t>(n));
  dd::CollectiveCall call;
  call.op = op;
  call.kind = dd::CollectiveKind::all_gather;
  call.dtype = DType::i64;
  call.shape = {2};
  call.send = mine;
  call.recv = all.data();
  call.send_count = 2;
  call.recv_count = 2 * n;
  world_transport->run(call);
  for (int r = 0; r < n; ++r) {
    if (all[2 * r] != all[0]) {
      detail::fail<Error>(op, "ranks disagree on the new group: rank ", r,
                          " passed other ranks or another axis name than rank 0. Every world rank must call ",
                          "new_group with the same arguments.");
    }
  }
  for (int r = 0; r < n; ++r) {
    if (all[2 * r + 1] != 0) {
      detail::fail<Error>(op, "the axis name '", axis_name, "' is already registered on rank ", r,
                          ". Choose another name for the new group.");
    }
  }
  std::shared_ptr<dd::Transport> group = dd::engine_new_group(*world_transport, world_ranks, axis_name);
  if (!group) return Group(axis_name, world_ranks, -1);
  dd::register_axis(axis_name, group);
  return Group(axis_name, world_ranks, group->rank());
}

void barrier(const Group& group) {
  if (!group.contains_me()) return;  // only members take part (an MPI group's barrier)
  dd::CollectiveCall call;
  call.op = "barrier";
  call.kind = dd::CollectiveKind::barrier;
  dd::transport_for_axis(group.axis_name(), "barrier").run(call);
}

void barrier() { barrier(world()); }

void set_timeout(double seconds) {
  if (!(seconds > 0)) {
    detail::fail<Error>("distributed.set_timeout", "the timeout must be a positive number of seconds, got ", seconds,
                        ".");
  }
  auto& s = dd::registry_detail::state();
  std::lock_guard<std::mutex> lock(s.mutex);
  s.timeout_s = seconds;
}

double timeout() {
  auto& s = dd::registry_detail::state();
  std::lock_guard<std::mutex> lock(s.mutex);
  if (s.timeout_s < 0) {
    s.timeout_s = 60;
    std::string text = dd::registry_detail::env("FLUXION_DISTRIBUTED_TIMEOUT");
    if (!text.empty()) {
      char* end = nullptr;
      double v = std::strtod(text.c_str(), &end);
      if (end == text.c_str() || *end != '\0' || !(v > 0)) {
        s.timeout_s = -1;
        detail::fail<Error>("distributed", "FLUXION_DISTRIBUTED_TIMEOUT='", text,
                            "' is not a positive number of seconds. Set it to, e.g., 60.");
      }
      s.timeout_s = v;
    }
  }
  return s.timeout_s;
}

}  // namespace fluxion::distributed
