#pragma once
/// \file
/// The proof driver (see synth/prover.hpp): the prover's Z3 state (the encoded axioms and
/// the checked shape facts), the ground facts about the Int lists a proof meets, and one
/// proof: every assertion, E-matching first, then optionally model-based instantiation.
/// Without Z3 (RLFLOW_HAS_Z3 undefined) the state is empty.

#include <rlflow/core/graph.hpp>
#include <rlflow/rewrite/applier.hpp>
#include <rlflow/rewrite/detail/evaluate.hpp>
#include <rlflow/rewrite/location.hpp>
#include <rlflow/rewrite/rule.hpp>
#include <rlflow/rewrite/rule_set.hpp>
#include <rlflow/synth/axiom.hpp>
#include <rlflow/synth/detail/prover_encoding.hpp>
#include <rlflow/synth/detail/prover_shape_facts.hpp>
#include <rlflow/synth/detail/prover_signature.hpp>
#include <rlflow/synth/detail/rewrite_names.hpp>
#include <rlflow/synth/proof_result.hpp>
#include <rlflow/synth/rule_check.hpp>

#include <cstdint>
#include <map>
#include <set>
#include <span>
#include <string>
#include <utility>
#include <vector>

namespace rlflow::synth::detail {

#ifdef RLFLOW_HAS_Z3

/// The most ground facts written about one predicate; beyond it none are (sound: facts
/// only help proofs).
inline constexpr std::size_t max_ground_facts_per_predicate = 4096;

/// Calls `visit` with every tuple of `arity` indices below `count`.
template <class Visit>
void for_each_tuple(std::size_t count, std::size_t arity, Visit visit) {
    std::vector<std::size_t> tuple(arity, 0);
    if (count == 0 && arity > 0) return;
    for (;;) {
        visit(std::span<const std::size_t>(tuple));
        std::size_t i = 0;
        while (i < arity && ++tuple[i] == count) tuple[i++] = 0;
        if (i == arity) return;
    }
}

/// Whether count^arity stays within max_ground_facts_per_predicate.
[[nodiscard]] constexpr bool few_enough_tuples(std::size_t count, std::size_t arity) noexcept {
    std::size_t tuples = 1;
    for (std::size_t i = 0; i < arity; ++i)
        if ((tuples *= count) > max_ground_facts_per_predicate) return false;
    return true;
}

/// Ground facts on the Int lists `lists`: for every symbol-only constraint kind whether it
/// holds, and for every pair whether it composes and to what, computed by the matcher's
/// own evaluation (detail::holds, detail::evaluate).
[[nodiscard]] inline std::vector<z3::expr> ground_facts(Signature& s, const std::set<std::vector<std::int64_t>>& lists) {
    const std::vector<std::vector<std::int64_t>> values(lists.begin(), lists.end());
    const Graph nothing;
    const Location nowhere;
    SymbolTable table;
    const auto bind = [&](std::span<const std::size_t> tuple, z3::expr_vector& arguments) {
        table.reset(tuple.size());
        for (std::size_t i = 0; i < tuple.size(); ++i) {
            table.bind(static_cast<std::uint32_t>(i), values[tuple[i]]);
            arguments.push_back(s.ints(values[tuple[i]]));
        }
    };
    std::vector<z3::expr> facts;
    for (const ConstraintSpec& spec : constraint_specs) {
        if (spec.tensors != 0 || !few_enough_tuples(values.size(), spec.symbols)) continue;
        Constraint constraint{spec.kind, {}, {}, 0};
        for (std::uint32_t i = 0; i < spec.symbols; ++i) constraint.symbols.push_back(i);
        for_each_tuple(values.size(), spec.symbols, [&](std::span<const std::size_t> tuple) {
            z3::expr_vector arguments(s.context());
            bind(tuple, arguments);
            const z3::expr fact = s.predicate(spec.name, spec.symbols)(arguments);
            facts.push_back(holds(constraint, EvalContext{nothing, nowhere, table}) ? fact : !fact);
        });
    }
    if (!few_enough_tuples(values.size(), 2)) return facts;
    for_each_tuple(values.size(), 2, [&](std::span<const std::size_t> pair) {
        z3::expr_vector arguments(s.context());
        bind(pair, arguments);
        const auto composed = evaluate(AttrExpr::composed(0, 1), EvalContext{nothing, nowhere, table});
        const z3::expr composable = s.predicate("composable", 2)(arguments);
        facts.push_back(composed ? composable : !composable);
        if (composed) facts.push_back(s.compose(arguments[0], arguments[1]) == s.literal(*composed));
    });
    return facts;
}

/// The graphs of an axiom's instances, each instantiated source and its rewrite.
[[nodiscard]] inline std::vector<Graph> instance_graphs(const Axiom& axiom) {
    std::vector<Graph> graphs;
    const RuleSet rules(std::vector<Rule>{axiom.rule});
    for (const RuleInstance& instance : axiom.instances) {
        auto source = build_source(axiom.rule, instance);
        if (!source) continue;
        for (const Location& location : covering_locations(rules, *source))
            graphs.push_back(apply_copy(source->graph, rules, 0, location));
        graphs.push_back(std::move(source->graph));
    }
    return graphs;
}

/// A key telling nodes apart for the shape facts: op, input and output types, attributes.
[[nodiscard]] inline std::string shape_check_key(const Graph& graph, const Node& n) {
    std::string key(op_name(n.op));
    for (const TensorRef& in : n.inputs) key += " " + graph.type(in).to_string();
    for (const NodeOutput& out : n.outputs) key += " -> " + out.type.to_string();
    for (const auto& [name, value] : n.attributes) key += " " + name + "=" + instance_value_text(value);
    if (n.op == OpKind::Constant)  // its data, as a pattern sees it
        for (const std::string_view name : {"value", "fill"}) {
            AttributeValue scratch;
            if (const AttributeValue* view = pattern_view(n, name, scratch))
                key += " " + std::string(name) + "=" + instance_value_text(*view);
        }
    return key;
}

/// The prover's Z3 state: one context, the encoded axioms and the checked shape facts.
struct ProverState {
    z3::context context;
    Signature signature{context};
    std::vector<z3::expr> axioms;
    std::set<std::vector<std::int64_t>> axiom_lists;
    std::set<OpKind> checked_shape_ops;
    std::map<OpSymbol, z3::expr> op_axioms;
};

/// Encodes a numerically valid axiom; marks it invalid if it cannot be encoded.
inline void encode_axiom(ProverState& state, const Axiom& axiom, AxiomReport& report) {
    if (const auto problem = encoding_problem(state.signature, axiom.rule)) {
        report = {axiom.rule.name, false, "cannot be encoded: " + *problem};
        return;
    }
    const RuleEncoding encoding(state.signature, axiom.rule, EncodingMode::axiom, axiom.guard);
    state.axioms.push_back(encoding.axiom());
    state.axiom_lists.insert(encoding.literal_lists().begin(), encoding.literal_lists().end());
}

/// Checks the shape facts against shape inference on every distinct node of the valid
/// axioms' instances; one report per op, and the ops that passed are used.
[[nodiscard]] inline std::vector<AxiomReport> check_shape_facts(ProverState& state, std::span<const Axiom* const> axioms) {
    std::vector<Graph> graphs;
    for (const Axiom* axiom : axioms)
        for (Graph& graph : instance_graphs(*axiom)) graphs.push_back(std::move(graph));
    std::map<OpKind, std::vector<NodeInGraph>> nodes;
    std::set<std::string> seen;
    for (const Graph& graph : graphs)
        for (const Node& n : graph.nodes())
            if (shape_facts_of(n.op, graph_symbol(n, 0).tensor_constant) && seen.insert(shape_check_key(graph, n)).second)
                nodes[n.op].push_back({&graph, &n});
    std::vector<AxiomReport> reports;
    for (const auto& [op, of_op] : nodes) {
        std::size_t checked = 0;
        const bool held = shape_facts_hold(state.signature, of_op, checked);
        const bool valid = held && checked > 0;
        if (valid) state.checked_shape_ops.insert(op);
        reports.push_back({"shape facts of " + std::string(op_name(op)), valid,
                           (held ? "hold on " : "fail on one of ") + std::to_string(checked) + " distinct nodes"});
    }
    return reports;
}

/// The op axiom of every op symbol met so far, with shape facts where they were checked.
[[nodiscard]] inline std::vector<z3::expr> op_axioms(ProverState& state) {
    std::vector<z3::expr> out;
    std::vector<OpSymbol> symbols;
    for (const auto& entry : state.signature.op_functions()) symbols.push_back(entry.first);
    for (const OpSymbol& symbol : symbols) {
        auto it = state.op_axioms.find(symbol);
        if (it == state.op_axioms.end()) {
            const ShapeFacts facts
                = state.checked_shape_ops.contains(symbol.op) ? shape_facts_of(symbol.op, symbol.tensor_constant) : nullptr;
            it = state.op_axioms.emplace(symbol, op_axiom(state.signature, symbol, facts)).first;
        }
        out.push_back(it->second);
    }
    return out;
}

/// Runs a fresh solver on `assertions` for at most `timeout_ms`, with or without
/// model-based quantifier instantiation, and gives Z3's answer as a verdict.
[[nodiscard]] inline ProofResult run_solver(const z3::expr_vector& assertions, const ProverOptions& options,
                                            unsigned timeout_ms, bool model_based) {
    z3::solver solver(assertions.ctx(), z3::solver::simple());
    z3::params parameters(assertions.ctx());
    parameters.set("timeout", timeout_ms);
    parameters.set("random_seed", static_cast<unsigned>(options.seed));
    parameters.set("mbqi", model_based);
    solver.set(parameters);
    for (unsigned i = 0; i < assertions.size(); ++i) solver.add(assertions[i]);
    switch (solver.check()) {
        case z3::unsat: return {ProofStatus::proved, 0, "follows from the axioms"};
        case z3::sat: return {ProofStatus::refuted, 0, "Z3 found a model of the axioms and premises in which the outputs differ"};
        case z3::unknown: break;
    }
    std::string reason = solver.reason_unknown();
    if (reason.size() > 1 && reason.front() == '(' && reason.back() == ')') reason = reason.substr(1, reason.size() - 2);
    return {ProofStatus::unknown, 0, reason};
}

/// Everything asserted to prove `goal`: the axioms, the op axioms, the ground facts, the
/// premises and negated conclusion, and the meaning of the list constructors used.
[[nodiscard]] inline z3::expr_vector proof_assertions(ProverState& state, const RuleEncoding& goal) {
    z3::expr_vector assertions(state.context);
    for (const z3::expr& axiom : state.axioms) assertions.push_back(axiom);
    for (const z3::expr& axiom : op_axioms(state)) assertions.push_back(axiom);
    std::set<std::vector<std::int64_t>> lists = state.axiom_lists;
    lists.insert(goal.literal_lists().begin(), goal.literal_lists().end());
    for (const z3::expr& fact : ground_facts(state.signature, lists)) assertions.push_back(fact);
    assertions.push_back(state.signature.literals_distinct());
    for (const z3::expr& assertion : goal.goal()) assertions.push_back(assertion);
    for (const z3::expr& axiom : state.signature.list_axioms()) assertions.push_back(axiom);
    return assertions;
}

/// Proves `rule` from the state's axioms (see the file comment): E-matching first, which
/// proves a rule fast or runs out of instances; then, if options.model_search_ms allows, a
/// fresh search with model-based instantiation, which may still prove it or find a model of
/// its negation.
[[nodiscard]] inline ProofResult prove_with(ProverState& state, const ProverOptions& options, const Rule& rule) {
    if (const auto problem = encoding_problem(state.signature, rule)) return {ProofStatus::unknown, 0, "cannot be encoded: " + *problem};
    try {
        const z3::expr_vector assertions = proof_assertions(state, RuleEncoding(state.signature, rule, EncodingMode::goal));
        ProofResult result = run_solver(assertions, options, options.timeout_ms, false);
        if (result.status != ProofStatus::unknown) return result;
        result.detail = "no proof by E-matching (" + result.detail + ")";
        if (options.model_search_ms == 0) return result;
        ProofResult second = run_solver(assertions, options, options.model_search_ms, true);
        if (second.status == ProofStatus::unknown) second.detail = result.detail + ", nor by model-based instantiation (" + second.detail + ")";
        return second;
    } catch (const z3::exception& e) {
        return {ProofStatus::unknown, 0, std::string("Z3 error: ") + e.msg()};
    }
}

#else

/// Without Z3 there is no state.
struct ProverState {};

#endif  // RLFLOW_HAS_Z3

}  // namespace rlflow::synth::detail
