#pragma once
/// \file
/// Stage 5 of the generator (synth/generator.hpp): candidates become rules (pattern sides,
/// split sizes in terms of the matched tensors, generated names), rules a known rule does
/// are pruned, and every rule is verified: numerically (synth/rule_check.hpp) at the
/// enumeration shapes and each shape variant, then with Z3 (synth/prover.hpp).

#include <rlflow/core/communicator.hpp>
#include <rlflow/rewrite/rule.hpp>
#include <rlflow/synth/detail/generator_candidates.hpp>
#include <rlflow/synth/detail/generator_classes.hpp>
#include <rlflow/synth/generator_options.hpp>
#include <rlflow/synth/prover.hpp>
#include <rlflow/synth/rule_check.hpp>

#include <algorithm>
#include <cstdint>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <variant>
#include <vector>

namespace rlflow::synth::detail {

/// Builds one side of a generated rule: a Constant node per constant it reads (first),
/// then its op nodes, a grouped convolution's group as channels / kernel input channels.
/// `ref_of` maps the graph's tensors to pattern refs and is extended with the side's node
/// outputs. nullopt if a constant or a group count has no term.
[[nodiscard]] inline std::optional<std::vector<PatternNode>> pattern_side(const GenGraph& g, OpApplier& applier,
                                                                          const std::string& label_prefix,
                                                                          std::map<std::uint16_t, PatternRef>& ref_of,
                                                                          const RuleDims& dims) {
    const GeneratorSpace& space = applier.space();
    std::vector<const Applied*> applied;
    const std::vector<std::uint32_t> types = tensor_type_ids(g, applier, &applied);
    std::vector<PatternNode> nodes;
    const auto label = [&] { return label_prefix + std::to_string(nodes.size()); };
    for (const GenNode& n : g.nodes)
        for (const std::uint16_t t : n.inputs)
            if (is_constant_leaf(space, t) && !ref_of.contains(t)) {  // in order of first use
                auto constant = dims.constant_node(space.variables[t], label());
                if (!constant) return std::nullopt;
                ref_of[t] = PatternRef::node(static_cast<std::uint32_t>(nodes.size()));
                nodes.push_back(std::move(*constant));
            }
    auto tensor = static_cast<std::uint16_t>(space.variables.size());
    for (std::size_t i = 0; i < g.nodes.size(); ++i) {
        PatternNode n;
        n.op = space.ops[g.nodes[i].op].op;
        n.label = label();
        n.num_outputs = g.nodes[i].num_outputs;
        for (const std::uint16_t t : g.nodes[i].inputs)
            if (t != no_tensor) n.inputs.push_back(ref_of.at(t));
        for (const auto& [name, value] : applied[i]->attributes) {
            const auto* group = std::get_if<std::int64_t>(&value);
            if (n.op != OpKind::Conv2D || name != "group" || *group == 1) {
                n.attributes.push_back({name, AttrExpr::of(value)});
                continue;
            }
            const std::int64_t channels = applier.types().type(types[g.nodes[i].inputs[0]]).shape[1];
            const auto t = dims.term(channels, 4, 1, channels / *group);
            if (!t) return std::nullopt;
            n.attributes.push_back({name, AttrExpr::of_integer(*t)});
        }
        for (std::uint32_t k = 0; k < n.num_outputs; ++k)
            ref_of[tensor++] = PatternRef::node(static_cast<std::uint32_t>(nodes.size()), k);
        nodes.push_back(std::move(n));
    }
    return nodes;
}

/// Split sizes in terms of the matched tensors rather than the enumeration's numbers, so a
/// rule found on 4-wide tensors applies at any width: a source Split (always into halves
/// here) splits dim(input)/2 and dim(input)/2; a target Split whose parts are rule outputs
/// gives each part the extent of the source output it replaces (which its type must
/// equal), and one of a variable halves it. Any other Split keeps its literal sizes.
inline void generalize_split_sizes(Rule& rule) {
    const auto axis_of = [](const PatternNode& n) {
        for (const PatternAttribute& a : n.attributes)
            if (a.name == "axis") return std::get<std::int64_t>(a.value.literal);
        return std::int64_t{0};
    };
    const auto set_split = [](PatternNode& n, std::vector<IntTerm> terms) {
        for (PatternAttribute& a : n.attributes)
            if (a.name == "split") a.value = AttrExpr::of_ints(std::move(terms));
    };
    for (PatternNode& n : rule.source)
        if (n.op == OpKind::Split) {
            IntTerm half = IntTerm::dim(n.inputs[0], axis_of(n));
            half.divisor = 2;
            set_split(n, {half, half});
        }
    for (std::uint32_t i = 0; i < rule.target.size(); ++i) {
        PatternNode& n = rule.target[i];
        if (n.op != OpKind::Split) continue;
        std::vector<IntTerm> parts;
        for (std::uint32_t k = 0; k < n.num_outputs; ++k)
            for (const OutputMapping& m : rule.outputs)
                if (m.target == PatternRef::node(i, k)) parts.push_back(IntTerm::dim(m.source, axis_of(n)));
        if (parts.size() == n.num_outputs) {
            set_split(n, std::move(parts));
        } else if (n.inputs[0].is_variable()) {
            IntTerm half = IntTerm::dim(n.inputs[0], axis_of(n));
            half.divisor = 2;
            set_split(n, {half, half});
        }
    }
}

/// Resize sizes in terms of the matched tensors, so a rule found on 5x5 images applies to
/// any: a source Resize leaves "sizes" open (its literal scales and its input fix them), and
/// a target Resize that is a rule output takes the dims of the source output it replaces,
/// so it reproduces that Resize's input and output extents and with them its taps. False
/// when a target Resize is not a rule output: nothing in the rule says its extents.
[[nodiscard]] inline bool generalize_resize_sizes(Rule& rule) {
    for (PatternNode& n : rule.source)
        if (n.op == OpKind::Resize)
            std::erase_if(n.attributes, [](const PatternAttribute& a) { return a.name == "sizes"; });
    for (std::uint32_t i = 0; i < rule.target.size(); ++i) {
        PatternNode& n = rule.target[i];
        if (n.op != OpKind::Resize) continue;
        const auto mapped = std::find_if(rule.outputs.begin(), rule.outputs.end(),
                                         [&](const OutputMapping& m) { return m.target == PatternRef::node(i, 0); });
        if (mapped == rule.outputs.end()) return false;
        for (PatternAttribute& a : n.attributes) {
            if (a.name != "sizes") continue;
            std::vector<IntTerm> sizes;
            for (std::size_t d = 0; d < std::get<std::vector<std::int64_t>>(a.value.literal).size(); ++d)
                sizes.push_back(IntTerm::dim(mapped->source, static_cast<int>(d)));
            a.value = AttrExpr::of_ints(std::move(sizes));
        }
    }
    return true;
}

/// The rule `name` of candidate `c`: variables named after the space's, in order of first
/// use in the canonical text; nullopt if a constant of it cannot be shaped.
[[nodiscard]] inline std::optional<Rule> candidate_rule(const std::vector<GenGraph>& graphs, const Candidate& c,
                                                        OpApplier& applier, const GeneratorOptions& o, std::string name) {
    const GeneratorSpace& space = applier.space();
    const GenGraph& a = graphs[c.source];
    const GenGraph& b = graphs[c.target];
    const std::vector<std::size_t> order = canonical_output_order(a, b, c, space);
    Rule rule;
    rule.name = std::move(name);
    std::map<std::uint16_t, PatternRef> source_refs, target_refs;
    const RuleDims dims = rule_dims(a, space, o);
    for (const GeneratorVariable* v : dims.variables) {
        const auto t = static_cast<std::uint16_t>(v - space.variables.data());
        source_refs[t] = PatternRef::variable(static_cast<std::uint32_t>(rule.variables.size()));
        rule.variables.push_back(v->name);
    }
    target_refs = source_refs;
    // Rules about a scalar hold for tensors with one element only (a scalar times a conv is
    // a conv of a scaled kernel; an elementwise product is not).
    for (const auto& [t, ref] : source_refs)
        if (space.variables[t].role == TensorRole::scalar)
            rule.constraints.push_back({Constraint::Kind::is_scalar, {ref}, {}, 0});
    auto source = pattern_side(a, applier, "src", source_refs, dims);
    auto target = pattern_side(b, applier, "dst", target_refs, dims);
    if (!source || !target) return std::nullopt;
    rule.source = std::move(*source);
    rule.target = std::move(*target);
    for (const std::size_t i : order) rule.outputs.push_back({source_refs.at(a.outputs[i]), target_refs.at(b.outputs[i])});
    generalize_split_sizes(rule);
    if (!generalize_resize_sizes(rule)) return std::nullopt;
    validate_rule(rule);
    return rule;
}

/// The types of a generated rule's variables at the enumeration shapes and at each shape
/// variant.
[[nodiscard]] inline std::vector<RuleInstance> rule_instances(const Rule& rule, const GeneratorSpace& space,
                                                              const GeneratorOptions& o) {
    std::vector<RuleInstance> instances(1 + o.shape_variants.size());
    for (const std::string& name : rule.variables) {
        const auto it = std::find_if(space.variables.begin(), space.variables.end(),
                                     [&](const GeneratorVariable& v) { return v.name == name; });
        RLFLOW_EXPECTS(it != space.variables.end(), rule_error,
                       "rule '" + rule.name + "': variable '" + name + "' is not a generator variable");
        instances[0].variable_types.push_back(it->type);
        for (std::size_t s = 0; s < o.shape_variants.size(); ++s) {
            std::vector<std::int64_t> dims(it->type.shape.dims().begin(), it->type.shape.dims().end());
            for (std::int64_t& d : dims)
                if (const auto found = o.shape_variants[s].find(d); found != o.shape_variants[s].end()) d = found->second;
            instances[s + 1].variable_types.push_back({it->type.dtype, Shape(std::span<const std::int64_t>(dims))});
        }
    }
    return instances;
}

/// Restricts a rule that is only tested to the ranks it was tested at: its variables
/// match tensors of their generator variable's rank only. (A MatMul rule checked on
/// matrices can be false on batched operands, where the same axis means another thing.)
inline void pin_variable_ranks(Rule& rule, const GeneratorSpace& space) {
    for (std::uint32_t i = 0; i < rule.variables.size(); ++i) {
        const auto it = std::find_if(space.variables.begin(), space.variables.end(),
                                     [&](const GeneratorVariable& v) { return v.name == rule.variables[i]; });
        RLFLOW_EXPECTS(it != space.variables.end(), rule_error,
                       "rule '" + rule.name + "': variable '" + rule.variables[i] + "' is not a generator variable");
        rule.constraints.push_back({Constraint::Kind::rank_equals, {PatternRef::variable(i)}, {}, it->type.shape.rank()});
    }
}

/// "gen_00042": generated rule names sort in generation order.
[[nodiscard]] inline std::string generated_rule_name(std::size_t index) {
    constexpr int digits = 5;
    std::string number = std::to_string(index);
    return "gen_" + std::string(number.size() < digits ? digits - number.size() : 0, '0') + number;
}

/// Removes the rules one of `o.known_rules` does with the same result at the enumeration
/// shapes (known_rule_doing) and names the rest in order again.
inline void prune_known_rules(std::vector<Rule>& rules, const GeneratorSpace& space, const GeneratorOptions& o,
                              GeneratorReport& report) {
    if (!o.known_rules || o.known_rules->size() == 0) return;
    std::vector<char> known(rules.size(), 0);
    const unsigned jobs = std::max(1u, o.jobs);
    parallel_for(
        jobs, jobs,
        [&](std::size_t first, unsigned) {
            for (std::size_t i = first; i < rules.size(); i += jobs)
                known[i] = known_rule_doing(rules[i], rule_instances(rules[i], space, o).front(), *o.known_rules) ? 1 : 0;
        },
        [](std::size_t) {});
    std::size_t kept = 0;
    for (std::size_t i = 0; i < rules.size(); ++i) {
        if (known[i] != 0) continue;
        if (kept != i) rules[kept] = std::move(rules[i]);
        rules[kept].name = generated_rule_name(kept);
        ++kept;
    }
    report.pruned_known += rules.size() - kept;
    rules.resize(kept);
}

/// The verdicts of the rules this rank checked, i.e. of `rules[i]` where `mine(i)`:
/// (index, verification, proof seconds or -1) triples, for the other ranks.
[[nodiscard]] inline std::vector<double> packed_verdicts(const std::vector<Rule>& rules, const std::vector<double>& proof_seconds,
                                                         const std::vector<char>& mine) {
    std::vector<double> packed;
    for (std::size_t i = 0; i < rules.size(); ++i)
        if (mine[i]) packed.insert(packed.end(), {static_cast<double>(i), static_cast<double>(rules[i].verification), proof_seconds[i]});
    return packed;
}

/// Every rank's verdicts (packed_verdicts) into `rules` and `proof_seconds`, on every rank.
inline void share_verdicts(AnyCommunicator& comm, std::vector<Rule>& rules, std::vector<double>& proof_seconds,
                           const std::vector<char>& mine) {
    const std::vector<double> packed = packed_verdicts(rules, proof_seconds, mine);
    for (const std::string& part : all_gather_bytes(comm, to_bytes(std::span<const double>(packed)))) {
        const std::vector<double> values = from_bytes<double>(part);
        for (std::size_t k = 0; k + 2 < values.size(); k += 3) {
            const auto i = static_cast<std::size_t>(values[k]);
            rules.at(i).verification = static_cast<Verification>(static_cast<std::uint8_t>(values[k + 1]));
            proof_seconds.at(i) = values[k + 2];
        }
    }
}

/// Checks every rule numerically, then tries to prove it; sets each rule's verification.
/// Over the ranks of `comm`, each rank checks its workers' rules and all get every verdict.
inline void verify_rules(std::vector<Rule>& rules, const GeneratorSpace& space, const GeneratorOptions& o,
                         GeneratorReport& report, AnyCommunicator comm = {}) {
    const unsigned jobs = std::max(1u, o.jobs);
    std::vector<std::optional<Prover>> provers(jobs);
    std::vector<double> proof_seconds(rules.size(), -1.0);
    std::vector<char> mine(rules.size(), 0);
    const bool prove = o.prove && Prover::available();
    // Worker w of rank r is worker g = r jobs + w of them all, and takes rules g, g + W,
    // ... (W workers in all) in order: a prover's state grows with the rules it has seen,
    // so a fixed assignment keeps proof results independent of scheduling.
    const std::size_t workers = static_cast<std::size_t>(jobs) * static_cast<std::size_t>(comm.size());
    const std::size_t first_worker = static_cast<std::size_t>(jobs) * static_cast<std::size_t>(comm.rank());
    parallel_for(
        jobs, jobs,
        [&](std::size_t w, unsigned) {
          for (std::size_t i = first_worker + w; i < rules.size(); i += workers) {
            Rule& rule = rules[i];
            mine[i] = 1;
            EquivalenceOptions check;
            check.trials = o.float_trials;
            check.seed = o.seed + i;
            const RuleCheckReport numeric = check_rule_numerically(rule, rule_instances(rule, space, o), check);
            rule.verification = numeric.equal && numeric.instances_checked > 0 ? Verification::tested : Verification::rejected;
            if (rule.verification == Verification::rejected || !prove) continue;
            if (!provers[w]) provers[w].emplace(ProverOptions{o.proof_timeout_ms, o.seed});
            const ProofResult proof = provers[w]->prove(rule);
            proof_seconds[i] = proof.seconds;
            if (proof.status == ProofStatus::proved) rule.verification = Verification::proved;
            if (proof.status == ProofStatus::refuted) rule.verification = Verification::rejected;
            if (o.on_progress && w == 0) o.on_progress({"verify", i, rules.size()});
          }
        },
        [&](std::size_t done) {
            if (o.on_progress && done == jobs) o.on_progress({"verify", rules.size(), rules.size()});
        });
    if (comm.size() > 1) share_verdicts(comm, rules, proof_seconds, mine);
    for (Rule& rule : rules)
        if (rule.verification == Verification::tested) pin_variable_ranks(rule, space);
    for (const Rule& rule : rules) {
        report.proved += rule.verification == Verification::proved ? 1 : 0;
        report.tested += rule.verification == Verification::tested ? 1 : 0;
        report.rejected += rule.verification == Verification::rejected ? 1 : 0;
    }
    for (const double s : proof_seconds)
        if (s >= 0) report.proof_seconds.push_back(s);
}

}  // namespace rlflow::synth::detail
