#pragma once
/// \file
/// Writing output files so that a reader never sees a partial one: the bytes go to a
/// temporary file in the same directory, which is flushed and then renamed over the
/// target (rename is atomic within a file system).

#include <rlflow/core/error.hpp>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <string>
#include <string_view>
#include <system_error>
#include <unistd.h>

namespace rlflow {

/// Writes `bytes` to `path` atomically. Throws io_error naming the file on failure, and
/// leaves neither a partial target nor the temporary file behind.
inline void write_file_atomically(const std::filesystem::path& path, std::string_view bytes) {
    static std::atomic<unsigned> counter{0};
    const auto stamp = std::chrono::steady_clock::now().time_since_epoch().count();
    const std::filesystem::path temporary = path.string() + ".tmp." + std::to_string(::getpid()) + "."
                                            + std::to_string(stamp) + "." + std::to_string(counter++);
    std::FILE* file = std::fopen(temporary.c_str(), "wb");
    if (!file) throw io_error(path.string() + ": cannot create a temporary file next to it");
    const bool written = std::fwrite(bytes.data(), 1, bytes.size(), file) == bytes.size() && std::fflush(file) == 0
                         && ::fsync(::fileno(file)) == 0;
    const bool closed = std::fclose(file) == 0;
    std::error_code ec;
    if (!written || !closed) {
        std::filesystem::remove(temporary, ec);
        throw io_error(path.string() + ": writing failed (disk full?)");
    }
    std::filesystem::rename(temporary, path, ec);
    if (ec) {
        std::filesystem::remove(temporary, ec);
        throw io_error(path.string() + ": cannot rename the temporary file into place");
    }
}

}  // namespace rlflow
