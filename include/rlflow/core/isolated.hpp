#pragma once
/// \file
/// Running work that may crash in a child process. Some third-party code rlflow calls on
/// untrusted input (ONNX shape inference in libonnx) can crash or hang on malformed
/// models; run in a forked child, such a failure costs the child, and the caller gets a
/// status it can turn into an error. The child shares nothing with the parent afterwards:
/// it writes its result to a pipe and ends with _exit, running no exit handlers.

#include <rlflow/core/detail/fd_io.hpp>

#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <exception>
#include <fcntl.h>
#include <poll.h>
#include <string>
#include <string_view>
#include <sys/wait.h>
#include <unistd.h>

namespace rlflow {

/// How isolated work ended.
struct IsolatedResult {
    enum class Status {
        Ok,        ///< the work returned; `bytes` holds its result
        Failed,    ///< the work threw; `bytes` holds the exception's message
        Crashed,   ///< the child died (a signal, a sanitizer report, an abort)
        TimedOut,  ///< the child ran past the limit and was killed
        Unstarted  ///< no child could be started (fork failed)
    };
    Status status = Status::Unstarted;
    std::string bytes;
};

namespace detail {

/// Reads `fd` to its end or until `deadline`; returns false on the deadline.
inline bool read_until(int fd, std::string& out, std::chrono::steady_clock::time_point deadline) {
    constexpr std::size_t chunk = 1 << 16;
    char buffer[chunk];
    for (;;) {
        const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
        if (left.count() <= 0) return false;
        ::pollfd p{fd, POLLIN, 0};
        const int ready = ::poll(&p, 1, static_cast<int>(left.count()));
        if (ready < 0 && errno == EINTR) continue;
        if (ready <= 0) return ready < 0;  // an error reads as the end; a timeout is a timeout
        const ::ssize_t n = ::read(fd, buffer, chunk);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) return true;
        out.append(buffer, static_cast<std::size_t>(n));
    }
}

[[noreturn]] inline void child_main(int fd, auto& work) {
    // A crash here is possible and is the parent's to report: the crash handlers the
    // parent installed (a test framework's, a sanitizer's) are not run, and the child
    // writes nothing to the parent's streams.
    for (const int signal : {SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT}) std::signal(signal, SIG_DFL);
    const int null = ::open("/dev/null", O_WRONLY | O_CLOEXEC);
    if (null >= 0) {
        ::dup2(null, STDOUT_FILENO);
        ::dup2(null, STDERR_FILENO);
    }
    char tag = 'E';
    std::string payload;
    try {
        payload = work();
        tag = 'O';
    } catch (const std::exception& e) {
        payload = e.what();
    } catch (...) {
        payload = "unknown exception";
    }
    // A failed write leaves the parent a short or empty result, which it reports as a crash.
    if (write_fully(fd, std::string_view(&tag, 1))) (void)write_fully(fd, payload);
    ::_exit(0);
}

}  // namespace detail

/// Runs `work` (returning std::string) in a forked child and returns how it ended. The
/// child is killed once `limit` has passed. Call only where forking is safe: a child of a
/// multi-threaded process may use only what no other thread held locked at the fork
/// (glibc's malloc is safe), and must not start threads.
template <class Work>
[[nodiscard]] IsolatedResult run_isolated(Work&& work, std::chrono::milliseconds limit) {
    int fds[2];
    if (::pipe2(fds, O_CLOEXEC) != 0) return {};
    std::fflush(nullptr);  // buffered output would otherwise be written twice
    const ::pid_t pid = ::fork();
    if (pid < 0) {
        ::close(fds[0]);
        ::close(fds[1]);
        return {};
    }
    if (pid == 0) {
        ::close(fds[0]);
        detail::child_main(fds[1], work);
    }
    ::close(fds[1]);
    std::string out;
    const bool finished = detail::read_until(fds[0], out, std::chrono::steady_clock::now() + limit);
    ::close(fds[0]);
    if (!finished) ::kill(pid, SIGKILL);
    int status = 0;
    while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
    }
    IsolatedResult result;
    if (!finished) {
        result.status = IsolatedResult::Status::TimedOut;
    } else if (!WIFEXITED(status) || WEXITSTATUS(status) != 0 || out.empty()) {
        result.status = IsolatedResult::Status::Crashed;
    } else {
        result.status = out[0] == 'O' ? IsolatedResult::Status::Ok : IsolatedResult::Status::Failed;
        result.bytes = out.substr(1);
    }
    return result;
}

}  // namespace rlflow
