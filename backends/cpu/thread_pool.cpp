// The CPU thread pool (thread_pool.hpp). One job at a time is published in a slot of atomics; the
// workers and the caller claim chunks of it with a compare-and-swap on `state_`, which holds the
// job's generation and its next unclaimed chunk. Memory ordering, race-free by construction:
//  - Every access to the slot (state_, tasks_, grain_, fn_, context_, participants_) is seq_cst.
//    A caller closes the old generation (state_ = next generation, no chunk open) before it writes
//    the next job's fields, and publishes the job after. A worker reads state_, then the fields,
//    then claims with a CAS expecting the state it read: if it read any field of a later job, the
//    close precedes that read in the single total order, so its CAS fails and nothing runs. A
//    successful claim proves the job is still open, so its fields and the caller's data are live.
//  - The caller's writes before the job happen-before the tasks (publish: seq_cst store, claim:
//    seq_cst CAS); the tasks' writes happen-before the caller's return (done_: seq_cst add, the
//    caller's acquire load).
//  - Sleeping uses one mutex and two condition variables; waker and sleeper each write their
//    flag, then read the other's (seq_cst), so one of them always sees the other: no lost wake-up.
#include "backends/cpu/thread_pool.hpp"

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdlib>
#include <exception>
#include <mutex>
#include <thread>
#include <vector>

#include <unistd.h>

#include "fluxion/device.hpp"

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#endif

namespace fluxion::cpu {
namespace thread_pool_detail {

thread_local bool t_in_region = false;  // a pool worker, or a caller running a loop's tasks

/// Sets t_in_region for a scope.
struct RegionScope {
  bool previous = t_in_region;
  RegionScope() { t_in_region = true; }
  ~RegionScope() { t_in_region = previous; }
};

inline void cpu_relax() {
#if defined(__x86_64__) || defined(__i386__)
  _mm_pause();
#elif defined(__aarch64__)
  asm volatile("yield");
#endif
}

int spin_from_environment() {
  if (const char* env = std::getenv("FLUXION_SPIN_US")) {
    char* end = nullptr;
    long v = std::strtol(env, &end, 10);
    if (end != env && *end == '\0' && v >= 0) return static_cast<int>(std::min<long>(v, 1000000));
  }
  return kDefaultSpinMicroseconds;
}

std::atomic<int> g_spin_us{-1};  // -1: not read from the environment yet
// The process that made the pool. A fork()ed child (another pid) has none of its workers. Compared
// with getpid() (a system call, once per parallel loop) rather than flagged by pthread_atfork:
// clang-repl cannot resolve pthread_atfork (glibc links it statically from libc_nonshared.a).
std::atomic<pid_t> g_owner_pid{0};
bool forked_child() {
  const pid_t owner = g_owner_pid.load(std::memory_order_relaxed);
  return owner != 0 && owner != getpid();
}
std::atomic<bool> g_pool_gone{false};  // set by the pool's destructor: later loops run serially

int spin_us() {
  int us = g_spin_us.load(std::memory_order_relaxed);
  if (us < 0) {
    us = spin_from_environment();
    g_spin_us.store(us, std::memory_order_relaxed);
  }
  return us;
}

/// Spins (pausing) until `done()` or `us` microseconds have passed; returns done().
template <class Done> bool spin_until(int us, Done done) {
  if (us <= 0) return done();
  const auto until = std::chrono::steady_clock::now() + std::chrono::microseconds(us);
  for (;;) {
    for (int i = 0; i < 64; ++i) {
      if (done()) return true;
      cpu_relax();
    }
    if (std::chrono::steady_clock::now() >= until) return done();
  }
}

constexpr uint64_t kClosed = 0xffffffffu;  // chunk index of a generation not open yet
inline uint64_t generation(uint64_t state) { return state >> 32; }
inline uint64_t chunk(uint64_t state) { return state & 0xffffffffu; }
inline uint64_t make_state(uint64_t gen, uint64_t next) { return gen << 32 | next; }

class ThreadPool {
 public:
  ThreadPool() { g_owner_pid.store(getpid(), std::memory_order_relaxed); }
  ~ThreadPool() {
    g_pool_gone.store(true);
    // A forked child has none of these threads (and may hold copies of locked mutexes): leave them.
    if (forked_child()) new std::vector<std::thread>(std::move(workers_));
    else stop_workers();
  }

  /// Runs `chunks` chunks of `grain` tasks of [0, n) on up to `threads` threads; false when the
  /// workers are busy with another caller's loop (the caller then runs it alone).
  bool run(int64_t n, int64_t grain, int threads, ChunkFn fn, void* context) {
    std::unique_lock<std::mutex> job(dispatch_, std::try_to_lock);
    if (!job.owns_lock()) return false;
    start_workers(threads - 1);
    const int64_t chunks = (n + grain - 1) / grain;
    const uint64_t gen = (generation(state_.load()) + 1) & 0xffffffffu;
    state_.store(make_state(gen, kClosed));  // stale claims on the previous job fail from here on
    tasks_.store(n), grain_.store(grain), chunks_.store(chunks), fn_.store(fn), context_.store(context);
    participants_.store(threads);
    done_.store(0), failed_.store(false);
    state_.store(make_state(gen, 0));
    if (sleeping_workers_.load() > 0) {
      { std::lock_guard<std::mutex> lock(sleep_mutex_); }
      wake_.notify_all();
    }
    work(gen, 0);
    // Every chunk is claimed; wait for those still running on workers.
    if (!spin_until(spin_us(), [&] { return done_.load(std::memory_order_acquire) == chunks; })) {
      std::unique_lock<std::mutex> lock(sleep_mutex_);
      caller_waiting_.store(true);
      finished_.wait(lock, [&] { return done_.load() == chunks; });
      caller_waiting_.store(false);
    }
    std::exception_ptr error;
    {
      std::lock_guard<std::mutex> lock(error_mutex_);
      std::swap(error, error_);
    }
    job.unlock();
    if (error) std::rethrow_exception(error);
    return true;
  }

  void stop_workers() {
    std::lock_guard<std::mutex> job(dispatch_);
    {
      std::lock_guard<std::mutex> lock(sleep_mutex_);
      stop_.store(true);
    }
    wake_.notify_all();
    for (std::thread& t : workers_) {
      if (t.get_id() == std::this_thread::get_id()) t.detach();  // exit() called by a task
      else t.join();
    }
    workers_.clear();
    stop_.store(false);
    worker_count_.store(0);
  }

  int worker_count() const { return worker_count_.load(); }

 private:
  /// Starts workers up to `count` (dispatch_ held).
  void start_workers(int count) {
    while (static_cast<int>(workers_.size()) < count) {
      const int index = static_cast<int>(workers_.size()) + 1;
      const uint64_t seen = generation(state_.load());
      workers_.emplace_back([this, index, seen] { worker_main(index, seen); });
      worker_count_.store(static_cast<int>(workers_.size()));
    }
  }

  void worker_main(int index, uint64_t seen) {
    t_in_region = true;
    for (;;) {
      // A new job is open (a closed generation is still being written), or the pool stops.
      auto fresh = [&] {
        const uint64_t s = state_.load();
        return (generation(s) != seen && chunk(s) != kClosed) || stop_.load();
      };
      if (!spin_until(spin_us(), fresh)) {
        std::unique_lock<std::mutex> lock(sleep_mutex_);
        sleeping_workers_.fetch_add(1);
        wake_.wait(lock, fresh);
        sleeping_workers_.fetch_sub(1);
      }
      if (stop_.load()) return;
      seen = generation(state_.load());
      work(seen, index);
    }
  }

  /// Claims and runs chunks of generation `gen` until none is left (or the job is gone).
  void work(uint64_t gen, int worker) {
    for (;;) {
      uint64_t state = state_.load();
      if (generation(state) != gen) return;
      const int64_t chunks = chunks_.load(), n = tasks_.load(), grain = grain_.load();
      const ChunkFn fn = fn_.load();
      void* const context = context_.load();
      if (static_cast<int64_t>(chunk(state)) >= chunks || worker >= participants_.load()) return;  // or closed
      if (!state_.compare_exchange_weak(state, state + 1)) continue;
      const int64_t begin = static_cast<int64_t>(chunk(state)) * grain, end = std::min(n, begin + grain);
      if (!failed_.load(std::memory_order_relaxed)) {
        try {
          fn(context, begin, end, worker);
        } catch (...) {
          std::lock_guard<std::mutex> lock(error_mutex_);
          if (!error_) error_ = std::current_exception();
          failed_.store(true, std::memory_order_relaxed);
        }
      }
      if (done_.fetch_add(1) + 1 == chunks && worker != 0 && caller_waiting_.load()) {
        { std::lock_guard<std::mutex> lock(sleep_mutex_); }
        finished_.notify_one();
      }
    }
  }

  std::mutex dispatch_;  // held by the caller of the running job (and while workers start or stop)
  std::vector<std::thread> workers_;
  std::atomic<int> worker_count_{0};

  // The job slot (seq_cst, see the top of this file).
  std::atomic<uint64_t> state_{0};
  std::atomic<int64_t> tasks_{0}, grain_{1}, chunks_{0};
  std::atomic<ChunkFn> fn_{nullptr};
  std::atomic<void*> context_{nullptr};
  std::atomic<int> participants_{0};
  std::atomic<int64_t> done_{0};  // chunks finished (run, or skipped after a failure)
  std::atomic<bool> failed_{false};
  std::mutex error_mutex_;
  std::exception_ptr error_;

  std::mutex sleep_mutex_;
  std::condition_variable wake_, finished_;
  std::atomic<int> sleeping_workers_{0};
  std::atomic<bool> caller_waiting_{false}, stop_{false};
};

ThreadPool& pool() {
  static ThreadPool instance;
  return instance;
}

/// Whether a loop can use the pool at all from this thread (else it runs serially).
bool pool_usable() { return !t_in_region && !g_pool_gone.load() && !forked_child(); }

void run_serially(int64_t n, int64_t grain, ChunkFn fn, void* context) {
  RegionScope region;
  for (int64_t begin = 0; begin < n; begin += grain) fn(context, begin, std::min(n, begin + grain), 0);
}

}  // namespace thread_pool_detail

void run_parallel(int64_t n, int64_t grain, int threads, ChunkFn fn, void* context) {
  using namespace thread_pool_detail;
  if (n <= 0) return;
  grain = std::max<int64_t>(grain, 1);
  // The chunk index lives in 32 bits of the job state: coarser chunks for huge loops.
  grain = std::max<int64_t>(grain, (n + (int64_t{1} << 31) - 1) >> 31);
  const int64_t chunks = (n + grain - 1) / grain;
  threads = static_cast<int>(std::min<int64_t>(std::min(threads, num_threads()), chunks));
  if (threads <= 1 || !pool_usable()) return run_serially(n, grain, fn, context);
  RegionScope region;
  if (!pool().run(n, grain, threads, fn, context)) run_serially(n, grain, fn, context);
}

bool in_parallel_region() { return thread_pool_detail::t_in_region; }

void stop_thread_pool() {
  using namespace thread_pool_detail;
  if (pool_usable()) pool().stop_workers();
}

int thread_pool_workers() { return thread_pool_detail::pool().worker_count(); }

int spin_microseconds() { return thread_pool_detail::spin_us(); }

void set_spin_microseconds(int us) { thread_pool_detail::g_spin_us.store(std::max(us, 0)); }

}  // namespace fluxion::cpu
