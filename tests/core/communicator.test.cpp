#include <doctest/doctest.h>

#include <rlflow/core/communicator.hpp>

#include <algorithm>
#include <string>
#include <vector>

TEST_CASE("SingleProcess is rank 0 of 1 and leaves data as it is") {
    rlflow::SingleProcess comm;
    static_assert(rlflow::Communicator<rlflow::SingleProcess>);
    CHECK(comm.rank() == 0);
    CHECK(comm.size() == 1);
    std::vector<double> d{1.5, -2};
    comm.all_reduce_sum(d);
    comm.broadcast(d, 0);
    CHECK(d == std::vector<double>{1.5, -2});
    std::string bytes("a\0b", 3);
    comm.broadcast_bytes(bytes, 0);
    CHECK(bytes == std::string("a\0b", 3));
    CHECK(comm.gather_bytes(bytes, 0) == std::vector<std::string>{bytes});
    CHECK_THROWS_AS(comm.broadcast(d, 1), rlflow::precondition_error);
}

TEST_CASE("rank shares cover every item once, in rank order, sizes within one") {
    for (std::size_t count = 0; count < 40; ++count)
        for (int size = 1; size <= 9; ++size) {
            std::size_t next = 0, previous = count;
            for (int rank = 0; rank < size; ++rank) {
                const auto [begin, end] = rlflow::rank_share(count, rank, size);
                CHECK(begin == next);  // contiguous, in rank order
                CHECK(end - begin <= previous);  // the larger shares first
                CHECK(end - begin + 1 >= (count + static_cast<std::size_t>(size) - 1) / static_cast<std::size_t>(size));
                next = end;
                previous = end - begin;
            }
            CHECK(next == count);
        }
    CHECK(rlflow::rank_share(10, 0, 3) == std::pair<std::size_t, std::size_t>{0, 4});
    CHECK(rlflow::rank_share(10, 2, 3) == std::pair<std::size_t, std::size_t>{7, 10});
    CHECK_THROWS_AS((void)rlflow::rank_share(10, 3, 3), rlflow::precondition_error);
}
