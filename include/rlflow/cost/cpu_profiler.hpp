#pragma once
/// \file
/// The CPU profiler backend: prices an op by running it alone in the reference executor
/// (exec/executor.hpp) on this machine and taking the median wall-clock time.
///
/// Each signature is measured once (CostModel caches it): a one-node graph is built whose
/// inputs are Weights with seeded random data (exec::fill_random_weights: fan-in scaled,
/// strictly positive where the op's traits say so, e.g. a BatchNorm variance) and whose
/// outputs are graph outputs. It runs `warmup` times, then `repetitions` timed samples.
/// Inputs are prepared once, outside the timed region; each run allocates and zero-fills
/// its outputs, as every op in a whole-graph run of the executor does, so that work is
/// part of the price (the rest of a one-node run, measured on a 1-element ReLU, is a
/// fraction of a microsecond).
///
/// Caches are warm by default, as in TASO's per-op measurements: an op run over and over
/// keeps its weights in cache. A graph whose weights exceed the caches streams them from
/// memory instead (NasRNN reads 80 MiB of weights for 0.04 GFLOP), so its ops cost more in
/// the graph than alone; `cache_flush_bytes` times every run with cold caches instead.
///
/// What is not timed: sources cost 0 (they are bound, not computed) and so do views
/// (Reshape, Flatten, Identity alias their input). Ops the executor cannot run (opaque
/// ops, tensors other than float32) are priced by the bytes they read and write at this
/// machine's memcpy bandwidth, measured once (read plus write, as op_bytes counts them):
/// an op whose kernel is unknown is assumed to move its data once at copy speed.

#include <rlflow/core/op_traits.hpp>
#include <rlflow/cost/cost_backend.hpp>
#include <rlflow/cost/detail/timing.hpp>
#include <rlflow/exec/executor.hpp>
#include <rlflow/exec/random.hpp>

#include <Eigen/Core>

#include <cstdint>
#include <cstring>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace rlflow::cost {

/// How the CPU profiler measures.
struct CpuProfilerOptions {
    /// Untimed runs before the timed ones: page in buffers and warm the caches.
    int warmup = 3;
    /// Timed samples per signature; the price is their median.
    int repetitions = 10;
    /// A sample repeats a fast op until it lasts this long (100 us), see SamplingPlan.
    double min_sample_seconds = 1e-4;
    /// Seed of the random inputs: equal seeds give equal inputs.
    std::uint64_t seed = 0;
    /// Bytes one copy moves when the memcpy bandwidth is measured: 32 MiB, past the
    /// caches of most machines, like a large activation.
    std::size_t bandwidth_probe_bytes = std::size_t{32} << 20;
    /// When not 0, every timed run starts with cold caches: this many bytes (more than
    /// the caches hold) are written first, untimed, and samples are single runs. Models
    /// weights streamed from memory; see the file comment.
    std::size_t cache_flush_bytes = 0;
    /// Appended to name() when not empty: say which machine measured, so that cache
    /// files from different machines are never mixed.
    std::string machine;
};

namespace detail {

/// The vector instructions Eigen compiled the executor's kernels with: part of the
/// profiler's name, since it changes every kernel's speed.
[[nodiscard]] constexpr std::string_view simd_tag() noexcept {
#if defined(EIGEN_VECTORIZE_AVX512)
    return "avx512";
#elif defined(EIGEN_VECTORIZE_AVX2)
    return "avx2";
#elif defined(EIGEN_VECTORIZE_AVX)
    return "avx";
#elif defined(EIGEN_VECTORIZE_SSE2)
    return "sse2";
#elif defined(EIGEN_VECTORIZE_NEON)
    return "neon";
#else
    return "scalar";
#endif
}

/// Whether the reference executor can run `op`: a core op whose tensors are all of dtypes
/// it holds (holds_dtype: float32, and int32, int64 and bool in the typed ops); an absent
/// optional input, of undefined type, is allowed.
[[nodiscard]] inline bool runs_on_executor(const OpSignature& op) {
    if (op_traits(op.op).has(op_flag_opaque)) return false;
    for (const TensorType& t : op.inputs)
        if (t.dtype != DType::Undefined && !holds_dtype(op.op, t.dtype)) return false;
    for (const TensorType& t : op.outputs)
        if (!holds_dtype(op.op, t.dtype)) return false;
    return true;
}

/// Throws precondition_error unless every tensor of `op` has a static shape.
inline void expect_static_shapes(const OpSignature& op) {
    const auto check = [&](std::span<const TensorType> types, std::string_view role) {
        for (std::size_t i = 0; i < types.size(); ++i)
            RLFLOW_EXPECTS(types[i].dtype == DType::Undefined || types[i].shape.is_static(), precondition_error,
                           "CpuProfiler: cannot time " + std::string(op_name(op.op)) + " with " + std::string(role) + " "
                               + std::to_string(i) + " of unknown shape " + types[i].to_string()
                               + "; bind its symbolic dimensions first");
    };
    check(op.inputs, "input");
    check(op.outputs, "output");
}

/// Which inputs of a one-node graph are fed when it runs.
enum class FedInputs : std::uint8_t {
    /// None: every input is a weight with data (the executor runs the graph alone).
    none,
    /// The signature's runtime inputs: they are graph inputs, its constant inputs weights
    /// with data (initializers, as in the written model).
    runtime,
};

/// Adds the node `op` describes to `g`, with its inputs as `fed` says (named with
/// `prefix`): input i is "<prefix>input_i", a Weight (holding the signature's value of
/// it, else data filled later) or a graph input, absent when its type is undefined, or, at
/// `op.producer_slot`, the output of the producer's node, added the same way first. Throws shape_error when a signature's
/// outputs are not what its op computes from its inputs.
inline NodeId add_signature_node(Graph& g, const OpSignature& op, FedInputs fed, const std::string& prefix) {
    expect_static_shapes(op);
    std::vector<TensorRef> inputs;
    for (std::size_t i = 0; i < op.inputs.size(); ++i) {
        const std::string name = prefix + "input_" + std::to_string(i);
        if (op.producer && i == op.producer_slot) inputs.push_back(TensorRef{add_signature_node(g, *op.producer, fed, prefix + "producer_")});
        else if (op.inputs[i].dtype == DType::Undefined) inputs.push_back(TensorRef{});
        else if (fed == FedInputs::runtime && !op.constant_input(i)) inputs.push_back(TensorRef{g.add_input(name, op.inputs[i])});
        else if (const Tensor* value = op.constant_value(i)) inputs.push_back(TensorRef{g.add_weight(name, op.inputs[i], std::make_shared<const Tensor>(*value))});
        else inputs.push_back(TensorRef{g.add_weight(name, op.inputs[i])});
    }
    const NodeId id = g.add_node(op.op, std::move(inputs), op.attributes, prefix + "profiled");
    const Node& n = g.node(id);
    RLFLOW_EXPECTS(n.outputs.size() == op.outputs.size(), shape_error,
                   n.describe() + ": the signature lists " + std::to_string(op.outputs.size()) + " outputs, the op has "
                       + std::to_string(n.outputs.size()));
    for (std::uint32_t i = 0; i < n.outputs.size(); ++i)
        RLFLOW_EXPECTS(n.outputs[i].type == op.outputs[i], shape_error,
                       n.describe() + ": the signature says output " + std::to_string(i) + " is "
                           + op.outputs[i].to_string() + ", the op computes " + n.outputs[i].type.to_string());
    return id;
}

/// A graph of `op` alone (with its producer, when the signature has one), inputs as `fed`
/// says, weights with random data under `seed`, every output of `op` a graph output.
[[nodiscard]] inline Graph single_op_graph(const OpSignature& op, std::uint64_t seed, FedInputs fed = FedInputs::none) {
    Graph g;
    const NodeId id = add_signature_node(g, op, fed, "");
    for (std::uint32_t i = 0; i < op.outputs.size(); ++i) g.add_output({id, i});
    exec::fill_random_weights(g, seed);
    return g;
}

/// GB/s of std::memcpy on `bytes`-byte buffers, counting bytes read plus written.
[[nodiscard]] inline double measure_copy_bandwidth_gbs(std::size_t bytes, const SamplingPlan& plan) {
    constexpr double bytes_per_gb = 1e9;
    constexpr int reads_plus_writes = 2;
    const std::vector<char> source(bytes, 1);
    std::vector<char> target(bytes, 0);
    const double seconds = median_seconds(
        [&] {
            std::memcpy(target.data(), source.data(), bytes);
            do_not_optimize(target.data());
        },
        plan);
    return reads_plus_writes * static_cast<double>(bytes) / bytes_per_gb / seconds;
}

}  // namespace detail

/// Prices ops by timing them in the reference executor on this machine (single-threaded,
/// like the executor). Measuring takes (warmup + repetitions) runs of each new signature;
/// wrap it in a CostModel so that each is measured once.
class CpuProfiler {
public:
    explicit CpuProfiler(CpuProfilerOptions options = {}) : m_options(std::move(options)) {
        RLFLOW_EXPECTS(m_options.warmup >= 0 && m_options.repetitions >= 1, precondition_error,
                       "CpuProfilerOptions: warmup must be >= 0 and repetitions >= 1, got " + std::to_string(m_options.warmup)
                           + " and " + std::to_string(m_options.repetitions));
        RLFLOW_EXPECTS(m_options.bandwidth_probe_bytes > 0, precondition_error,
                       "CpuProfilerOptions: bandwidth_probe_bytes must be positive");
    }

    /// "cpu-profiler:<simd>", then ":cold" when caches are flushed and ":<machine>" when
    /// the options name one: everything that changes the prices, since the name keys
    /// cache files.
    [[nodiscard]] std::string name() const {
        std::string name = "cpu-profiler:" + std::string(detail::simd_tag());
        if (m_options.cache_flush_bytes > 0) name += ":cold";
        return m_options.machine.empty() ? name : name + ":" + m_options.machine;
    }
    [[nodiscard]] const CpuProfilerOptions& options() const noexcept { return m_options; }

    /// Median milliseconds of one execution of `op` (see the file comment for what is
    /// not timed). Throws precondition_error for unknown shapes and shape_error when the
    /// signature's outputs do not match its inputs and attributes.
    [[nodiscard]] double op_cost_ms(const OpSignature& op) {
        const OpTraits& traits = op_traits(op.op);
        if (traits.has(op_flag_source) || traits.has(op_flag_view)) return 0.0;
        if (!detail::runs_on_executor(op)) return op_bytes(traits, op.inputs, op.outputs) / bytes_per_ms();
        const Graph g = detail::single_op_graph(op, m_options.seed);
        const exec::Executor executor;
        const auto run = [&] {
            const exec::RunResult result = executor.run(g, std::span<const Tensor>{});
            detail::do_not_optimize(result.outputs.data());
        };
        if (m_options.cache_flush_bytes == 0) return detail::median_seconds(run, plan()) * ms_per_second;
        detail::SamplingPlan single_runs = plan();
        single_runs.min_sample_seconds = 0;
        return detail::median_seconds(run, single_runs, [this] { flush_caches(); }) * ms_per_second;
    }

    /// The memcpy bandwidth that prices ops the executor cannot run, in GB/s (read plus
    /// write); measured on first use.
    [[nodiscard]] double copy_bandwidth_gbs() {
        if (!m_bandwidth_gbs) m_bandwidth_gbs = detail::measure_copy_bandwidth_gbs(m_options.bandwidth_probe_bytes, plan());
        return *m_bandwidth_gbs;
    }

private:
    static constexpr double ms_per_second = 1e3;
    static constexpr double bytes_per_gb = 1e9;

    [[nodiscard]] detail::SamplingPlan plan() const noexcept {
        return {m_options.warmup, m_options.repetitions, m_options.min_sample_seconds};
    }
    [[nodiscard]] double bytes_per_ms() { return copy_bandwidth_gbs() * bytes_per_gb / ms_per_second; }

    /// Writes one byte per cache line of a buffer larger than the caches.
    void flush_caches() {
        constexpr std::size_t cache_line_bytes = 64;
        m_flush_buffer.resize(m_options.cache_flush_bytes);
        for (std::size_t i = 0; i < m_flush_buffer.size(); i += cache_line_bytes) ++m_flush_buffer[i];
        detail::do_not_optimize(m_flush_buffer.data());
    }

    CpuProfilerOptions m_options;
    std::optional<double> m_bandwidth_gbs;
    std::vector<char> m_flush_buffer;
};

static_assert(CostBackend<CpuProfiler>);

}  // namespace rlflow::cost
