#pragma once
/// \file
/// Communicators: the collectives that data-parallel training, distributed evaluation and
/// distributed rule generation need (SPEC, "Scale-out"), as a concept with two models.
/// SingleProcess (here) is the default and needs nothing; MpiCommunicator
/// (core/mpi_communicator.hpp) runs the same code under `mpirun` when rlflow is built with
/// RLFLOW_ENABLE_MPI. Code written against the concept never includes <mpi.h>.
///
/// Every collective is called by every rank, in the same order, with the same root and
/// element counts: the MPI rule, which SingleProcess trivially keeps.

#include <rlflow/core/error.hpp>

#include <concepts>
#include <cstddef>
#include <span>
#include <string>
#include <utility>
#include <vector>

namespace rlflow {

/// What a communicator offers: its rank and size, in-place sums over all ranks, broadcasts
/// from a root, byte strings gathered at a root, and a barrier.
template <class C>
concept Communicator = requires(C& c, const C& cc, std::span<double> d, std::span<float> f, std::string& bytes,
                                const std::string& mine, int root) {
    { cc.rank() } -> std::same_as<int>;
    { cc.size() } -> std::same_as<int>;
    c.all_reduce_sum(d);
    c.all_reduce_sum(f);
    c.broadcast(d, root);
    c.broadcast(f, root);
    c.broadcast_bytes(bytes, root);
    { c.gather_bytes(mine, root) } -> std::same_as<std::vector<std::string>>;
    c.barrier();
};

/// One process: rank 0 of 1; every collective leaves the data as it is.
class SingleProcess {
public:
    [[nodiscard]] int rank() const noexcept { return 0; }
    [[nodiscard]] int size() const noexcept { return 1; }
    void all_reduce_sum(std::span<double>) noexcept {}
    void all_reduce_sum(std::span<float>) noexcept {}
    void broadcast(std::span<double>, int root) const { check_root(root); }
    void broadcast(std::span<float>, int root) const { check_root(root); }
    void broadcast_bytes(std::string&, int root) const { check_root(root); }
    /// {mine}: the one rank's bytes, at the root.
    [[nodiscard]] std::vector<std::string> gather_bytes(const std::string& mine, int root) const {
        check_root(root);
        return {mine};
    }
    void barrier() noexcept {}

private:
    static void check_root(int root) {
        RLFLOW_EXPECTS(root == 0, precondition_error, "SingleProcess: root " + std::to_string(root) + " is not a rank (size 1)");
    }
};
static_assert(Communicator<SingleProcess>);

/// The items [first, second) of `count` that rank `rank` of `size` takes: contiguous shares
/// in rank order whose sizes differ by at most one, the larger ones first.
[[nodiscard]] inline std::pair<std::size_t, std::size_t> rank_share(std::size_t count, int rank, int size) {
    RLFLOW_EXPECTS(size >= 1 && rank >= 0 && rank < size, precondition_error,
                   "rank_share: rank " + std::to_string(rank) + " of " + std::to_string(size));
    const auto r = static_cast<std::size_t>(rank), n = static_cast<std::size_t>(size);
    const std::size_t base = count / n, extra = count % n;
    const std::size_t begin = r * base + std::min(r, extra);
    return {begin, begin + base + (r < extra ? 1 : 0)};
}

}  // namespace rlflow
