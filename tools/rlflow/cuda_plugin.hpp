#pragma once
// What the CLI and its CUDA plugin (cuda_plugin.cpp, built as librlflow_cuda_plugin.so)
// share. The cuDNN/cuBLAS cost backend lives in the plugin, which the CLI loads only when
// a run needs a GPU (cuda_loader.hpp): linked into the CLI, the CUDA libraries took
// 215 MB of memory at start, in every run, on machines with no GPU too.
//
// Both sides are built together, by the same compiler, from these headers: the plugin's
// entry point passes C++ types (and exceptions) across, which is safe for this pair only.

#include <rlflow/cost/cost_backend.hpp>

#include <memory>
#include <string>

namespace rlflow::cli {

/// A cost backend behind a virtual call (one per op priced: nothing beside a GPU timing).
class GpuCostBackend {
public:
    GpuCostBackend() = default;
    GpuCostBackend(const GpuCostBackend&) = delete;
    GpuCostBackend& operator=(const GpuCostBackend&) = delete;
    virtual ~GpuCostBackend() = default;
    [[nodiscard]] virtual double op_cost_ms(const cost::OpSignature& op) = 0;
    [[nodiscard]] virtual std::string name() const = 0;
};

/// The plugin's functions.
struct CudaPluginApi {
    /// Bumped when this struct or GpuCostBackend changes: a plugin of another version is
    /// refused, never called.
    static constexpr int current_version = 1;
    int version = current_version;
    /// The number of CUDA devices; 0 without a GPU or a usable driver.
    int (*device_count)() noexcept = nullptr;
    /// The cuDNN/cuBLAS profiler of a device (fp32 math); throws rlflow errors.
    std::unique_ptr<GpuCostBackend> (*make_profiler)(int device) = nullptr;
};

/// The plugin's one exported symbol: a function returning its CudaPluginApi.
inline constexpr const char* cuda_plugin_entry = "rlflow_cuda_plugin_api";
using CudaPluginEntry = const CudaPluginApi* (*)();

}  // namespace rlflow::cli
