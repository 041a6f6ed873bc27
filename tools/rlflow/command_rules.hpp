#pragma once
// `rlflow rules generate [--max-ops K] [--ops LIST] [--jobs N] -o rules.pb`: enumerate,
// fingerprint, pair, prune and verify substitution rules and write them;
// `rlflow rules verify FILE`: check every rule of a file again (numerically on the
// generator's variable shapes, and with Z3); exit 2 naming the first rule that fails;
// `rlflow rules stats FILE`: counts by side sizes, by ops and by verification status.

#include "progress.hpp"
#include "ranks.hpp"

#include <rlflow/core/atomic_file.hpp>
#include <rlflow/rewrite/builtin_rules.hpp>
#include <rlflow/rewrite/rule_file.hpp>
#include <rlflow/rewrite/rule_text.hpp>
#include <rlflow/synth/generator.hpp>

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cstdio>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

namespace rlflow::cli {

struct RulesOptions {
    std::string output;
    std::string file;
    std::string report;
    std::vector<std::string> ops;
    synth::GeneratorOptions generator;
    bool no_prove = false;
    bool keep_builtin = false;
    bool json = false;
};

/// The median of `values` (0 for none).
inline double median(std::vector<double> values) {
    if (values.empty()) return 0;
    std::nth_element(values.begin(), values.begin() + static_cast<std::ptrdiff_t>(values.size() / 2), values.end());
    return values[values.size() / 2];
}

inline nlohmann::json generator_report_json(const synth::GeneratorReport& r, const synth::GeneratorOptions& o) {
    return {{"max_ops", o.max_ops},
            {"seed", o.seed},
            {"jobs", o.jobs},
            {"states", r.states},
            {"graphs", r.graphs},
            {"redundant_states", r.redundant_states},
            {"inexact_graphs", r.inexact},
            {"classes", r.classes},
            {"candidates", r.candidates},
            {"pruned_disconnected", r.pruned_disconnected},
            {"pruned_common_subgraph", r.pruned_common_subgraph},
            {"pruned_common_supergraph", r.pruned_common_supergraph},
            {"pruned_renaming", r.pruned_renaming},
            {"pruned_subsumed", r.pruned_subsumed},
            {"pruned_redundant", r.pruned_redundant},
            {"pruned_constant_as_variable", r.pruned_constant_as_variable},
            {"pruned_constant_shape", r.pruned_constant_shape},
            {"pruned_builtin", r.pruned_known},
            {"rules_after_pruning", r.proved + r.tested + r.rejected},
            {"proved", r.proved},
            {"tested", r.tested},
            {"rejected", r.rejected},
            {"median_proof_seconds", median(r.proof_seconds)},
            {"enumerate_seconds", r.enumerate_seconds},
            {"pair_seconds", r.pair_seconds},
            {"verify_seconds", r.verify_seconds}};
}

/// "median Z3 0.012 s", or what was not done: no proofs under --no-prove.
inline std::string proof_time_text(const RulesOptions& o, const synth::GeneratorReport& r) {
    if (o.no_prove) return "numeric checks only, no Z3 proofs";
    char text[64];
    std::snprintf(text, sizeof text, "median Z3 %.3f s", median(r.proof_seconds));
    return text;
}

/// Enumerates, prunes and verifies rules with the options of `o`; a progress bar per
/// stage when `progress`.
inline synth::GeneratedRules generate_rule_set(RulesOptions o, bool progress, AnyCommunicator comm = {}) {
    const synth::GeneratorSpace space
        = o.ops.empty() ? synth::default_generator_space() : synth::restrict_ops(synth::generator_space(), o.ops);
    o.generator.prove = !o.no_prove;
    if (!o.keep_builtin) o.generator.known_rules = std::make_shared<const rewrite::RuleSet>(rewrite::builtin_rules());
    std::unique_ptr<ProgressBar> bar;
    std::string stage;
    if (progress)
        o.generator.on_progress = [&](const synth::GeneratorProgress& p) {
            if (stage != p.stage) {
                if (bar) bar->finish();
                stage = p.stage;
                bar = std::make_unique<ProgressBar>(stage, p.total);
            }
            bar->update(p.done, "");
        };
    synth::GeneratedRules generated = synth::generate_rules(space, o.generator, comm);
    if (bar) bar->finish();
    return generated;
}

/// Under mpirun, every rank generates and the ranks split the verification
/// (synth::generate_rules); rank 0 writes the file, the same bytes as one process writes.
inline void generate_command(const RulesOptions& o) {
    Ranks ranks;
    // Z3 runs beside each worker: bound to one core per rank, its proofs took 1.6 times as
    // long here (2 ranks, --jobs 1: 54 s against 35 s with --bind-to none).
    ranks.warn_if_bound(std::max(o.generator.jobs, 1u) + (o.no_prove ? 0u : 1u));
    const synth::GeneratedRules generated = generate_rule_set(o, ranks.root(), ranks.comm());
    if (!ranks.root()) return;
    rewrite::save_rules(o.output, generated.rules);
    nlohmann::json j = generator_report_json(generated.report, o.generator);
    j["ranks"] = ranks.size();
    j["rejected_rules"] = generated.rejected.empty() ? "" : rewrite::to_text(generated.rejected);
    if (!o.report.empty()) write_file_atomically(o.report, j.dump(2) + "\n");
    const auto& r = generated.report;
    std::printf("enumerated %zu states, %zu graphs (%zu inexact) in %.1f s\n", r.states, r.graphs, r.inexact,
                r.enumerate_seconds);
    std::printf("%zu classes, %zu candidates; pruned %zu disconnected, %zu common subgraph, %zu common supergraph, "
                "%zu renaming, %zu subsumed, %zu with no-ops, %zu constants as variables, %zu unshaped, "
                "%zu done by built-in rules (%.1f s)\n",
                r.classes, r.candidates, r.pruned_disconnected, r.pruned_common_subgraph, r.pruned_common_supergraph,
                r.pruned_renaming, r.pruned_subsumed, r.pruned_redundant, r.pruned_constant_as_variable,
                r.pruned_constant_shape, r.pruned_known, r.pair_seconds);
    std::printf("verified: %zu proved, %zu tested, %zu rejected (%.1f s; %s)\n", r.proved, r.tested, r.rejected,
                r.verify_seconds, proof_time_text(o, r).c_str());
    std::printf("wrote %zu rules to %s\n", generated.rules.size(), o.output.c_str());
}

/// Checks every rule of `rules` (read from `source`) again, numerically on the generator's
/// variable shapes and, unless `o.no_prove`, with Z3. Throws rule_error naming the first
/// rule that fails, or whose variables are not generator variables.
inline synth::GeneratorReport verify_rule_list(const std::vector<rewrite::Rule>& rules, const std::string& source,
                                               const RulesOptions& o, bool progress) {
    const synth::GeneratorSpace space = synth::generator_space();
    for (const rewrite::Rule& rule : rules)
        for (const std::string& v : rule.variables)
            RLFLOW_EXPECTS(std::any_of(space.variables.begin(), space.variables.end(),
                                       [&](const synth::GeneratorVariable& g) { return g.name == v; }),
                           rule_error,
                           source + ": rule '" + rule.name + "': variable '" + v
                               + "' is not a generator variable, so it has no shape to check the rule at");
    synth::GeneratorOptions options = o.generator;
    options.prove = !o.no_prove;
    synth::GeneratorReport report;
    std::optional<ProgressBar> bar;
    if (progress) {
        bar.emplace("verify", rules.size());
        options.on_progress = [&](const synth::GeneratorProgress& p) { bar->update(p.done, ""); };
    }
    std::vector<rewrite::Rule> checked = rules;
    synth::detail::verify_rules(checked, space, options, report);
    if (bar) bar->finish();
    for (std::size_t i = 0; i < checked.size(); ++i)
        if (checked[i].verification == rewrite::Verification::rejected)
            throw rule_error(source + ": rule #" + std::to_string(i) + " '" + checked[i].name
                             + "' fails verification (numeric check or Z3 counterexample)");
    return report;
}

inline void verify_command(const RulesOptions& o) {
    const std::vector<rewrite::Rule> rules = rewrite::load_rules(o.file);
    const synth::GeneratorReport report = verify_rule_list(rules, o.file, o, true);
    std::printf("%zu rules: %zu proved, %zu tested, 0 rejected (%s)\n", rules.size(), report.proved, report.tested,
                proof_time_text(o, report).c_str());
}

inline void stats_command(const RulesOptions& o) {
    const std::vector<rewrite::Rule> rules = rewrite::load_rules(o.file);
    std::map<std::string, std::size_t> by_size, by_ops, by_status;
    for (const rewrite::Rule& rule : rules) {
        // Side sizes count ops, as --max-ops does: Constant nodes (a rule's literal
        // tensors) are not ops of the pattern.
        const auto ops_on = [](const auto& side) {
            return std::count_if(side.begin(), side.end(), [](const rewrite::PatternNode& n) { return n.op != OpKind::Constant; });
        };
        ++by_size["(" + std::to_string(ops_on(rule.source)) + "," + std::to_string(ops_on(rule.target)) + ")"];
        std::set<std::string> ops;
        for (const auto* side : {&rule.source, &rule.target})
            for (const rewrite::PatternNode& n : *side) ops.insert(std::string(op_name(n.op)));
        std::string mix;
        for (const std::string& op : ops) mix += (mix.empty() ? "" : "+") + op;
        ++by_ops[mix];
        ++by_status[std::string(rewrite::verification_name(rule.verification))];
    }
    if (o.json) {
        std::printf("%s\n", nlohmann::json{{"file", o.file}, {"rules", rules.size()}, {"by_side_sizes", by_size},
                                           {"by_ops", by_ops}, {"by_status", by_status}}
                                .dump(2)
                                .c_str());
        return;
    }
    std::printf("%s: %zu rules\n", o.file.c_str(), rules.size());
    const auto table = [](const char* title, const std::map<std::string, std::size_t>& counts) {
        std::printf("%s\n", title);
        for (const auto& [key, count] : counts) std::printf("  %-40s %6zu\n", key.c_str(), count);
    };
    table("by status", by_status);
    table("by (source ops, target ops), constants not counted", by_size);
    table("by ops used", by_ops);
}

}  // namespace rlflow::cli
