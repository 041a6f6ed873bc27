#pragma once
// Checks of the paths a command will write, made before any work starts, so that a search
// of minutes never ends in "cannot create a temporary file" or half a success (a model
// written, then no report).

#include <rlflow/core/error.hpp>

#include <unistd.h>

#include <filesystem>
#include <string>
#include <string_view>

namespace rlflow::cli {

/// Throws io_error, naming `what` (e.g. "--report") and the path, when `path` cannot be
/// written: its directory is missing or is not a directory or not writable, or the path
/// itself is a directory. An empty path (the output is optional and not asked for) passes.
inline void check_output_path(const std::string& path, std::string_view what) {
    if (path.empty()) return;
    const std::filesystem::path file(path);
    const std::string where = std::string(what) + " '" + path + "'";
    std::error_code ec;
    if (std::filesystem::is_directory(file, ec)) throw io_error(where + " is a directory; give a file name");
    const std::filesystem::path parent = file.has_parent_path() ? file.parent_path() : std::filesystem::path(".");
    if (!std::filesystem::exists(parent, ec))
        throw io_error(where + ": the directory '" + parent.string() + "' does not exist");
    if (!std::filesystem::is_directory(parent, ec))
        throw io_error(where + ": '" + parent.string() + "' is not a directory");
    if (::access(parent.c_str(), W_OK) != 0)
        throw io_error(where + ": the directory '" + parent.string() + "' is not writable");
    if (std::filesystem::exists(file, ec) && ::access(file.c_str(), W_OK) != 0)
        throw io_error(where + ": the file exists and is not writable");
}

/// Throws io_error when `path`, a directory a command reads files from, is missing or is
/// not a directory. Empty passes.
inline void check_input_directory(const std::string& path, std::string_view what) {
    if (path.empty()) return;
    std::error_code ec;
    if (!std::filesystem::exists(path, ec)) throw io_error(std::string(what) + " '" + path + "': no such directory");
    if (!std::filesystem::is_directory(path, ec))
        throw io_error(std::string(what) + " '" + path + "' is a file; give the directory that holds the .pb tensors");
}

}  // namespace rlflow::cli
