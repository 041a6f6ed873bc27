#pragma once
// Running the built `rlflow` program as a user would, for the CLI tests.
#include <doctest/doctest.h>

#include <array>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <sys/wait.h>

namespace rlflow::cli_test {

/// The bytes of `path` (empty if it cannot be read).
inline std::string read_file(const std::filesystem::path& path) {
    std::ifstream in(path, std::ios::binary);
    return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

struct Result {
    int exit_code;
    std::string output;
};

/// Runs `rlflow <arguments>`, capturing stdout and stderr together.
inline Result run_cli(const std::string& arguments, bool merge_stderr = true, const std::string& environment = "") {
    const std::string command = environment + (environment.empty() ? "" : " ") + std::string(RLFLOW_CLI_PATH) + " " + arguments
                                + (merge_stderr ? " 2>&1" : " 2>/dev/null");
    FILE* pipe = popen(command.c_str(), "r");
    REQUIRE(pipe != nullptr);
    std::string output;
    std::array<char, 4096> buffer{};
    while (const std::size_t n = std::fread(buffer.data(), 1, buffer.size(), pipe)) output.append(buffer.data(), n);
    const int status = pclose(pipe);
    return {WIFEXITED(status) ? WEXITSTATUS(status) : -1, output};
}
/// Whether ONNX Runtime (node and tools/ort/node_modules) is here; says "skipped" if not.
inline bool ort_installed() {
    const bool here = std::filesystem::is_directory(std::string(RLFLOW_SOURCE_DIR) + "/tools/ort/node_modules/onnxruntime-node")
                      && std::system("command -v node >/dev/null 2>&1") == 0;
    if (!here) MESSAGE("skipped: ONNX Runtime (node, tools/ort/node_modules) is not installed");
    return here;
}

/// A fresh, empty folder under the system's temporary folder, removed with what it holds.
struct ScratchDir {
    explicit ScratchDir(const std::string& name) : path(std::filesystem::temp_directory_path() / name) {
        std::filesystem::remove_all(path);
        std::filesystem::create_directories(path);
    }
    ScratchDir(const ScratchDir&) = delete;
    ScratchDir& operator=(const ScratchDir&) = delete;
    ~ScratchDir() {
        std::error_code ignored;
        std::filesystem::remove_all(path, ignored);
    }
    [[nodiscard]] std::string file(const std::string& name) const { return (path / name).string(); }
    std::filesystem::path path;
};

}  // namespace rlflow::cli_test
