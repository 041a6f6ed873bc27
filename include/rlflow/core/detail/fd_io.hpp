#pragma once
/// \file
/// Writing a whole buffer to a file descriptor, retrying on EINTR and short writes.

#include <cerrno>
#include <cstddef>
#include <string_view>
#include <unistd.h>

namespace rlflow::detail {

/// Writes all of `bytes` to `fd`; returns false when a write fails or writes nothing.
inline bool write_fully(int fd, std::string_view bytes) {
    std::size_t done = 0;
    while (done < bytes.size()) {
        const ::ssize_t n = ::write(fd, bytes.data() + done, bytes.size() - done);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) return false;
        done += static_cast<std::size_t>(n);
    }
    return true;
}

}  // namespace rlflow::detail
