#pragma once
/// \file
/// Writing output files so that a reader never sees a partial one: the bytes go to a
/// temporary file in the same directory, which is flushed and then renamed over the
/// target (rename is atomic within a file system), and the directory is synced. A writer
/// killed mid-write leaves only its temporary, which the next write of that file removes.

#include <rlflow/core/detail/fd_io.hpp>
#include <rlflow/core/error.hpp>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <csignal>
#include <fcntl.h>
#include <filesystem>
#include <string>
#include <string_view>
#include <system_error>
#include <unistd.h>

namespace rlflow {

namespace detail {

/// Removes the temporaries next to `path` (`NAME.tmp.PID.…`) that writers killed mid-write
/// left behind: those of processes that no longer run. Best effort.
inline void remove_stale_temporaries(const std::filesystem::path& path) {
    const std::string prefix = path.filename().string() + ".tmp.";
    const std::filesystem::path parent = path.has_parent_path() ? path.parent_path() : std::filesystem::path(".");
    std::error_code ec;
    for (std::filesystem::directory_iterator it(parent, ec), end; !ec && it != end; it.increment(ec)) {
        const std::string name = it->path().filename().string();
        if (!name.starts_with(prefix)) continue;
        const std::string pid_text = name.substr(prefix.size(), name.find('.', prefix.size()) - prefix.size());
        constexpr std::size_t pid_digits = 9;  // Linux pids stay below 2^22
        if (pid_text.empty() || pid_text.size() > pid_digits || pid_text.find_first_not_of("0123456789") != std::string::npos)
            continue;
        const long pid = std::stol(pid_text);
        if (pid == ::getpid() || ::kill(static_cast<::pid_t>(pid), 0) == 0 || errno != ESRCH) continue;
        std::error_code ignored;
        std::filesystem::remove(it->path(), ignored);
    }
}

}  // namespace detail

/// Writes `path` atomically: `write(fd)` fills a temporary file next to it and returns
/// whether it succeeded; the file is then synced and renamed into place. Throws io_error
/// naming the file on failure, and leaves neither a partial target nor the temporary.
template <class Writer>
void write_file_atomically_with(const std::filesystem::path& path, Writer&& write) {
    static std::atomic<unsigned> counter{0};
    const auto stamp = std::chrono::steady_clock::now().time_since_epoch().count();
    const std::filesystem::path temporary = path.string() + ".tmp." + std::to_string(::getpid()) + "."
                                            + std::to_string(stamp) + "." + std::to_string(counter++);
    constexpr int permissions = 0644;
    const int fd = ::open(temporary.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, permissions);
    if (fd < 0) throw io_error(path.string() + ": cannot create a temporary file next to it");
    bool written = false;
    try {
        written = write(fd);
    } catch (...) {  // not swallowed: the temporary is removed and the error goes on
        ::close(fd);
        std::error_code ignored;
        std::filesystem::remove(temporary, ignored);
        throw;
    }
    written = written && ::fsync(fd) == 0;
    const bool closed = ::close(fd) == 0;
    std::error_code ec;
    if (!written || !closed) {
        std::filesystem::remove(temporary, ec);
        throw io_error(path.string() + ": writing failed (disk full?)");
    }
    std::filesystem::rename(temporary, path, ec);
    if (ec) {
        const std::string why = ec.message();
        std::filesystem::remove(temporary, ec);
        throw io_error(path.string() + ": cannot rename the temporary file into place: " + why);
    }
    detail::remove_stale_temporaries(path);
    // The rename is a change to the directory: sync it too, so that after a crash the
    // directory names the new file. Best effort: some file systems refuse to sync a
    // directory, and the file itself is complete either way.
    const std::filesystem::path parent = path.has_parent_path() ? path.parent_path() : std::filesystem::path(".");
    const int directory = ::open(parent.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (directory >= 0) {
        ::fsync(directory);
        ::close(directory);
    }
}

/// Writes `bytes` to `path` atomically (see write_file_atomically_with).
inline void write_file_atomically(const std::filesystem::path& path, std::string_view bytes) {
    write_file_atomically_with(path, [&](int fd) { return detail::write_fully(fd, bytes); });
}

}  // namespace rlflow
