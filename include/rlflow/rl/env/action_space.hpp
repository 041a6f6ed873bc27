#pragma once
/// \file
/// Which rules form an agent's action space. All of the built-in and generated rules make
/// N run into the thousands, most of which never match a given model; every one of them
/// is a row of the xfer head that the agent must learn to leave alone. The default action
/// space is the built-in rules plus the generated rules that match somewhere in the
/// training graphs, which keeps N in the hundreds. A checkpoint records the rule names,
/// so an agent runs only with the action space it was trained on.

#include <rlflow/rewrite/default_rules.hpp>
#include <rlflow/rewrite/location_index.hpp>

#include <algorithm>
#include <cstddef>
#include <memory>
#include <span>
#include <string>
#include <vector>

namespace rlflow::rl {

/// The rules of `all` that are among its first `always` (the built-in rules, in
/// default_rules' order) or that match somewhere in one of `graphs`, in `all`'s order.
[[nodiscard]] inline rewrite::RuleSet rules_matching(const rewrite::RuleSet& all, std::size_t always,
                                                     std::span<const Graph> graphs) {
    std::vector<char> keep(all.size(), 0);
    for (std::size_t r = 0; r < std::min(always, all.size()); ++r) keep[r] = 1;
    const auto shared = std::make_shared<const rewrite::RuleSet>(all);
    for (const Graph& g : graphs) {
        rewrite::LocationIndex index(shared);
        index.rebuild(g);
        for (std::size_t r = 0; r < all.size(); ++r)
            if (!index.locations(r).empty()) keep[r] = 1;
    }
    rewrite::RuleSet chosen;
    for (std::size_t r = 0; r < all.size(); ++r)
        if (keep[r]) chosen.add(all[r]);
    return chosen;
}

/// The default action space for training on `graphs`: the built-in rules, then the proved
/// generated rules (rewrite::default_rules) that match somewhere in `graphs`.
[[nodiscard]] inline rewrite::RuleSet training_rules(std::span<const Graph> graphs) {
    return rules_matching(rewrite::default_rules(), rewrite::builtin_rules().size(), graphs);
}

/// The rule names of `rules` in id order: what a checkpoint records of its action space.
[[nodiscard]] inline std::vector<std::string> rule_names(const rewrite::RuleSet& rules) {
    std::vector<std::string> names;
    names.reserve(rules.size());
    for (const rewrite::Rule& r : rules) names.push_back(r.name);
    return names;
}

}  // namespace rlflow::rl
