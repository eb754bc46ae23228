// The cross-rank check that runs before every collective's payload: each rank sends a fixed-size
// description of its call to group rank 0, which compares them and answers every rank with one
// verdict. All ranks then throw the same fluxion::Error on a mismatch, and a rank that does not
// arrive within timeout() is named instead of hanging the others.
#include <algorithm>
#include <cstring>
#include <new>
#include <string>
#include <vector>

#include "backends/distributed/mpi_transport.hpp"
#include "fluxion/errors.hpp"

namespace fluxion::distributed_detail {

namespace mpi_check_detail {

// Reserved tags on the transport's own communicator (payloads are collectives and use no tags).
constexpr int kHeaderTag = 0x7f01;
constexpr int kVerdictTag = 0x7f02;
constexpr int kMaxDims = 12;
constexpr int kVerdictBytes = 1024;

// One rank's call. Plain bytes: every rank runs the same build, so the layout agrees.
struct CallHeader {
  uint64_t sequence = 0;
  int32_t kind = 0, reduce = 0, dtype = 0, device_kind = 0;
  int64_t root = 0, send_count = 0, recv_count = 0;
  int32_t ndim = 0, padding = 0;
  int64_t dims[kMaxDims] = {0};
  char op[48] = {0};
};

inline CallHeader header_of(const CollectiveCall& call, uint64_t sequence) {
  CallHeader h;
  h.sequence = sequence;
  h.kind = static_cast<int32_t>(call.kind);
  h.reduce = static_cast<int32_t>(call.reduce);
  h.dtype = static_cast<int32_t>(call.dtype);
  h.device_kind = static_cast<int32_t>(call.device.kind);
  h.root = call.kind == CollectiveKind::broadcast ? call.root : 0;
  h.send_count = call.send_count;
  h.recv_count = call.recv_count;
  h.ndim = static_cast<int32_t>(call.shape.size());
  for (int i = 0; i < std::min<int>(h.ndim, kMaxDims); ++i) h.dims[i] = call.shape[static_cast<size_t>(i)];
  std::strncpy(h.op, call.op ? call.op : "", sizeof(h.op) - 1);
  return h;
}

inline std::string header_shape(const CallHeader& h) {
  std::vector<int64_t> dims(h.dims, h.dims + std::min<int>(h.ndim, kMaxDims));
  std::string text = shape_text(static_cast<DType>(h.dtype), dims);
  if (h.ndim > kMaxDims) text.insert(text.size() - 1, ",...");
  return text;
}

inline const char* kind_name(int32_t kind) {
  static const char* names[] = {"?",          "all_reduce", "all_gather", "reduce_scatter",
                                "all_to_all", "broadcast",  "barrier"};
  return kind >= 1 && kind <= 6 ? names[kind] : "?";
}

inline const char* reduce_name(int32_t reduce) {
  static const char* names[] = {"?", "sum", "max", "min"};
  return reduce >= 1 && reduce <= 3 ? names[reduce] : "?";
}

// How rank r's call differs from rank 0's ("" when it is the same call).
inline std::string difference(const CallHeader& zero, const CallHeader& h, int r) {
  using detail::cat;
  if (h.sequence != zero.sequence) {
    return cat("rank 0 is at collective #", zero.sequence, ", rank ", r, " at #", h.sequence,
               " (a rank skipped a collective or made an extra one)");
  }
  if (std::strncmp(zero.op, h.op, sizeof(h.op)) != 0) {
    return cat("rank 0 called ", zero.op, " on ", header_shape(zero), ", rank ", r, " called ", h.op, " on ",
               header_shape(h));
  }
  if (h.kind != zero.kind || (h.reduce != zero.reduce && h.kind == zero.kind &&
                              (h.kind == static_cast<int32_t>(CollectiveKind::all_reduce) ||
                               h.kind == static_cast<int32_t>(CollectiveKind::reduce_scatter)))) {
    return cat("rank 0 runs ", kind_name(zero.kind), "(", reduce_name(zero.reduce), "), rank ", r, " runs ",
               kind_name(h.kind), "(", reduce_name(h.reduce), ")");
  }
  bool same_shape = h.dtype == zero.dtype && h.ndim == zero.ndim &&
                    std::equal(h.dims, h.dims + std::min<int>(h.ndim, kMaxDims), zero.dims);
  if (!same_shape || h.send_count != zero.send_count || h.recv_count != zero.recv_count) {
    return cat("rank 0 has ", header_shape(zero), ", rank ", r, " has ", header_shape(h));
  }
  if (h.root != zero.root) return cat("rank 0 has root ", zero.root, ", rank ", r, " has root ", h.root);
  if (h.device_kind != zero.device_kind) {
    return cat("rank 0 has its operand on ", zero.device_kind ? "cuda" : "cpu", ", rank ", r, " on ",
               h.device_kind ? "cuda" : "cpu");
  }
  return "";
}

}  // namespace mpi_check_detail

void MpiTransport::check_call(const CollectiveCall& call, uint64_t sequence) {
  namespace cd = mpi_check_detail;
  using detail::cat;
  const char* op = call.op;
  const auto deadline = deadline_from_now();
  const std::string where = cat("group '", name_, "', collective #", sequence);
  auto header = std::make_unique<char[]>(sizeof(cd::CallHeader));
  const cd::CallHeader mine = cd::header_of(call, sequence);
  std::memcpy(header.get(), &mine, sizeof(mine));

  if (rank_ != 0) {
    auto verdict = std::make_unique<char[]>(cd::kVerdictBytes);
    std::vector<MPI_Request> requests(2, MPI_REQUEST_NULL);
    {
      std::lock_guard<std::mutex> lock(mpi_mutex());
      check_mpi(MPI_Isend(header.get(), sizeof(cd::CallHeader), MPI_BYTE, 0, cd::kHeaderTag, comm_, &requests[0]), op,
                "MPI_Isend");
      check_mpi(MPI_Irecv(verdict.get(), cd::kVerdictBytes, MPI_BYTE, 0, cd::kVerdictTag, comm_, &requests[1]), op,
                "MPI_Irecv");
    }
    if (!wait_all_until(requests, deadline, op)) {
      // MPI may still read the header and write the verdict: both buffers stay alive with the group.
      for (MPI_Request& r : requests) abandon(r);
      parked_.push_back(std::move(header));
      parked_.push_back(std::move(verdict));
      break_with(cat("[", op, "] rank 0, which checks the calls of group '", name_, "', did not answer collective #",
                     sequence, " within ", timeout_text(), " (rank ", rank_,
                     " waited): rank 0 may have thrown, exited, or skipped the call, or waits for another rank. "
                     "Every rank must call the same collectives in the same order."));
    }
    verdict[cd::kVerdictBytes - 1] = '\0';
    if (verdict[0] != '\0') break_with(verdict.get());
    return;
  }

  // Rank 0: receive every other rank's header, compare, answer those that arrived. The headers land
  // in a heap inbox (zeroed: sequence 0 means "not arrived") that is parked if a receive is abandoned.
  const size_t n = static_cast<size_t>(size_);
  auto inbox_bytes = std::make_unique<char[]>(n * sizeof(cd::CallHeader));
  auto* theirs = reinterpret_cast<cd::CallHeader*>(inbox_bytes.get());
  for (size_t r = 0; r < n; ++r) new (&theirs[r]) cd::CallHeader();  // all zero: sequence 0
  std::vector<MPI_Request> requests(n, MPI_REQUEST_NULL);
  for (size_t r = 1; r < n; ++r) {
    std::lock_guard<std::mutex> lock(mpi_mutex());
    check_mpi(MPI_Irecv(&theirs[r], sizeof(cd::CallHeader), MPI_BYTE, static_cast<int>(r), cd::kHeaderTag, comm_,
                        &requests[r]),
              op, "MPI_Irecv");
  }
  std::string verdict;
  if (!wait_all_until(requests, deadline, op)) {
    std::string missing;
    int count = 0;
    for (int r = 1; r < size_; ++r) {
      if (requests[static_cast<size_t>(r)] == MPI_REQUEST_NULL) continue;
      abandon(requests[static_cast<size_t>(r)]);
      missing += (count++ ? ", " : "") + std::to_string(r);
    }
    parked_.push_back(std::move(inbox_bytes));  // theirs stays valid: the parked buffer lives with the group
    verdict = cat("[", op, "] ", count == 1 ? "rank " : "ranks ", missing, " did not reach collective #", sequence,
                  " within ", timeout_text(), " (group '", name_, "'); ", count == 1 ? "it" : "they",
                  " may have thrown, exited, or skipped the call. Every rank must call the same collectives in "
                  "the same order.");
  } else {
    std::string differences;
    int shown = 0;
    for (int r = 1; r < size_; ++r) {
      std::string d = cd::difference(mine, theirs[r], r);
      if (d.empty()) continue;
      if (shown++ < 3) differences += (differences.empty() ? "" : "; ") + d;
    }
    if (shown > 3) differences += cat("; and ", shown - 3, " more ranks");
    if (!differences.empty()) {
      verdict = cat("[", op, "] ranks disagree on the call: ", differences, " (", where,
                    "). Every rank must call the same collectives with the same shapes in the same order.");
    }
  }
  if (verdict.size() >= static_cast<size_t>(cd::kVerdictBytes)) verdict.resize(cd::kVerdictBytes - 1);
  // One verdict buffer for all sends; it is parked (kept alive) when a send does not complete in time.
  auto answer = std::make_unique<char[]>(cd::kVerdictBytes);
  std::memset(answer.get(), 0, cd::kVerdictBytes);
  std::memcpy(answer.get(), verdict.data(), verdict.size());
  std::vector<MPI_Request> sends(static_cast<size_t>(size_), MPI_REQUEST_NULL);
  for (int r = 1; r < size_; ++r) {
    // A header that arrived has sequence >= 1; an abandoned receive left the zero of construction.
    if (theirs[r].sequence == 0) continue;
    std::lock_guard<std::mutex> lock(mpi_mutex());
    check_mpi(
        MPI_Isend(answer.get(), cd::kVerdictBytes, MPI_BYTE, r, cd::kVerdictTag, comm_, &sends[static_cast<size_t>(r)]),
        op, "MPI_Isend");
  }
  if (!wait_all_until(sends, deadline_from_now(), op)) {
    for (MPI_Request& r : sends) abandon(r);
    parked_.push_back(std::move(answer));
  }
  if (!verdict.empty()) break_with(verdict);
}

}  // namespace fluxion::distributed_detail
