// The MPI suite's main: MPI around doctest, each rank running every case. The exit code is
// every rank's verdict, so that a case failing on one rank fails the run on all of them.

#define DOCTEST_CONFIG_IMPLEMENT
#include <doctest/doctest.h>

#include <rlflow/core/mpi_communicator.hpp>

#include <array>

int main(int argc, char** argv) {
    rlflow::MpiSession session(&argc, &argv);
    doctest::Context context(argc, argv);
    const int failed = context.run();
    if (context.shouldExit()) return failed;
    rlflow::MpiCommunicator comm;
    std::array<double, 1> failures{failed != 0 ? 1.0 : 0.0};
    comm.all_reduce_sum(failures);
    return failures[0] > 0 ? 1 : 0;
}
