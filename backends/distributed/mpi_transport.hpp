/// The MPI transport: one process group over its own communicator. Every call first passes the
/// cross-rank check (mpi_check.cpp: all ranks make the same call, or all throw the same error),
/// then moves the payload with a nonblocking MPI collective polled against the deadline, so a rank
/// that never arrives is an error after timeout() seconds, never a hang.
#pragma once
#include <mpi.h>

#include <chrono>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "backends/distributed/transport.hpp"

namespace fluxion::distributed_detail {

struct NcclChannel;  // nccl_transport.cpp: the NCCL communicator of a group, made on first CUDA call

/// The lock around every MPI call of the engine: MPI is started with MPI_THREAD_SERIALIZED, so
/// calls from several threads (and several groups) must not overlap. Held only for single calls,
/// never while waiting: collectives of two groups on two threads progress together.
std::mutex& mpi_mutex();
/// Waits for `request` until `deadline`: a short spin of MPI_Test, then sleeps of 50 to 200 µs so
/// that ranks sharing oversubscribed cores do not starve each other. True when it completed; false
/// at the deadline (the request is still active). MPI errors throw fluxion::Error naming `op`.
/// Takes mpi_mutex() for each poll: call it without holding that lock.
bool wait_until(MPI_Request& request, std::chrono::steady_clock::time_point deadline, const char* op);
/// The same for several requests (all must complete; those done are MPI_REQUEST_NULL afterwards).
bool wait_all_until(std::vector<MPI_Request>& requests, std::chrono::steady_clock::time_point deadline, const char* op);
/// Gives up on an active request: MPI_Cancel (point-to-point only), then MPI_Request_free (takes mpi_mutex()).
void abandon(MPI_Request& request);
/// The deadline of a call starting now: timeout() seconds ahead.
std::chrono::steady_clock::time_point deadline_from_now();
/// "2 s", "0.5 s": timeout() for messages.
std::string timeout_text();
/// Throws fluxion::Error "[op] <call> failed: <MPI's error string>." unless `code` is MPI_SUCCESS.
void check_mpi(int code, const char* op, const char* call);
/// "f64[3,4]".
std::string shape_text(DType dtype, const std::vector<int64_t>& shape);

class MpiTransport final : public Transport {
 public:
  /// Takes ownership of `comm` (freed by the destructor). `name` is the axis name.
  MpiTransport(MPI_Comm comm, std::string name);
  ~MpiTransport() override;
  int rank() const override { return rank_; }
  int size() const override { return size_; }
  std::string describe() const override;
  void run(const CollectiveCall& call) override;

  MPI_Comm comm() const { return comm_; }
  const std::string& name() const { return name_; }

 private:
  // The cross-rank check of call number `sequence` (mpi_check.cpp); throws the verdict.
  void check_call(const CollectiveCall& call, uint64_t sequence);
  // Validates the local call (counts against the kind and the group size, dtypes, root).
  void validate(const CollectiveCall& call) const;
  // The payload on host memory: a nonblocking collective, polled until timeout().
  void run_host(const CollectiveCall& call, uint64_t sequence);
  // Marks the group unusable and throws `message` as fluxion::Error.
  [[noreturn]] void break_with(const std::string& message);

  MPI_Comm comm_ = MPI_COMM_NULL;
  std::string name_;
  int rank_ = 0;
  int size_ = 1;
  uint64_t sequence_ = 0;  // collectives run so far on this group (the next one is sequence_ + 1)
  std::string broken_;     // the error that made the group unusable, "" while usable
  // Small send buffers of abandoned checks: MPI may still read them after the call gave up.
  std::vector<std::unique_ptr<char[]>> parked_;
  NcclChannel* nccl_ = nullptr;
  std::mutex call_mutex_;  // one call at a time on this group, start to finish (calls keep their order)
  friend struct CheckProtocol;
};

/// The NCCL half: runs `call` on CUDA buffers over the group's NCCL communicator, made through `comm`
/// on first use. Implemented by nccl_transport.cpp, which is compiled into fluxion::cuda (so that
/// fluxion::mpi, linked by the core library, never needs CUDA) and registers itself here before main;
/// without it, a DeviceError says that this program has no NCCL.
void nccl_run(NcclChannel*& channel, MPI_Comm comm, int rank, int size, const CollectiveCall& call);
void nccl_close(NcclChannel* channel);

struct NcclHooks {
  void (*run)(NcclChannel*& channel, MPI_Comm comm, int rank, int size, const CollectiveCall& call) = nullptr;
  void (*close)(NcclChannel* channel) = nullptr;
};
/// Makes `hooks` (static storage) the NCCL half of this process.
void register_nccl(const NcclHooks& hooks);

}  // namespace fluxion::distributed_detail
