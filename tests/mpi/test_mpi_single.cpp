// fx::distributed in one process started WITHOUT mpirun (tests/mpi/CMakeLists.txt runs it directly).
// init() (automatic) refuses: a program that expected a launch of N processes and got one must not
// silently compute as a world of one. init(Backend::mpi) asks for exactly that: an MPI singleton.
#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "backends/distributed/transport.hpp"
#include "fluxion/distributed.hpp"
#include "fluxion/errors.hpp"

namespace dist = fluxion::distributed;
using fluxion::distributed_detail::CollectiveCall;
using fluxion::distributed_detail::CollectiveKind;

namespace {
template <class F> std::string single_error_of(F&& f) {
  try {
    f();
  } catch (const fluxion::Error& e) { return e.what(); }
  return "";
}
}  // namespace

TEST_CASE("outside mpirun: automatic init refuses, Backend::mpi runs a world of one") {
  REQUIRE(dist::compiled());
  CHECK(dist::timeout() == 7.5);  // FLUXION_DISTRIBUTED_TIMEOUT, set by tests/mpi/CMakeLists.txt
  REQUIRE_FALSE(dist::launched());
  CHECK(dist::rank() == 0);
  CHECK(dist::size() == 1);
  CHECK(single_error_of([] { dist::world(); }).find("not initialized") != std::string::npos);
  std::string e = single_error_of([] { dist::init(); });
  CHECK(e.find("[distributed.init] this process was not started by mpirun/mpiexec or srun") != std::string::npos);
  CHECK(e.find("init(fx::distributed::Backend::mpi)") != std::string::npos);
  CHECK_FALSE(dist::initialized());

  dist::init(dist::Backend::mpi);
  CHECK(dist::initialized());
  CHECK(dist::size() == 1);
  CHECK(dist::world().ranks() == std::vector<int>{0});
  std::vector<double> send = {1.5, -2}, recv(2);
  CollectiveCall call;
  call.op = "all_sum";
  call.kind = CollectiveKind::all_reduce;
  call.dtype = fluxion::DType::f64;
  call.shape = {2};
  call.send = send.data();
  call.recv = recv.data();
  call.send_count = call.recv_count = 2;
  fluxion::distributed_detail::transport_for_axis("world", "all_sum").run(call);
  CHECK(recv == send);
  auto g = dist::new_group({0}, "me");
  CHECK(g.rank() == 0);
  dist::barrier(g);
  dist::finalize();
  dist::finalize();
  CHECK(single_error_of([] { dist::init(dist::Backend::mpi); }).find("finalize() has already ended") !=
        std::string::npos);
}
