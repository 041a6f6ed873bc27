#pragma once
/// \file
/// The substitution generator: enumerate small graphs, fingerprint them exactly, pair the
/// ones that compute the same function, prune, verify, and emit rules.
///
/// 1. Enumerate (detail/generator_enumerator.hpp) every DAG of up to `max_ops` op
///    applications over the space's variables (generator_config.hpp), evaluated as it is
///    built with exact rational arithmetic (exact.hpp) on seeded random integers.
/// 2. Fingerprint each graph's outputs: a random linear form of their values modulo the
///    prime 2^61 - 1. Relu and max-pool need no polynomial stand-in: the arithmetic is
///    exact rationals (n / 210^e, n a 128-bit integer), so their comparisons are exact
///    and a relu graph equals another only if it does on these integers. A graph whose
///    values would overflow 128 bits is skipped (counted as inexact).
/// 3. Bucket graphs by fingerprint; within a bucket, evaluate every member on
///    `exact_trials` independent input sets and group the ones whose outputs are exactly
///    equal on all of them (never trusting a hash alone).
/// 4. Pair the members of each class into candidate rules (the target reads only
///    variables the source reads) and prune them (detail/generator_pairs.hpp); with
///    `known_rules`, also the rules one known rule does with the same result
///    (known_rule_doing in rule_check.hpp).
/// 5. Verify every survivor: float32 in the reference executor on several seeded inputs
///    at the enumeration shapes and at larger ones (rule_check.hpp), then with Z3 from
///    rlflow's operator axioms (prover.hpp). A rule is `proved`, `tested` (numeric only)
///    or `rejected` (a numeric check failed, or Z3 found a counterexample).
///
/// Stages 1-3 are in detail/generator_classes.hpp, stage 4 in
/// detail/generator_candidates.hpp, stage 5 in detail/generator_rules.hpp; the options and
/// the report in generator_options.hpp. This file runs them in order.

#include <rlflow/synth/detail/generator_candidates.hpp>
#include <rlflow/synth/detail/generator_classes.hpp>
#include <rlflow/synth/detail/generator_rules.hpp>
#include <rlflow/synth/generator_config.hpp>
#include <rlflow/synth/generator_options.hpp>

#include <utility>
#include <vector>

namespace rlflow::synth {

/// Generates, prunes and verifies rules over `space` (see the file comment). The result
/// is deterministic under `options.seed` whatever `options.jobs` is. Over the ranks of
/// `comm`, the ranks split the enumeration (by first node; their graphs are merged on every
/// rank), the exact comparison of each fingerprint bucket's members (by bucket) and the
/// verification (the stage that grows fastest with max_ops: one Z3 proof per rule; by
/// rule); pairing and pruning run alike on every rank. Every rank returns the same result,
/// which is the single process's, report counts included.
[[nodiscard]] inline GeneratedRules generate_rules(const GeneratorSpace& space, const GeneratorOptions& options = {},
                                                   AnyCommunicator comm = {}) {
    RLFLOW_EXPECTS(space.variables.size() < detail::no_tensor / 2, precondition_error, "too many generator variables");
    GeneratedRules out;
    auto start = detail::Clock::now();
    const std::vector<detail::GenGraph> graphs = detail::enumerate_graphs(space, options, out.report, comm);
    out.report.enumerate_seconds = detail::seconds_since(start);
    start = detail::Clock::now();
    const auto classes = detail::equal_classes(graphs, space, options, comm);
    out.report.classes = classes.size();
    const std::vector<detail::Candidate> candidates = detail::prune_candidates(graphs, classes, space, options, out.report);
    detail::OpApplier applier(space);
    std::vector<Rule> rules;
    for (const detail::Candidate& c : candidates) {
        if (auto rule = detail::candidate_rule(graphs, c, applier, options, detail::generated_rule_name(rules.size())))
            rules.push_back(std::move(*rule));
        else
            ++out.report.pruned_constant_shape;
    }
    detail::prune_known_rules(rules, space, options, out.report);
    if (options.on_progress) options.on_progress({"pair", 1, 1});
    out.report.pair_seconds = detail::seconds_since(start);
    start = detail::Clock::now();
    detail::verify_rules(rules, space, options, out.report, comm);
    out.report.verify_seconds = detail::seconds_since(start);
    for (Rule& rule : rules) {
        std::vector<Rule>& into = rule.verification == Verification::rejected ? out.rejected : out.rules;
        rule.id = static_cast<std::uint32_t>(into.size());
        into.push_back(std::move(rule));
    }
    return out;
}

}  // namespace rlflow::synth
