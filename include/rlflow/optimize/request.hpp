#pragma once
/// \file
/// What `rlflow::optimize` is asked to do, typed: the target, the search, the guard, the
/// verification, the limits, and the hooks of a caller that shows progress or cancels.
/// The command line and Python read their flags and keyword arguments into it once; every
/// choice inside the library is an enum or a spec, never a string.

#include <rlflow/core/names.hpp>
#include <rlflow/onnx/export_options.hpp>
#include <rlflow/onnx/import_options.hpp>
#include <rlflow/optimize/guard.hpp>
#include <rlflow/optimize/hooks.hpp>
#include <rlflow/optimize/target.hpp>
#include <rlflow/rewrite/rule_set.hpp>
#include <rlflow/rl/env/agent_dir.hpp>
#include <rlflow/rl/plan_options.hpp>
#include <rlflow/search/eqsat.hpp>

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <variant>
#include <vector>

namespace rlflow {

/// Greedy: the cheapest rewrite at each step until none lowers the cost.
struct GreedySpec {};

/// Cost-ordered backtracking, TASO's search (the command line's `taso`).
struct BacktrackingSpec {
    /// Keeps a successor whose cost is below alpha times the best so far.
    double alpha = 1.05;
};

/// Equality saturation, then extraction (greedy, the local search, and CBC's ILP).
struct EqsatSpec {
    search::EqsatOptions options;
};

/// Which trained agent rolls out.
using rl::AgentKind;

/// Where an agent's rollout ends: at the step limit, keeping the cheapest graph met, or
/// at the agent's NO-OP, as in training; automatic: noop for an agent that learned from
/// measured latency (its NO-OP is a judgement the cost model cannot make), else limit.
enum class AgentStop : std::uint8_t { automatic, limit, noop };

/// --agent-stop's names, and the report's.
inline constexpr NameTable<AgentStop, 3> agent_stop_names{{{
    {AgentStop::automatic, "auto"},
    {AgentStop::limit, "limit"},
    {AgentStop::noop, "noop"},
}}};

/// A trained agent's rollouts (the directory `rlflow train` wrote).
struct AgentSpec {
    AgentKind kind = AgentKind::model_free;
    std::filesystem::path dir;
    /// Sampled rollouts after the greedy one.
    std::size_t samples = 0;
    AgentStop stop = AgentStop::automatic;
    /// The tree search the agent guides after its rollouts.
    rl::PlanOptions plan;
};

/// The search: one of the four.
using SearchSpec = std::variant<GreedySpec, BacktrackingSpec, EqsatSpec, AgentSpec>;

/// The searches by name, for the command line, Python and the report.
enum class SearchKind : std::uint8_t { greedy, backtracking, eqsat, model_free, model_based };

/// --search's names: backtracking keeps TASO's name, `taso`, where users meet it.
inline constexpr NameTable<SearchKind, 5> search_kind_names{{{
    {SearchKind::greedy, "greedy"},
    {SearchKind::backtracking, "taso"},
    {SearchKind::eqsat, "eqsat"},
    {SearchKind::model_free, "mf"},
    {SearchKind::model_based, "mb"},
}}};

/// The kind of `spec`.
[[nodiscard]] inline SearchKind search_kind(const SearchSpec& spec) noexcept {
    if (std::holds_alternative<GreedySpec>(spec)) return SearchKind::greedy;
    if (std::holds_alternative<BacktrackingSpec>(spec)) return SearchKind::backtracking;
    if (std::holds_alternative<EqsatSpec>(spec)) return SearchKind::eqsat;
    return std::get<AgentSpec>(spec).kind == AgentKind::model_free ? SearchKind::model_free : SearchKind::model_based;
}

/// Whether `spec` rolls out a trained agent.
[[nodiscard]] inline bool is_agent(const SearchSpec& spec) noexcept { return std::holds_alternative<AgentSpec>(spec); }

/// The search of `kind` at its defaults.
[[nodiscard]] inline SearchSpec default_search(SearchKind kind) {
    switch (kind) {
        case SearchKind::greedy: return GreedySpec{};
        case SearchKind::eqsat: return EqsatSpec{};
        case SearchKind::model_free: return AgentSpec{AgentKind::model_free, {}, 0, AgentStop::automatic, {}};
        case SearchKind::model_based: return AgentSpec{AgentKind::model_based, {}, 0, AgentStop::automatic, {}};
        case SearchKind::backtracking: break;
    }
    return BacktrackingSpec{};
}

/// The guard: the input and the best candidates timed whole in the target's runtime; a
/// candidate is written only when it is faster beyond the noise.
struct GuardSpec {
    opt::GuardMode mode = opt::GuardMode::automatic;
    /// ONNX Runtime levels timed besides the target's own, where the written model must not
    /// be slower.
    std::vector<std::string> levels;
    /// Candidates timed at most.
    std::size_t candidates = 3;
    /// Interleaved timed runs of each model.
    int rounds = 21;
};

/// The check of the written graph against the input on random inputs.
struct VerifySpec {
    /// Random input sets.
    int trials = 3;
};

/// Where a search stops early, with the best graph so far.
struct Limits {
    /// Expansions (taso), rewrites (greedy) or agent steps; 0: search::default_budget of
    /// the graph's size.
    std::size_t budget = 0;
    /// Megabytes a search may hold beyond its working graph; 0: no limit.
    std::size_t memory_limit_mb = 0;
    /// Seconds of each search; 0: none.
    double time_limit_seconds = 0;
};

/// Candidates from other price models than the target's, which the guard also times (with
/// a guard, and for a search that is not an agent's).
struct ProposeSpec {
    /// Price models whose cheapest graphs are candidates too (the target's own is left out):
    /// by default the analytic cpu and v100 presets. A GPU's roofline finds merges (grouped
    /// and enlarged convolutions) a CPU's per-op sum calls dearer but ORT at level all may
    /// run faster.
    std::vector<opt::CostChoice> price_models{{opt::CostKind::analytic, "cpu", {}}, {opt::CostKind::analytic, "v100", {}}};
    /// For an ort-cpu target timed in ONNX Runtime: the input with its grouped convolutions
    /// widened to the NCHWc block (optimize/nchwc_groups.hpp).
    bool nchwc_groups = true;

    /// No candidates but the target's own search's.
    [[nodiscard]] static ProposeSpec none() { return {{}, false}; }
};

/// Which rule ledger (search/ledger.hpp) shapes the rules and the order of candidates.
enum class LedgerMode : std::uint8_t { automatic, none, file };

/// The ledger: automatic is the one rlflow ships, for the default rules at an ort-cpu
/// target of its level under the target's own prices; or none; or a ledger file.
struct LedgerSpec {
    LedgerMode mode = LedgerMode::automatic;
    std::filesystem::path file;
};

/// Where measured op prices are kept between runs.
enum class CostCacheMode : std::uint8_t { per_user, none, file };

/// The cost cache: per_user is ~/.cache/rlflow for a measuring backend (nothing for one
/// that prices without measuring); or none; or a file.
struct CostCacheSpec {
    CostCacheMode mode = CostCacheMode::per_user;
    std::filesystem::path file;
};

/// What the input is, beyond its graph.
struct InputSpec {
    /// How the report names it (a path, zoo:NAME).
    std::string name;
    /// The ONNX file it was read from, if any: the guard times that very file as the input,
    /// and a kept input is written as its bytes.
    std::optional<std::filesystem::path> file;
    /// How it was read; the written graph is read back the same way to be compared.
    onnx_io::ImportOptions read_as;
};

/// A caller's hooks: progress of the long phases, lines for a person, and a cancel flag.
/// When the flag is set the search stops, and the best graph so far is guarded, verified
/// and returned.
struct OptimizeHooks {
    opt::ProgressHook progress;
    opt::MessageHook message = opt::print_message;
    const std::atomic<bool>* cancel = nullptr;
};

/// Everything `rlflow::optimize` is asked.
struct OptimizeRequest {
    opt::TargetSpec target;
    SearchSpec search = BacktrackingSpec{};
    GuardSpec guard;
    VerifySpec verify;
    Limits limits;
    ProposeSpec propose;
    /// The rules; null: the default rules (the built-in and the generated library).
    std::shared_ptr<const rewrite::RuleSet> rules;
    LedgerSpec ledger;
    CostCacheSpec cost_cache;
    /// How the result will be written (and is written to be timed).
    onnx_io::ExportOptions save;
    /// Standard ONNX ops only: an input holding an ONNX Runtime contrib op is refused, and
    /// so is save.fused_conv_microsoft.
    bool portable = false;
    /// Seed of the verification's inputs, the timing's inputs and an agent's samples.
    std::uint64_t seed = 0;
    InputSpec input;
    OptimizeHooks hooks;
};

}  // namespace rlflow
