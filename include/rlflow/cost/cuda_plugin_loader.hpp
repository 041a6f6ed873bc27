#pragma once
// Loads rlflow's CUDA plugin (cuda_plugin.hpp) the first time a run needs a GPU, and
// never otherwise: a CPU-only run (the default on a machine with no NVIDIA device node)
// maps no CUDA library, and a machine without them runs everything but `--cost cudnn`.

#include <rlflow/cost/cost_backend.hpp>
#include <rlflow/cost/cuda_plugin.hpp>

#include <dlfcn.h>

#include <array>
#include <cstdlib>
#include <filesystem>
#include <memory>
#include <string>
#include <system_error>
#include <utility>
#include <vector>

namespace rlflow::cost {

// The plugin's file name, the install's library directory relative to the program's, and
// the plugin's installed and built paths (set by tools/CMakeLists.txt where CUDA is found).
#if defined(RLFLOW_CUDA_PLUGIN_NAME)
inline constexpr bool cuda_plugin_built = true;
inline constexpr const char* cuda_plugin_file = RLFLOW_CUDA_PLUGIN_NAME;
inline constexpr std::array<const char*, 2> cuda_plugin_fixed_paths{RLFLOW_CUDA_PLUGIN_INSTALLED, RLFLOW_CUDA_PLUGIN_BUILT};
inline constexpr const char* cuda_plugin_install_dir = RLFLOW_CUDA_PLUGIN_INSTALL_DIR;
#else
inline constexpr bool cuda_plugin_built = false;
inline constexpr const char* cuda_plugin_file = "librlflow_cuda_plugin.so";
inline constexpr std::array<const char*, 0> cuda_plugin_fixed_paths{};
inline constexpr const char* cuda_plugin_install_dir = "../lib/rlflow";
#endif

/// The file this code was loaded from: the program, or the Python module.
[[nodiscard]] inline std::filesystem::path this_binary() {
    Dl_info info{};
    if (dladdr(reinterpret_cast<const void*>(&this_binary), &info) == 0 || !info.dli_fname) return {};
    std::error_code ec;
    const std::filesystem::path path = std::filesystem::canonical(info.dli_fname, ec);
    return ec ? std::filesystem::path(info.dli_fname) : path;
}

/// Whether the NVIDIA driver shows a device to processes here (its control node, or
/// WSL's GPU node): checked before loading the plugin, so that no CUDA library is mapped
/// to find that there is no GPU.
inline bool gpu_device_node_present() {
    std::error_code ec;
    for (const char* node : {"/dev/nvidiactl", "/dev/nvidia0", "/dev/dxg"})
        if (std::filesystem::exists(node, ec)) return true;
    return false;
}

/// Where the plugin may be, in order: $RLFLOW_CUDA_PLUGIN; beside the program (or Python
/// module) that loads it; the install's library directory relative to it; where it was
/// installed; where it was built.
inline std::vector<std::filesystem::path> cuda_plugin_candidates() {
    std::vector<std::filesystem::path> paths;
    if (const char* chosen = std::getenv("RLFLOW_CUDA_PLUGIN"); chosen && *chosen) paths.emplace_back(chosen);
    if (const std::filesystem::path self = this_binary(); !self.empty()) {
        paths.push_back(self.parent_path() / cuda_plugin_file);
        paths.push_back(self.parent_path() / cuda_plugin_install_dir / cuda_plugin_file);
    }
    for (const char* path : cuda_plugin_fixed_paths) paths.emplace_back(path);
    return paths;
}

/// The loaded plugin's functions, or why there are none.
struct LoadedCudaPlugin {
    const CudaPluginApi* api = nullptr;
    std::string reason;
};

/// Opens the first candidate that is a plugin of this version; the library stays loaded
/// for the life of the process.
[[nodiscard]] inline LoadedCudaPlugin open_cuda_plugin() {
    LoadedCudaPlugin out;
    for (const std::filesystem::path& path : cuda_plugin_candidates()) {
        std::error_code ec;
        if (!std::filesystem::exists(path, ec)) continue;
        void* library = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
        if (!library) {
            const char* error = dlerror();
            out.reason = "the CUDA plugin " + path.string() + " could not be loaded: " + (error ? error : "unknown error");
            continue;
        }
        const auto entry = reinterpret_cast<CudaPluginEntry>(dlsym(library, cuda_plugin_entry));
        const CudaPluginApi* api = entry ? entry() : nullptr;
        if (!api || api->version != CudaPluginApi::current_version) {
            out.reason = path.string() + " is not a CUDA plugin of this rlflow";
            dlclose(library);
            continue;
        }
        return {api, {}};
    }
    if (out.reason.empty())
        out.reason = std::string("the CUDA plugin (") + cuda_plugin_file
                     + ") was not found beside rlflow, in its library directories, or at $RLFLOW_CUDA_PLUGIN";
    return out;
}

/// The CUDA plugin, loaded on the first call when this rlflow has one and the machine shows
/// a GPU; otherwise why not (for error messages).
[[nodiscard]] inline const LoadedCudaPlugin& cuda_plugin() {
    static const LoadedCudaPlugin loaded = [] {
        if (!cuda_plugin_built) return LoadedCudaPlugin{nullptr, "rlflow was built without CUDA (RLFLOW_ENABLE_CUDA)"};
        if (!gpu_device_node_present()) return LoadedCudaPlugin{nullptr, "this machine shows no NVIDIA GPU (no /dev/nvidiactl)"};
        return open_cuda_plugin();
    }();
    return loaded;
}

/// The plugin's profiler as a CostBackend (a value, as the searches take backends).
class PluginCostBackend {
public:
    explicit PluginCostBackend(std::unique_ptr<GpuCostBackend> backend) : m_backend(std::move(backend)) {}
    [[nodiscard]] double op_cost_ms(const OpSignature& op) { return m_backend->op_cost_ms(op); }
    [[nodiscard]] std::string name() const { return m_backend->name(); }

private:
    std::unique_ptr<GpuCostBackend> m_backend;
};
static_assert(CostBackend<PluginCostBackend>);

}  // namespace rlflow::cost
