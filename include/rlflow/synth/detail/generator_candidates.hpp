#pragma once
/// \file
/// Stage 4 of the generator (synth/generator.hpp): the candidate rules of each class of
/// equal graphs, pruned (detail/generator_pairs.hpp holds the structural tests), and the
/// terms (RuleDims) that size a rule's constants and group counts by its variables.

#include <rlflow/synth/detail/generator_classes.hpp>
#include <rlflow/synth/detail/generator_graph.hpp>
#include <rlflow/synth/detail/generator_pairs.hpp>
#include <rlflow/synth/generator_options.hpp>

#include <algorithm>
#include <cstdint>
#include <map>
#include <numeric>
#include <optional>
#include <set>
#include <string>
#include <vector>

namespace rlflow::synth::detail {

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

}  // namespace rlflow::synth::detail
