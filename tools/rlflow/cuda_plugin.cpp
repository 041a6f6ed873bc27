// rlflow's CUDA plugin (librlflow_cuda_plugin.so): the cuDNN/cuBLAS profiler behind the
// interface of rlflow/cost/cuda_plugin.hpp, and its entry point. With cuda_graph_runner.cu (the
// whole-graph executor, compiled by nvcc), the only code of the programs that links CUDA.

#include <rlflow/cost/cuda_plugin.hpp>
#include <rlflow/cost/cudnn_profiler.hpp>

#include <memory>
#include <string>

namespace {

class PluginProfiler final : public rlflow::cost::GpuCostBackend {
public:
    explicit PluginProfiler(int device) : m_profiler(device) {}
    [[nodiscard]] double op_cost_ms(const rlflow::cost::OpSignature& op) override { return m_profiler.op_cost_ms(op); }
    [[nodiscard]] std::string name() const override { return m_profiler.name(); }

private:
    rlflow::cost::CudnnProfiler m_profiler;
};

int device_count() noexcept { return rlflow::cost::CudnnProfiler::device_count(); }

std::unique_ptr<rlflow::cost::GpuCostBackend> make_profiler(int device) { return std::make_unique<PluginProfiler>(device); }

const rlflow::cost::CudaPluginApi api{rlflow::cost::CudaPluginApi::current_version, &device_count, &make_profiler,
                                     &rlflow::cost::make_cuda_graph_runner};

}  // namespace

extern "C" __attribute__((visibility("default"))) const rlflow::cost::CudaPluginApi* rlflow_cuda_plugin_api() { return &api; }
