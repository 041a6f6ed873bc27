#pragma once
/// \file
/// `rlflow::optimize`'s end-to-end guard (search/guard.hpp decides): the input and the best
// few candidates are timed whole, interleaved, in ONNX Runtime at the guard's levels (an
// ort-cpu target) or on the GPU by the CUDA plugin's whole-graph executor (a cuda target);
// the fastest candidate that is faster beyond the noise is written, else the input.

#include <rlflow/core/names.hpp>
#include <rlflow/cost/cuda_plugin.hpp>
#include <rlflow/cost/ort_backend.hpp>
#include <rlflow/optimize/hooks.hpp>
#include <rlflow/exec/random.hpp>
#include <rlflow/onnx/import.hpp>
#include <rlflow/search/guard.hpp>

#include <nlohmann/json.hpp>

#include <cstdio>
#include <memory>
#include <string>
#include <vector>

namespace rlflow::opt {

/// What times the candidates: ONNX Runtime on the CPU, the CUDA executor on a GPU, or
/// nothing; automatic (in a request) is the target's own (ort for an ort-cpu target when
/// ONNX Runtime is installed, cuda for a cuda target).
enum class GuardMode : std::uint8_t { automatic, ort, cuda, none };

/// --guard's names, and the report's.
inline constexpr NameTable<GuardMode, 4> guard_mode_names{{{
    {GuardMode::automatic, "auto"},
    {GuardMode::ort, "ort"},
    {GuardMode::cuda, "cuda"},
    {GuardMode::none, "none"},
}}};

/// What the guard decided: it was off, it kept the input, it chose a candidate, or the
/// runtime could not run the input.
enum class GuardVerdict : std::uint8_t { off, input, candidate, unavailable };

/// The report's names of GuardVerdict (its guard.decision).
inline constexpr NameTable<GuardVerdict, 4> guard_verdict_names{{{
    {GuardVerdict::off, "off"},
    {GuardVerdict::input, "input"},
    {GuardVerdict::candidate, "candidate"},
    {GuardVerdict::unavailable, "unavailable"},
}}};

/// How the guard runs.
struct GuardSettings {
    /// ort, cuda or none (automatic is resolved before).
    GuardMode mode = GuardMode::ort;
    /// The GPU a cuda guard times on.
    int gpu = 0;
    /// Levels to time at; the first must gain, the others must not lose.
    std::vector<std::string> levels;
    int threads = 1;
    std::size_t candidates = 3;
    search::GuardOptions decision;
    std::uint64_t seed = 0;
    /// Where the timing's progress goes.
    ProgressHook progress;
};

/// What the guard did, for the report and the console.
struct GuardOutcome {
    GuardVerdict decision = GuardVerdict::off;
    std::string reason;
    /// Index of the candidate written, when decision is candidate.
    std::size_t chosen = 0;
    /// Medians at the first level of the input and of what is written.
    double before_ms = 0;
    double after_ms = 0;
    search::GuardDecision detail;
};

/// Times files in `worker` at a level, interleaved; a model ORT cannot run gets no runs.
inline auto ort_timer(cost::OrtWorker& worker, const GuardSettings& settings, std::vector<std::string>& errors) {
    return [&worker, &settings, &errors](const std::vector<std::filesystem::path>& files, const std::string& level) {
        cost::OrtTimingRequest request;
        request.settings = {level, settings.threads};
        request.warmup = settings.decision.warmup;
        request.runs = settings.decision.rounds;
        request.interleave = true;
        request.seed = settings.seed;
        const std::string phase = "guard " + level;
        report_progress(settings.progress, {phase, 0, 1, "timing " + std::to_string(files.size()) + " models in ONNX Runtime"});
        const std::vector<cost::ModelTiming> timings = worker.time(files, request);
        report_progress(settings.progress, {phase, 1, 1, "", true});
        std::vector<std::vector<double>> runs;
        for (const cost::ModelTiming& t : timings) {
            if (!t.ok()) errors.push_back(t.error);
            runs.push_back(t.runs_ms);
        }
        return runs;
    };
}

/// Times files on the GPU with the CUDA executor, interleaved (one replay of each model a
/// round, as the guard's rounds are); when one cannot be read back or run, none is timed.
inline auto gpu_timer(cost::GpuGraphRunner& runner, const GuardSettings& settings, std::vector<std::string>& errors) {
    return [&runner, &settings, &errors](const std::vector<std::filesystem::path>& files, const std::string&) {
        report_progress(settings.progress, {"guard cuda", 0, 1, "timing " + std::to_string(files.size()) + " models on the GPU"});
        std::vector<std::vector<double>> runs(files.size());
        try {
            std::vector<Graph> graphs;
            for (const std::filesystem::path& f : files) graphs.push_back(onnx_io::load_onnx(f));
            std::vector<const Graph*> timed;
            for (const Graph& g : graphs) timed.push_back(&g);
            runs = runner.time_interleaved(timed, settings.decision.warmup, settings.decision.rounds, settings.seed);
        } catch (const std::exception& e) {
            errors.push_back(e.what());
        }
        report_progress(settings.progress, {"guard cuda", 1, 1, "", true});
        return runs;
    };
}

/// Runs the guard over `candidates` (cheapest first by the cost model), timing with
/// `timer`; `runtime` names what times them, for the console and the report.
template <class Timer>
GuardOutcome guard_with(Timer&& timer, const std::string& runtime, const Graph& input, const std::vector<const Graph*>& candidates,
                        const GuardSettings& settings, const std::optional<std::filesystem::path>& input_file,
                        std::vector<std::string>& errors) {
    GuardOutcome outcome;
    const cost::detail::ScratchFolder scratch({});
    outcome.detail = search::run_guard(input, candidates, settings.levels, scratch.path(), timer, settings.decision, input_file);
    outcome.before_ms = outcome.detail.input_median_ms;
    outcome.after_ms = outcome.before_ms;
    if (outcome.before_ms <= 0 && !errors.empty()) {
        // The runtime cannot run the input: nothing to compare with, the guard cannot judge.
        outcome.decision = GuardVerdict::unavailable;
        outcome.reason = runtime + " cannot run the input (" + errors.front() + "); the result is not timed";
        return outcome;
    }
    outcome.reason = outcome.detail.reason;
    if (!outcome.detail.chosen) {
        outcome.decision = GuardVerdict::input;
        return outcome;
    }
    outcome.decision = GuardVerdict::candidate;
    outcome.chosen = *outcome.detail.chosen;
    // The second comparison's medians when there was one: the first favoured the winner.
    const search::CandidateVerdict& v = outcome.detail.confirmation ? *outcome.detail.confirmation
                                                                     : outcome.detail.verdicts[outcome.chosen * settings.levels.size()];
    outcome.before_ms = v.input_median_ms;
    outcome.after_ms = v.candidate_median_ms;
    return outcome;
}

/// The guard in ONNX Runtime, timed by `worker`.
inline GuardOutcome guard_in_ort(cost::OrtWorker& worker, const Graph& input, const std::vector<const Graph*>& candidates,
                                 const GuardSettings& settings, const std::optional<std::filesystem::path>& input_file) {
    std::vector<std::string> errors;
    return guard_with(ort_timer(worker, settings, errors), "ONNX Runtime", input, candidates, settings, input_file, errors);
}

/// The guard on the GPU, timed by the CUDA plugin's whole-graph executor.
inline GuardOutcome guard_on_gpu(cost::GpuGraphRunner& runner, const Graph& input, const std::vector<const Graph*>& candidates,
                                 const GuardSettings& settings, const std::optional<std::filesystem::path>& input_file) {
    std::vector<std::string> errors;
    return guard_with(gpu_timer(runner, settings, errors), "The CUDA executor", input, candidates, settings, input_file, errors);
}

/// One comparison of a candidate with the input, as the report gives it (candidates from 1).
inline nlohmann::json verdict_json(const search::CandidateVerdict& v) {
    return {{"candidate", v.candidate + 1}, {"level", v.level},   {"input_median_ms", v.input_median_ms},
            {"candidate_median_ms", v.candidate_median_ms},       {"median_ratio", v.median_ratio},
            {"wins", v.wins},           {"rounds", v.rounds},      {"p_faster", v.p_faster},
            {"p_slower", v.p_slower},   {"faster", v.faster},      {"slower", v.slower},
            {"looks", v.looks}};
}

/// The report's guard object: how it timed, what it decided and every comparison.
inline nlohmann::json guard_json(const GuardOutcome& g, const GuardSettings& settings) {
    nlohmann::json j;
    j["mode"] = guard_mode_names.name(settings.mode);
    j["decision"] = guard_verdict_names.name(g.decision);
    j["reason"] = g.reason;
    if (g.decision == GuardVerdict::off) return j;
    j["levels"] = settings.levels;
    j["rounds"] = settings.decision.rounds;
    j["significance"] = settings.decision.significance;
    j["min_gain"] = settings.decision.min_gain;
    if (g.detail.confirmation) j["confirmation"] = verdict_json(*g.detail.confirmation);
    // The candidate that gained most at the first level (from 1), and the level that vetoed it.
    j["best_candidate"] = g.detail.best ? nlohmann::json(*g.detail.best + 1) : nlohmann::json();
    j["vetoed_at"] = g.detail.vetoed_at.empty() ? nlohmann::json() : nlohmann::json(g.detail.vetoed_at);
    j["candidates"] = nlohmann::json::array();
    for (const search::CandidateVerdict& v : g.detail.verdicts) j["candidates"].push_back(verdict_json(v));
    return j;
}

}  // namespace rlflow::opt
