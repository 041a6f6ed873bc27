#pragma once
// What rlflow's programs (the CLI, the Python module, a program on the library's
// front door) and its CUDA plugin (tools/rlflow/cuda_plugin.cpp and cuda_graph_runner.cu,
// built as librlflow_cuda_plugin.so) share. The cuDNN/cuBLAS cost backend and the whole-graph CUDA
// executor live in the plugin, which a program loads only when a run needs a GPU
// (cuda_plugin_loader.hpp): linked into the CLI, the CUDA libraries took 215 MB of memory at
// start, in every run, on machines with no GPU too.
//
// Both sides are built together, by the same compiler, from these headers: the plugin's
// entry point passes C++ types (and exceptions) across, which is safe for this pair only.

#include <rlflow/core/graph.hpp>
#include <rlflow/cost/cost_backend.hpp>

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

namespace rlflow::cost {

/// A cost backend behind a virtual call (one per op priced: nothing beside a GPU timing).
class GpuCostBackend {
public:
    GpuCostBackend() = default;
    GpuCostBackend(const GpuCostBackend&) = delete;
    GpuCostBackend& operator=(const GpuCostBackend&) = delete;
    virtual ~GpuCostBackend() = default;
    [[nodiscard]] virtual double op_cost_ms(const OpSignature& op) = 0;
    [[nodiscard]] virtual std::string name() const = 0;
};

/// Whole graphs run and timed on a GPU by cost::CudaExecutor, behind virtual calls.
class GpuGraphRunner {
public:
    GpuGraphRunner() = default;
    GpuGraphRunner(const GpuGraphRunner&) = delete;
    GpuGraphRunner& operator=(const GpuGraphRunner&) = delete;
    virtual ~GpuGraphRunner() = default;
    /// Each graph's replay times in ms, round by round interleaved, after `warmup` untimed
    /// rounds; inputs (and weights without data) random under `seed`.
    [[nodiscard]] virtual std::vector<std::vector<double>> time_interleaved(const std::vector<const Graph*>& graphs, int warmup,
                                                                          int rounds, std::uint64_t seed) = 0;
    /// The outputs of `g` on `inputs`, as the timed replays compute them.
    [[nodiscard]] virtual std::vector<Tensor> run(const Graph& g, std::span<const Tensor> inputs) = 0;
    /// "cuda:<device name>:fp32".
    [[nodiscard]] virtual std::string name() const = 0;
};

/// The plugin's functions.
struct CudaPluginApi {
    /// Bumped when this struct, GpuCostBackend or GpuGraphRunner changes: a plugin of
    /// another version is refused, never called.
    static constexpr int current_version = 2;
    int version = current_version;
    /// The number of CUDA devices; 0 without a GPU or a usable driver.
    int (*device_count)() noexcept = nullptr;
    /// The cuDNN/cuBLAS profiler of a device (fp32 math); throws rlflow errors.
    std::unique_ptr<GpuCostBackend> (*make_profiler)(int device) = nullptr;
    /// The whole-graph executor of a device (fp32 math); throws rlflow errors.
    std::unique_ptr<GpuGraphRunner> (*make_graph_runner)(int device) = nullptr;
};

/// Defined in cuda_graph_runner.cu (nvcc): the plugin's make_graph_runner.
[[nodiscard]] std::unique_ptr<GpuGraphRunner> make_cuda_graph_runner(int device);

/// The plugin's one exported symbol: a function returning its CudaPluginApi.
inline constexpr const char* cuda_plugin_entry = "rlflow_cuda_plugin_api";
using CudaPluginEntry = const CudaPluginApi* (*)();

}  // namespace rlflow::cost
