#pragma once
/// \file
/// Turning parameter inputs of a weight-free ONNX export (PyTorch's export_params=False)
/// into initializers, with the data of a graph's weights; the rest of the model is left
/// exactly as it was.

#include <rlflow/core/graph.hpp>
#include <rlflow/onnx/tensor_io.hpp>

#include <unordered_map>

namespace rlflow::onnx_io {

/// For every graph input of `model` that names a weight of `weights` with data, adds that
/// data as an initializer and removes the input. Returns how many inputs became weights.
inline std::size_t attach_weights(pb::ModelProto& model, const Graph& weights) {
    std::unordered_map<std::string, const Tensor*> data;
    for (const NodeId id : weights.weights())
        if (const Node& n = weights.node(id); n.data) data[n.name] = n.data.get();
    auto* inputs = model.mutable_graph()->mutable_input();
    std::size_t attached = 0;
    for (int i = inputs->size() - 1; i >= 0; --i) {
        const auto it = data.find(inputs->Get(i).name());
        if (it == data.end()) continue;
        *model.mutable_graph()->add_initializer() = tensor_to_proto(*it->second, it->first);
        inputs->DeleteSubrange(i, 1);
        ++attached;
    }
    return attached;
}

}  // namespace rlflow::onnx_io
