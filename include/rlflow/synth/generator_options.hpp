#pragma once
/// \file
/// How to run the substitution generator (GeneratorOptions, with progress reports) and
/// what it gives back (GeneratedRules, with a GeneratorReport counting every stage).

#include <rlflow/rewrite/rule.hpp>
#include <rlflow/rewrite/rule_set.hpp>
#include <rlflow/synth/detail/rewrite_names.hpp>

#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string_view>
#include <vector>

namespace rlflow::synth {

/// Where generation is, for progress bars.
struct GeneratorProgress {
    std::string_view stage;  // "enumerate", "classes", "pair", "verify"
    std::size_t done = 0;
    std::size_t total = 0;
};

/// How to generate.
struct GeneratorOptions {
    std::size_t max_ops = 3;
    /// Most outputs of a rule side.
    std::size_t max_outputs = 2;
    /// Input sets a class must agree on exactly (the first gives the fingerprints).
    std::size_t exact_trials = 5;
    /// Variables hold integers in [-value_bound, value_bound].
    std::int64_t value_bound = 3;
    std::uint64_t seed = 0;
    unsigned jobs = 1;
    /// Float32 trials per shape in the numeric check.
    int float_trials = 5;
    /// Prove with Z3 (when rlflow was built with it).
    bool prove = true;
    unsigned proof_timeout_ms = 2000;
    /// Dimension substitutions giving the larger shapes of the numeric check (a
    /// dimension not listed keeps its size, so kernel sizes 1 and 3 stay).
    std::vector<std::map<std::int64_t, std::int64_t>> shape_variants = {{{2, 3}, {4, 6}, {5, 7}}};
    /// Rules already in use beside the generated ones (the built-in rules): a candidate one
    /// of them does on its own, with the same result, is pruned before verification.
    std::shared_ptr<const RuleSet> known_rules;
    std::function<void(const GeneratorProgress&)> on_progress;
};

/// What generation found, stage by stage.
struct GeneratorReport {
    std::size_t states = 0;
    std::size_t graphs = 0;
    std::size_t redundant_states = 0;
    std::size_t inexact = 0;
    std::size_t classes = 0;
    std::size_t candidates = 0;
    std::size_t pruned_disconnected = 0;
    std::size_t pruned_common_subgraph = 0;
    std::size_t pruned_common_supergraph = 0;
    std::size_t pruned_renaming = 0;
    std::size_t pruned_subsumed = 0;
    /// Candidates whose constants could be any tensors (a law about variables).
    std::size_t pruned_constant_as_variable = 0;
    /// Candidates holding a no-op (two equal tensors): in the target, where a smaller target
    /// says the same; or in the source when the target is no smaller (removing the no-op,
    /// a smaller rule, then a rule of the smaller source says the same).
    std::size_t pruned_redundant = 0;
    /// Candidates with a constant shape or group count no variable of the rule gives.
    std::size_t pruned_constant_shape = 0;
    /// Candidates a known rule (GeneratorOptions::known_rules) does with the same result.
    std::size_t pruned_known = 0;
    std::size_t proved = 0;
    std::size_t tested = 0;
    std::size_t rejected = 0;
    double enumerate_seconds = 0;
    double pair_seconds = 0;
    double verify_seconds = 0;
    /// Z3 time of each rule it was asked about.
    std::vector<double> proof_seconds;
};

/// The generated rules (proved and tested), the rejected ones (never to be used; kept
/// for reports) and the report.
struct GeneratedRules {
    std::vector<Rule> rules;
    std::vector<Rule> rejected;
    GeneratorReport report;
};

}  // namespace rlflow::synth
