// MpiCommunicator on the ranks mpiexec started (ctest: 2): sums, broadcasts and gathers
// give on every rank what the definitions say, for values that differ per rank.

#include <doctest/doctest.h>

#include <rlflow/core/mpi_communicator.hpp>

#include <numeric>
#include <string>
#include <vector>

namespace {

/// rank r's bytes in the gather test: r + 1 copies of 'a' + r, then a NUL and r.
std::string bytes_of(int r) {
    std::string s(static_cast<std::size_t>(r) + 1, static_cast<char>('a' + r));
    s.push_back('\0');
    s += std::to_string(r);
    return s;
}

}  // namespace

TEST_CASE("all_reduce_sum adds every rank's values on every rank") {
    rlflow::MpiCommunicator comm;
    const int n = comm.size(), r = comm.rank();
    std::vector<double> d{static_cast<double>(r + 1), 0.5, -static_cast<double>(r)};
    comm.all_reduce_sum(d);
    CHECK(d[0] == doctest::Approx(n * (n + 1) / 2.0));  // 1 + 2 + ... + n
    CHECK(d[1] == doctest::Approx(0.5 * n));
    CHECK(d[2] == doctest::Approx(-n * (n - 1) / 2.0));
    std::vector<float> f(1000, static_cast<float>(r));
    comm.all_reduce_sum(f);
    for (const float x : f) CHECK(x == doctest::Approx(n * (n - 1) / 2.0));
}

TEST_CASE("broadcast gives every rank the root's values, from any root") {
    rlflow::MpiCommunicator comm;
    for (int root = 0; root < comm.size(); ++root) {
        std::vector<double> d(7, static_cast<double>(comm.rank()));
        comm.broadcast(d, root);
        for (const double x : d) CHECK(x == static_cast<double>(root));
        std::vector<float> f{static_cast<float>(comm.rank()) + 0.25f};
        comm.broadcast(f, root);
        CHECK(f[0] == static_cast<float>(root) + 0.25f);
    }
}

TEST_CASE("broadcast_bytes carries any bytes and their length") {
    rlflow::MpiCommunicator comm;
    std::string bytes = comm.rank() == 0 ? std::string("agent\0json", 10) : std::string("something longer than that");
    comm.broadcast_bytes(bytes, 0);
    CHECK(bytes == std::string("agent\0json", 10));
    std::string empty = comm.rank() == 0 ? "" : "not empty";
    comm.broadcast_bytes(empty, 0);
    CHECK(empty.empty());
}

TEST_CASE("gather_bytes collects every rank's bytes in rank order at the root") {
    rlflow::MpiCommunicator comm;
    const std::vector<std::string> got = comm.gather_bytes(bytes_of(comm.rank()), 0);
    if (comm.rank() != 0) {
        CHECK(got.empty());
        return;
    }
    REQUIRE(got.size() == static_cast<std::size_t>(comm.size()));
    for (int r = 0; r < comm.size(); ++r) CHECK(got[static_cast<std::size_t>(r)] == bytes_of(r));
}

TEST_CASE("the ranks' shares cover the items once, in rank order") {
    rlflow::MpiCommunicator comm;
    for (const std::size_t count : std::vector<std::size_t>{0, 1, 5, 64}) {
        const auto [begin, end] = rlflow::rank_share(count, comm.rank(), comm.size());
        std::vector<double> taken(count, 0.0);
        for (std::size_t i = begin; i < end; ++i) taken[i] = 1.0;
        comm.all_reduce_sum(taken);
        for (const double t : taken) CHECK(t == 1.0);
    }
    comm.barrier();
}

TEST_CASE("MpiCommunicator is a Communicator and runs under mpiexec with several ranks") {
    static_assert(rlflow::Communicator<rlflow::MpiCommunicator>);
    rlflow::MpiCommunicator comm;
    CHECK(comm.size() >= 2);  // ctest starts 2; one rank would leave the collectives untested
    CHECK(comm.rank() < comm.size());
}
