#pragma once
/// \file
/// The ort backend: prices an op by timing it in ONNX Runtime, the runtime the exported
/// model will run in (cost/ort_worker.hpp: one long-lived worker process).
///
/// Each signature becomes a one-node ONNX model, written as the exporter writes the op
/// in a whole model (a fused convolution is Conv + activation, or com.microsoft.FusedConv
/// when the options say it is written so; a merged grouped
/// convolution Concat + mask Mul + Conv, ...). Inputs that are known before the model runs
/// (OpSignature::constant_inputs: weights and what is folded from them) are initializers
/// with seeded random data, so ORT prepacks and reorders them at load time as it does in
/// the whole model; the other inputs are graph inputs, fed random values at every run.
/// The worker runs each model back to back (warm caches, as TASO measured ops) with ORT's
/// profiler on, in OrtBackendOptions::passes separate sessions spread over the request,
/// and the price is the median over sessions of the median over runs of the sum of the
/// nodes' kernel times: what the op costs inside a model, without what calling ORT from the worker and
/// copying a one-node model's inputs and outputs across costs (which, for an activation
/// of a few MB, is many times the op itself). Layout conversions that ORT's `all` level
/// puts around a lone convolution (ReorderInput, ReorderOutput) are left out: inside a
/// model, a chain of convolutions converts once at its ends. A price is never below
/// `min_op_ms`.
///
/// ORT runs some ops inside the kernel before them (MatMul + Add as Gemm, Conv + Add, Mul
/// or BatchNormalization, and from level extended Conv + activation): a fusion tail read
/// from a fusion head (op_flag_fusion_tail, op_flag_fusion_head) is priced in context by
/// CostModel, as price(head + tail) - price(head), each measured as a model, so what ORT
/// fuses at the chosen level costs nothing extra and what it does not costs its kernel.
/// Where ORT runs an op or a pair as another op (MatMul + bias Add as Gemm), or two forms
/// are written as one model (a fused convolution and Conv + Relu), one form is what is
/// measured and cached (canonical()), so the ways of writing one kernel share a price
/// instead of each carrying the machine's drift at the time it was measured.
///
/// CostModel batches a new graph's signatures into one request, and caches prices under
/// name(), which holds the ORT version and the settings (level, threads), so a cost
/// cache file never mixes prices measured differently.
///
/// Not timed: sources and views cost 0, as in the other backends. Ops that cannot be
/// timed alone (opaque ops, whose ONNX type a signature does not keep; tensors of a type
/// other than float32; a model ORT refuses) are priced by the bytes they read and write
/// at this machine's memcpy bandwidth, like the CPU profiler does, and counted in
/// fallback_count().

#include <rlflow/cost/cpu_profiler.hpp>
#include <rlflow/cost/detail/ort_canonical.hpp>
#include <rlflow/cost/ort_worker.hpp>
#include <rlflow/onnx/export.hpp>

#include <algorithm>
#include <atomic>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <unistd.h>
#include <vector>

namespace rlflow::cost {

/// How the ort backend measures.
struct OrtBackendOptions {
    /// The ORT settings prices hold for (part of the name).
    OrtSettings settings;
    /// Untimed runs of each one-node model.
    int warmup = 2;
    /// Timed samples per model and session; a session's time is their median.
    int runs = 9;
    /// Sessions per model, one pass over the whole batch after another; the price is the
    /// median of the sessions' times. A shared machine runs an op faster or slower for
    /// seconds at a time (a depthwise convolution measured 0.82 ms in six sessions in a
    /// row, then 0.64 ms in the next fourteen), so sessions spread over the batch's
    /// duration sample several of those states rather than one.
    int passes = 3;
    /// The least an op costs, in ms: one kernel dispatch.
    double min_op_ms = 1e-3;
    /// Seed of the weights and inputs.
    std::uint64_t seed = 0;
    /// Where the one-node models are written; empty: the system's temporary folder.
    std::filesystem::path scratch;
    /// Appended to name() when not empty: which machine measured.
    std::string machine;
    /// Write fused convolutions as com.microsoft.FusedConv, as `optimize --fused-conv-ms`
    /// writes them (part of the name: ORT runs the two forms differently at level basic).
    bool fused_conv_microsoft = false;
    OrtWorkerOptions worker;
};

namespace detail {

/// A private folder removed with everything in it when destroyed.
class ScratchFolder {
public:
    explicit ScratchFolder(const std::filesystem::path& parent) {
        static std::atomic<unsigned> counter{0};
        const std::filesystem::path base = parent.empty() ? std::filesystem::temp_directory_path() : parent;
        m_path = base / ("rlflow-ort-" + std::to_string(::getpid()) + "-" + std::to_string(counter++));
        std::error_code ec;
        std::filesystem::create_directories(m_path, ec);
        RLFLOW_EXPECTS(!ec, io_error, m_path.string() + ": cannot create a scratch folder: " + ec.message());
    }
    ScratchFolder(const ScratchFolder&) = delete;
    ScratchFolder& operator=(const ScratchFolder&) = delete;
    ~ScratchFolder() {
        std::error_code ignored;
        std::filesystem::remove_all(m_path, ignored);
    }
    [[nodiscard]] const std::filesystem::path& path() const noexcept { return m_path; }

private:
    std::filesystem::path m_path;
};

/// Whether ORT can time `op` alone: a core op whose tensors are float32.
[[nodiscard]] inline bool runs_alone_in_ort(const OpSignature& op) {
    return runs_on_executor(op) && (!op.producer || runs_on_executor(*op.producer));
}

}  // namespace detail

/// Prices ops by timing one-node models in ONNX Runtime. Starting it starts the worker
/// (throws precondition_error with an install hint when ONNX Runtime is missing).
class OrtBackend {
public:
    /// ORT fuses some ops into the kernel before them: price them in context.
    static constexpr bool prices_in_context = true;

    explicit OrtBackend(OrtBackendOptions options = {})
        : m_options(std::move(options)),
          m_worker(std::make_unique<OrtWorker>(m_options.worker)),
          m_scratch(std::make_unique<detail::ScratchFolder>(m_options.scratch)) {
        m_options.settings.validate();
        RLFLOW_EXPECTS(m_options.warmup >= 0 && m_options.runs >= 1 && m_options.passes >= 1, precondition_error,
                       "OrtBackendOptions: warmup must be >= 0, runs and passes >= 1");
    }

    /// "ort:<version>:<level>:t<threads>", then ":fusedconv" when fused convolutions are
    /// written as com.microsoft.FusedConv, then ":<machine>" when the options name one.
    [[nodiscard]] std::string name() const {
        std::string name = "ort:" + m_worker->version() + ":" + m_options.settings.tag();
        if (m_options.fused_conv_microsoft) name += ":fusedconv";
        return m_options.machine.empty() ? name : name + ":" + m_options.machine;
    }
    [[nodiscard]] const OrtBackendOptions& options() const noexcept { return m_options; }
    /// Signatures priced by their bytes because ORT could not time them alone.
    [[nodiscard]] std::size_t fallback_count() const noexcept { return m_fallbacks; }
    /// The worker, for timing whole models under the same ORT.
    [[nodiscard]] OrtWorker& worker() noexcept { return *m_worker; }

    /// The form ORT runs `op` in (cost/detail/ort_canonical.hpp): MatMul + bias Add as a
    /// Gemm (not at level disabled, where ORT fuses nothing), a batched MatMul by a matrix
    /// as the 2-D MatMul of its rows, Conv + activation as the fused convolution written
    /// as that pair (not when it is written as com.microsoft.FusedConv); nullopt when it
    /// runs as it is.
    [[nodiscard]] std::optional<OwnedSignature> canonical(const OpSignature& op) const {
        return detail::ort_canonical(op, {.matmul_bias_as_gemm = m_options.settings.level != "disabled",
                                          .conv_activation_apart = !m_options.fused_conv_microsoft});
    }

    /// Median milliseconds of `op` in ORT (see the file comment).
    [[nodiscard]] double op_cost_ms(const OpSignature& op) { return op_costs_ms(std::span<const OpSignature>(&op, 1))[0]; }

    /// Prices `ops` in one request to the worker.
    [[nodiscard]] std::vector<double> op_costs_ms(std::span<const OpSignature> ops) {
        std::vector<double> costs(ops.size(), 0.0);
        std::vector<std::filesystem::path> files;
        std::vector<std::size_t> timed;
        for (std::size_t i = 0; i < ops.size(); ++i) {
            const OpTraits& traits = op_traits(ops[i].op);
            if (traits.has(op_flag_source) || traits.has(op_flag_view)) continue;
            if (!detail::runs_alone_in_ort(ops[i])) {
                costs[i] = fallback_cost(ops[i]);
                continue;
            }
            files.push_back(write_model(ops[i]));
            timed.push_back(i);
        }
        if (files.empty()) return costs;
        const std::size_t n = files.size();
        std::vector<std::filesystem::path> sessions;
        sessions.reserve(n * static_cast<std::size_t>(m_options.passes));
        for (int pass = 0; pass < m_options.passes; ++pass) sessions.insert(sessions.end(), files.begin(), files.end());
        const std::vector<ModelTiming> timings = m_worker->time(sessions, request());
        RLFLOW_EXPECTS(timings.size() == sessions.size(), io_error,
                       "ort backend: the worker answered for " + std::to_string(timings.size()) + " of "
                           + std::to_string(sessions.size()) + " models");
        for (std::size_t k = 0; k < n; ++k) {
            std::vector<double> measured;
            for (std::size_t at = k; at < timings.size(); at += n)
                if (timings[at].ok() && timings[at].kernel_ms) measured.push_back(kernel_cost_ms(timings[at]));
            costs[timed[k]] = measured.empty() ? fallback_cost(ops[timed[k]])
                                               : std::max(detail::median(std::move(measured)), m_options.min_op_ms);
            std::error_code ignored;
            std::filesystem::remove(files[k], ignored);
        }
        return costs;
    }

private:
    [[nodiscard]] OrtTimingRequest request() const {
        OrtTimingRequest r;
        r.settings = m_options.settings;
        r.warmup = m_options.warmup;
        r.runs = m_options.runs;
        r.interleave = false;
        r.seed = m_options.seed;
        r.profile = true;
        return r;
    }

    /// The kernel time of a one-node model, less its boundary layout conversions.
    [[nodiscard]] static double kernel_cost_ms(const ModelTiming& t) {
        double ms = *t.kernel_ms;
        for (const char* reorder : {"ReorderInput", "ReorderOutput"})
            if (const auto it = t.kernel_op_ms.find(reorder); it != t.kernel_op_ms.end()) ms -= it->second;
        return ms;
    }

    void save(const Graph& g, const std::filesystem::path& file) const {
        onnx_io::ExportOptions options;
        options.check = false;  // one node of an exporter that is checked on whole models
        options.fused_conv_microsoft = m_options.fused_conv_microsoft;
        onnx_io::save_onnx(g, file, options);
    }

    [[nodiscard]] std::filesystem::path write_model(const OpSignature& op) {
        const Graph g = detail::single_op_graph(op, m_options.seed, detail::FedInputs::runtime);
        const std::filesystem::path file = m_scratch->path() / ("op_" + std::to_string(m_written++) + ".onnx");
        save(g, file);
        return file;
    }

    [[nodiscard]] double fallback_cost(const OpSignature& op) {
        ++m_fallbacks;
        if (!m_bandwidth_gbs) m_bandwidth_gbs = detail::measure_copy_bandwidth_gbs(bandwidth_probe_bytes, {1, 5, 0});
        constexpr double bytes_per_gb_ms = 1e6;  // GB/s -> bytes per ms
        return op_bytes(op_traits(op.op), op.inputs, op.outputs) / (*m_bandwidth_gbs * bytes_per_gb_ms);
    }

    /// Bytes one copy moves when the fallback's memcpy bandwidth is measured (32 MiB).
    static constexpr std::size_t bandwidth_probe_bytes = std::size_t{32} << 20;

    OrtBackendOptions m_options;
    std::unique_ptr<OrtWorker> m_worker;
    std::unique_ptr<detail::ScratchFolder> m_scratch;
    std::optional<double> m_bandwidth_gbs;
    std::size_t m_fallbacks = 0;
    std::size_t m_written = 0;
};

static_assert(BatchCostBackend<OrtBackend>);
static_assert(CanonicalCostBackend<OrtBackend>);

}  // namespace rlflow::cost
