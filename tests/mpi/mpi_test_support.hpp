/// What every multi-process doctest executable (tests/mpi/test_mpi_*.cpp, run under mpirun) shares:
/// a doctest listener that ends the run cleanly, and one init() for all test cases.
///   - A rank whose run had failures calls MPI_Abort: mpirun then stops every rank with a non-zero
///     exit, instead of the other ranks waiting in MPI_Finalize for one that will never come.
///   - A clean run calls fx::distributed::finalize().
#pragma once
#include <doctest/doctest.h>
#include <mpi.h>

#include <cstdio>

#include "fluxion/distributed.hpp"

namespace fluxion_mpi_tests {

struct FinishRun : doctest::IReporter {
  explicit FinishRun(const doctest::ContextOptions&) {}
  void report_query(const doctest::QueryData&) override {}
  void test_run_start() override {}
  void test_run_end(const doctest::TestRunStats& stats) override {
    int initialized = 0, finalized = 0;
    MPI_Initialized(&initialized);
    MPI_Finalized(&finalized);
    if (stats.numTestCasesFailed > 0 || stats.numAssertsFailed > 0) {
      if (initialized && !finalized) {
        std::fprintf(stderr, "rank %d: %u test case(s) failed; MPI_Abort stops every rank\n",
                     fluxion::distributed::rank(), stats.numTestCasesFailed);
        std::fflush(stderr);
        MPI_Abort(MPI_COMM_WORLD, 1);
      }
      return;
    }
    fluxion::distributed::finalize();
  }
  void test_case_start(const doctest::TestCaseData&) override {}
  void test_case_reenter(const doctest::TestCaseData&) override {}
  void test_case_end(const doctest::CurrentTestCaseStats&) override {}
  void test_case_exception(const doctest::TestCaseException&) override {}
  void subcase_start(const doctest::SubcaseSignature&) override {}
  void subcase_end() override {}
  void log_assert(const doctest::AssertData&) override {}
  void log_message(const doctest::MessageData&) override {}
  void test_case_skipped(const doctest::TestCaseData&) override {}
};
REGISTER_LISTENER("fluxion_mpi_finish", 1, FinishRun);

/// init() on first use (every test case calls it, so any one can run alone with -tc).
inline void start() {
  if (!fluxion::distributed::initialized()) fluxion::distributed::init();
}

}  // namespace fluxion_mpi_tests
