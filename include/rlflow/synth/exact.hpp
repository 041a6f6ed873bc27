#pragma once
/// \file
/// Exact evaluation of small graphs, for the substitution generator.
///
/// The generator fingerprints a candidate graph by running it on random integer inputs.
/// With exact arithmetic two graphs computing the same function give identical outputs,
/// and two different functions (almost surely) do not, so fingerprints can be compared
/// for equality instead of within a float tolerance.
///
/// The values (`Exact`, `ExactTensor`) are in exact_value.hpp, the kernels of every op in
/// detail/exact_op_table.hpp; this file runs one op (exact_op) or a whole graph (exact_run).
///
/// Every op follows the float reference executor (exec/executor.hpp) exactly; where that
/// executor's result has no exact form (a sigmoid, a max over padding only) an
/// `exact_error` says so instead.

#include <rlflow/core/error.hpp>
#include <rlflow/core/graph.hpp>
#include <rlflow/synth/detail/exact_op_table.hpp>
#include <rlflow/synth/exact_value.hpp>

#include <algorithm>
#include <map>
#include <span>
#include <string>
#include <vector>

namespace rlflow::synth {

/// Whether `op` with these (normalised) attributes has an exact kernel: false for opaque
/// and source ops, ops outside exact arithmetic (Sigmoid, Div, Softmax...) and attributes
/// without an exact form (a sigmoid-activated Conv2D, Pad in reflect mode). An op for
/// which this holds can still throw exact_error on particular shapes or values: an
/// overflow, an average over 11 elements, a MaxPool window over padding only.
[[nodiscard]] inline bool has_exact_form(OpKind op, const Attributes& attributes) {
    const OpTraits& traits = op_traits(op);
    if (traits.has(op_flag_opaque) || traits.has(op_flag_source)) return false;
    return detail::exact_kernel(op).refusal(op, attributes).empty();
}

/// Runs one core op exactly. `attributes` are normalised as on a Graph node (see
/// Graph::add_node); `output_types` are the node's inferred output types (their shapes
/// give the outputs'). Throws graph_error for an opaque op, precondition_error for a
/// source op or a wrong number of inputs, shape_error for output types that inference
/// does not give, exact_error (naming the op) for an op or value with no exact form.
[[nodiscard]] inline std::vector<ExactTensor> exact_op(OpKind op, const Attributes& attributes,
                                                       std::span<const ExactTensor* const> inputs,
                                                       std::span<const TensorType> output_types) {
    const OpTraits& traits = op_traits(op);
    RLFLOW_EXPECTS(!traits.has(op_flag_opaque), graph_error, "exact_op: an opaque op has no exact form");
    RLFLOW_EXPECTS(!traits.has(op_flag_source), precondition_error,
                   "exact_op: " + std::string(traits.name) + " is a source op; exact_run binds its value");
    const std::string reason = detail::exact_kernel(op).refusal(op, attributes);
    if (!reason.empty()) throw exact_error(std::string(traits.name) + ": " + reason);
    detail::check_exact_operands(traits, attributes, inputs, output_types);
    std::vector<ExactTensor> outputs = detail::allocate_outputs(output_types);
    detail::run_exact_kernel(op, attributes, inputs, outputs, [&] { return std::string(traits.name); });
    return outputs;
}

namespace detail {

/// The values of one exact run: source values are borrowed (from the caller's map) or
/// converted from node data; op outputs are owned.
class ExactRunState {
public:
    explicit ExactRunState(const Graph& graph) : m_owned(graph.id_bound()), m_borrowed(graph.id_bound(), nullptr) {}

    /// Binds a source node to values[name] if given, else to its data.
    void bind_source(const Node& n, const std::map<std::string, ExactTensor>& values) {
        const auto given = values.find(n.name);
        if (given != values.end()) {
            const Shape& declared = n.outputs[0].type.shape;
            RLFLOW_EXPECTS(given->second.shape == declared
                               && static_cast<std::int64_t>(given->second.values.size()) == declared.numel(),
                           shape_error,
                           "exact_run: the value for '" + n.name + "' is " + given->second.shape.to_string() + " with "
                               + std::to_string(given->second.values.size()) + " values; " + n.describe() + " declares "
                               + declared.to_string());
            m_borrowed[n.id.value] = &given->second;
            return;
        }
        RLFLOW_EXPECTS(n.op != OpKind::Input, precondition_error,
                       "exact_run: no value for graph input '" + n.name + "'");
        RLFLOW_EXPECTS(n.data != nullptr, precondition_error,
                       "exact_run: " + n.describe() + " has neither a value nor data");
        try {
            m_owned[n.id.value] = {exact_from_tensor(*n.data)};
        } catch (const exact_error& e) {
            throw exact_error(n.describe() + ": " + e.reason());
        }
    }

    /// Runs one op node on the values of its inputs.
    void execute(const Node& n) {
        m_inputs.clear();
        for (const TensorRef& in : n.inputs) m_inputs.push_back(&value(in));
        std::vector<ExactTensor>& outputs = m_owned[n.id.value];
        outputs.clear();
        for (const NodeOutput& out : n.outputs) outputs.push_back(ExactTensor::zeros(out.type.shape));
        run_exact_kernel(n.op, n.attributes, m_inputs, outputs, [&] { return n.describe(); });
    }

    [[nodiscard]] const ExactTensor& value(TensorRef ref) const {
        const ExactTensor* borrowed = m_borrowed[ref.node.value];
        return borrowed != nullptr ? *borrowed : m_owned[ref.node.value][ref.index];
    }

private:
    std::vector<std::vector<ExactTensor>> m_owned;
    std::vector<const ExactTensor*> m_borrowed;
    /// Scratch: the input pointers of the node being run.
    std::vector<const ExactTensor*> m_inputs;
};

/// Rejects, before anything runs, a node with no exact form.
inline void check_exact_node(const Node& n) {
    if (n.traits().has(op_flag_opaque))
        throw graph_error(n.describe() + ": opaque op '" + std::string(n.op_label()) + "' has no exact form");
    if (n.traits().has(op_flag_source)) return;
    const std::string reason = exact_kernel(n.op).refusal(n.op, n.attributes);
    if (!reason.empty()) throw exact_error(n.describe() + ": " + reason);
}

}  // namespace detail

/// Runs a whole graph exactly and returns its outputs in `g.outputs()` order. `values`
/// gives a tensor for every graph input, by node name; a Weight or Constant node takes
/// `values[name]` if present, else its float data (which must hold integers). Names that
/// match no source node are ignored, so one map can serve several graphs over the same
/// inputs. Throws graph_error for an opaque node, exact_error (naming the node) for an op
/// or value with no exact form, precondition_error for a missing input value or weight
/// data, shape_error for a value whose shape differs from the node's.
[[nodiscard]] inline std::vector<ExactTensor> exact_run(const Graph& g,
                                                        const std::map<std::string, ExactTensor>& values) {
    const std::vector<NodeId> order = g.topological_order();
    for (const NodeId id : order) detail::check_exact_node(g.node(id));
    detail::ExactRunState state(g);
    for (const NodeId id : order) {
        const Node& n = g.node(id);
        if (n.traits().has(op_flag_source))
            state.bind_source(n, values);
        else
            state.execute(n);
    }
    std::vector<ExactTensor> outputs;
    outputs.reserve(g.outputs().size());
    for (const GraphOutput& o : g.outputs()) outputs.push_back(state.value(o.value));
    return outputs;
}

}  // namespace rlflow::synth
