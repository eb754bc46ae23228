// MpiTransport::run: the local checks, the cross-rank check (mpi_check.cpp), and the payload as one
// nonblocking MPI collective polled against the deadline.
#include <atomic>
#include <climits>
#include <cstring>

#include "backends/distributed/engine.hpp"
#include "backends/distributed/mpi_transport.hpp"
#include "fluxion/errors.hpp"

namespace fluxion::distributed_detail {

namespace mpi_transport_detail {

// The MPI type of a dtype's elements. bool is one byte (0 or 1), moved as uint8: max and min are
// then "any" and "all"; a sum is rejected by validate.
inline MPI_Datatype mpi_type(DType dtype) {
  switch (dtype) {
    case DType::boolean: return MPI_UINT8_T;
    case DType::i32: return MPI_INT32_T;
    case DType::i64: return MPI_INT64_T;
    case DType::f32: return MPI_FLOAT;
    case DType::f64: return MPI_DOUBLE;
  }
  return MPI_DATATYPE_NULL;
}

inline MPI_Op mpi_op(ReduceOp reduce) {
  switch (reduce) {
    case ReduceOp::sum: return MPI_SUM;
    case ReduceOp::max: return MPI_MAX;
    case ReduceOp::min: return MPI_MIN;
  }
  return MPI_OP_NULL;
}

inline bool reduces(CollectiveKind kind) {
  return kind == CollectiveKind::all_reduce || kind == CollectiveKind::reduce_scatter;
}

// A non-null pointer for MPI when a buffer is empty.
inline const void* or_dummy(const void* p) {
  static const int64_t dummy = 0;
  return p ? p : &dummy;
}

}  // namespace mpi_transport_detail

void MpiTransport::validate(const CollectiveCall& call) const {
  namespace td = mpi_transport_detail;
  const char* op = call.op;
  const int64_t n = size_;
  int64_t send = call.send_count, recv = call.recv_count;
  if (td::mpi_type(call.dtype) == MPI_DATATYPE_NULL) detail::fail<DTypeError>(op, "unknown dtype.");
  if (td::reduces(call.kind) && call.dtype == DType::boolean && call.reduce == ReduceOp::sum) {
    detail::fail<DTypeError>(op, "cannot sum bool tensors across ranks. Convert to i32 first (max and min of ",
                             "bool work: they are 'any' and 'all').");
  }
  if (td::reduces(call.kind) && td::mpi_op(call.reduce) == MPI_OP_NULL) detail::fail<Error>(op, "unknown reduction.");
  bool ok = true;
  switch (call.kind) {
    case CollectiveKind::all_reduce:
    case CollectiveKind::broadcast: ok = send == recv; break;
    case CollectiveKind::all_gather: ok = recv == n * send; break;
    case CollectiveKind::reduce_scatter: ok = send == n * recv; break;
    case CollectiveKind::all_to_all: ok = send == recv && send % n == 0; break;
    case CollectiveKind::barrier: ok = send == 0 && recv == 0; break;
    default: detail::fail<Error>(op, "unknown collective kind ", static_cast<int>(call.kind), ".");
  }
  if (!ok || send < 0 || recv < 0) {
    detail::fail<Error>(op, "send count ", send, " and receive count ", recv, " do not fit this collective on ",
                        describe(), " (see transport.hpp for each kind's counts).");
  }
  if ((send > 0 && !call.send) || (recv > 0 && !call.recv)) {
    detail::fail<Error>(op, "a null buffer for ", send, " elements sent and ", recv, " received.");
  }
  if (send > INT_MAX || recv > INT_MAX) {
    detail::fail<Error>(op, "a collective of ", std::max(send, recv), " elements is more than MPI's int counts ",
                        "(2^31 - 1). Split the tensor into smaller collectives.");
  }
  if (call.kind == CollectiveKind::broadcast && (call.root < 0 || call.root >= n)) {
    detail::fail<Error>(op, "root ", call.root, " is not a rank of ", describe(), ".");
  }
}

[[noreturn]] void MpiTransport::break_with(const std::string& message) {
  broken_ = message;
  throw Error(message);
}

void MpiTransport::run(const CollectiveCall& call) {
  std::lock_guard<std::mutex> lock(call_mutex_);
  if (!broken_.empty()) {
    detail::fail<Error>(call.op, "group '", name_, "' is unusable after an earlier collective error: ", broken_,
                        " Call fx::distributed::finalize() on every rank and restart the processes.");
  }
  // The sequence number advances before the local checks, so a rank that throws here is one call
  // ahead of the ranks that did not: the next meeting shows the skip as a mismatch.
  const uint64_t sequence = ++sequence_;
  validate(call);
  if (call_checks_enabled() && size_ > 1) check_call(call, sequence);
  if (call.device.is_cuda() && call.kind != CollectiveKind::barrier) {
    try {
      nccl_run(nccl_, comm_, rank_, size_, call);
    } catch (const DeviceError&) {
      throw;  // no NCCL in this build, or a bad device: the group itself is fine
    } catch (const Error& e) { break_with(e.what()); }
    return;
  }
  run_host(call, sequence);
}

void MpiTransport::run_host(const CollectiveCall& call, uint64_t sequence) {
  namespace td = mpi_transport_detail;
  const char* op = call.op;
  const MPI_Datatype type = td::mpi_type(call.dtype);
  const int send = static_cast<int>(call.send_count), recv = static_cast<int>(call.recv_count);
  const void* in = td::or_dummy(call.send);
  void* out = call.recv ? call.recv : const_cast<void*>(td::or_dummy(nullptr));
  MPI_Request request = MPI_REQUEST_NULL;
  int code = MPI_SUCCESS;
  std::unique_lock<std::mutex> lock(mpi_mutex());
  switch (call.kind) {
    case CollectiveKind::all_reduce:
      code = MPI_Iallreduce(in, out, send, type, td::mpi_op(call.reduce), comm_, &request);
      break;
    case CollectiveKind::all_gather: code = MPI_Iallgather(in, send, type, out, send, type, comm_, &request); break;
    case CollectiveKind::reduce_scatter:
      code = MPI_Ireduce_scatter_block(in, out, recv, type, td::mpi_op(call.reduce), comm_, &request);
      break;
    case CollectiveKind::all_to_all:
      code = MPI_Ialltoall(in, send / size_, type, out, recv / size_, type, comm_, &request);
      break;
    case CollectiveKind::broadcast:
      if (rank_ == call.root && send > 0) {
        int width = 0;
        MPI_Type_size(type, &width);
        std::memcpy(out, in, static_cast<size_t>(send) * static_cast<size_t>(width));
      }
      code = MPI_Ibcast(out, recv, type, static_cast<int>(call.root), comm_, &request);
      break;
    case CollectiveKind::barrier: code = MPI_Ibarrier(comm_, &request); break;
  }
  lock.unlock();
  if (code != MPI_SUCCESS) {
    try {
      check_mpi(code, op, "the MPI collective");
    } catch (const Error& e) { break_with(e.what()); }
  }
  if (!wait_until(request, deadline_from_now(), op)) {
    // A nonblocking collective cannot be cancelled: the request stays with MPI, and the group is
    // unusable from here on.
    std::string why = call_checks_enabled()
                          ? "a rank stopped (threw or exited) during the call"
                          : "another rank did not reach it (it may have thrown, exited, or skipped or changed the "
                            "call: the cross-rank check that names it is off, FLUXION_DISTRIBUTED_CHECKS=0)";
    break_with(detail::cat("[", op, "] collective #", sequence, " did not complete within ", timeout_text(),
                           " on rank ", rank_, " (group '", name_, "'): ", why, "."));
  }
}

namespace nccl_hooks_detail {
std::atomic<const NcclHooks*> registered{nullptr};  // constant-initialised: safe from static initializers
}  // namespace nccl_hooks_detail

void register_nccl(const NcclHooks& hooks) { nccl_hooks_detail::registered.store(&hooks, std::memory_order_release); }

void nccl_run(NcclChannel*& channel, MPI_Comm comm, int rank, int size, const CollectiveCall& call) {
  if (const NcclHooks* hooks = nccl_hooks_detail::registered.load(std::memory_order_acquire))
    return hooks->run(channel, comm, rank, size, call);
  detail::fail<DeviceError>(call.op, "collectives on CUDA tensors need NCCL, and this program has none ",
                            "(Fluxion built with CUDA and NCCL from the CUDA toolkit, and fluxion::cuda linked). ",
                            "Move the tensor to the CPU (fx::device_put) or rebuild with CUDA and NCCL.");
}

void nccl_close(NcclChannel* channel) {
  if (const NcclHooks* hooks = nccl_hooks_detail::registered.load(std::memory_order_acquire)) hooks->close(channel);
}

}  // namespace fluxion::distributed_detail
