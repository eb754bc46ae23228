// The NCCL half of the MPI transport (compiled into fluxion::cuda when FLUXION_WITH_NCCL): collectives on CUDA tensors
// run over one NCCL communicator per group, bootstrapped through the group's MPI communicator on the
// first CUDA call, queued on the device's stream, and waited for against the deadline (a rank that
// stops mid-call is an error after timeout(), and the NCCL communicator is aborted, not a hang).
#include <cuda_runtime.h>
#include <nccl.h>

#include <chrono>
#include <thread>

#include "backends/cuda/stream_access.hpp"
#include "backends/distributed/mpi_transport.hpp"
#include "fluxion/errors.hpp"

namespace fluxion::distributed_detail {

struct NcclChannel {
  ncclComm_t comm = nullptr;
  int device = 0;  // the CUDA device the communicator was made on
  bool aborted = false;
};

namespace nccl_detail {

inline void check_nccl(ncclResult_t r, const char* op, const char* call) {
  if (r != ncclSuccess) detail::fail<Error>(op, call, " failed: ", ncclGetErrorString(r), ".");
}

inline void check_cuda(cudaError_t e, const char* op, const char* call) {
  if (e != cudaSuccess) detail::fail<DeviceError>(op, call, " failed: ", cudaGetErrorString(e), ".");
}

inline ncclDataType_t nccl_type(DType dtype) {
  switch (dtype) {
    case DType::boolean: return ncclUint8;
    case DType::i32: return ncclInt32;
    case DType::i64: return ncclInt64;
    case DType::f32: return ncclFloat32;
    case DType::f64: return ncclFloat64;
  }
  return ncclUint8;
}

inline size_t width(DType dtype) {
  switch (dtype) {
    case DType::boolean: return 1;
    case DType::i32:
    case DType::f32: return 4;
    case DType::i64:
    case DType::f64: return 8;
  }
  return 1;
}

inline ncclRedOp_t nccl_op(ReduceOp reduce) {
  return reduce == ReduceOp::max ? ncclMax : reduce == ReduceOp::min ? ncclMin : ncclSum;
}

// Makes cuda:device current for the scope, restoring the caller's device.
struct CurrentDevice {
  int previous = 0;
  CurrentDevice(int device, const char* op) {
    check_cuda(cudaGetDevice(&previous), op, "cudaGetDevice");
    check_cuda(cudaSetDevice(device), op, "cudaSetDevice");
  }
  ~CurrentDevice() { cudaSetDevice(previous); }
};

}  // namespace nccl_detail

void run_on_nccl(NcclChannel*& channel, MPI_Comm comm, int rank, int size, const CollectiveCall& call) {
  namespace nd = nccl_detail;
  const char* op = call.op;
  const int device = call.device.index;
  nd::CurrentDevice current(device, op);
  if (!channel) {
    // Every rank is here (the cross-rank check just ran, or the program keeps to the contract with
    // FLUXION_DISTRIBUTED_CHECKS=0): group rank 0 makes the id, MPI carries it to the others.
    ncclUniqueId id;
    if (rank == 0) nd::check_nccl(ncclGetUniqueId(&id), op, "ncclGetUniqueId");
    {
      std::lock_guard<std::mutex> lock(mpi_mutex());
      check_mpi(MPI_Bcast(&id, sizeof(id), MPI_BYTE, 0, comm), op, "MPI_Bcast of the NCCL id");
    }
    auto made = std::make_unique<NcclChannel>();
    made->device = device;
    nd::check_nccl(ncclCommInitRank(&made->comm, size, id, rank), op, "ncclCommInitRank");
    channel = made.release();
  }
  if (channel->aborted) detail::fail<Error>(op, "the group's NCCL communicator was aborted by an earlier error.");
  if (channel->device != device) {
    detail::fail<DeviceError>(op, "this group's NCCL communicator lives on cuda:", channel->device,
                              ", the operand is on cuda:", device, ". Keep a group's collectives on one device.");
  }
  auto stream = static_cast<cudaStream_t>(fluxion::cuda::stream_handle(device));
  const ncclDataType_t type = nd::nccl_type(call.dtype);
  const size_t bytes = nd::width(call.dtype);
  ncclComm_t c = channel->comm;
  switch (call.kind) {
    case CollectiveKind::all_reduce:
      nd::check_nccl(ncclAllReduce(call.send, call.recv, static_cast<size_t>(call.send_count), type,
                                   nd::nccl_op(call.reduce), c, stream),
                     op, "ncclAllReduce");
      break;
    case CollectiveKind::all_gather:
      nd::check_nccl(ncclAllGather(call.send, call.recv, static_cast<size_t>(call.send_count), type, c, stream), op,
                     "ncclAllGather");
      break;
    case CollectiveKind::reduce_scatter:
      nd::check_nccl(ncclReduceScatter(call.send, call.recv, static_cast<size_t>(call.recv_count), type,
                                       nd::nccl_op(call.reduce), c, stream),
                     op, "ncclReduceScatter");
      break;
    case CollectiveKind::broadcast:
      nd::check_nccl(ncclBroadcast(call.send, call.recv, static_cast<size_t>(call.recv_count), type,
                                   static_cast<int>(call.root), c, stream),
                     op, "ncclBroadcast");
      break;
    case CollectiveKind::all_to_all: {
      // Block q of send goes to rank q, block q of recv comes from rank q: one grouped send/recv pair per peer.
      const size_t block = static_cast<size_t>(call.send_count / size);
      nd::check_nccl(ncclGroupStart(), op, "ncclGroupStart");
      for (int q = 0; q < size; ++q) {
        const char* from = static_cast<const char*>(call.send) + q * block * bytes;
        char* to = static_cast<char*>(call.recv) + q * block * bytes;
        nd::check_nccl(ncclSend(from, block, type, q, c, stream), op, "ncclSend");
        nd::check_nccl(ncclRecv(to, block, type, q, c, stream), op, "ncclRecv");
      }
      nd::check_nccl(ncclGroupEnd(), op, "ncclGroupEnd");
      break;
    }
    case CollectiveKind::barrier: break;  // barriers run over MPI (MpiTransport::run)
  }
  // The call completes before returning (the transport's contract): poll the stream against the
  // deadline, watching NCCL's asynchronous errors (a peer that died), instead of blocking forever.
  const auto deadline = deadline_from_now();
  auto pause = std::chrono::microseconds(20);
  for (;;) {
    cudaError_t e = cudaStreamQuery(stream);
    if (e == cudaSuccess) return;
    if (e != cudaErrorNotReady) nd::check_cuda(e, op, "cudaStreamQuery");
    ncclResult_t async = ncclSuccess;
    nd::check_nccl(ncclCommGetAsyncError(c, &async), op, "ncclCommGetAsyncError");
    bool late = std::chrono::steady_clock::now() >= deadline;
    if (async != ncclSuccess || late) {
      ncclCommAbort(c);
      channel->aborted = true;
      if (async != ncclSuccess) nd::check_nccl(async, op, "the NCCL collective");
      detail::fail<Error>(op, "the NCCL collective did not complete within ", timeout_text(), " on rank ", rank,
                          ": a rank stopped (threw or exited) during the call.");
    }
    std::this_thread::sleep_for(pause);
    pause = std::min(pause * 2, std::chrono::microseconds(200));
  }
}

void close_nccl(NcclChannel* channel) {
  if (!channel) return;
  if (channel->comm && !channel->aborted) ncclCommDestroy(channel->comm);
  delete channel;
}

namespace nccl_detail {
// Registered with fluxion::mpi before main (mpi_transport.hpp); fluxion::cuda's link interface keeps
// this object with -u fluxion_nccl_transport_anchor (backends/distributed/CMakeLists.txt).
const NcclHooks hooks{&run_on_nccl, &close_nccl};
struct Registrar {
  Registrar() { register_nccl(hooks); }
};
const Registrar registrar;
}  // namespace nccl_detail

}  // namespace fluxion::distributed_detail

extern "C" const int fluxion_nccl_transport_anchor = 1;
