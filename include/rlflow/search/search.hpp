#pragma once
/// \file
/// What the searches share: options (budget, alpha, time limit, interruption, progress),
/// the result (best graph, costs, rewrites used, why the search stopped), and the
/// stopping rules.

#include <rlflow/core/graph.hpp>
#include <rlflow/rewrite/rule_set.hpp>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace rlflow::search {

/// A snapshot for progress bars.
struct SearchProgress {
    std::size_t expansions = 0;
    std::size_t budget = 0;
    double initial_cost_ms = 0;
    double best_cost_ms = 0;
};

/// Settings of a search.
struct SearchOptions {
    /// Most expansions (taso: graphs dequeued; greedy: rewrites applied).
    std::size_t budget = 1000;
    /// taso keeps a successor whose cost is below alpha x the best cost so far.
    double alpha = 1.05;
    /// taso keeps at most this many graphs queued (the costliest go first).
    std::size_t max_queue = 1000;
    /// Wall-clock limit in seconds; 0 means none.
    double time_limit_seconds = 0;
    /// Set (e.g. from a SIGINT handler) to stop with the best graph so far.
    const std::atomic<bool>* stop = nullptr;
    /// How many of the cheapest distinct graphs to return (the best and runners-up), for
    /// an end-to-end check to choose from; searches that see one graph at a time
    /// (greedy) return the best alone.
    std::size_t keep_best = 1;
    /// Called after every expansion.
    std::function<void(const SearchProgress&)> on_progress;
    /// Most bytes the search may hold beyond its working graph (SearchResult's
    /// peak_search_bytes); past it, it stops with the best graph so far. 0: no limit.
    std::size_t memory_limit_bytes = 0;
};

/// The budget for a graph of `nodes` nodes when none is given: 1000, or one expansion
/// per 8 nodes on larger graphs (greedy needs about one rewrite per 9 nodes to converge
/// on a transformer encoder's layers, so a fixed budget stops it early on deep stacks).
[[nodiscard]] constexpr std::size_t default_budget(std::size_t nodes) noexcept {
    constexpr std::size_t least = 1000;
    constexpr std::size_t nodes_per_expansion = 8;
    return std::max(least, nodes / nodes_per_expansion);
}

/// Why a search ended.
enum class StopReason : std::uint8_t { converged, budget, time_limit, interrupted, memory_limit };

[[nodiscard]] constexpr std::string_view stop_reason_name(StopReason r) noexcept {
    constexpr std::string_view names[] = {"converged", "budget", "time_limit", "interrupted", "memory_limit"};
    return names[static_cast<std::size_t>(r)];
}

/// The outcome of a search.
struct SearchResult {
    Graph graph;
    double initial_cost_ms = 0;
    double best_cost_ms = 0;
    /// Rule name -> times applied on the way from the input to the best graph.
    std::map<std::string, std::size_t> rewrites;
    /// The rules applied on that way, in order (rewrites counts them).
    std::vector<std::string> sequence;
    /// The next cheapest distinct graphs found (at most SearchOptions::keep_best - 1),
    /// cheapest first, with their costs and rewrites.
    struct RunnerUp {
        Graph graph;
        double cost_ms = 0;
        std::map<std::string, std::size_t> rewrites;
        std::vector<std::string> sequence;
    };
    std::vector<RunnerUp> runners_up;
    /// The graph and runners-up were chosen by what an agent learned from measured latency
    /// (rl::AgentSearchOptions::endpoints), not by these prices: a guard times them even
    /// where the cost model prices them above the input.
    bool chosen_by_policy = false;
    std::size_t expansions = 0;
    /// The expansion after which the best graph was last improved (0: the input is the
    /// best); a search stopped by its budget long after it says a larger one would not help.
    std::size_t best_found_at = 0;
    double seconds = 0;
    StopReason reason = StopReason::converged;
    /// The most bytes the search held beyond its working graph (taso: its tree, the
    /// journals of the path it walked, the hashes seen and the action prices); 0 where a
    /// search does not count them.
    std::size_t peak_search_bytes = 0;
};


/// The budget, the clock and the stop flag, checked between expansions.
class StopRules {
public:
    explicit StopRules(const SearchOptions& options)
        : m_options(options), m_start(std::chrono::steady_clock::now()) {}

    /// Why to stop before expansion number `expansions`, if at all.
    [[nodiscard]] std::optional<StopReason> check(std::size_t expansions) const {
        if (m_options.stop && m_options.stop->load(std::memory_order_relaxed)) return StopReason::interrupted;
        if (expansions >= m_options.budget) return StopReason::budget;
        if (m_options.time_limit_seconds > 0 && seconds() >= m_options.time_limit_seconds) return StopReason::time_limit;
        return std::nullopt;
    }
    /// StopReason::memory_limit once `bytes` held is past the limit, if one is set.
    [[nodiscard]] std::optional<StopReason> check_memory(std::size_t bytes) const {
        if (m_options.memory_limit_bytes > 0 && bytes > m_options.memory_limit_bytes) return StopReason::memory_limit;
        return std::nullopt;
    }
    [[nodiscard]] double seconds() const {
        return std::chrono::duration<double>(std::chrono::steady_clock::now() - m_start).count();
    }
    /// The most expansions allowed.
    [[nodiscard]] std::size_t budget() const noexcept { return m_options.budget; }
    /// Seconds left before the time limit (none without one; 0 once it has passed).
    [[nodiscard]] std::optional<double> seconds_left() const {
        if (m_options.time_limit_seconds <= 0) return std::nullopt;
        return std::max(0.0, m_options.time_limit_seconds - seconds());
    }

private:
    const SearchOptions& m_options;
    std::chrono::steady_clock::time_point m_start;
};

/// Rule name -> count, from the rule ids applied in order.
[[nodiscard]] inline std::map<std::string, std::size_t> named_counts(const rewrite::RuleSet& rules,
                                                                    const std::vector<std::uint32_t>& path) {
    std::map<std::string, std::size_t> named;
    for (const std::uint32_t r : path) ++named[rules[r].name];
    return named;
}

/// The names of the rule ids applied in order.
[[nodiscard]] inline std::vector<std::string> named_sequence(const rewrite::RuleSet& rules,
                                                             const std::vector<std::uint32_t>& path) {
    std::vector<std::string> names;
    names.reserve(path.size());
    for (const std::uint32_t r : path) names.push_back(rules[r].name);
    return names;
}


}  // namespace rlflow::search
