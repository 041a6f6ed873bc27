#pragma once
/// \file
/// OrtLatency: the end-to-end latency of a whole graph in ONNX Runtime, the reward
/// X-RLflow trained with. It sees what per-op prices miss (ORT's own fusions, layout
/// choices, memory reuse between ops), at the price of a real measurement per new graph.
/// GraphEnv takes it as its GraphMeasure; the default is the cost model's per-op sum.
///
/// A graph is written as ONNX with its weights as initializers (so ORT prepacks them as
/// it will in the exported model) and timed in the worker: `warmup` untimed runs, then
/// the median of `runs` timed runs, in `sessions` separate sessions whose median is the
/// latency, since one session can fall in a slow spell of a shared machine
/// (cost/ort_backend.hpp). Latencies are cached by the graph's canonical hash: an episode
/// that comes back to a graph, and every episode's start, measure nothing and get the
/// value they got before, so equal rewrite sequences earn equal rewards.
///
/// It also keeps, per interface (the names of the graph inputs and outputs: every graph
/// an episode reaches from a start graph has its start's), the fastest graph it timed,
/// and the latency of the first one, the start: so that a training run can write the
/// fastest graph it found, to be timed again outside the environment.
///
/// The first graph is timed once more before its measurement, in one session whose
/// result is dropped (`warm_process`): a fresh ORT process's first session can run slower
/// (seen once in three fresh processes here: 46 ms against 35 ms on resnet18), and the
/// first graph is an episode's start, which every reward is measured against.

#include <rlflow/core/canonical.hpp>
#include <rlflow/core/error.hpp>
#include <rlflow/cost/ort_backend.hpp>
#include <rlflow/onnx/export.hpp>

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <string>
#include <unordered_map>
#include <vector>

namespace rlflow::rl {

/// How OrtLatency measures.
struct OrtLatencyOptions {
    cost::OrtSettings settings;
    int warmup = 2;
    int runs = 9;
    int sessions = 3;
    /// Time the first graph once, unrecorded, before measuring it (see the file comment).
    bool warm_process = true;
    /// Seed of the random inputs.
    std::uint64_t seed = 0;
    /// Where graphs are written to be timed (empty: the system's temporary folder).
    std::filesystem::path scratch;
};

/// Whole-graph latencies in ONNX Runtime, cached by canonical hash. The worker must
/// outlive it; like the worker, it serves one thread at a time.
class OrtLatency {
public:
    explicit OrtLatency(cost::OrtWorker& worker, OrtLatencyOptions options = {})
        : m_worker(&worker), m_options(std::move(options)), m_scratch(m_options.scratch) {
        m_options.settings.validate();
        RLFLOW_EXPECTS(m_options.warmup >= 0 && m_options.runs >= 1 && m_options.sessions >= 1, precondition_error,
                       "OrtLatencyOptions: warmup must be >= 0, runs and sessions >= 1");
    }

    /// "ort-latency:<version>:<level>:t<threads>": what rewards measured with it are in.
    [[nodiscard]] std::string name() const { return "ort-latency:" + m_worker->version() + ":" + m_options.settings.tag(); }

    /// Milliseconds of one inference of `g` (see the file comment).
    [[nodiscard]] double operator()(const Graph& g) {
        const std::uint64_t key = canonical_hash(g);
        if (const auto it = m_cache.find(key); it != m_cache.end()) {
            ++m_hits;
            return it->second;
        }
        const std::filesystem::path file = m_scratch.path() / "graph.onnx";
        onnx_io::ExportOptions written;
        written.check = false;  // the graph came from a checked model through verified rewrites
        onnx_io::save_onnx(g, file, written);
        if (m_options.warm_process && m_measured == 0) static_cast<void>(time_sessions(file, 1));
        std::vector<double> medians = time_sessions(file, m_options.sessions);
        const double ms = cost::detail::median(std::move(medians));
        m_cache.emplace(key, ms);
        ++m_measured;
        const auto [it, first] = m_fastest.try_emplace(interface_key(g), Fastest{g, ms, ms});
        if (!first && ms < it->second.ms) {
            it->second.graph = g;
            it->second.ms = ms;
        }
        return ms;
    }

    /// The fastest graph timed with one interface, its latency, and the first one's.
    struct Fastest {
        Graph graph;
        double ms = 0;
        double first_ms = 0;
    };
    /// The interface key of `g`: its graph input and output names.
    [[nodiscard]] static std::string interface_key(const Graph& g) {
        std::string key;
        for (const NodeId id : g.inputs()) key += g.node(id).name + '\n';
        key += '\n';
        for (const GraphOutput& o : g.outputs()) key += o.name + '\n';
        return key;
    }
    /// The fastest graph timed with interface `key`, or nullptr if none was.
    [[nodiscard]] const Fastest* fastest(const std::string& key) const {
        const auto it = m_fastest.find(key);
        return it == m_fastest.end() ? nullptr : &it->second;
    }

    /// Graphs timed, and answers from the cache.
    [[nodiscard]] std::size_t measured() const noexcept { return m_measured; }
    [[nodiscard]] std::size_t cache_hits() const noexcept { return m_hits; }

private:
    /// The medians of `count` sessions timing `file`; throws when none could time it.
    [[nodiscard]] std::vector<double> time_sessions(const std::filesystem::path& file, int count) {
        const std::vector<std::filesystem::path> sessions(static_cast<std::size_t>(count), file);
        cost::OrtTimingRequest request;
        request.settings = m_options.settings;
        request.warmup = m_options.warmup;
        request.runs = m_options.runs;
        request.interleave = false;
        request.seed = m_options.seed;
        std::vector<double> medians;
        std::string error;
        for (const cost::ModelTiming& t : m_worker->time(sessions, request)) {
            if (t.ok()) medians.push_back(t.median_ms);
            else error = t.error;
        }
        RLFLOW_EXPECTS(!medians.empty(), io_error, "ONNX Runtime could not time a graph of the episode: " + error);
        return medians;
    }

    cost::OrtWorker* m_worker;
    OrtLatencyOptions m_options;
    cost::detail::ScratchFolder m_scratch;
    std::unordered_map<std::uint64_t, double> m_cache;
    std::unordered_map<std::string, Fastest> m_fastest;
    std::size_t m_measured = 0;
    std::size_t m_hits = 0;
};

}  // namespace rlflow::rl
