#pragma once
/// \file
/// What `rlflow::optimize` reports, typed: the target and prices, the search, the
/// candidates each price model proposed, the guard's timings, the verification and the
/// graph written. `to_json` gives the report `rlflow optimize --report` writes and Python's
/// `rlflow.optimize` returns, with the same keys.

#include <rlflow/core/statistics.hpp>
#include <rlflow/optimize/guard.hpp>
#include <rlflow/optimize/request.hpp>
#include <rlflow/rl/plan_options.hpp>
#include <rlflow/search/eqsat.hpp>
#include <rlflow/search/search.hpp>

#include <nlohmann/json.hpp>

#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace rlflow {

namespace opt {

/// How the written graph was checked against the input.
struct Verification {
    /// none: the input itself is written; whole_graph: the whole graph ran on random
    /// inputs; regions: each rewritten region against the one it replaced, on random values
    /// at its boundary (the graph has ops rlflow cannot execute).
    enum class Method : std::uint8_t { none, whole_graph, regions };
    Method method = Method::none;
    bool equal = true;
    double max_abs_diff = 0;
    /// Regions compared (regions only).
    std::size_t regions = 0;
    /// Where they differ, when they do.
    std::string detail;
};

/// The report's names of Verification::Method.
inline constexpr NameTable<Verification::Method, 3> verification_method_names{{{
    {Verification::Method::none, "none (the input is written)"},
    {Verification::Method::whole_graph, "whole graph"},
    {Verification::Method::regions, "regions"},
}}};


/// What one price model's search proposed.
struct Proposal {
    std::string model;
    std::size_t candidates = 0;
    double best_cost_ms = 0;
    double initial_cost_ms = 0;
    double seconds = 0;
    search::StopReason reason = search::StopReason::converged;
};

/// Who proposed a timed candidate, and its price under the target's model.
struct CandidateOrigin {
    std::vector<std::string> proposed_by;
    double cost_ms = 0;
};

/// The rule ledger that shaped the rules, and what it left out.
struct LedgerUse {
    std::string file;
    std::string target;
    std::string level;
    std::vector<std::string> dropped_families;
    std::size_t dropped_rules = 0;
};

/// How much of a price table's prices were measured.
struct TableUse {
    std::string target;
    std::string device;
    std::size_t measured_signatures = 0;
    std::size_t estimated_signatures = 0;
};

/// An agent's rollouts.
struct AgentUse {
    std::string dir;
    /// What the agent was trained for, and whether it is what this run prices for.
    std::string target;
    bool target_matches = false;
    /// Environment steps of its rollouts, and their seconds.
    std::size_t real_steps = 0;
    double inference_seconds = 0;
    std::size_t samples = 0;
    AgentStop stop = AgentStop::limit;
    /// The tree search it guided after its rollouts.
    rl::PlanOptions plan;
};

/// Equality saturation's statistics and the options it ran with.
struct EqsatUse {
    search::EqsatStats stats;
    search::EqsatOptions options;
};

}  // namespace opt

namespace opt {

/// What the cost figures (cost_before_ms, cost_after_ms) of a price model named `backend`
/// are, and how they relate to the latency the guard measures, for the report.
[[nodiscard]] inline std::string cost_meaning(const std::string& backend) {
    const std::string timed_whole = "; the whole model's measured latency differs, because a runtime fuses ops, overlaps them and "
                                    "spends time between them, and only the guard's measurement decides what is written";
    if (backend.starts_with("ort:"))
        return "the sum of the ops' median times, each op timed alone in ONNX Runtime (" + backend + ")" + timed_whole;
    if (backend.starts_with("analytic:"))
        return "a roofline estimate of the ops' times on the " + backend.substr(std::string_view("analytic:").size()) + " preset, not a measurement"
               + timed_whole;
    if (backend.starts_with("cpu-profiler:")) return "the sum of the ops' times measured in rlflow's reference executor" + timed_whole;
    if (backend.starts_with("cudnn:")) return "the sum of the ops' times measured with cuDNN and cuBLAS on the GPU" + timed_whole;
    if (backend.starts_with("table:"))
        return "the sum of the ops' prices in a recorded price table (measured where the table has the op, else its fitted roofline)"
               + timed_whole;
    return "the sum of the ops' prices under " + backend + timed_whole;
}

}  // namespace opt

/// The report of one `rlflow::optimize`.
struct OptimizeReport {
    std::string model;
    std::string target;
    std::string target_description;
    std::string target_device;
    SearchKind search = SearchKind::backtracking;
    std::string cost_backend;
    double cost_before_ms = 0;
    double cost_after_ms = 0;
    double search_best_cost_ms = 0;
    /// What `rlflow info` gives for the input as read and for the graph as written.
    GraphStatistics before;
    GraphStatistics after;
    /// The input itself is written (no candidate was faster).
    bool written_is_input = true;
    /// Why, when it is, and what would pay where the guard saw it (opt::kept_input_reason).
    std::string kept_because;
    /// Ops outside ONNX's standard domain in what is written ("domain.op").
    std::vector<std::string> nonstandard_ops;
    bool needs_onnxruntime = false;
    bool portable = false;
    /// Net rewrites (steps that undo each other left out), every rewrite, and in order.
    std::map<std::string, std::size_t> rewrites;
    std::map<std::string, std::size_t> rewrites_applied;
    std::vector<std::string> rewrite_sequence;
    /// The target's own search: its best graph's rewrites, expansions, budget and memory.
    std::map<std::string, std::size_t> search_rewrites;
    std::size_t expansions = 0;
    /// The expansion after which the target's search last found a cheaper graph (greedy and
    /// taso; none for the searches that do not count expansions so).
    std::optional<std::size_t> best_found_at;
    std::size_t budget = 0;
    std::size_t peak_search_bytes = 0;
    /// What the prices stand for (opt::priced_target).
    std::string prices_for;
    std::optional<opt::AgentUse> agent;
    std::optional<opt::EqsatUse> eqsat;
    search::StopReason stop_reason = search::StopReason::converged;
    /// Why the search stopped, in words.
    std::string stop;
    double seconds = 0;
    opt::Verification verification;
    opt::GuardSettings guard_settings;
    opt::GuardOutcome guard;
    /// The candidates the guard timed, in its order.
    std::vector<opt::CandidateOrigin> timed;
    std::vector<opt::Proposal> proposers;
    std::optional<opt::LedgerUse> ledger;
    /// ort-cpu: the NCHWc block ONNX Runtime uses here (0: none).
    std::optional<std::int64_t> nchwc_block;
    std::optional<opt::TableUse> table;
    /// The price models that proposed what is written.
    std::vector<std::string> proposed_by;
    /// The most memory the process held, at the end.
    std::size_t peak_rss_bytes = 0;

    [[nodiscard]] nlohmann::json to_json() const;
};

/// What `optimize` made of a graph: the graph to write (the input itself when no candidate
/// is faster) and the report, whose `verification` says how it was checked.
struct OptimizeResult {
    Graph graph;
    OptimizeReport report;

    /// The input is the result.
    [[nodiscard]] bool is_input() const noexcept { return report.written_is_input; }
    /// The result matched the input on random inputs (always, for the input itself).
    [[nodiscard]] bool verified() const noexcept { return report.verification.equal; }
};

namespace opt {

/// A timing, or null where nothing was timed.
[[nodiscard]] inline nlohmann::json measured_ms(double ms) { return ms > 0 ? nlohmann::json(ms) : nlohmann::json(); }

/// The report's "eqsat" object: the e-graph, why exploration stopped, the extraction and
/// the seconds of each phase.
[[nodiscard]] inline nlohmann::json eqsat_json(const search::EqsatStats& s, const search::EqsatOptions& options) {
    nlohmann::json j;
    j["eclasses"] = s.classes;
    j["enodes"] = s.enodes;
    j["iterations"] = s.iterations;
    j["stop"] = search::saturation_stop_names.name(s.stop);
    j["node_limit"] = s.node_limit;
    j["iteration_limit"] = options.iteration_limit;
    j["multi_rounds"] = options.multi_rounds;
    j["multi_rounds_run"] = s.multi_rounds;
    j["multi_schedule"] = search::multi_schedule_names.name(options.multi_schedule);
    j["extraction"] = search::extracted_by_names.name(s.extraction);
    j["greedy_cost_ms"] = s.greedy_cost_ms;
    j["local_cost_ms"] = s.local_cost_ms;
    j["local_moves"] = s.local.moves;
    j["local_passes"] = s.local.passes;
    j["local_seconds"] = s.local.seconds;
    if (s.ilp) {
        j["ilp_cost_ms"] = s.ilp_cost_ms;
        j["ilp_status"] = s.ilp->status;
        j["ilp_gap"] = s.ilp->gap;
        j["ilp_objective_ms"] = s.ilp->objective;
        j["ilp_bound_ms"] = s.ilp->bound;
        j["ilp_variables"] = s.ilp->variables;
        j["ilp_constraints"] = s.ilp->constraints;
        j["ilp_filtered"] = s.ilp->filtered;
        j["ilp_seconds"] = s.ilp->seconds;
        j["ilp_windows"] = s.ilp->windows;
    }
    j["explore_seconds"] = s.explore_seconds;
    j["price_seconds"] = s.price_seconds;
    j["extract_seconds"] = s.extract_seconds;
    j["rules_applied"] = s.applied;
    return j;
}

/// The report's "proposers" array.
[[nodiscard]] inline nlohmann::json proposals_json(const std::vector<Proposal>& proposals) {
    nlohmann::json j = nlohmann::json::array();
    for (const Proposal& p : proposals)
        j.push_back({{"model", p.model},
                     {"candidates", p.candidates},
                     {"cost_before_ms", p.initial_cost_ms},
                     {"best_cost_ms", p.best_cost_ms},
                     {"seconds", p.seconds},
                     {"stop_reason", search::stop_reason_name(p.reason)}});
    return j;
}

}  // namespace opt

inline nlohmann::json OptimizeReport::to_json() const {
    nlohmann::json j;
    j["model"] = model;
    j["target"] = target;
    j["target_description"] = target_description;
    j["target_device"] = target_device;
    j["search"] = search_kind_names.name(search);
    j["cost_backend"] = cost_backend;
    j["cost_means"] = opt::cost_meaning(cost_backend);
    j["cost_before_ms"] = cost_before_ms;
    j["cost_after_ms"] = cost_after_ms;
    j["search_best_cost_ms"] = search_best_cost_ms;
    j["memory_before_bytes"] = before.memory.peak_activation_bytes;
    j["memory_after_bytes"] = after.memory.peak_activation_bytes;
    j["weight_bytes_before"] = before.memory.weight_bytes;
    j["weight_bytes_after"] = after.memory.weight_bytes;
    j["flops_before"] = before.flops;
    j["flops_after"] = after.flops;
    j["written"] = written_is_input ? "input" : "optimised";
    j["kept_because"] = kept_because.empty() ? nlohmann::json() : nlohmann::json(kept_because);
    j["nonstandard_ops"] = nonstandard_ops;
    j["needs_onnxruntime"] = needs_onnxruntime;
    j["portable"] = portable;
    j["rewrites"] = rewrites;
    j["rewrites_applied"] = rewrites_applied;
    j["rewrite_sequence"] = rewrite_sequence;
    j["search_rewrites"] = search_rewrites;
    j["expansions"] = expansions;
    j["best_found_at"] = best_found_at ? nlohmann::json(*best_found_at) : nlohmann::json();
    j["budget"] = budget;
    j["peak_search_bytes"] = peak_search_bytes;
    j["prices_for"] = prices_for;
    if (agent) {
        j["agent"] = agent->dir;
        j["agent_target"] = agent->target;
        j["agent_target_matches"] = agent->target_matches;
        j["real_steps"] = agent->real_steps;
        j["inference_seconds"] = agent->inference_seconds;
        j["samples"] = agent->samples;
        j["agent_stop"] = agent_stop_names.name(agent->stop);
        j["plan"] = rl::plan_kind_names.name(agent->plan.kind);
        if (agent->plan.kind == rl::PlanKind::mcts) j["simulations"] = agent->plan.simulations;
        if (agent->plan.kind == rl::PlanKind::grow) j["grow_steps"] = agent->plan.grow_steps;
    }
    if (eqsat) j["eqsat"] = opt::eqsat_json(eqsat->stats, eqsat->options);
    j["stop_reason"] = search::stop_reason_name(stop_reason);
    j["stop"] = stop;
    j["seconds"] = seconds;
    j["verified"] = verification.equal;
    j["verification"] = opt::verification_method_names.name(verification.method);
    if (verification.method == opt::Verification::Method::regions) j["regions_verified"] = verification.regions;
    j["max_abs_diff"] = verification.max_abs_diff;
    j["guard"] = opt::guard_json(guard, guard_settings);
    // Each timed candidate with the models that proposed it and its price under the target's.
    if (j["guard"].contains("candidates"))
        for (nlohmann::json& c : j["guard"]["candidates"]) {
            const opt::CandidateOrigin& o = timed.at(c["candidate"].get<std::size_t>() - 1);
            c["proposed_by"] = o.proposed_by;
            c["cost_ms"] = o.cost_ms;
        }
    if (guard_settings.mode == opt::GuardMode::cuda) {
        // Timed whole on the GPU by the CUDA executor: medians of CUDA Graph replays.
        j["gpu_before_ms"] = opt::measured_ms(guard.before_ms);
        j["gpu_after_ms"] = opt::measured_ms(guard.after_ms);
    } else {
        j["ort_level"] = guard_settings.levels.empty() ? nlohmann::json() : nlohmann::json(guard_settings.levels.front());
        j["ort_threads"] = guard_settings.threads;
        j["ort_before_ms"] = opt::measured_ms(guard.before_ms);
        j["ort_after_ms"] = opt::measured_ms(guard.after_ms);
    }
    j["proposers"] = opt::proposals_json(proposers);
    j["ledger"] = ledger ? nlohmann::json{{"file", ledger->file},
                                          {"target", ledger->target},
                                          {"level", ledger->level},
                                          {"dropped_families", ledger->dropped_families},
                                          {"dropped_rules", ledger->dropped_rules}}
                         : nlohmann::json();
    if (nchwc_block) j["nchwc_block"] = *nchwc_block;
    if (table)
        j["table"] = {{"target", table->target},
                      {"device", table->device},
                      {"measured_signatures", table->measured_signatures},
                      {"estimated_signatures", table->estimated_signatures}};
    j["proposed_by"] = proposed_by;
    j["peak_rss_bytes"] = peak_rss_bytes;
    return j;
}

}  // namespace rlflow
