// fx::distributed's MPI transport on 2 ranks (run by mpirun, tests/mpi/CMakeLists.txt): every
// collective kind and dtype with exact values, groups, and the errors that replace hangs. Run twice:
// with the cross-rank check (default) and without it (FLUXION_DISTRIBUTED_CHECKS=0).
#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <thread>
#include <vector>

#include "backends/distributed/engine.hpp"
#include "backends/distributed/transport.hpp"
#include "fluxion/cuda.hpp"
#include "fluxion/distributed.hpp"
#include "fluxion/errors.hpp"
#include "mpi/mpi_test_support.hpp"

namespace fx = fluxion;
namespace dist = fluxion::distributed;
using fluxion::distributed_detail::CollectiveCall;
using fluxion::distributed_detail::CollectiveKind;
using fluxion::distributed_detail::ReduceOp;
using fluxion::distributed_detail::transport_for_axis;
using fluxion_mpi_tests::start;

namespace {

template <class T> fx::DType dtype_of();
template <> fx::DType dtype_of<float>() { return fx::DType::f32; }
template <> fx::DType dtype_of<double>() { return fx::DType::f64; }
template <> fx::DType dtype_of<int32_t>() { return fx::DType::i32; }
template <> fx::DType dtype_of<int64_t>() { return fx::DType::i64; }
template <> fx::DType dtype_of<bool>() { return fx::DType::boolean; }

template <class T> CollectiveCall make_call(const char* op, CollectiveKind kind, const std::vector<T>& send,
                                            std::vector<T>& recv, std::vector<int64_t> shape) {
  CollectiveCall call;
  call.op = op;
  call.kind = kind;
  call.dtype = dtype_of<T>();
  call.shape = std::move(shape);
  call.send = send.data();
  call.recv = recv.data();
  call.send_count = static_cast<int64_t>(send.size());
  call.recv_count = static_cast<int64_t>(recv.size());
  return call;
}

// The message of the fluxion::Error that f throws ("" when it throws none).
template <class F> std::string error_of(F&& f) {
  try {
    f();
  } catch (const fx::Error& e) { return e.what(); }
  return "";
}

// Every rank's string, gathered on every rank (to compare error texts across ranks).
std::vector<std::string> gather_strings(const std::string& mine) {
  constexpr int kWidth = 1024;
  std::vector<char> send(kWidth, '\0'), recv(2 * kWidth, '\0');
  mine.copy(send.data(), kWidth - 1);
  MPI_Allgather(send.data(), kWidth, MPI_CHAR, recv.data(), kWidth, MPI_CHAR, MPI_COMM_WORLD);
  return {std::string(recv.data()), std::string(recv.data() + kWidth)};
}

bool checks_on() { return fluxion::distributed_detail::call_checks_enabled(); }

// Rank r's value at element i, for dtype T (exact in every dtype).
template <class T> T value(int r, int i) { return static_cast<T>(10 * (r + 1) + i); }

template <class T> void check_every_kind() {
  auto& world = transport_for_axis("world", "test");
  const int r = world.rank(), n = world.size();
  REQUIRE(n == 2);
  const int c = 3;
  std::vector<T> send(c);
  for (int i = 0; i < c; ++i) send[static_cast<size_t>(i)] = value<T>(r, i);
  {  // all_reduce sum, max, min
    for (ReduceOp reduce : {ReduceOp::sum, ReduceOp::max, ReduceOp::min}) {
      std::vector<T> recv(c);
      auto call = make_call("all_sum", CollectiveKind::all_reduce, send, recv, {c});
      call.reduce = reduce;
      world.run(call);
      for (int i = 0; i < c; ++i) {
        T a = value<T>(0, i), b = value<T>(1, i);
        T want = reduce == ReduceOp::sum   ? static_cast<T>(a + b)
                 : reduce == ReduceOp::max ? std::max(a, b)
                                           : std::min(a, b);
        CHECK(recv[static_cast<size_t>(i)] == want);
      }
    }
  }
  {  // all_gather: rank-major blocks
    std::vector<T> recv(static_cast<size_t>(n * c));
    world.run(make_call("all_gather", CollectiveKind::all_gather, send, recv, {c}));
    for (int q = 0; q < n; ++q)
      for (int i = 0; i < c; ++i) CHECK(recv[static_cast<size_t>(q * c + i)] == value<T>(q, i));
  }
  {  // reduce_scatter: block r of every rank's send, summed, lands on rank r
    std::vector<T> big(static_cast<size_t>(n * c));
    for (int i = 0; i < n * c; ++i) big[static_cast<size_t>(i)] = value<T>(r, i);
    std::vector<T> recv(c);
    world.run(make_call("reduce_scatter", CollectiveKind::reduce_scatter, big, recv, {n * c}));
    for (int i = 0; i < c; ++i) {
      CHECK(recv[static_cast<size_t>(i)] == static_cast<T>(value<T>(0, r * c + i) + value<T>(1, r * c + i)));
    }
  }
  {  // all_to_all: block q of my send goes to rank q; block q of my recv came from rank q
    std::vector<T> big(static_cast<size_t>(n * c));
    for (int i = 0; i < n * c; ++i) big[static_cast<size_t>(i)] = value<T>(r, i);
    std::vector<T> recv(static_cast<size_t>(n * c));
    world.run(make_call("all_to_all", CollectiveKind::all_to_all, big, recv, {n * c}));
    for (int q = 0; q < n; ++q)
      for (int i = 0; i < c; ++i) CHECK(recv[static_cast<size_t>(q * c + i)] == value<T>(q, r * c + i));
  }
  for (int root = 0; root < n; ++root) {  // broadcast from each root, root included
    std::vector<T> recv(c);
    auto call = make_call("broadcast", CollectiveKind::broadcast, send, recv, {c});
    call.root = root;
    world.run(call);
    for (int i = 0; i < c; ++i) CHECK(recv[static_cast<size_t>(i)] == value<T>(root, i));
  }
}

}  // namespace

TEST_CASE("rank, size and the world group") {
  start();
  CHECK(dist::compiled());
  CHECK(dist::launched());
  CHECK(dist::initialized());
  CHECK(dist::size() == 2);
  int mpi_rank = -1;
  MPI_Comm_rank(MPI_COMM_WORLD, &mpi_rank);
  CHECK(dist::rank() == mpi_rank);
  auto world = dist::world();
  CHECK(world.axis_name() == "world");
  CHECK(world.ranks() == std::vector<int>{0, 1});
  CHECK(world.rank() == mpi_rank);
  CHECK(transport_for_axis("world", "test").describe() == "MPI group 'world' of 2 ranks");
  CHECK(error_of([] { dist::init(); }).find("already initialized") != std::string::npos);
}

TEST_CASE("every collective kind, every dtype, exact values") {
  start();
  check_every_kind<float>();
  check_every_kind<double>();
  check_every_kind<int32_t>();
  check_every_kind<int64_t>();
}

TEST_CASE("bool: moved as bytes, max/min are any/all, a sum is refused on every rank") {
  start();
  auto& world = transport_for_axis("world", "test");
  const int r = world.rank();
  std::vector<uint8_t> send = {1, static_cast<uint8_t>(r == 0), 0};  // bools as fluxion stores them
  std::vector<uint8_t> recv(6);
  CollectiveCall call;
  call.op = "all_gather";
  call.kind = CollectiveKind::all_gather;
  call.dtype = fx::DType::boolean;
  call.shape = {3};
  call.send = send.data();
  call.recv = recv.data();
  call.send_count = 3;
  call.recv_count = 6;
  world.run(call);
  CHECK(recv == std::vector<uint8_t>{1, 1, 0, 1, 0, 0});
  call.kind = CollectiveKind::all_reduce;
  call.recv_count = 3;
  call.reduce = ReduceOp::max;
  world.run(call);
  CHECK(std::vector<uint8_t>(recv.begin(), recv.begin() + 3) == std::vector<uint8_t>{1, 1, 0});
  call.reduce = ReduceOp::min;
  world.run(call);
  CHECK(std::vector<uint8_t>(recv.begin(), recv.begin() + 3) == std::vector<uint8_t>{1, 0, 0});
  call.reduce = ReduceOp::sum;
  std::string e = error_of([&] { world.run(call); });
  CHECK(e.find("[all_gather] cannot sum bool tensors") != std::string::npos);
  // A local refusal on every rank leaves the group usable.
  call.reduce = ReduceOp::max;
  world.run(call);
}

TEST_CASE("barrier, and groups of {1} and {0,1}") {
  start();
  dist::barrier();
  const int r = dist::rank();
  auto solo = dist::new_group({1}, "solo");
  CHECK(solo.axis_name() == "solo");
  CHECK(solo.size() == 1);
  CHECK(solo.rank() == (r == 1 ? 0 : -1));
  CHECK(fluxion::distributed_detail::axis_registered("solo") == (r == 1));
  auto pair = dist::new_group({1, 0}, "pair");  // group rank order follows the list
  CHECK(pair.rank() == (r == 1 ? 0 : 1));
  dist::barrier(pair);
  dist::barrier(solo);  // a no-op on rank 0, which is not a member
  std::vector<double> send = {static_cast<double>(r) + 0.5};
  std::vector<double> recv(2);
  auto& pair_transport = transport_for_axis("pair", "test");
  CHECK(pair_transport.rank() == pair.rank());
  pair_transport.run(make_call("all_gather", CollectiveKind::all_gather, send, recv, {1}));
  CHECK(recv == std::vector<double>{1.5, 0.5});  // group rank 0 is world rank 1
  if (r == 1) {
    std::vector<double> one(1);
    transport_for_axis("solo", "test").run(make_call("all_sum", CollectiveKind::all_reduce, send, one, {1}));
    CHECK(one[0] == 1.5);
  } else {
    std::string e = error_of([] { transport_for_axis("solo", "all_sum"); });
    CHECK(e.find("[all_sum] axis name 'solo' is not bound") != std::string::npos);
  }
  // Arguments that differ across ranks: the same error on both, no communicator made.
  std::string e = error_of([&] { dist::new_group(r == 0 ? std::vector<int>{0, 1} : std::vector<int>{1}, "odd"); });
  CHECK(e.find("ranks disagree on the new group: rank 1 passed other ranks") != std::string::npos);
  CHECK(gather_strings(e)[0] == gather_strings(e)[1]);
  // A name taken on some rank.
  e = error_of([] { dist::new_group({0, 1}, "pair"); });
  CHECK(e.find("'pair' is already registered") != std::string::npos);
  CHECK(error_of([] {
          dist::new_group({0, 2}, "bad");
        }).find("rank 2 is not a rank of the world") != std::string::npos);
}

TEST_CASE("large and empty payloads") {
  start();
  auto& world = transport_for_axis("world", "test");
  const int r = world.rank();
  // 3 MB per rank: past the shared-memory transport's eager limit, so the payload takes MPI's
  // rendezvous path through the polled wait.
  const int c = 400000;
  std::vector<double> send(c), recv(c);
  for (int i = 0; i < c; ++i) send[static_cast<size_t>(i)] = (r + 1) * 0.25 * i;
  world.run(make_call("all_sum", CollectiveKind::all_reduce, send, recv, {c}));
  int wrong = 0;
  for (int i = 0; i < c; ++i) wrong += recv[static_cast<size_t>(i)] != 0.75 * i;
  CHECK(wrong == 0);
  std::vector<double> gathered(2 * static_cast<size_t>(c));
  world.run(make_call("all_gather", CollectiveKind::all_gather, send, gathered, {c}));
  CHECK(gathered[static_cast<size_t>(c) + 7] == 0.5 * 7);
  std::vector<float> none, none_out;
  world.run(make_call("all_sum", CollectiveKind::all_reduce, none, none_out, {0, 3}));
}

TEST_CASE("two groups used from two threads at once") {
  start();
  dist::new_group({0, 1}, "thread_a");
  dist::new_group({1, 0}, "thread_b");
  auto work = [](const char* axis, double scale, double* result) {
    auto& group = transport_for_axis(axis, "test");
    std::vector<double> send = {scale * (group.rank() + 1)}, recv(1);
    double total = 0;
    for (int i = 0; i < 200; ++i) {
      group.run(make_call("all_sum", CollectiveKind::all_reduce, send, recv, {1}));
      total += recv[0];
    }
    *result = total;
  };
  double a = 0, b = 0;
  std::thread first(work, "thread_a", 1.0, &a), second(work, "thread_b", 10.0, &b);
  first.join();
  second.join();
  CHECK(a == 200 * 3.0);
  CHECK(b == 200 * 30.0);
}

TEST_CASE("mismatched shapes and kinds: the same error on both ranks, then the group is unusable") {
  start();
  if (!checks_on()) return;  // without the check a mismatch is the user's undefined behaviour, as in MPI
  const int r = dist::rank();
  dist::new_group({0, 1}, "shapes");
  auto& shapes = transport_for_axis("shapes", "test");
  std::vector<double> send(r == 0 ? 12 : 15, 1.0), recv(send.size());
  auto call = make_call("all_sum", CollectiveKind::all_reduce, send, recv, {3, r == 0 ? 4 : 5});
  std::string e = error_of([&] { shapes.run(call); });
  auto both = gather_strings(e);
  CHECK(both[0] == both[1]);
  CHECK(e ==
        "[all_sum] ranks disagree on the call: rank 0 has f64[3,4], rank 1 has f64[3,5] (group 'shapes', "
        "collective #1). Every rank must call the same collectives with the same shapes in the same order.");
  e = error_of([&] { shapes.run(call); });
  CHECK(e.find("[all_sum] group 'shapes' is unusable after an earlier collective error: [all_sum] ranks disagree") !=
        std::string::npos);

  dist::new_group({0, 1}, "kinds");
  auto& kinds = transport_for_axis("kinds", "test");
  std::vector<float> one(4, 1.0f), out(8);
  auto sum = make_call("all_sum", CollectiveKind::all_reduce, one, out, {4});
  sum.recv_count = 4;
  auto gather = make_call("all_gather", CollectiveKind::all_gather, one, out, {4});
  e = error_of([&] { kinds.run(r == 0 ? sum : gather); });
  CHECK(gather_strings(e)[0] == gather_strings(e)[1]);
  CHECK(e.find("[all_sum] ranks disagree on the call: rank 0 called all_sum on f32[4], rank 1 called all_gather on "
               "f32[4]") != std::string::npos);

  dist::new_group({0, 1}, "dtypes");
  std::vector<float> f(4, 1.0f), f_out(4);
  std::vector<double> d(4, 1.0), d_out(4);
  auto sum_f = make_call("all_sum", CollectiveKind::all_reduce, f, f_out, {4});
  auto sum_d = make_call("all_sum", CollectiveKind::all_reduce, d, d_out, {4});
  e = error_of([&] { transport_for_axis("dtypes", "test").run(r == 0 ? sum_f : sum_d); });
  CHECK(e.find("[all_sum] ranks disagree on the call: rank 0 has f32[4], rank 1 has f64[4] (group 'dtypes', "
               "collective #1)") != std::string::npos);
  // The world is untouched.
  dist::barrier();
}

TEST_CASE("CUDA operands without NCCL in the build: DeviceError on every rank, the group stays usable") {
  start();
  // Host buffers labelled cuda:0 never reach a device: without NCCL the transport refuses first. A
  // CUDA build may have NCCL, which would take these buffers for device memory.
  if (fluxion::cuda::compiled()) return;
  std::vector<double> send(2, 1.0), recv(2);
  auto call = make_call("all_sum", CollectiveKind::all_reduce, send, recv, {2});
  call.device = fx::Device::cuda(0);
  try {
    transport_for_axis("world", "test").run(call);
    FAIL("expected a DeviceError");
  } catch (const fx::DeviceError& e) {
    CHECK(std::string(e.what()).find("[all_sum] collectives on CUDA tensors need NCCL") != std::string::npos);
  }
  dist::barrier();
}

TEST_CASE("a rank that skips a collective: an error naming it within the timeout, never a hang") {
  start();
  const int r = dist::rank();
  dist::new_group({0, 1}, "skip");
  auto& skip = transport_for_axis("skip", "test");
  dist::set_timeout(2);
  std::vector<double> send(2, 1.0), recv(2);
  auto call = make_call("all_sum", CollectiveKind::all_reduce, send, recv, {2});
  auto started = std::chrono::steady_clock::now();
  std::string e;
  if (r == 0) {
    e = error_of([&] { skip.run(call); });
  } else if (!checks_on()) {
    // Unchecked, rank 1 must not touch the group again: MPI would match its next collective with rank
    // 0's abandoned one (the hazard the check removes).
    std::this_thread::sleep_for(std::chrono::milliseconds(2500));
  } else {
    // Rank 1 skips the call; it comes back for a barrier after rank 0 has given up.
    std::this_thread::sleep_for(std::chrono::milliseconds(2500));
    CollectiveCall barrier;
    barrier.op = "barrier";
    barrier.kind = CollectiveKind::barrier;
    e = error_of([&] { skip.run(barrier); });
  }
  double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  CHECK(seconds < 10);
  MESSAGE("rank ", r, ": ", e);
  if (checks_on()) {
    if (r == 0) {
      CHECK(e ==
            "[all_sum] rank 1 did not reach collective #1 within 2 s (group 'skip'); it may have thrown, exited, "
            "or skipped the call. Every rank must call the same collectives in the same order.");
    } else {
      CHECK(e.find("[barrier] rank 0, which checks the calls of group 'skip', did not answer collective #1 within 2 "
                   "s") != std::string::npos);
    }
  } else if (r == 0) {
    CHECK(e.find("[all_sum] collective #1 did not complete within 2 s on rank 0 (group 'skip')") != std::string::npos);
    CHECK(e.find("FLUXION_DISTRIBUTED_CHECKS=0") != std::string::npos);
  }
  if (checks_on() || r == 0) {
    // Broken from now on: the next call throws at once.
    started = std::chrono::steady_clock::now();
    e = error_of([&] { skip.run(call); });
    CHECK(e.find("group 'skip' is unusable after an earlier collective error") != std::string::npos);
    CHECK(std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count() < 0.5);
  }
  dist::set_timeout(60);
  dist::barrier();  // the world still works
}

TEST_CASE("the cost of the cross-rank check: 1000 small all_reduce calls") {
  start();
  auto& world = transport_for_axis("world", "test");
  std::vector<double> send(4, 1.0), recv(4);
  auto call = make_call("all_sum", CollectiveKind::all_reduce, send, recv, {4});
  for (int i = 0; i < 50; ++i) world.run(call);  // warm up
  auto started = std::chrono::steady_clock::now();
  for (int i = 0; i < 1000; ++i) world.run(call);
  double us = std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - started).count() / 1000;
  CHECK(recv[0] == 2.0);
  MESSAGE("rank ", dist::rank(), ": all_reduce of 4 f64, ", us, " us per call, check ",
          std::string(checks_on() ? "on" : "off"));
}

TEST_CASE("errors: unknown axis names, bad timeouts") {
  start();
  std::string e = error_of([] { transport_for_axis("batch", "all_sum"); });
  CHECK(e.find("[all_sum] axis name 'batch' is not bound") != std::string::npos);
  CHECK(e.find("registered: ") != std::string::npos);
  CHECK(e.find("fx::vmap(f, ..., fx::axis_name(\"batch\"))") != std::string::npos);
  CHECK(e.find("call fx::distributed::init() (or new_group) under that name") != std::string::npos);
  CHECK(error_of([] { dist::set_timeout(0); }).find("must be a positive number") != std::string::npos);
}

TEST_CASE("a deliberate failure on rank 1 (only with FLUXION_MPI_TEST_DELIBERATE_FAILURE=1)") {
  // tests/mpi/CMakeLists.txt runs this case alone, expecting mpirun to fail fast: rank 1's failed
  // REQUIRE skips a collective, rank 0 gets an error for it within the timeout, and both ranks' runs
  // end in MPI_Abort (mpi_test_support.hpp) instead of one waiting in MPI_Finalize for the other.
  const char* flag = std::getenv("FLUXION_MPI_TEST_DELIBERATE_FAILURE");
  if (!flag || std::string(flag) != "1") return;
  start();
  dist::set_timeout(2);
  REQUIRE(dist::rank() == 0);
  dist::barrier();
}

TEST_CASE("finalize ends the group; it is idempotent and init cannot run again") {
  start();
  dist::finalize();
  CHECK_FALSE(dist::initialized());
  CHECK(dist::rank() == 0);
  CHECK(dist::size() == 1);
  dist::finalize();
  CHECK(error_of([] { dist::init(); }).find("finalize() has already ended the process group") != std::string::npos);
  CHECK(error_of([] { transport_for_axis("world", "all_sum"); }).find("axis name 'world' is not bound") !=
        std::string::npos);
}
