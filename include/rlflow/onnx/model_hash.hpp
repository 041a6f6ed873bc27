#pragma once
/// \file
/// A hash of an ONNX model as a runtime sees it: the computation, not the names. Two IR
/// graphs can write the same model: a fused convolution and the Conv + Relu it is written
/// as, or one graph reached by two rewrite orders whose new initializers got other
/// names. A measurement of one is a measurement of the other (cost/ort_latency.hpp keys
/// its latencies by this hash).
///
/// Each tensor gets a hash: a graph input by its name (the interface), an initializer
/// by its type, shape and data, a node output by its op, domain, attributes (by name,
/// each value without the names it holds), the hashes of its inputs and the output's
/// index. The model's hash folds its outputs' hashes and names, in order. Equal hashes
/// of two models (up to 64-bit collisions) mean the same function on the same inputs.

#include <rlflow/core/detail/byte_writer.hpp>
#include <rlflow/onnx/tensor_io.hpp>

#include <algorithm>
#include <cstdint>
#include <string>
#include <unordered_map>
#include <vector>

namespace rlflow::onnx_io {

namespace detail {

/// A TensorProto's content: its serialised form with the name left out.
[[nodiscard]] inline std::string tensor_content(const pb::TensorProto& t) {
    pb::TensorProto copy = t;
    copy.clear_name();
    return copy.SerializeAsString();
}

/// An attribute's value, its tensors' names left out.
[[nodiscard]] inline std::string attribute_content(const pb::AttributeProto& a) {
    pb::AttributeProto copy = a;
    if (copy.has_t()) copy.mutable_t()->clear_name();
    for (pb::TensorProto& t : *copy.mutable_tensors()) t.clear_name();
    return copy.SerializeAsString();
}

/// The hash of one node output (see the file comment).
[[nodiscard]] inline std::uint64_t node_output_hash(const pb::NodeProto& n, const std::vector<std::uint64_t>& inputs, int output) {
    rlflow::detail::ByteWriter w;
    w.str(n.op_type());
    w.str(n.domain());
    std::vector<const pb::AttributeProto*> attributes;
    for (const pb::AttributeProto& a : n.attribute()) attributes.push_back(&a);
    std::sort(attributes.begin(), attributes.end(), [](const auto* x, const auto* y) { return x->name() < y->name(); });
    w.u64(attributes.size());
    for (const pb::AttributeProto* a : attributes) w.str(attribute_content(*a));
    w.u64(inputs.size());
    for (const std::uint64_t h : inputs) w.u64(h);
    w.u64(static_cast<std::uint64_t>(output));
    return rlflow::detail::hash_bytes(w.data());
}

}  // namespace detail

/// The hash of `model` as a runtime sees it (see the file comment). Nodes must be in
/// topological order, as ONNX requires.
[[nodiscard]] inline std::uint64_t model_structure_hash(const pb::ModelProto& model) {
    const pb::GraphProto& g = model.graph();
    std::unordered_map<std::string, std::uint64_t> tensors;
    const auto tagged = [](std::string_view tag, std::string_view content) {
        rlflow::detail::ByteWriter w;
        w.str(tag);
        w.str(content);
        return rlflow::detail::hash_bytes(w.data());
    };
    for (const pb::ValueInfoProto& in : g.input()) tensors[in.name()] = tagged("input", in.name());
    for (const pb::TensorProto& t : g.initializer()) tensors[t.name()] = tagged("initializer", detail::tensor_content(t));
    const std::uint64_t absent = tagged("absent", {});
    for (const pb::NodeProto& n : g.node()) {
        std::vector<std::uint64_t> inputs;
        for (const std::string& name : n.input()) {
            const auto it = name.empty() ? tensors.end() : tensors.find(name);
            inputs.push_back(it == tensors.end() ? tagged("unknown", name) : it->second);
        }
        for (int k = 0; k < n.output_size(); ++k) tensors[n.output(k)] = detail::node_output_hash(n, inputs, k);
    }
    rlflow::detail::ByteWriter w;
    for (const pb::ValueInfoProto& out : g.output()) {
        w.str(out.name());
        const auto it = tensors.find(out.name());
        w.u64(it == tensors.end() ? absent : it->second);
    }
    return rlflow::detail::hash_bytes(w.data());
}

}  // namespace rlflow::onnx_io
