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
///    variables the source reads) and prune them (detail/generator_pairs.hpp).
/// 5. Verify every survivor: float32 in the reference executor on several seeded inputs
///    at the enumeration shapes and at larger ones (rule_check.hpp), then with Z3 from
///    rlflow's operator axioms (prover.hpp). A rule is `proved`, `tested` (numeric only)
///    or `rejected` (a numeric check failed, or Z3 found a counterexample).

#include <rlflow/rewrite/detail/generator_enumerator.hpp>
#include <rlflow/rewrite/detail/generator_pairs.hpp>
#include <rlflow/rewrite/prover.hpp>
#include <rlflow/rewrite/rule.hpp>
#include <rlflow/rewrite/rule_check.hpp>

#include <algorithm>
#include <array>
#include <atomic>
#include <chrono>
#include <exception>
#include <numeric>
#include <optional>
#include <functional>
#include <map>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

namespace rlflow::rewrite {

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

namespace detail {

using Clock = std::chrono::steady_clock;

[[nodiscard]] inline double seconds_since(Clock::time_point start) {
    return std::chrono::duration<double>(Clock::now() - start).count();
}

/// Runs `work(i)` for i in [0, count) on `jobs` threads, calling `progress(done)` from the
/// calling thread's share as items finish. Exceptions in a worker are rethrown.
inline void parallel_for(std::size_t count, unsigned jobs, const std::function<void(std::size_t, unsigned)>& work,
                         const std::function<void(std::size_t)>& progress) {
    std::atomic<std::size_t> next{0}, done{0};
    std::vector<std::exception_ptr> errors(std::max(1u, jobs));
    const auto worker = [&](unsigned w) {
        try {
            for (std::size_t i = next++; i < count; i = next++) {
                work(i, w);
                ++done;
                if (w == 0 && progress) progress(done.load());
            }
        } catch (...) {
            errors[w] = std::current_exception();  // rethrown below, after every worker stopped
            next = count;
        }
    };
    std::vector<std::thread> threads;
    for (unsigned w = 1; w < jobs; ++w) threads.emplace_back(worker, w);
    worker(0);
    for (std::thread& t : threads) t.join();
    for (const std::exception_ptr& e : errors)
        if (e) std::rethrow_exception(e);
    if (progress) progress(count);
}

/// Graphs of no nodes whose outputs are one variable, or two (up to max_outputs): the
/// targets of rules that cancel ops.
inline void add_variable_graphs(const GeneratorSpace& space, const GeneratorOptions& o, std::vector<GenGraph>& graphs) {
    Fingerprinter fingerprint(o.seed);
    const auto values = variable_values(space, o.seed, 0, o.value_bound);
    std::vector<std::uint64_t> fps;
    for (const ExactTensor& v : values) fps.push_back(fingerprint(v));
    const auto variables = static_cast<std::uint16_t>(space.variables.size());
    for (std::uint16_t v = 0; v < variables; ++v) {
        GenGraph one;
        one.outputs = {v};
        one.key = {0, v};
        one.fingerprint = graph_fingerprint(std::array{fps[v]});
        graphs.push_back(std::move(one));
        for (std::uint16_t u = 0; u < variables && o.max_outputs >= 2; ++u) {
            if (u == v || fps[u] >= fps[v]) continue;  // each pair once, outputs in fingerprint order
            GenGraph two;
            two.outputs = {u, v};
            two.key = {1, (std::uint64_t{u} << 16) | v};
            two.fingerprint = graph_fingerprint(std::array{fps[u], fps[v]});
            graphs.push_back(std::move(two));
        }
    }
}

/// Every enumerated graph (canonical node order, sorted by key), then the graphs of
/// variables alone.
[[nodiscard]] inline std::vector<GenGraph> enumerate_graphs(const GeneratorSpace& space, const GeneratorOptions& o,
                                                           GeneratorReport& report) {
    const EnumerationLimits limits{o.max_ops, o.max_outputs, o.seed, o.value_bound};
    SeenStates seen;
    const unsigned jobs = std::max(1u, o.jobs);
    std::vector<Enumerator> workers;
    workers.reserve(jobs);
    for (unsigned w = 0; w < jobs; ++w) workers.emplace_back(space, limits, seen);
    const std::vector<GenNode> roots = o.max_ops > 0 ? workers[0].first_nodes() : std::vector<GenNode>{};
    parallel_for(
        roots.size(), jobs, [&](std::size_t i, unsigned w) { workers[w].run_from(roots[i]); },
        [&](std::size_t done) {
            if (o.on_progress) o.on_progress({"enumerate", done, roots.size()});
        });
    std::vector<GenGraph> graphs;
    EnumerationCounts counts;
    for (Enumerator& w : workers) {
        counts += w.counts();
        for (const GenGraph& g : w.recorded()) graphs.push_back(canonical_order(g, space.variables.size()));
    }
    std::sort(graphs.begin(), graphs.end(), [](const GenGraph& a, const GenGraph& b) { return a.key < b.key; });
    add_variable_graphs(space, o, graphs);
    report.states = counts.states;
    report.graphs = counts.recorded;
    report.redundant_states = counts.redundant;
    report.inexact = counts.inexact;
    return graphs;
}

/// The outputs of graph `g` on every exact input set, and their types.
struct Evaluated {
    std::vector<std::vector<ExactTensor>> outputs;  // [set][output]
    std::vector<std::uint32_t> types;
};

[[nodiscard]] inline Evaluated evaluate_outputs(const GenGraph& g, OpApplier& applier,
                                                const std::vector<std::vector<ExactTensor>>& sets) {
    Evaluated e;
    const std::vector<std::uint32_t> ids = tensor_type_ids(g, applier);
    for (const std::uint16_t t : g.outputs) e.types.push_back(ids[t]);
    for (const auto& variables : sets) {
        std::vector<ExactTensor> all = evaluate(g, applier, variables);
        std::vector<ExactTensor> outs;
        for (const std::uint16_t t : g.outputs) outs.push_back(std::move(all[t]));
        e.outputs.push_back(std::move(outs));
    }
    return e;
}

/// Groups graphs with equal fingerprints into classes of exactly equal outputs (on every
/// input set, output by output in fingerprint order). Classes of one are dropped.
[[nodiscard]] inline std::vector<std::vector<std::size_t>> equal_classes(const std::vector<GenGraph>& graphs,
                                                                         const GeneratorSpace& space,
                                                                         const GeneratorOptions& o) {
    std::unordered_map<std::uint64_t, std::vector<std::size_t>> buckets;
    for (std::size_t i = 0; i < graphs.size(); ++i) buckets[graphs[i].fingerprint].push_back(i);
    std::vector<std::vector<std::size_t>> candidates;
    for (auto& [fp, members] : buckets)
        if (members.size() > 1) candidates.push_back(std::move(members));
    std::sort(candidates.begin(), candidates.end());
    std::vector<std::vector<ExactTensor>> sets;
    for (std::size_t s = 0; s < std::max<std::size_t>(1, o.exact_trials); ++s)
        sets.push_back(variable_values(space, o.seed, s, o.value_bound));
    const unsigned jobs = std::max(1u, o.jobs);
    std::vector<OpApplier> appliers(jobs, OpApplier(space));
    std::vector<std::vector<std::vector<std::size_t>>> per_bucket(candidates.size());
    parallel_for(
        candidates.size(), jobs,
        [&](std::size_t b, unsigned w) {
            std::vector<std::pair<Evaluated, std::vector<std::size_t>>> groups;
            for (const std::size_t i : candidates[b]) {
                Evaluated e;
                try {
                    e = evaluate_outputs(graphs[i], appliers[w], sets);
                } catch (const exact_error&) {
                    continue;  // overflows on another input set: it cannot be compared exactly
                }
                const auto same = std::find_if(groups.begin(), groups.end(), [&](const auto& g) {
                    return g.first.types == e.types && g.first.outputs == e.outputs;
                });
                if (same != groups.end()) same->second.push_back(i);
                else groups.emplace_back(std::move(e), std::vector<std::size_t>{i});
            }
            for (auto& [e, members] : groups)
                if (members.size() > 1) per_bucket[b].push_back(std::move(members));
        },
        [&](std::size_t done) {
            if (o.on_progress) o.on_progress({"classes", done, candidates.size()});
        });
    std::vector<std::vector<std::size_t>> classes;
    for (auto& bucket : per_bucket)
        for (auto& c : bucket) classes.push_back(std::move(c));
    return classes;
}

/// A candidate rule: source and target graph indices, and its canonical text.
struct Candidate {
    std::size_t source;
    std::size_t target;
    std::string text;
};

/// The candidate rules of `classes` that survive pruning, sorted by canonical text (one
/// per text), with the pruning counts in `report`. Pruning, in order: disconnected
/// sources, common subgraphs, common supergraphs, renamings, and instances of a more
/// general kept rule (two of its variables made one).
[[nodiscard]] inline std::vector<Candidate> prune_candidates(const std::vector<GenGraph>& graphs,
                                                             const std::vector<std::vector<std::size_t>>& classes,
                                                             const GeneratorSpace& space, GeneratorReport& report) {
    const std::size_t variables = space.variables.size();
    std::map<std::string, Candidate> kept;
    for (const auto& members : classes) {
        // A class holding variables alone computes the identity: its rules are "this graph
        // is a no-op", never one no-op graph into another.
        const bool identity = std::any_of(members.begin(), members.end(), [&](std::size_t m) { return graphs[m].nodes.empty(); });
        for (const std::size_t a : members)
            for (const std::size_t b : members) {
                const GenGraph& source = graphs[a];
                const GenGraph& target = graphs[b];
                if (a == b || source.nodes.empty() || (identity && !target.nodes.empty())) continue;
                const auto read = variables_used(source, variables);
                const auto written = variables_used(target, variables);
                if (!std::includes(read.begin(), read.end(), written.begin(), written.end())) continue;
                ++report.candidates;
                if (!connected(source, variables)) {
                    ++report.pruned_disconnected;
                } else if (shares_leaf_op(source, target, variables)) {
                    ++report.pruned_common_subgraph;
                } else if (shares_last_op(source, target, variables, space)) {
                    ++report.pruned_common_supergraph;
                } else {
                    std::string text = canonical_rule_text(source, target, variables, space);
                    if (kept.contains(text)) ++report.pruned_renaming;
                    else kept.emplace(text, Candidate{a, b, text});
                }
            }
    }
    // Subsumption: a rule that is another with two variables made one says nothing new.
    std::set<std::string> instances;
    for (const auto& [text, c] : kept)
        for (std::string& merged : merged_variable_texts(graphs[c.source], graphs[c.target], variables, space))
            if (merged != text) instances.insert(std::move(merged));
    std::vector<Candidate> out;
    for (auto& [text, c] : kept) {
        if (instances.contains(text)) ++report.pruned_subsumed;
        else out.push_back(std::move(c));
    }
    return out;
}

/// The output order of a candidate that gives its canonical text.
[[nodiscard]] inline std::vector<std::size_t> canonical_output_order(const GenGraph& a, const GenGraph& b,
                                                                     const Candidate& c, const GeneratorSpace& space) {
    std::vector<std::size_t> order(a.outputs.size());
    std::iota(order.begin(), order.end(), std::size_t{0});
    do {
        if (rule_text_in_order(a, b, order, space.variables.size(), space) == c.text) return order;
    } while (std::next_permutation(order.begin(), order.end()));
    RLFLOW_ASSERT(false);
    return order;
}

/// Builds one side of a generated rule; `ref_of` maps the graph's tensors to pattern refs
/// and is extended with the side's node outputs.
inline std::vector<PatternNode> pattern_side(const GenGraph& g, OpApplier& applier, const std::string& label_prefix,
                                             std::map<std::uint16_t, PatternRef>& ref_of) {
    std::vector<const Applied*> applied;
    (void)tensor_type_ids(g, applier, &applied);
    std::vector<PatternNode> nodes;
    std::uint16_t tensor = static_cast<std::uint16_t>(applier.space().variables.size());
    for (std::size_t i = 0; i < g.nodes.size(); ++i) {
        PatternNode n;
        n.op = applier.space().ops[g.nodes[i].op].op;
        n.label = label_prefix + std::to_string(i);
        n.num_outputs = g.nodes[i].num_outputs;
        for (const std::uint16_t t : g.nodes[i].inputs)
            if (t != no_tensor) n.inputs.push_back(ref_of.at(t));
        for (const auto& [name, value] : applied[i]->attributes) n.attributes.push_back({name, AttrExpr::of(value)});
        for (std::uint32_t k = 0; k < n.num_outputs; ++k)
            ref_of[tensor++] = PatternRef::node(static_cast<std::uint32_t>(i), k);
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

/// The rule `name` of candidate `c`: variables named after the space's, in order of first
/// use in the canonical text.
[[nodiscard]] inline Rule candidate_rule(const std::vector<GenGraph>& graphs, const Candidate& c,
                                         OpApplier& applier, std::string name) {
    const GeneratorSpace& space = applier.space();
    const GenGraph& a = graphs[c.source];
    const GenGraph& b = graphs[c.target];
    const std::vector<std::size_t> order = canonical_output_order(a, b, c, space);
    Rule rule;
    rule.name = std::move(name);
    std::map<std::uint16_t, PatternRef> source_refs, target_refs;
    const auto note_variables = [&](const GenGraph& g) {
        for (const GenNode& n : g.nodes)
            for (const std::uint16_t t : n.inputs)
                if (t != no_tensor && t < space.variables.size() && !source_refs.contains(t)) {
                    source_refs[t] = PatternRef::variable(static_cast<std::uint32_t>(rule.variables.size()));
                    rule.variables.push_back(space.variables[t].name);
                }
    };
    note_variables(a);
    target_refs = source_refs;
    // Rules about a scalar hold for tensors with one element only (a scalar times a conv is
    // a conv of a scaled kernel; an elementwise product is not).
    for (const auto& [t, ref] : source_refs)
        if (space.variables[t].role == TensorRole::scalar)
            rule.constraints.push_back({Constraint::Kind::is_scalar, {ref}, {}, 0});
    rule.source = pattern_side(a, applier, "src", source_refs);
    rule.target = pattern_side(b, applier, "dst", target_refs);
    for (const std::size_t i : order) rule.outputs.push_back({source_refs.at(a.outputs[i]), target_refs.at(b.outputs[i])});
    generalize_split_sizes(rule);
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

/// Checks every rule numerically, then tries to prove it; sets each rule's verification.
inline void verify_rules(std::vector<Rule>& rules, const GeneratorSpace& space, const GeneratorOptions& o,
                         GeneratorReport& report) {
    const unsigned jobs = std::max(1u, o.jobs);
    std::vector<std::optional<Prover>> provers(jobs);
    std::vector<double> proof_seconds(rules.size(), -1.0);
    const bool prove = o.prove && Prover::available();
    // Worker w takes rules w, w + jobs, ... in order: a prover's state grows with the rules it
    // has seen, so a fixed assignment keeps proof results independent of scheduling.
    parallel_for(
        jobs, jobs,
        [&](std::size_t first, unsigned w) {
          for (std::size_t i = first; i < rules.size(); i += jobs) {
            Rule& rule = rules[i];
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

/// "gen_00042": generated rule names sort in generation order.
[[nodiscard]] inline std::string generated_rule_name(std::size_t index) {
    constexpr int digits = 5;
    std::string number = std::to_string(index);
    return "gen_" + std::string(number.size() < digits ? digits - number.size() : 0, '0') + number;
}

}  // namespace detail

/// Generates, prunes and verifies rules over `space` (see the file comment). The result
/// is deterministic under `options.seed` whatever `options.jobs` is.
[[nodiscard]] inline GeneratedRules generate_rules(const GeneratorSpace& space, const GeneratorOptions& options = {}) {
    RLFLOW_EXPECTS(space.variables.size() < detail::no_tensor / 2, precondition_error, "too many generator variables");
    GeneratedRules out;
    auto start = detail::Clock::now();
    const std::vector<detail::GenGraph> graphs = detail::enumerate_graphs(space, options, out.report);
    out.report.enumerate_seconds = detail::seconds_since(start);
    start = detail::Clock::now();
    const auto classes = detail::equal_classes(graphs, space, options);
    out.report.classes = classes.size();
    const std::vector<detail::Candidate> candidates = detail::prune_candidates(graphs, classes, space, out.report);
    detail::OpApplier applier(space);
    std::vector<Rule> rules;
    for (std::size_t i = 0; i < candidates.size(); ++i)
        rules.push_back(detail::candidate_rule(graphs, candidates[i], applier, detail::generated_rule_name(i)));
    if (options.on_progress) options.on_progress({"pair", 1, 1});
    out.report.pair_seconds = detail::seconds_since(start);
    start = detail::Clock::now();
    detail::verify_rules(rules, space, options, out.report);
    out.report.verify_seconds = detail::seconds_since(start);
    for (Rule& rule : rules) {
        std::vector<Rule>& into = rule.verification == Verification::rejected ? out.rejected : out.rules;
        rule.id = static_cast<std::uint32_t>(into.size());
        into.push_back(std::move(rule));
    }
    return out;
}

}  // namespace rlflow::rewrite
