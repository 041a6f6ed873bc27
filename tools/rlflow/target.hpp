#pragma once
// What `rlflow optimize` makes a model faster for (the target: this machine's CPU, or a
// GPU) and how it prices ops for it (the cost backend), chosen on purpose and named in
// the console and the report; and where measured op costs are cached between runs.

#include "cuda_loader.hpp"

#include <rlflow/cost/ort_worker.hpp>

#include <cctype>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <optional>
#include <string>

namespace rlflow::cli {

/// The CPU's model name (from /proc/cpuinfo), or "this machine's CPU".
inline std::string host_cpu_name() {
    std::ifstream in("/proc/cpuinfo");
    std::string line;
    const std::string key = "model name";
    while (std::getline(in, line))
        if (line.starts_with(key)) {
            const auto colon = line.find(':');
            if (colon != std::string::npos && colon + 2 <= line.size()) return line.substr(colon + 2);
        }
    return "this machine's CPU";
}

/// Whether a CUDA device can be used (a CUDA build with a visible GPU). Loads the CUDA
/// plugin only on a machine that shows an NVIDIA device.
inline bool gpu_available() {
    const LoadedCudaPlugin& plugin = cuda_plugin();
    return plugin.api && plugin.api->device_count() > 0;
}

/// The cost backend `--cost auto` means: cudnn with a GPU; else ort when ONNX Runtime
/// is installed (prices measured in the runtime the model will run in); else the
/// analytic roofline of this machine's CPU.
inline std::string automatic_cost_backend() {
    if (gpu_available()) return "cudnn";
    if (!cost::ort_unavailable_reason()) return "ort";
    return "analytic";
}

/// The analytic preset `--device auto` means: the GPU's when one is the target, else cpu.
inline std::string automatic_device() { return gpu_available() ? "v100" : "cpu"; }

/// A file name made of a backend's name: characters other than [A-Za-z0-9._-] become '_'.
inline std::string file_safe(std::string name) {
    for (char& c : name)
        if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '.' || c == '-' || c == '_')) c = '_';
    return name;
}

/// Where measured op costs of `backend_name` are cached by default:
/// $XDG_CACHE_HOME/rlflow, else ~/.cache/rlflow; nullopt when neither is set.
inline std::optional<std::filesystem::path> default_cost_cache(const std::string& backend_name) {
    std::filesystem::path dir;
    if (const char* xdg = std::getenv("XDG_CACHE_HOME"); xdg != nullptr && *xdg == '/') dir = std::filesystem::path(xdg) / "rlflow";
    else if (const char* home = std::getenv("HOME"); home != nullptr && *home == '/')
        dir = std::filesystem::path(home) / ".cache" / "rlflow";
    else return std::nullopt;
    return dir / ("costs-" + file_safe(backend_name) + ".bin");
}

}  // namespace rlflow::cli
