#pragma once
/// \file
/// MpiCommunicator: the Communicator concept over an MPI communicator (Open MPI from
/// Debian's mpi-default-dev), for programs run under `mpirun`. Needs rlflow built with
/// RLFLOW_ENABLE_MPI (the rlflow::mpi target); nothing else in rlflow includes <mpi.h>.
///
/// Failed calls throw io_error naming the call and MPI's message: the communicator
/// returns errors instead of aborting (MPI_ERRORS_RETURN), so a rank that lost a peer
/// unwinds, and its files stay as their atomic writers left them.

#include <rlflow/core/communicator.hpp>
#include <rlflow/core/error.hpp>

#include <mpi.h>

#include <algorithm>
#include <climits>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

namespace rlflow {

/// Initialises MPI for the life of the object (threads: only the main thread calls MPI),
/// unless something else already did, and finalises what it initialised.
class MpiSession {
public:
    MpiSession(int* argc, char*** argv) {
        int initialised = 0;
        MPI_Initialized(&initialised);
        if (initialised) return;
        int provided = 0;
        if (MPI_Init_thread(argc, argv, MPI_THREAD_FUNNELED, &provided) != MPI_SUCCESS)
            throw io_error("MPI_Init_thread failed");
        m_owner = true;
    }
    ~MpiSession() {
        int finalised = 0;
        MPI_Finalized(&finalised);
        if (m_owner && !finalised) MPI_Finalize();
    }
    MpiSession(const MpiSession&) = delete;
    MpiSession& operator=(const MpiSession&) = delete;
    /// Leaves MPI initialised at destruction: for a process that fails while other ranks
    /// may wait in a collective, and then aborts the job (MPI_Finalize would wait too).
    void abandon() noexcept { m_owner = false; }

private:
    bool m_owner = false;
};

/// The collectives on `comm` (MPI_COMM_WORLD by default); MPI must be initialised.
class MpiCommunicator {
public:
    explicit MpiCommunicator(MPI_Comm comm = MPI_COMM_WORLD) : m_comm(comm) {
        check(MPI_Comm_set_errhandler(m_comm, MPI_ERRORS_RETURN), "MPI_Comm_set_errhandler");
        check(MPI_Comm_rank(m_comm, &m_rank), "MPI_Comm_rank");
        check(MPI_Comm_size(m_comm, &m_size), "MPI_Comm_size");
    }

    [[nodiscard]] int rank() const noexcept { return m_rank; }
    [[nodiscard]] int size() const noexcept { return m_size; }

    void all_reduce_sum(std::span<double> values) { all_reduce(values.data(), values.size(), MPI_DOUBLE); }
    void all_reduce_sum(std::span<float> values) { all_reduce(values.data(), values.size(), MPI_FLOAT); }
    void broadcast(std::span<double> values, int root) { bcast(values.data(), values.size(), MPI_DOUBLE, root); }
    void broadcast(std::span<float> values, int root) { bcast(values.data(), values.size(), MPI_FLOAT, root); }

    /// The root's bytes, on every rank (their length travels first).
    void broadcast_bytes(std::string& bytes, int root) {
        std::uint64_t length = bytes.size();
        check(MPI_Bcast(&length, 1, MPI_UINT64_T, root, m_comm), "MPI_Bcast");
        bytes.resize(length);
        bcast(bytes.data(), bytes.size(), MPI_CHAR, root);
    }

    /// Every rank's bytes in rank order, at the root (the other ranks get an empty list).
    [[nodiscard]] std::vector<std::string> gather_bytes(const std::string& mine, int root) {
        RLFLOW_EXPECTS(mine.size() <= static_cast<std::size_t>(INT_MAX), precondition_error,
                       "MpiCommunicator::gather_bytes: over 2 GiB from one rank");
        const int length = static_cast<int>(mine.size());
        std::vector<int> lengths(m_rank == root ? static_cast<std::size_t>(m_size) : 0);
        check(MPI_Gather(&length, 1, MPI_INT, lengths.data(), 1, MPI_INT, root, m_comm), "MPI_Gather");
        std::vector<int> offsets(lengths.size());
        std::string all;
        if (m_rank == root) {
            long long total = 0;
            for (std::size_t r = 0; r < lengths.size(); ++r) {
                offsets[r] = static_cast<int>(total);
                total += lengths[r];
            }
            RLFLOW_EXPECTS(total <= INT_MAX, precondition_error, "MpiCommunicator::gather_bytes: over 2 GiB at the root");
            all.resize(static_cast<std::size_t>(total));
        }
        check(MPI_Gatherv(mine.data(), length, MPI_CHAR, all.data(), lengths.data(), offsets.data(), MPI_CHAR, root, m_comm),
              "MPI_Gatherv");
        std::vector<std::string> out;
        for (std::size_t r = 0; r < lengths.size(); ++r)
            out.push_back(all.substr(static_cast<std::size_t>(offsets[r]), static_cast<std::size_t>(lengths[r])));
        return out;
    }

    void barrier() { check(MPI_Barrier(m_comm), "MPI_Barrier"); }

private:
    /// MPI counts are ints: larger buffers go in chunks.
    static constexpr std::size_t chunk = INT_MAX / 2;

    void all_reduce(void* data, std::size_t count, MPI_Datatype type) {
        int width = 0;
        MPI_Type_size(type, &width);
        for (std::size_t done = 0; done < count; done += chunk) {
            const int n = static_cast<int>(std::min(chunk, count - done));
            check(MPI_Allreduce(MPI_IN_PLACE, static_cast<char*>(data) + done * static_cast<std::size_t>(width), n, type, MPI_SUM,
                                m_comm),
                  "MPI_Allreduce");
        }
    }
    void bcast(void* data, std::size_t count, MPI_Datatype type, int root) {
        int width = 0;
        MPI_Type_size(type, &width);
        for (std::size_t done = 0; done < count; done += chunk) {
            const int n = static_cast<int>(std::min(chunk, count - done));
            check(MPI_Bcast(static_cast<char*>(data) + done * static_cast<std::size_t>(width), n, type, root, m_comm), "MPI_Bcast");
        }
    }
    static void check(int code, const char* call) {
        if (code == MPI_SUCCESS) return;
        char text[MPI_MAX_ERROR_STRING];
        int length = 0;
        MPI_Error_string(code, text, &length);
        throw io_error(std::string(call) + " failed: " + std::string(text, static_cast<std::size_t>(length)));
    }

    MPI_Comm m_comm;
    int m_rank = 0;
    int m_size = 1;
};
static_assert(Communicator<MpiCommunicator>);

}  // namespace rlflow
