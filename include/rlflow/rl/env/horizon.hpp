#pragma once
/// \file
/// How long a training episode runs: long enough for the graph. An episode cut before the
/// rewrites a graph needs never shows the agent where they lead (Inception-v3 takes 207
/// under greedy search, NasNet-A 479), and an agent trained on 100-step episodes of
/// Inception-v3 learned to take a rule that pays at once and blocks 8 fusions later, where
/// one trained on 300-step episodes did not.

#include <rlflow/search/greedy.hpp>

#include <algorithm>
#include <cstddef>
#include <memory>
#include <span>

namespace rlflow::rl {

/// The fewest steps an episode runs by default.
inline constexpr std::size_t min_episode_steps = 100;

/// The most rewrites greedy search takes on any of `graphs` with `rules` under `model`.
template <cost::CostBackend Backend>
[[nodiscard]] std::size_t greedy_rewrites(std::span<const Graph> graphs, const std::shared_ptr<const rewrite::RuleSet>& rules,
                                          cost::CostModel<Backend>& model) {
    search::SearchOptions options;
    options.budget = 100'000;
    std::size_t most = 0;
    for (const Graph& g : graphs) most = std::max(most, search::greedy(g, rules, model, options).sequence.size());
    return most;
}

/// The step limit of training episodes on graphs that greedy search rewrites `rewrites`
/// times at most: twice that, and at least min_episode_steps.
[[nodiscard]] inline std::size_t episode_step_limit(std::size_t rewrites) {
    return std::max(min_episode_steps, 2 * rewrites);
}

}  // namespace rlflow::rl
