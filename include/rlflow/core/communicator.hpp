#pragma once
/// \file
/// Communicators: the collectives that data-parallel training, distributed evaluation and
/// distributed rule generation need (docs/scale-out.md), as a concept with two models.
/// SingleProcess (here) is the default and needs nothing; MpiCommunicator
/// (core/mpi_communicator.hpp) runs the same code under `mpirun` when rlflow is built with
/// RLFLOW_ENABLE_MPI. Code written against the concept never includes <mpi.h>.
///
/// Every collective is called by every rank, in the same order, with the same root and
/// element counts: the MPI rule, which SingleProcess trivially keeps.

#include <rlflow/core/error.hpp>

#include <array>
#include <concepts>
#include <cstddef>
#include <cstring>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <type_traits>
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

/// Any Communicator behind one type, so that code takes "the ranks" without being a
/// template over them: a reference (the communicator outlives it and its copies). The
/// default is a single process. A virtual call per collective costs nothing beside the
/// collective.
class AnyCommunicator {
public:
    AnyCommunicator() : AnyCommunicator(single_process()) {}
    template <Communicator C>
        requires(!std::same_as<C, AnyCommunicator>)
    explicit AnyCommunicator(C& comm) : m_self(std::make_shared<Model<C>>(comm)) {}

    [[nodiscard]] int rank() const { return m_self->rank(); }
    [[nodiscard]] int size() const { return m_self->size(); }
    void all_reduce_sum(std::span<double> v) { m_self->all_reduce_sum(v); }
    void all_reduce_sum(std::span<float> v) { m_self->all_reduce_sum(v); }
    void broadcast(std::span<double> v, int root) { m_self->broadcast(v, root); }
    void broadcast(std::span<float> v, int root) { m_self->broadcast(v, root); }
    void broadcast_bytes(std::string& bytes, int root) { m_self->broadcast_bytes(bytes, root); }
    [[nodiscard]] std::vector<std::string> gather_bytes(const std::string& mine, int root) { return m_self->gather_bytes(mine, root); }
    void barrier() { m_self->barrier(); }

private:
    struct Interface {
        virtual ~Interface() = default;
        [[nodiscard]] virtual int rank() const = 0;
        [[nodiscard]] virtual int size() const = 0;
        virtual void all_reduce_sum(std::span<double>) = 0;
        virtual void all_reduce_sum(std::span<float>) = 0;
        virtual void broadcast(std::span<double>, int) = 0;
        virtual void broadcast(std::span<float>, int) = 0;
        virtual void broadcast_bytes(std::string&, int) = 0;
        [[nodiscard]] virtual std::vector<std::string> gather_bytes(const std::string&, int) = 0;
        virtual void barrier() = 0;
    };
    template <class C>
    struct Model final : Interface {
        explicit Model(C& c) : comm(c) {}
        int rank() const override { return comm.rank(); }
        int size() const override { return comm.size(); }
        void all_reduce_sum(std::span<double> v) override { comm.all_reduce_sum(v); }
        void all_reduce_sum(std::span<float> v) override { comm.all_reduce_sum(v); }
        void broadcast(std::span<double> v, int root) override { comm.broadcast(v, root); }
        void broadcast(std::span<float> v, int root) override { comm.broadcast(v, root); }
        void broadcast_bytes(std::string& bytes, int root) override { comm.broadcast_bytes(bytes, root); }
        std::vector<std::string> gather_bytes(const std::string& mine, int root) override { return comm.gather_bytes(mine, root); }
        void barrier() override { comm.barrier(); }
        C& comm;
    };
    /// Stateless, so one serves every default AnyCommunicator.
    static SingleProcess& single_process() {
        static SingleProcess one;
        return one;
    }
    std::shared_ptr<Interface> m_self;
};
static_assert(Communicator<AnyCommunicator>);

/// Every rank's `mine`, in rank order, on every rank (a gather at rank 0 and a broadcast).
template <Communicator C>
[[nodiscard]] std::vector<std::string> all_gather_bytes(C& comm, const std::string& mine) {
    std::vector<std::string> parts = comm.gather_bytes(mine, 0);
    std::vector<double> lengths(static_cast<std::size_t>(comm.size()));
    std::string joined;
    for (std::size_t r = 0; r < parts.size(); ++r) {
        lengths[r] = static_cast<double>(parts[r].size());
        joined += std::exchange(parts[r], {});  // each part freed once joined: large gathers hold two copies at most
    }
    comm.broadcast(std::span<double>(lengths), 0);
    comm.broadcast_bytes(joined, 0);
    std::vector<std::string> out;
    std::size_t offset = 0;
    for (const double length : lengths) {
        out.push_back(joined.substr(offset, static_cast<std::size_t>(length)));
        offset += static_cast<std::size_t>(length);
    }
    return out;
}

/// Whether `flag` holds on any rank (every rank gets the same answer).
template <Communicator C>
[[nodiscard]] bool on_any_rank(C& comm, bool flag) {
    std::array<double, 1> count{flag ? 1.0 : 0.0};
    comm.all_reduce_sum(std::span<double>(count));
    return count[0] > 0;
}

/// Trivially copyable values as bytes, and back (for what ranks exchange with
/// gather_bytes: the same program on every rank, so the same layout).
template <class T>
    requires std::is_trivially_copyable_v<T>
[[nodiscard]] std::string to_bytes(std::span<const T> values) {
    std::string bytes(values.size_bytes(), '\0');
    if (!values.empty()) std::memcpy(bytes.data(), values.data(), values.size_bytes());
    return bytes;
}
template <class T>
    requires std::is_trivially_copyable_v<T>
[[nodiscard]] std::vector<T> from_bytes(std::string_view bytes) {
    RLFLOW_EXPECTS(bytes.size() % sizeof(T) == 0, precondition_error,
                   "from_bytes: " + std::to_string(bytes.size()) + " bytes are not whole values of " + std::to_string(sizeof(T)));
    std::vector<T> values(bytes.size() / sizeof(T));
    if (!values.empty()) std::memcpy(values.data(), bytes.data(), bytes.size());
    return values;
}

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
