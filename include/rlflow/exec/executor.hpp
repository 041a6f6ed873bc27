#pragma once
/// \file
/// The reference executor: runs any graph of core ops on float32 tensors with Eigen (and
/// the typed ops on int32, int64 and bool tensors too), single-threaded, with ONNX (opset 13-17) semantics, and measures its peak activation
/// memory under the model of core/memory.hpp.

#include <rlflow/core/graph.hpp>
#include <rlflow/exec/detail/run_state.hpp>

#include <cstdint>
#include <map>
#include <span>
#include <string>
#include <vector>

namespace rlflow::exec {

/// What one run produced.
struct RunResult {
    /// One tensor per graph output, in `Graph::outputs()` order.
    std::vector<Tensor> outputs;
    /// The measured peak of live activation bytes (graph inputs and intermediates, not
    /// weights): equal to `memory_profile(g).peak_activation_bytes`.
    std::int64_t peak_activation_bytes = 0;
};

/// Runs graphs node by node in `Graph::topological_order()`. View ops alias their input;
/// every other tensor is freed after its last consumer unless it is a graph output.
class Executor {
public:
    /// Runs `g` on `inputs`, one tensor per `g.inputs()` entry in that order.
    /// Throws shape_error naming an input whose type differs from the declared one (or a
    /// Gather index out of range), graph_error for an opaque node, precondition_error for
    /// a weight without data or a tensor of a dtype its node cannot hold (holds_dtype).
    [[nodiscard]] RunResult run(const Graph& g, std::span<const Tensor> inputs) const {
        std::vector<const Tensor*> bound;
        bound.reserve(inputs.size());
        for (const Tensor& t : inputs) bound.push_back(&t);
        RLFLOW_EXPECTS(bound.size() == g.inputs().size(), precondition_error,
                       "Executor::run: the graph has " + std::to_string(g.inputs().size()) + " inputs, got "
                           + std::to_string(bound.size()) + " tensors");
        return run_bound(g, bound);
    }

    /// Runs `g` with its inputs given by name; every graph input must be named once.
    [[nodiscard]] RunResult run(const Graph& g, const std::map<std::string, Tensor>& inputs) const {
        std::vector<const Tensor*> bound;
        for (const NodeId id : g.inputs()) {
            const auto it = inputs.find(g.node(id).name);
            RLFLOW_EXPECTS(it != inputs.end(), precondition_error,
                           "Executor::run: no tensor for graph input '" + g.node(id).name + "'");
            bound.push_back(&it->second);
        }
        for (const auto& [name, tensor] : inputs)
            RLFLOW_EXPECTS(g.find_input(name).has_value(), precondition_error,
                           "Executor::run: the graph has no input named '" + name + "'");
        return run_bound(g, bound);
    }

private:
    static RunResult run_bound(const Graph& g, std::span<const Tensor* const> inputs) {
        const std::vector<NodeId> order = g.topological_order();
        for (const NodeId id : order) check_executable(g.node(id));
        for (std::size_t i = 0; i < inputs.size(); ++i) check_input(g.node(g.inputs()[i]), *inputs[i]);
        detail::RunState state(g, order);
        std::vector<const Tensor*> by_node(g.id_bound(), nullptr);
        for (std::size_t i = 0; i < inputs.size(); ++i) by_node[g.inputs()[i].value] = inputs[i];
        for (const NodeId id : order) {
            const Node& n = g.node(id);
            if (n.op == OpKind::Input) state.bind_input(n, *by_node[id.value]);
            else state.execute(n);
        }
        return {state.take_outputs(), state.peak_activation_bytes()};
    }

    /// Rejects, before anything runs, a node this executor cannot run.
    static void check_executable(const Node& n) {
        if (n.traits().has(op_flag_opaque)) throw detail::opaque_op_error(n);
        RLFLOW_EXPECTS(n.op != OpKind::Weight || n.data, precondition_error,
                       n.describe() + ": weight has no data (give it some with exec::fill_random_weights or "
                                      "Graph::set_weight_data)");
        for (std::size_t i = 0; i < n.outputs.size(); ++i)
            RLFLOW_EXPECTS(holds_dtype(n.op, n.outputs[i].type.dtype), precondition_error,
                           n.describe() + ": output " + std::to_string(i) + " is " + n.outputs[i].type.to_string()
                               + "; the executor runs float tensors, and int32, int64 and bool ones in the typed ops");
    }

    static void check_input(const Node& input, const Tensor& value) {
        const TensorType& expected = input.outputs[0].type;
        RLFLOW_EXPECTS(value.type() == expected, shape_error,
                       "graph input '" + input.name + "': expected " + expected.to_string() + ", got "
                           + value.type().to_string());
    }
};

}  // namespace rlflow::exec
