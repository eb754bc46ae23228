// The MPI engine behind fx::distributed: starting and ending MPI, the world and group communicators,
// and the polling waits every collective goes through (a deadline instead of a blocking wait).
#include <algorithm>
#include <chrono>
#include <iomanip>
#include <sstream>
#include <thread>

#include "backends/distributed/engine.hpp"
#include "backends/distributed/mpi_transport.hpp"
#include "fluxion/distributed.hpp"
#include "fluxion/errors.hpp"

namespace fluxion::distributed_detail {

namespace mpi_engine_detail {
// True when engine_init called MPI_Init_thread (then engine_finalize calls MPI_Finalize); false when
// the program started MPI itself, which then also ends it.
inline bool started_mpi = false;
}  // namespace mpi_engine_detail

std::mutex& mpi_mutex() {
  // Never destroyed: transports held by static objects may still lock it at exit.
  static std::mutex* m = new std::mutex;
  return *m;
}

void check_mpi(int code, const char* op, const char* call) {
  if (code == MPI_SUCCESS) return;
  char text[MPI_MAX_ERROR_STRING] = {0};
  int length = 0;
  MPI_Error_string(code, text, &length);
  detail::fail<Error>(op, call, " failed: ", std::string(text, static_cast<size_t>(length)), ".");
}

std::string shape_text(DType dtype, const std::vector<int64_t>& shape) {
  static const char* names[] = {"bool", "i32", "i64", "f32", "f64"};
  int d = static_cast<int>(dtype);
  std::string out = d >= 0 && d < 5 ? names[d] : "?";
  out += "[";
  for (size_t i = 0; i < shape.size(); ++i) out += (i ? "," : "") + std::to_string(shape[i]);
  return out + "]";
}

std::chrono::steady_clock::time_point deadline_from_now() {
  auto span = std::chrono::duration<double>(fluxion::distributed::timeout());
  return std::chrono::steady_clock::now() + std::chrono::duration_cast<std::chrono::steady_clock::duration>(span);
}

std::string timeout_text() {
  std::ostringstream os;
  os << std::setprecision(3) << fluxion::distributed::timeout() << " s";
  return os.str();
}

bool wait_all_until(std::vector<MPI_Request>& requests, std::chrono::steady_clock::time_point deadline,
                    const char* op) {
  // Spin (yielding the core) for 200 µs first: the check's two messages and a small payload each take
  // microseconds on loopback, and a rank asleep when its peer needs it to progress a collective
  // costs a whole sleep per round (~550 µs per small all_reduce measured with sleeps from the first
  // miss). Then sleeps of 50 to 200 µs, so ranks on oversubscribed cores leave each other time to run.
  using clock = std::chrono::steady_clock;
  const auto spin_until = clock::now() + std::chrono::microseconds(200);
  auto pause = std::chrono::microseconds(50);
  for (;;) {
    bool all_done = true;
    {
      std::lock_guard<std::mutex> lock(mpi_mutex());
      for (MPI_Request& r : requests) {
        if (r == MPI_REQUEST_NULL) continue;
        int done = 0;
        check_mpi(MPI_Test(&r, &done, MPI_STATUS_IGNORE), op, "MPI_Test");
        all_done = all_done && done;
      }
    }
    if (all_done) return true;
    const auto now = clock::now();
    if (now >= deadline) return false;
    if (now < spin_until) {
      std::this_thread::yield();
    } else {
      std::this_thread::sleep_for(pause);
      pause = std::min(pause * 2, std::chrono::microseconds(200));
    }
  }
}

bool wait_until(MPI_Request& request, std::chrono::steady_clock::time_point deadline, const char* op) {
  std::vector<MPI_Request> one{request};
  bool done = wait_all_until(one, deadline, op);
  request = one[0];
  return done;
}

void abandon(MPI_Request& request) {
  if (request == MPI_REQUEST_NULL) return;
  std::lock_guard<std::mutex> lock(mpi_mutex());
  MPI_Cancel(&request);  // may fail for a send that already left; the free below still applies
  MPI_Request_free(&request);
  request = MPI_REQUEST_NULL;
}

MpiTransport::MpiTransport(MPI_Comm comm, std::string name) : comm_(comm), name_(std::move(name)) {
  // Errors come back as codes (check_mpi turns them into fluxion::Error) instead of aborting.
  MPI_Comm_set_errhandler(comm_, MPI_ERRORS_RETURN);
  MPI_Comm_rank(comm_, &rank_);
  MPI_Comm_size(comm_, &size_);
}

MpiTransport::~MpiTransport() {
  std::lock_guard<std::mutex> lock(mpi_mutex());
  if (nccl_) nccl_close(nccl_);
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (!finalized && comm_ != MPI_COMM_NULL) MPI_Comm_free(&comm_);
}

std::string MpiTransport::describe() const {
  return "MPI group '" + name_ + "' of " + std::to_string(size_) + (size_ == 1 ? " rank" : " ranks");
}

bool engine_compiled() { return true; }

std::shared_ptr<Transport> engine_init(const std::string& axis_name) {
  const char* op = "distributed.init";
  MPI_Comm comm = MPI_COMM_NULL;
  MPI_Request request = MPI_REQUEST_NULL;
  {
    std::lock_guard<std::mutex> lock(mpi_mutex());
    int initialized = 0, finalized = 0;
    MPI_Initialized(&initialized);
    MPI_Finalized(&finalized);
    if (finalized) {
      detail::fail<Error>(op, "MPI has been finalized in this process and cannot start again. Call init() once.");
    }
    if (!initialized) {
      int provided = 0;
      check_mpi(MPI_Init_thread(nullptr, nullptr, MPI_THREAD_SERIALIZED, &provided), op, "MPI_Init_thread");
      mpi_engine_detail::started_mpi = true;
    }
    // The world transport works on its own duplicate of MPI_COMM_WORLD, so that its messages never
    // meet the program's own MPI traffic. Nonblocking and polled: a rank that never calls init is an
    // error after timeout(), not a hang.
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    check_mpi(MPI_Comm_idup(MPI_COMM_WORLD, &comm, &request), op, "MPI_Comm_idup");
  }
  if (!wait_until(request, deadline_from_now(), op)) {
    detail::fail<Error>(
        op, "not every rank called fx::distributed::init() within ", timeout_text(),
        " (MPI_Comm_idup of the world did not complete). Every process of the launch must call init().");
  }
  return std::make_shared<MpiTransport>(comm, axis_name);
}

std::shared_ptr<Transport> engine_new_group(Transport& world, const std::vector<int>& world_ranks,
                                            const std::string& axis_name) {
  auto* mpi_world = dynamic_cast<MpiTransport*>(&world);
  if (!mpi_world) detail::fail<Error>("distributed.new_group", "the world group is not an MPI group.");
  std::lock_guard<std::mutex> lock(mpi_mutex());
  // The caller has just checked (through a polled all_gather) that every rank is here with the same
  // arguments, so this blocking split cannot wait for an absent rank.
  int me = mpi_world->rank();
  auto position = std::find(world_ranks.begin(), world_ranks.end(), me);
  bool member = position != world_ranks.end();
  MPI_Comm comm = MPI_COMM_NULL;
  check_mpi(MPI_Comm_split(mpi_world->comm(), member ? 0 : MPI_UNDEFINED,
                           member ? static_cast<int>(position - world_ranks.begin()) : 0, &comm),
            "distributed.new_group", "MPI_Comm_split");
  if (comm == MPI_COMM_NULL) return nullptr;
  return std::make_shared<MpiTransport>(comm, axis_name);
}

void engine_finalize() {
  std::lock_guard<std::mutex> lock(mpi_mutex());
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (mpi_engine_detail::started_mpi && !finalized) MPI_Finalize();
}

}  // namespace fluxion::distributed_detail
