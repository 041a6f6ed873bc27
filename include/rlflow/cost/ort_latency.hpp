#pragma once
/// \file
/// OrtLatency: the end-to-end latency of a whole graph in ONNX Runtime, the reward
/// X-RLflow trained with. It sees what per-op prices miss (ORT's own fusions, layout
/// choices, memory reuse between ops), at the price of a real measurement per new graph.
/// GraphEnv takes it as its GraphMeasure; the default is the cost model's per-op sum.
///
/// A graph is written as ONNX with its weights as initializers (so ORT prepacks them as
/// it will in the exported model). Latencies are cached by the written model's hash
/// (onnx/model_hash.hpp), not the IR graph's: an episode that comes back to a graph, every
/// episode's start, and a graph that differs only in what the file does not show (a fused
/// convolution is written as the Conv + Relu it replaced; rewrite orders name new
/// initializers differently) measure nothing and get the value the model got before, so
/// equal models earn equal rewards.
///
/// Graphs are timed against a reference, not alone. The first graph of each interface
/// (the names of the graph inputs and outputs: every graph an episode reaches from a
/// start graph has its start's) is its reference: it is timed alone, `warmup` untimed
/// runs then the median of `runs`, in `sessions` sessions whose median is its latency
/// L_ref. Every later graph of that interface is timed interleaved with the reference in
/// the same sessions, as the end-to-end guard times its candidates (search/guard.hpp):
/// round k runs both once, and the latency is L_ref times the median over sessions of the
/// median paired ratio candidate_k / reference_k. A machine that changes speed between
/// sessions (one file's consecutive sessions can differ by a third, each steady within
/// itself) shifts both runs of a pair alike, so rewards, which are differences of
/// latencies over the start's, are ratios measured under one machine state. Timing each
/// graph alone let such spells decide the reward: graphs that training reported far
/// faster than their start were within a few percent of it when tools/ort/compare.js
/// timed them interleaved.
///
/// It also keeps, per interface, the fastest graph it timed, and the reference's latency:
/// so that a training run can write the fastest graph it found, to be timed again
/// outside the environment. And it keeps a timeline of every graph it timed (hash,
/// latency, seconds since it was made), which says when a training run first reached a
/// graph: two agents started on one graph are compared by when each first met the graph
/// the other ended with, which one noisy latency per graph cannot tell.
///
/// Noise-aware: with `max_sessions` above `sessions`, a graph's sessions go on one at a
/// time past `sessions` until a sign test over all its paired runs so far says it is
/// faster or slower than the reference at `significance`, or `max_sessions` have run. A
/// graph that differs from the reference by less than the noise earns its latency from
/// the most runs; one that clearly differs, from the fewest.
///
/// The first reference is timed once more before its measurement, in one session whose
/// result is dropped (`warm_process`): a fresh ORT process's first session can run slower
/// than the sessions after it.

#include <rlflow/core/error.hpp>
#include <rlflow/cost/ort_backend.hpp>
#include <rlflow/onnx/export.hpp>
#include <rlflow/onnx/model_hash.hpp>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <string>
#include <unordered_map>
#include <vector>

namespace rlflow::cost {

/// How OrtLatency measures.
struct OrtLatencyOptions {
    OrtSettings settings;
    int warmup = 2;
    int runs = 9;
    int sessions = 3;
    /// Sessions at most, added one at a time until the sign test decides (see the file
    /// comment; at most `sessions`: none added).
    int max_sessions = 0;
    /// The one-sided significance of each side of that sign test.
    double significance = 0.05;
    /// Time the first reference once, unrecorded, before measuring it (see the file comment).
    bool warm_process = true;
    /// Seed of the random inputs.
    std::uint64_t seed = 0;
    /// Where graphs are written to be timed (empty: the system's temporary folder).
    std::filesystem::path scratch;
};

/// Whole-graph latencies in ONNX Runtime, cached by model hash. The worker must
/// outlive it; like the worker, it serves one thread at a time.
class OrtLatency {
public:
    explicit OrtLatency(OrtWorker& worker, OrtLatencyOptions options = {})
        : m_worker(&worker), m_options(std::move(options)), m_scratch(m_options.scratch) {
        m_options.settings.validate();
        RLFLOW_EXPECTS(m_options.warmup >= 0 && m_options.runs >= 1 && m_options.sessions >= 1, precondition_error,
                       "OrtLatencyOptions: warmup must be >= 0, runs and sessions >= 1");
        RLFLOW_EXPECTS(m_options.significance > 0 && m_options.significance < 1, precondition_error,
                       "OrtLatencyOptions: significance must be in (0, 1)");
    }

    /// "ort-latency:<version>:<level>:t<threads>": what rewards measured with it are in.
    [[nodiscard]] std::string name() const { return "ort-latency:" + m_worker->version() + ":" + m_options.settings.tag(); }

    /// Milliseconds of one inference of `g` (see the file comment).
    [[nodiscard]] double operator()(const Graph& g) {
        const onnx_io::pb::ModelProto model = exported(g);
        const std::uint64_t key = onnx_io::model_structure_hash(model);
        if (const auto it = m_cache.find(key); it != m_cache.end()) {
            ++m_hits;
            return it->second;
        }
        const std::string interface = interface_key(g);
        const auto known = m_fastest.find(interface);
        const bool reference = known == m_fastest.end();
        const double ms = reference ? time_reference(model, g, interface)
                                    : time_against(model, known->second, m_options.runs, m_options.sessions);
        m_cache.emplace(key, ms);
        ++m_measured;
        Fastest& fastest = m_fastest.at(interface);
        m_timeline.push_back({key, fastest.index, ms, fastest.first_ms, seconds()});
        if (reference) {
            fastest.timed = m_timeline.back();
        } else if (ms < fastest.ms) {
            fastest.graph = g;
            fastest.ms = ms;
            fastest.timed = m_timeline.back();
        }
        return ms;
    }

    /// One model as it was first timed: its hash (model_structure_hash), its interface (Fastest::index),
    /// its latency, its reference's, and the seconds since this OrtLatency was made.
    struct Timed {
        std::uint64_t hash = 0;
        std::size_t interface = 0;
        double ms = 0;
        double reference_ms = 0;
        double seconds = 0;
    };
    /// The fastest graph timed with one interface, its latency, and the reference's: the
    /// first graph of the interface, which later ones are timed against (in `file`); when
    /// it was timed; and the interface's index, in the order interfaces were first met.
    struct Fastest {
        Graph graph;
        double ms = 0;
        double first_ms = 0;
        std::filesystem::path file;
        Timed timed;
        std::size_t index = 0;
    };
    /// Every graph timed (answers from the cache aside), in order.
    [[nodiscard]] const std::vector<Timed>& timeline() const noexcept { return m_timeline; }
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

    /// The fastest graph of interface `key` timed against the reference once more, in
    /// `sessions` fresh sessions of `runs` paired runs: its latency over the reference's.
    /// The fastest of many measured graphs is the least of many noisy ratios, so biased
    /// low; a new measurement of that one graph is not. 1 when none was faster.
    [[nodiscard]] double confirm(const std::string& key, int runs, int sessions) {
        const Fastest* f = fastest(key);
        RLFLOW_EXPECTS(f != nullptr, precondition_error, "OrtLatency::confirm: no graph of that interface was timed");
        RLFLOW_EXPECTS(runs >= 1 && sessions >= 1, precondition_error, "OrtLatency::confirm: runs and sessions must be >= 1");
        if (f->ms >= f->first_ms) return 1.0;
        return time_against(exported(f->graph), *f, runs, sessions) / f->first_ms;
    }

    /// Graphs timed, and answers from the cache.
    [[nodiscard]] std::size_t measured() const noexcept { return m_measured; }
    /// ONNX Runtime sessions run to time graphs (references and confirmations included).
    [[nodiscard]] std::size_t sessions_run() const noexcept { return m_sessions_run; }
    [[nodiscard]] std::size_t cache_hits() const noexcept { return m_hits; }

private:
    /// Times the first graph of an interface alone and makes it the reference.
    [[nodiscard]] double time_reference(const onnx_io::pb::ModelProto& model, const Graph& g, const std::string& interface) {
        const std::filesystem::path file = m_scratch.path() / ("reference_" + std::to_string(m_fastest.size()) + ".onnx");
        onnx_io::save_model(model, file);
        if (m_options.warm_process && m_fastest.empty()) static_cast<void>(time_sessions({file}, m_options.runs, 1, false));
        std::vector<double> medians;
        for (const auto& runs : time_sessions({file}, m_options.runs, m_options.sessions, false)) medians.push_back(detail::median(runs.front()));
        const double ms = detail::median(std::move(medians));
        m_fastest.emplace(interface, Fastest{g, ms, ms, file, {}, m_fastest.size()});
        return ms;
    }

    /// Times `model` interleaved with its interface's reference: the reference's latency
    /// times the median over sessions of the median of `runs` paired ratios; `sessions`
    /// of them, then more while the sign test has not decided (see the file comment).
    [[nodiscard]] double time_against(const onnx_io::pb::ModelProto& model, const Fastest& reference, int runs, int sessions) {
        const std::filesystem::path file = m_scratch.path() / "graph.onnx";
        onnx_io::save_model(model, file);
        std::vector<double> ratios;
        std::size_t faster = 0;
        std::size_t slower = 0;
        const auto add = [&](const std::vector<std::vector<std::vector<double>>>& timed_sessions) {
            for (const auto& timed : timed_sessions) {
                const std::vector<double> paired = detail::paired_ratios(timed[0], timed[1]);
                if (!paired.empty()) ratios.push_back(detail::median(paired));
                for (const double r : paired) {
                    faster += r < 1 ? 1 : 0;
                    slower += r > 1 ? 1 : 0;
                }
            }
        };
        const auto decided = [&] {
            const std::size_t n = faster + slower;  // ties tell neither side
            return detail::sign_test_p(faster, n) <= m_options.significance || detail::sign_test_p(slower, n) <= m_options.significance;
        };
        add(time_sessions({reference.file, file}, runs, sessions, true));
        for (int more = sessions; more < m_options.max_sessions && !decided(); ++more) add(time_sessions({reference.file, file}, runs, 1, true));
        RLFLOW_EXPECTS(!ratios.empty(), io_error, "ONNX Runtime timed no paired runs of a graph of the episode");
        return reference.first_ms * detail::median(std::move(ratios));
    }

    [[nodiscard]] double seconds() const { return std::chrono::duration<double>(std::chrono::steady_clock::now() - m_made).count(); }

    /// `g` as the file ORT times.
    [[nodiscard]] static onnx_io::pb::ModelProto exported(const Graph& g) {
        onnx_io::ExportOptions written;
        written.check = false;  // the graph came from a checked model through verified rewrites
        return onnx_io::export_model(g, written);
    }

    /// `runs` runs of each of `files` in each of `count` sessions (interleaved or each
    /// alone), for the sessions where every file ran; throws when none did.
    [[nodiscard]] std::vector<std::vector<std::vector<double>>> time_sessions(const std::vector<std::filesystem::path>& files,
                                                                             int runs, int count, bool interleave) {
        OrtTimingRequest request;
        request.settings = m_options.settings;
        request.warmup = m_options.warmup;
        request.runs = runs;
        request.interleave = interleave;
        request.seed = m_options.seed;
        std::vector<std::vector<std::vector<double>>> sessions;
        std::string error;
        for (int s = 0; s < count; ++s) {
            std::vector<std::vector<double>> timed;
            for (const ModelTiming& t : m_worker->time(files, request)) {
                if (t.ok()) timed.push_back(t.runs_ms);
                else error = t.error;
            }
            if (timed.size() == files.size()) sessions.push_back(std::move(timed));
            ++m_sessions_run;
        }
        RLFLOW_EXPECTS(!sessions.empty(), io_error, "ONNX Runtime could not time a graph of the episode: " + error);
        return sessions;
    }

    OrtWorker* m_worker;
    OrtLatencyOptions m_options;
    detail::ScratchFolder m_scratch;
    std::unordered_map<std::uint64_t, double> m_cache;
    std::unordered_map<std::string, Fastest> m_fastest;
    std::vector<Timed> m_timeline;
    std::chrono::steady_clock::time_point m_made = std::chrono::steady_clock::now();
    std::size_t m_measured = 0;
    std::size_t m_hits = 0;
    std::size_t m_sessions_run = 0;
};

}  // namespace rlflow::cost
