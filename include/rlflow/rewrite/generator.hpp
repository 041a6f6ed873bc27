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

#include <rlflow/rewrite/detail/generator_enumerator.hpp>
#include <rlflow/rewrite/detail/generator_pairs.hpp>
#include <rlflow/rewrite/prover.hpp>
#include <rlflow/rewrite/rule.hpp>
#include <rlflow/rewrite/rule_check.hpp>
#include <rlflow/rewrite/rule_set.hpp>

#include <algorithm>
#include <array>
#include <atomic>
#include <chrono>
#include <exception>
#include <numeric>
#include <optional>
#include <functional>
#include <map>
#include <memory>
#include <set>
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
/// targets of rules that cancel ops. Constants are left out.
inline void add_variable_graphs(const GeneratorSpace& space, const GeneratorOptions& o, std::vector<GenGraph>& graphs) {
    Fingerprinter fingerprint(o.seed);
    const auto values = variable_values(space, o.seed, 0, o.value_bound);
    std::vector<std::uint64_t> fps;
    for (const ExactTensor& v : values) fps.push_back(fingerprint(v));
    const auto variables = static_cast<std::uint16_t>(space.variables.size());
    for (std::uint16_t v = 0; v < variables; ++v) {
        if (space.variables[v].is_constant()) continue;  // a rule's target cannot be a bare constant
        GenGraph one;
        one.outputs = {v};
        one.key = {0, v};
        one.fingerprint = graph_fingerprint(std::array{fps[v]});
        graphs.push_back(std::move(one));
        for (std::uint16_t u = 0; u < variables && o.max_outputs >= 2; ++u) {
            if (u == v || fps[u] >= fps[v] || space.variables[u].is_constant()) continue;  // each pair once, in fingerprint order
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

/// How many times `d` occurs among the dims of `s`.
[[nodiscard]] inline int dim_count(const Shape& s, std::int64_t d) {
    const auto dims = s.dims();
    return static_cast<int>(std::count(dims.begin(), dims.end(), d));
}

/// Numbers of a generated rule that must grow with its tensors, as terms over its
/// variables' dims; numbers no shape variant changes (kernel sizes) stay literal. A number
/// is taken, in order of preference, from a variable holding it at one axis only (then
/// the term says what the number is: matmul(x, eye) with x (2,4) sizes the identity by
/// x's columns), from a variable of the same rank at the same axis, or from the first
/// variable holding it. Used for the shapes of constants and the group counts of grouped
/// convolutions.
struct RuleDims {
    /// The rule's variables, by rule variable index.
    std::vector<const GeneratorVariable*> variables;
    /// Dims some shape variant changes.
    std::set<std::int64_t> varying;

    /// `d` (found at `axis` of a rank-`rank` tensor) as a term divided by `divisor`;
    /// a literal if no variant changes it; nullopt if no variable has it.
    [[nodiscard]] std::optional<IntTerm> term(std::int64_t d, int rank, int axis, std::int64_t divisor = 1) const {
        if (!varying.contains(d)) return IntTerm::literal(d / divisor);
        const auto find = [&](auto&& accept) -> std::optional<IntTerm> {
            for (std::uint32_t v = 0; v < variables.size(); ++v)
                for (int a = 0; a < variables[v]->type.shape.rank(); ++a)
                    if (variables[v]->type.shape[a] == d && accept(variables[v]->type.shape, a)) {
                        IntTerm t = IntTerm::dim(PatternRef::variable(v), a);
                        t.divisor = divisor;
                        return t;
                    }
            return std::nullopt;
        };
        if (auto t = find([&](const Shape& s, int) { return dim_count(s, d) == 1; })) return t;
        if (auto t = find([&](const Shape& s, int a) { return s.rank() == rank && a == axis; })) return t;
        return find([](const Shape&, int) { return true; });
    }

    /// How ambiguous the terms of a rule reading `constants` are: per varying dim of each
    /// constant, the variables' other axes holding the same number. Among rules equal up
    /// to renaming, the least ambiguous is kept.
    [[nodiscard]] int ambiguity(const std::vector<const GeneratorVariable*>& constants) const {
        int score = 0;
        for (const GeneratorVariable* c : constants)
            for (const std::int64_t d : c->type.shape.dims()) {
                if (!varying.contains(d)) continue;
                int holders = 0;
                for (const GeneratorVariable* v : variables) holders += dim_count(v->type.shape, d);
                score += std::max(0, holders - 1);
            }
        return score;
    }

    /// The Constant node for generator constant `c` labelled `label`; nullopt if a dim of
    /// its shape has no term.
    [[nodiscard]] std::optional<PatternNode> constant_node(const GeneratorVariable& c, std::string label) const {
        PatternNode n;
        n.op = OpKind::Constant;
        n.label = std::move(label);
        const int rank = c.type.shape.rank();
        std::vector<IntTerm> dims;
        for (int axis = 0; axis < rank; ++axis) {
            const auto t = term(c.type.shape[axis], rank, axis);
            if (!t) return std::nullopt;
            dims.push_back(*t);
        }
        // An identity the generator saw square stays square: its two channel dims are one
        // term (a non-square "identity" is another tensor, which no check has seen).
        if (c.constant->fill == ConstantFill::identity && c.type.shape[0] == c.type.shape[1]) dims[1] = dims[0];
        n.attributes.push_back({"value", AttrExpr::of(c.constant->rule_value())});
        n.attributes.push_back({"shape", AttrExpr::of_ints(std::move(dims))});
        n.attributes.push_back({"fill", AttrExpr::of(std::string(constant_fill_name(c.constant->fill)))});
        return n;
    }
};

/// The RuleDims of the rule with source `a`: its variables in order of first use.
[[nodiscard]] inline RuleDims rule_dims(const GenGraph& a, const GeneratorSpace& space, const GeneratorOptions& o) {
    RuleDims dims;
    for (const auto& variant : o.shape_variants)
        for (const auto& [from, to] : variant)
            if (from != to) dims.varying.insert(from);
    std::set<std::uint16_t> seen;
    for (const GenNode& n : a.nodes)
        for (const std::uint16_t t : n.inputs)
            if (is_variable_leaf(space, t) && seen.insert(t).second)
                dims.variables.push_back(&space.variables[t]);
    return dims;
}

/// The constants graphs `a` and `b` read.
[[nodiscard]] inline std::vector<const GeneratorVariable*> constants_read(const GenGraph& a, const GenGraph& b,
                                                                          const GeneratorSpace& space) {
    std::set<std::uint16_t> used = constants_used(a, space);
    used.merge(constants_used(b, space));
    std::vector<const GeneratorVariable*> out;
    for (const std::uint16_t t : used) out.push_back(&space.variables[t]);
    return out;
}

/// Whether a -> b reads the same constants on both sides and its sides agree exactly on
/// every input set with those constants given random values instead.
[[nodiscard]] inline bool variable_law(const GenGraph& a, const GenGraph& b, OpApplier& applier,
                                       const GeneratorOptions& o) {
    const GeneratorSpace& space = applier.space();
    const std::set<std::uint16_t> constants = constants_used(a, space);
    if (constants.empty() || constants != constants_used(b, space)) return false;
    std::vector<std::vector<ExactTensor>> sets;
    for (std::size_t s = 0; s < std::max<std::size_t>(1, o.exact_trials); ++s) {
        sets.push_back(variable_values(space, o.seed, s, o.value_bound));
        for (const std::uint16_t t : constants) {
            Rng rng = Rng(o.seed).fork(mix64(s + 1) ^ hash_bytes(space.variables[t].name) ^ constant_salt);
            sets.back()[t] = random_exact_tensor(space.variables[t].type.shape, rng, o.value_bound);
        }
    }
    try {
        return evaluate_outputs(a, applier, sets).outputs == evaluate_outputs(b, applier, sets).outputs;
    } catch (const exact_error&) {
        return false;
    }
}

/// A candidate rule: source and target graph indices, and its canonical text.
struct Candidate {
    std::size_t source;
    std::size_t target;
    std::string text;
    /// RuleDims::ambiguity of its constants' shapes.
    int ambiguity = 0;
};

/// The candidate rules of `classes` that survive pruning, sorted by canonical text (one
/// per text), with the pruning counts in `report`. Pruning, in order: sides holding a
/// no-op (GeneratorReport::pruned_redundant), disconnected sources, common subgraphs, common supergraphs,
/// renamings, rules whose constants could be any tensors (variable_law), and instances of
/// a more general kept rule (two of its variables made one, or a variable made a constant).
[[nodiscard]] inline std::vector<Candidate> prune_candidates(const std::vector<GenGraph>& graphs,
                                                             const std::vector<std::vector<std::size_t>>& classes,
                                                             const GeneratorSpace& space, const GeneratorOptions& o,
                                                             GeneratorReport& report) {
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
                const auto read = variables_used(source, space);
                const auto written = variables_used(target, space);
                if (!std::includes(read.begin(), read.end(), written.begin(), written.end())) continue;
                ++report.candidates;
                if (target.redundant || (source.redundant && target.nodes.size() >= source.nodes.size())) {
                    ++report.pruned_redundant;
                } else if (!connected(source, variables)) {
                    ++report.pruned_disconnected;
                } else if (shares_leaf_op(source, target, variables)) {
                    ++report.pruned_common_subgraph;
                } else if (shares_last_op(source, target, variables, space)) {
                    ++report.pruned_common_supergraph;
                } else {
                    std::string text = canonical_rule_text(source, target, variables, space);
                    const int ambiguity = rule_dims(source, space, o).ambiguity(constants_read(source, target, space));
                    const auto [it, fresh] = kept.try_emplace(text, Candidate{a, b, text, ambiguity});
                    if (!fresh) {
                        ++report.pruned_renaming;  // of the renamings, the one whose constants are sized best stays
                        if (ambiguity < it->second.ambiguity) it->second = Candidate{a, b, text, ambiguity};
                    }
                }
            }
    }
    // A rule whose constants stay as they are and whose sides still agree when the constants
    // take random values is a law about variables, not about the constants.
    OpApplier applier(space);
    std::erase_if(kept, [&](const auto& entry) {
        const Candidate& c = entry.second;
        if (!variable_law(graphs[c.source], graphs[c.target], applier, o)) return false;
        ++report.pruned_constant_as_variable;
        return true;
    });
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
