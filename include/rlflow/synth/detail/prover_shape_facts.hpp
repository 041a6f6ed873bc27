#pragma once
/// \file
/// The prover's shape facts (see synth/prover.hpp): per op, one table of what shape
/// inference guarantees about a defined output's rank and dims; the op axioms that carry
/// them ("defined(f(x...)) implies every x defined, and the facts"); and their check
/// against shape inference on concrete graph nodes. Only with Z3 (RLFLOW_HAS_Z3).

#include <rlflow/core/graph.hpp>
#include <rlflow/core/op_traits.hpp>
#include <rlflow/rewrite/constant_tensor.hpp>
#include <rlflow/rewrite/detail/evaluate.hpp>
#include <rlflow/synth/detail/prover_signature.hpp>
#include <rlflow/synth/detail/rewrite_names.hpp>

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <utility>
#include <vector>

#ifdef RLFLOW_HAS_Z3

namespace rlflow::synth::detail {

/// An axis as ONNX normalises it against rank `rank` (negative counts from the end).
[[nodiscard]] inline z3::expr normalised_axis(const z3::expr& axis, const z3::expr& rank) {
    return z3::ite(axis < 0, axis + rank, axis);
}

/// The most dims that shape facts going dim by dim describe (broadcasting, constant fills).
inline constexpr int max_spelled_out_rank = 6;

/// Conv2D: rank 4; batch from the input, output channels from the weight, whose spatial
/// dims are kernel_shape; the input's channels are the weight's times the group (written as
/// its two linear cases, group 1 and one channel per group); and the weight's shape is the
/// list of its four dims (so that same_shape can compare it with a constant's shape).
[[nodiscard]] inline z3::expr conv_shape_facts(const Application& a) {
    Signature& s = a.signature;
    const z3::expr &x = a.inputs[0], &w = a.inputs[1], &kernel = a.attribute("kernel_shape"), &group = a.attribute("group");
    const z3::expr ranks = s.rank(a.output) == 4 && s.rank(x) == 4 && s.rank(w) == 4;
    const z3::expr channels = s.dim(a.output, 0) == s.dim(x, 0) && s.dim(a.output, 1) == s.dim(w, 0)
                              && z3::implies(group == 1, s.dim(x, 1) == s.dim(w, 1))
                              && z3::implies(s.dim(w, 1) == 1, s.dim(x, 1) == group);
    const z3::expr weight = s.dim(w, 2) == s.element(kernel, 0) && s.dim(w, 3) == s.element(kernel, 1)
                            && s.shape(w) == s.list({s.dim(w, 0), s.dim(w, 1), s.dim(w, 2), s.dim(w, 3)});
    return ranks && channels && weight;
}

/// MatMul with a matrix on the right keeps the left operand's rank, contracts the left
/// operand's last dim with the matrix's rows and takes the matrix's columns as its last dim;
/// with a matrix on the left (and no vector on the right), the same mirrored. A matrix's
/// shape is the list of its two dims (so that same_shape can compare it with a constant's).
[[nodiscard]] inline z3::expr matmul_shape_facts(const Application& a) {
    Signature& s = a.signature;
    const z3::expr &x = a.inputs[0], &y = a.inputs[1], &out = a.output;
    const z3::expr x_last = s.rank(x) - 1, y_rows = s.rank(y) - 2;
    const z3::expr right_matrix = s.rank(out) == s.rank(x) && s.dim(x, x_last) == s.dim(y, 0) && s.dim(out, x_last) == s.dim(y, 1)
                                  && s.shape(y) == s.list({s.dim(y, 0), s.dim(y, 1)});
    const z3::expr left_matrix = s.rank(out) == s.rank(y) && s.dim(y, y_rows) == s.dim(x, 1) && s.dim(out, y_rows) == s.dim(x, 0)
                                 && s.dim(out, y_rows + 1) == s.dim(y, y_rows + 1);
    return s.rank(x) >= 1 && s.rank(y) >= 1 && z3::implies(s.rank(y) == 2, right_matrix)
           && z3::implies(s.rank(x) == 2 && s.rank(y) >= 2, left_matrix);
}

/// A tensor Constant has the shape its `shape` attribute gives.
[[nodiscard]] inline z3::expr tensor_constant_shape_facts(const Application& a) {
    return a.signature.shape(a.output) == a.attribute("shape");
}

/// Where a tensor Constant's fill fits its shape (constant_fill_problem finds nothing): a
/// known fill; every dim positive; an identity a matrix or a conv kernel with odd spatial
/// dims. There it is defined. A uniform fill of more than max_spelled_out_rank dims also
/// fits, but is not said to (the fact is sufficient, not necessary).
[[nodiscard]] inline z3::expr constant_fill_fits(const Application& a) {
    Signature& s = a.signature;
    const z3::expr &shape = a.attribute("shape"), &fill = a.attribute("fill");
    const auto positive_dims = [&](int rank) {
        z3::expr holds = s.length(shape) == rank;
        for (int i = 0; i < rank; ++i) holds = holds && s.element(shape, i) >= 1;
        return holds;
    };
    z3::expr_vector ranks(s.context());
    for (int rank = 0; rank <= max_spelled_out_rank; ++rank) ranks.push_back(positive_dims(rank));
    const auto odd = [&](int axis) { return z3::mod(s.element(shape, axis), 2) == 1; };
    const z3::expr identity_fits = positive_dims(2) || (positive_dims(4) && odd(2) && odd(3));
    const auto named = [&](ConstantFill f) { return fill == s.literal(std::string(constant_fill_name(f))); };
    return (named(ConstantFill::uniform) && z3::mk_or(ranks)) || (named(ConstantFill::identity) && identity_fits);
}

/// Concat: the parts' rank; the axis in range; its dim the sum of the parts'.
[[nodiscard]] inline z3::expr concat_shape_facts(const Application& a) {
    const Signature& s = a.signature;
    const z3::expr rank = s.rank(a.inputs[0]);
    const z3::expr axis = normalised_axis(a.attribute("axis"), rank);
    z3::expr facts = axis >= 0 && axis < rank && s.rank(a.output) == rank;
    z3::expr total = a.integer(0);
    for (const z3::expr& part : a.inputs) {
        facts = facts && s.rank(part) == rank;
        total = total + s.dim(part, axis);
    }
    return facts && s.dim(a.output, axis) == total;
}

/// Split part i: the input's rank; the axis in range; one size per part, its own on the axis.
[[nodiscard]] inline z3::expr split_shape_facts(const Application& a) {
    const Signature& s = a.signature;
    const z3::expr rank = s.rank(a.inputs[0]);
    const z3::expr axis = normalised_axis(a.attribute("axis"), rank);
    const z3::expr& sizes = a.attribute("split");
    return axis >= 0 && axis < rank && s.rank(a.output) == rank
           && s.length(sizes) == a.integer(static_cast<int>(a.symbol.outputs))
           && s.dim(a.output, axis) == s.element(sizes, static_cast<int>(a.symbol.output));
}

/// Transpose keeps the rank, and its permutation has that length.
[[nodiscard]] inline z3::expr transpose_shape_facts(const Application& a) {
    const Signature& s = a.signature;
    return s.rank(a.output) == s.rank(a.inputs[0]) && s.length(a.attribute("perm")) == s.rank(a.inputs[0]);
}

/// Enlarge keeps the kernel's channel dims and takes its spatial dims from kernel_shape.
[[nodiscard]] inline z3::expr enlarge_shape_facts(const Application& a) {
    const Signature& s = a.signature;
    const z3::expr &w = a.inputs[0], &kernel = a.attribute("kernel_shape");
    return s.rank(a.output) == 4 && s.rank(w) == 4 && s.dim(a.output, 0) == s.dim(w, 0) && s.dim(a.output, 1) == s.dim(w, 1)
           && s.dim(a.output, 2) == s.element(kernel, 0) && s.dim(a.output, 3) == s.element(kernel, 1);
}

/// Unary element-wise ops and Identity keep the shape.
[[nodiscard]] inline z3::expr same_shape_as_input(const Application& a) {
    return a.signature.shape(a.output) == a.signature.shape(a.inputs[0]);
}

/// Binary element-wise ops on equal shapes keep that shape. On operands of equal rank they
/// broadcast dim by dim (broadcast_shapes): the dims are equal or one is 1, and the result's
/// is the first operand's where the second's is 1, else the second's.
[[nodiscard]] inline z3::expr binary_elementwise_shape_facts(const Application& a) {
    const Signature& s = a.signature;
    const z3::expr &x = a.inputs[0], &y = a.inputs[1];
    z3::expr broadcast = s.rank(a.output) == s.rank(x);
    for (int i = 0; i < max_spelled_out_rank; ++i) {
        const z3::expr dx = s.dim(x, i), dy = s.dim(y, i);
        const z3::expr fits = dx == dy || dx == 1 || dy == 1;
        broadcast = broadcast && z3::implies(i < s.rank(x), fits && s.dim(a.output, i) == z3::ite(dy == 1, dx, dy));
    }
    return z3::implies(s.shape(x) == s.shape(y), s.shape(a.output) == s.shape(x)) && z3::implies(s.rank(x) == s.rank(y), broadcast);
}

using ShapeFacts = z3::expr (*)(const Application&);

/// The shape facts of `op` (a tensor Constant if `tensor_constant`), or nullptr if it has
/// none: the one table of them, with element-wise ops found by their traits. A scalar
/// Constant has none.
[[nodiscard]] inline ShapeFacts shape_facts_of(OpKind op, bool tensor_constant) noexcept {
    if (op == OpKind::Constant) return tensor_constant ? tensor_constant_shape_facts : nullptr;
    constexpr std::pair<OpKind, ShapeFacts> table[] = {
        {OpKind::Conv2D, conv_shape_facts},         {OpKind::MatMul, matmul_shape_facts},
        {OpKind::Concat, concat_shape_facts},       {OpKind::Split, split_shape_facts},
        {OpKind::Transpose, transpose_shape_facts}, {OpKind::Enlarge, enlarge_shape_facts},
        {OpKind::Identity, same_shape_as_input},
    };
    for (const auto& [kind, facts] : table)
        if (kind == op) return facts;
    const OpTraits& traits = op_traits(op);
    if (!traits.has(op_flag_elementwise)) return nullptr;
    return traits.max_inputs == 1 ? same_shape_as_input : binary_elementwise_shape_facts;
}

/// `∀ inputs, attributes . defined(f(...)) → every input defined ∧ facts`, triggered by
/// f(...): ops are strict (⊥ in, ⊥ out), and `facts` (if any) are the op's shape facts. With
/// its facts, a tensor Constant is also defined where its fill fits its shape.
[[nodiscard]] inline z3::expr op_axiom(Signature& s, const OpSymbol& symbol, ShapeFacts facts) {
    z3::context& c = s.context();
    std::vector<z3::expr> inputs, attributes;
    z3::expr_vector arguments(c);
    for (std::uint32_t i = 0; i < symbol.arity; ++i) inputs.push_back(c.constant(("input " + std::to_string(i)).c_str(), s.tensor()));
    for (const AttributeSpec& spec : encoded_attributes(symbol.op, symbol.tensor_constant))
        attributes.push_back(c.constant(("attribute " + std::string(spec.name)).c_str(), *s.attribute_sort(spec.type)));
    std::vector<z3::expr> bound = inputs;
    bound.insert(bound.end(), attributes.begin(), attributes.end());
    for (const z3::expr& b : bound) arguments.push_back(b);
    const Application application{s, symbol, inputs, attributes, s.op_function(symbol)(arguments)};
    z3::expr consequence = facts ? facts(application) : c.bool_val(true);
    for (const z3::expr& input : inputs) consequence = consequence && s.defined(input);
    z3::expr body = z3::implies(s.defined(application.output), consequence);
    if (facts && symbol.tensor_constant) body = body && z3::implies(constant_fill_fits(application), s.defined(application.output));
    return forall_with_patterns(bound, {application.output}, body);
}

/// Output `output` of graph node `n` as a symbol: a graph Constant reads as a tensor
/// Constant (its pattern_view gives value, shape and fill).
[[nodiscard]] inline OpSymbol graph_symbol(const Node& n, std::uint32_t output) {
    return {n.op, static_cast<std::uint32_t>(n.inputs.size()), output, static_cast<std::uint32_t>(n.outputs.size()),
            n.op == OpKind::Constant};
}

/// Asserts in `solver` what node `n` of `graph` is (its concrete input and output shapes and
/// attribute values as a pattern sees them, over constants named after `prefix`) and gives
/// its shape facts, for a Constant with its fill fitting; nullopt if the node holds an
/// attribute value the encoding has no literal for.
[[nodiscard]] inline std::optional<z3::expr> concrete_shape_facts(Signature& s, z3::solver& solver, const Graph& graph, const Node& n,
                                                                  const std::string& prefix) {
    z3::context& c = s.context();
    std::vector<z3::expr> inputs, attributes;
    for (const AttributeSpec& spec : encoded_attributes(n.op, graph_symbol(n, 0).tensor_constant)) {
        AttributeValue scratch;
        const AttributeValue* value = pattern_view(n, spec.name, scratch);
        if (!value || !s.attribute_sort(spec.type)) return std::nullopt;
        attributes.push_back(s.literal(*value));
    }
    z3::expr_vector arguments(c);
    for (std::size_t i = 0; i < n.inputs.size(); ++i) {
        inputs.push_back(c.constant((prefix + "input " + std::to_string(i)).c_str(), s.tensor()));
        solver.add(s.shape(inputs.back()) == s.ints(graph.type(n.inputs[i]).shape.dims()) && s.defined(inputs.back()));
        arguments.push_back(inputs.back());
    }
    for (const z3::expr& attribute : attributes) arguments.push_back(attribute);
    z3::expr_vector all(c);
    const auto outputs = static_cast<std::uint32_t>(n.outputs.size());
    for (std::uint32_t k = 0; k < outputs; ++k) {
        const OpSymbol symbol = graph_symbol(n, k);
        const Application application{s, symbol, inputs, attributes, s.op_function(symbol)(arguments)};
        solver.add(s.shape(application.output) == s.ints(n.outputs[k].type.shape.dims()) && s.defined(application.output));
        all.push_back(shape_facts_of(n.op, symbol.tensor_constant)(application));
        if (symbol.tensor_constant) all.push_back(constant_fill_fits(application));
    }
    return z3::mk_and(all);
}

/// Z3's time limit for checking one op's shape facts (they take milliseconds).
inline constexpr unsigned shape_check_timeout_ms = 10000;

/// A node of a graph, for checking shape facts.
struct NodeInGraph {
    const Graph* graph;
    const Node* node;
};

/// Whether the shape facts of every node of `nodes` (all of one op) hold: one query whose
/// negation must be unsat. `checked` counts the nodes that could be encoded.
[[nodiscard]] inline bool shape_facts_hold(Signature& s, std::span<const NodeInGraph> nodes, std::size_t& checked) {
    z3::solver solver(s.context(), z3::solver::simple());
    z3::expr_vector facts(s.context());
    checked = 0;
    for (std::size_t i = 0; i < nodes.size(); ++i)
        if (const auto fact = concrete_shape_facts(s, solver, *nodes[i].graph, *nodes[i].node, "node " + std::to_string(i) + " ")) {
            facts.push_back(*fact);
            ++checked;
        }
    solver.add(!z3::mk_and(facts));
    for (const z3::expr& axiom : s.list_axioms()) solver.add(axiom);
    z3::params parameters(s.context());
    parameters.set("timeout", shape_check_timeout_ms);
    parameters.set("mbqi", false);  // a failing fact shows as unknown, not as a model
    solver.set(parameters);
    return solver.check() == z3::unsat;
}

}  // namespace rlflow::synth::detail

#endif  // RLFLOW_HAS_Z3
