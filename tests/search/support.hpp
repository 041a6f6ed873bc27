#pragma once
// Helpers shared by the search tests: the built-in rules, and zoo graphs with seeded
// weights so that results can be compared numerically.

#include <rlflow/exec.hpp>
#include <rlflow/models/zoo.hpp>
#include <rlflow/rewrite.hpp>

#include <memory>

namespace search_test {

/// The built-in rules, built once.
inline const std::shared_ptr<const rlflow::rewrite::RuleSet>& rules() {
    static const auto set = std::make_shared<const rlflow::rewrite::RuleSet>(rlflow::rewrite::builtin_rules());
    return set;
}

/// Zoo graph `name` with seeded weights.
inline rlflow::Graph weighted(const char* name) {
    rlflow::Graph g = rlflow::models::build_zoo_model(name);
    rlflow::exec::fill_random_weights(g, 3);
    return g;
}

}  // namespace search_test
