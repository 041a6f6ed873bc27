#pragma once
/// \file
/// A child process spoken to in lines: requests go to its standard input, one line each,
/// and answers come back on its standard output, one line each. Measuring backends run a
/// long-lived worker this way (the ONNX Runtime worker, tools/ort/worker.js), so that a
/// runtime is loaded once, not once per op.
///
/// The child's stdin and stdout are one end of a Unix socket pair each, not pipes: a
/// write to a child that has died then fails with EPIPE (send with MSG_NOSIGNAL) instead
/// of raising SIGPIPE, which would kill the caller; a library must not change the
/// process's signal dispositions. Its stderr is a pipe drained while waiting, of which
/// the last lines are kept for error messages. A child that exits, closes its output or
/// stays silent past the deadline makes the call throw, never hang.
///
/// The child runs in a process group of its own. Ctrl-C at a terminal sends SIGINT to
/// the whole foreground group; the caller handles it (a search stops and writes its best
/// graph, which it still measures with this worker), so the worker must not die of it.
/// The child still ends with the caller: its input closes when the caller exits.

#include <rlflow/core/error.hpp>

#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstring>
#include <fcntl.h>
#include <optional>
#include <poll.h>
#include <spawn.h>
#include <string>
#include <string_view>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>
#include <utility>
#include <vector>

extern char** environ;

namespace rlflow::cost::detail {

/// What went wrong with a worker: the message says what the caller was doing.
class WorkerFailure : public std::runtime_error {
public:
    using std::runtime_error::runtime_error;
};

/// A child process with line-based stdin/stdout and a captured stderr tail.
class WorkerProcess {
public:
    /// Starts `argv[0]` (searched on PATH) with arguments `argv[1..]`. Throws
    /// WorkerFailure when it cannot be started.
    explicit WorkerProcess(const std::vector<std::string>& argv) { spawn(argv); }
    WorkerProcess(const WorkerProcess&) = delete;
    WorkerProcess& operator=(const WorkerProcess&) = delete;
    ~WorkerProcess() { stop(); }

    /// Sends one line (a newline is appended). Throws WorkerFailure if the child is gone.
    void send_line(std::string_view line) {
        std::string bytes(line);
        bytes.push_back('\n');
        std::size_t sent = 0;
        while (sent < bytes.size()) {
            const ssize_t n = ::send(m_input, bytes.data() + sent, bytes.size() - sent, MSG_NOSIGNAL);
            if (n < 0 && errno == EINTR) continue;
            if (n <= 0) throw WorkerFailure("the worker stopped reading its input (" + exit_description() + ")" + stderr_note());
            sent += static_cast<std::size_t>(n);
        }
    }

    /// The next line the child writes, without its newline. Throws WorkerFailure when the
    /// child exits or closes its output first, or when `timeout_seconds` pass.
    [[nodiscard]] std::string read_line(double timeout_seconds) {
        const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(timeout_seconds);
        for (;;) {
            if (const auto end = m_output_buffer.find('\n'); end != std::string::npos) {
                std::string line = m_output_buffer.substr(0, end);
                m_output_buffer.erase(0, end + 1);
                return line;
            }
            if (m_output < 0) throw WorkerFailure("the worker exited (" + exit_description() + ")" + stderr_note());
            const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
            if (left.count() <= 0)
                throw WorkerFailure("the worker gave no answer within " + std::to_string(timeout_seconds) + " s" + stderr_note());
            wait_for_output(static_cast<int>(std::min<std::int64_t>(left.count(), poll_slice_ms)));
        }
    }

    /// The last lines the child wrote to stderr (at most stderr_tail_bytes).
    [[nodiscard]] const std::string& stderr_tail() const noexcept { return m_stderr; }
    /// Whether the child is still running (reaps it if it has exited).
    [[nodiscard]] bool running() {
        reap(false);
        return !m_status.has_value();
    }

    /// Closes the child's input, waits briefly for it to exit, then kills it.
    void stop() noexcept {
        if (m_pid <= 0) return;
        close_fd(m_input);
        for (int i = 0; i < exit_grace_polls && !m_status; ++i) {
            reap(false);
            if (!m_status) ::usleep(exit_grace_poll_us);
        }
        if (!m_status) {
            ::kill(m_pid, SIGKILL);
            reap(true);
        }
        close_fd(m_output);
        close_fd(m_error);
        m_pid = -1;
    }

private:
    static constexpr std::size_t stderr_tail_bytes = 4096;
    static constexpr int poll_slice_ms = 200;
    static constexpr int exit_grace_polls = 50;
    static constexpr useconds_t exit_grace_poll_us = 10000;

    static void close_fd(int& fd) noexcept {
        if (fd >= 0) ::close(fd);
        fd = -1;
    }

    void spawn(const std::vector<std::string>& argv) {
        RLFLOW_EXPECTS(!argv.empty(), precondition_error, "WorkerProcess: no command given");
        int input[2], output[2], error[2];
        if (::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, input) != 0
            || ::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, output) != 0 || ::pipe2(error, O_CLOEXEC) != 0)
            throw WorkerFailure(std::string("cannot create the worker's pipes: ") + std::strerror(errno));
        posix_spawn_file_actions_t actions;
        posix_spawn_file_actions_init(&actions);
        posix_spawn_file_actions_adddup2(&actions, input[1], STDIN_FILENO);
        posix_spawn_file_actions_adddup2(&actions, output[1], STDOUT_FILENO);
        posix_spawn_file_actions_adddup2(&actions, error[1], STDERR_FILENO);
        posix_spawnattr_t attributes;
        posix_spawnattr_init(&attributes);
        posix_spawnattr_setflags(&attributes, POSIX_SPAWN_SETPGROUP);
        posix_spawnattr_setpgroup(&attributes, 0);  // a new group, led by the child
        std::vector<char*> args;
        for (const std::string& a : argv) args.push_back(const_cast<char*>(a.c_str()));
        args.push_back(nullptr);
        const int failed = ::posix_spawnp(&m_pid, args[0], &actions, &attributes, args.data(), environ);
        posix_spawnattr_destroy(&attributes);
        posix_spawn_file_actions_destroy(&actions);
        ::close(input[1]);
        ::close(output[1]);
        ::close(error[1]);
        m_input = input[0];
        m_output = output[0];
        m_error = error[0];
        if (failed != 0) {
            m_pid = -1;
            close_fd(m_input);
            close_fd(m_output);
            close_fd(m_error);
            throw WorkerFailure("cannot start '" + argv[0] + "': " + std::strerror(failed));
        }
        ::fcntl(m_error, F_SETFL, ::fcntl(m_error, F_GETFL) | O_NONBLOCK);
    }

    /// Waits up to `timeout_ms` for output, draining stderr meanwhile.
    void wait_for_output(int timeout_ms) {
        pollfd fds[2] = {{m_output, POLLIN, 0}, {m_error, POLLIN, 0}};
        const int ready = ::poll(fds, m_error >= 0 ? 2 : 1, timeout_ms);
        if (ready < 0 && errno != EINTR) throw WorkerFailure(std::string("poll failed: ") + std::strerror(errno));
        if (m_error >= 0 && (fds[1].revents & (POLLIN | POLLHUP))) drain_stderr();
        if (fds[0].revents & (POLLIN | POLLHUP | POLLERR)) read_output();
    }

    void read_output() {
        char chunk[chunk_bytes];
        const ssize_t n = ::read(m_output, chunk, sizeof chunk);
        if (n > 0) {
            m_output_buffer.append(chunk, static_cast<std::size_t>(n));
            return;
        }
        if (n < 0 && errno == EINTR) return;
        // End of output: the child closed it or exited. Collect what it said last.
        close_fd(m_output);
        drain_stderr();
        reap_briefly();
    }

    void drain_stderr() {
        char chunk[chunk_bytes];
        for (;;) {
            const ssize_t n = ::read(m_error, chunk, sizeof chunk);
            if (n > 0) {
                m_stderr.append(chunk, static_cast<std::size_t>(n));
                continue;
            }
            if (n == 0) close_fd(m_error);
            break;
        }
        if (m_stderr.size() > stderr_tail_bytes) m_stderr.erase(0, m_stderr.size() - stderr_tail_bytes);
    }

    /// Reaps the child if it exits within a moment (so messages can give its status).
    void reap_briefly() {
        for (int i = 0; i < exit_grace_polls && !m_status; ++i) {
            reap(false);
            if (!m_status) ::usleep(exit_grace_poll_us);
        }
    }

    void reap(bool block) noexcept {
        if (m_pid <= 0 || m_status) return;
        int status = 0;
        const pid_t done = ::waitpid(m_pid, &status, block ? 0 : WNOHANG);
        if (done == m_pid) m_status = status;
    }

    [[nodiscard]] std::string exit_description() {
        reap_briefly();
        if (!m_status) return "still running, output closed";
        if (WIFEXITED(*m_status)) return "exit status " + std::to_string(WEXITSTATUS(*m_status));
        if (WIFSIGNALED(*m_status)) return "killed by signal " + std::to_string(WTERMSIG(*m_status));
        return "stopped";
    }
    [[nodiscard]] std::string stderr_note() {
        if (m_error >= 0) drain_stderr();
        std::string tail = m_stderr;
        while (!tail.empty() && (tail.back() == '\n' || tail.back() == ' ')) tail.pop_back();
        return tail.empty() ? std::string() : "; it said: " + tail;
    }

    static constexpr std::size_t chunk_bytes = 4096;
    pid_t m_pid = -1;
    int m_input = -1;
    int m_output = -1;
    int m_error = -1;
    std::optional<int> m_status;
    std::string m_output_buffer;
    std::string m_stderr;
};

}  // namespace rlflow::cost::detail
