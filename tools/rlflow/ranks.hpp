#pragma once
// The ranks a command runs on: under an MPI launcher (`mpirun -np K rlflow train ...`),
// MPI's world, when rlflow was built with RLFLOW_ENABLE_MPI; otherwise one process. MPI
// starts only for the commands that spread their work, and only under a launcher, so a
// plain run never initialises it.
//
// A rank that fails prints its error and then aborts the whole job (fail_ranks): the
// other ranks may be waiting for it in a collective, and would otherwise wait forever.

#include <rlflow/core/communicator.hpp>
#include <rlflow/core/error.hpp>
#if defined(RLFLOW_HAS_MPI)
#include <rlflow/core/mpi_communicator.hpp>
#endif

#include <cstdio>
#include <cstdlib>
#include <exception>
#include <memory>
#include <string>

#include <sched.h>

namespace rlflow::cli {

/// The rank count an MPI launcher started this process among (0: not started by one):
/// Open MPI's mpirun sets OMPI_COMM_WORLD_SIZE; MPICH's and Slurm's PMI launchers, PMI_SIZE.
[[nodiscard]] inline int launched_ranks() {
    for (const char* name : {"OMPI_COMM_WORLD_SIZE", "PMI_SIZE"})
        if (const char* value = std::getenv(name)) return std::atoi(value);
    return 0;
}

/// This process's ranks, for the life of a command.
class Ranks {
public:
    Ranks() {
        const int launched = launched_ranks();
        if (launched == 0) return;
#if defined(RLFLOW_HAS_MPI)
        m_session = std::make_unique<MpiSession>(nullptr, nullptr);
        m_mpi = std::make_unique<MpiCommunicator>();
        m_comm = AnyCommunicator(*m_mpi);
#else
        if (launched > 1)
            throw precondition_error("started as one of " + std::to_string(launched)
                                     + " MPI ranks, but this rlflow was built without MPI (install mpi-default-dev and "
                                       "build with RLFLOW_ENABLE_MPI=AUTO or ON)");
#endif
    }
    Ranks(const Ranks&) = delete;
    Ranks& operator=(const Ranks&) = delete;
    ~Ranks() {
#if defined(RLFLOW_HAS_MPI)
        // Failing: main reports the error and aborts the job (fail_ranks); finalising here
        // would wait for ranks that may never come.
        if (m_session && std::uncaught_exceptions() > 0) m_session->abandon();
#endif
    }

    /// On rank 0 of several, a warning when this rank may use fewer cores than the
    /// `threads` it runs: Open MPI binds each rank to one core by default (on 2 ranks or
    /// fewer), and the threads would share it.
    void warn_if_bound(unsigned threads) const {
        cpu_set_t cores;
        CPU_ZERO(&cores);
        if (size() == 1 || !root() || sched_getaffinity(0, sizeof cores, &cores) != 0) return;
        const auto allowed = static_cast<unsigned>(CPU_COUNT(&cores));
        if (allowed < threads)
            std::fprintf(stderr, "warning: each rank may use %u core(s) only (mpirun binds ranks to cores) for %u threads; start it "
                                 "with `mpirun --bind-to none ...` or `mpirun --map-by slot:PE=%u ...`\n",
                         allowed, threads, threads);
    }

    [[nodiscard]] AnyCommunicator& comm() noexcept { return m_comm; }
    [[nodiscard]] int rank() const { return m_comm.rank(); }
    [[nodiscard]] int size() const { return m_comm.size(); }
    /// Rank 0: the one that prints, shows progress and writes files.
    [[nodiscard]] bool root() const { return m_comm.rank() == 0; }

private:
#if defined(RLFLOW_HAS_MPI)
    std::unique_ptr<MpiSession> m_session;
    std::unique_ptr<MpiCommunicator> m_mpi;
#endif
    AnyCommunicator m_comm;
};

/// After a command failed with exit code `code` (its error already printed): under MPI with
/// other ranks, aborts the job with that code so that no rank waits for this one; else returns it.
[[nodiscard]] inline int fail_ranks(int code) {
#if defined(RLFLOW_HAS_MPI)
    int initialised = 0, finalised = 0;
    MPI_Initialized(&initialised);
    MPI_Finalized(&finalised);
    int size = 1;
    if (initialised && !finalised) MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (size > 1) MPI_Abort(MPI_COMM_WORLD, code);
#endif
    return code;
}

}  // namespace rlflow::cli
