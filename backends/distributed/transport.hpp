/// The contract between the collective primitives' kernels and the engines that move bytes
/// between processes (MPI on host memory, NCCL on device memory). A kernel packs its operand into
/// one contiguous rank-major buffer, describes the call, and asks the transport of its axis name.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "fluxion/device.hpp"
#include "fluxion/dtype.hpp"

namespace fluxion::distributed_detail {

enum class CollectiveKind : int32_t { all_reduce = 1, all_gather, reduce_scatter, all_to_all, broadcast, barrier };
enum class ReduceOp : int32_t { sum = 1, max, min };

/// One collective call on one rank. Counts are elements of `dtype`; n is the group's size.
///   all_reduce:     send c, recv c (elementwise reduce over ranks)
///   all_gather:     send c, recv n*c (rank-major: block r is rank r's send)
///   reduce_scatter: send n*c (block r goes to rank r), recv c (the reduction of the blocks for this rank)
///   all_to_all:     send n*c (block r goes to rank r), recv n*c (block r came from rank r)
///   broadcast:      send c (read on `root` only), recv c (root's send, on every rank, root included)
///   barrier:        no data
/// `send` and `recv` never alias. Every rank of the group must make the same call (kind, reduce,
/// dtype, counts, shape, root) in the same order; the transport checks that and throws a
/// fluxion::Error naming `op` and the ranks that differ or did not arrive.
struct CollectiveCall {
  const char* op = "";  // the primitive's name, for messages ("all_sum")
  CollectiveKind kind = CollectiveKind::barrier;
  ReduceOp reduce = ReduceOp::sum;
  DType dtype = DType::f32;
  std::vector<int64_t> shape;  // this rank's operand shape, compared across ranks and quoted in errors
  int64_t root = 0;
  const void* send = nullptr;
  void* recv = nullptr;
  int64_t send_count = 0;
  int64_t recv_count = 0;
  Device device = Device::cpu();  // where send and recv live
};

/// A group of processes that can run collectives. Implementations serialize calls (a mutex), so a
/// kernel may call from any thread; calls complete before returning (the recv buffer is filled).
class Transport {
 public:
  virtual ~Transport() = default;
  virtual int rank() const = 0;  // this process's rank within the group
  virtual int size() const = 0;
  virtual std::string describe() const = 0;  // "MPI group 'world' of 2 ranks", for messages
  virtual void run(const CollectiveCall& call) = 0;
};

/// The transport that axis `name` names outside vmap: the process group registered under that
/// name (fx::distributed::init registers the world group). Throws fluxion::Error naming `op`,
/// the name, and how to bind it (an enclosing fx::vmap(..., fx::axis_name(name)) or a process group),
/// when nothing is registered under it.
Transport& transport_for_axis(const std::string& name, const char* op);

}  // namespace fluxion::distributed_detail
