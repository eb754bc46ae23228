/// Processes: start the process group of an mpirun/srun launch, query ranks, make groups. A
/// collective (fx::all_sum and the others of collectives.hpp) names an axis; outside vmap that name
/// refers to the process group registered under it (init registers the world group).
#pragma once
#include <string>
#include <vector>

namespace fluxion::distributed {

/// How processes talk: MPI (Open MPI from Debian's packages; NCCL for CUDA tensors where the CUDA
/// backend is built too). `automatic` picks MPI when the process was launched by mpirun or srun.
enum class Backend { automatic, mpi };

/// True when this build can run collectives across processes (compiled with MPI).
bool compiled();
/// True when the environment says this process was started by mpirun/mpiexec (Open MPI, MPICH) or
/// srun, whether or not init() has run.
bool launched();
/// Starts the world group (all processes of the launch) and registers it under `axis_name`.
/// Throws fluxion::Error when the build has no MPI or (automatic) the process was not launched by
/// mpirun/srun, saying how to launch or build: a program that expected N processes must not compute
/// silently as one. Backend::mpi outside a launch runs a world of one process (an MPI singleton).
/// Calling it twice is an error; after finalize() it cannot be called again (an MPI rule). Every
/// collective checks that all ranks make the same call (FLUXION_DISTRIBUTED_CHECKS=0 skips that
/// check) and waits at most timeout() for the others: an error naming the ranks, never a hang.
void init(Backend backend = Backend::automatic, const std::string& axis_name = "world");
bool initialized();
/// Ends the process group (every process must call it before exiting, also after an error; MPI_Finalize,
/// unless the program started MPI itself). Safe to call when not initialized, and twice.
void finalize();
/// This process's rank in the world group and the world's size (0 and 1 before init()).
int rank();
int size();

/// A set of ranks that runs collectives together, under its own axis name.
class Group {
 public:
  Group() = default;
  Group(std::string axis_name, std::vector<int> world_ranks, int rank)
      : axis_name_(std::move(axis_name)), ranks_(std::move(world_ranks)), rank_(rank) {}
  const std::string& axis_name() const { return axis_name_; }
  /// World ranks of the members, in group-rank order.
  const std::vector<int>& ranks() const { return ranks_; }
  /// This process's rank within the group, or -1 when it is not a member.
  int rank() const { return rank_; }
  int size() const { return static_cast<int>(ranks_.size()); }
  bool contains_me() const { return rank_ >= 0; }

 private:
  std::string axis_name_;
  std::vector<int> ranks_;
  int rank_ = -1;
};

/// The world group (throws before init()).
Group world();
/// Makes a group of the given world ranks, registered under `axis_name` on its members. Every world
/// rank must call it with the same arguments (a collective); non-members get a Group with rank -1.
Group new_group(const std::vector<int>& world_ranks, const std::string& axis_name);
/// Waits until every member of `group` reaches it (non-members return at once).
void barrier(const Group& group);
void barrier();

/// How long a collective waits for the other ranks before it throws an error naming those that did
/// not arrive. Default 60 s, or FLUXION_DISTRIBUTED_TIMEOUT (seconds) when set.
void set_timeout(double seconds);
double timeout();

}  // namespace fluxion::distributed
