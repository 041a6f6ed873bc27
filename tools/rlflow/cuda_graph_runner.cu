// The CUDA plugin's whole-graph executor (cost/cuda_executor.hpp) behind GpuGraphRunner:
// the `cuda` target's guard times whole candidates with it. Compiled by nvcc.

#include <rlflow/cost/cuda_executor.hpp>
#include <rlflow/cost/cuda_plugin.hpp>
#include <rlflow/exec/random.hpp>

#include <memory>
#include <string>
#include <vector>

namespace rlflow::cost {
namespace {

class PluginGraphRunner final : public GpuGraphRunner {
public:
    explicit PluginGraphRunner(int device) : m_executor(CudaExecutorOptions{.device = device}) {}

    [[nodiscard]] std::vector<std::vector<double>> time_interleaved(const std::vector<const Graph*>& graphs, int warmup, int rounds,
                                                                  std::uint64_t seed) override {
        // Weights without data (a zoo model) get random ones; a copy keeps the caller's graph as it is.
        std::vector<Graph> filled;
        filled.reserve(graphs.size());
        std::vector<const Graph*> timed;
        for (const Graph* g : graphs) {
            filled.push_back(*g);
            exec::fill_random_weights(filled.back(), seed);
            timed.push_back(&filled.back());
        }
        const std::vector<CudaLatency> latencies =
            m_executor.time_interleaved(timed, CudaTimingOptions{.warmup = warmup, .replays = rounds}, seed);
        std::vector<std::vector<double>> runs;
        for (const CudaLatency& l : latencies) runs.push_back(l.samples_ms);
        return runs;
    }

    [[nodiscard]] std::vector<Tensor> run(const Graph& g, std::span<const Tensor> inputs) override { return m_executor.run(g, inputs); }

    [[nodiscard]] std::string name() const override { return m_executor.name(); }

private:
    CudaExecutor m_executor;
};

}  // namespace

std::unique_ptr<GpuGraphRunner> make_cuda_graph_runner(int device) { return std::make_unique<PluginGraphRunner>(device); }

}  // namespace rlflow::cost
