#pragma once
/// \file
/// ONNX AttributeProto <-> rlflow AttributeValue, attribute lookups on NodeProtos, and
/// the opsets in which attributes became inputs.

#include <rlflow/core/attributes.hpp>
#include <rlflow/core/op_kind.hpp>
#include <rlflow/onnx/tensor_io.hpp>

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace rlflow::onnx_io::detail {

/// The attribute of `node` named `name`, or nullptr.
[[nodiscard]] inline const pb::AttributeProto* find_attribute(const pb::NodeProto& node, std::string_view name) {
    for (const auto& a : node.attribute())
        if (a.name() == name) return &a;
    return nullptr;
}

[[nodiscard]] inline std::int64_t attribute_int(const pb::NodeProto& node, std::string_view name, std::int64_t fallback) {
    const auto* a = find_attribute(node, name);
    return a && a->type() == pb::AttributeProto::INT ? a->i() : fallback;
}

[[nodiscard]] inline double attribute_float(const pb::NodeProto& node, std::string_view name, double fallback) {
    const auto* a = find_attribute(node, name);
    return a && a->type() == pb::AttributeProto::FLOAT ? static_cast<double>(a->f()) : fallback;
}

[[nodiscard]] inline std::string attribute_string(const pb::NodeProto& node, std::string_view name, std::string fallback) {
    const auto* a = find_attribute(node, name);
    return a && a->type() == pb::AttributeProto::STRING ? a->s() : fallback;
}

[[nodiscard]] inline std::optional<std::vector<std::int64_t>> attribute_ints(const pb::NodeProto& node,
                                                                            std::string_view name) {
    const auto* a = find_attribute(node, name);
    if (!a || a->type() != pb::AttributeProto::INTS) return std::nullopt;
    return std::vector<std::int64_t>(a->ints().begin(), a->ints().end());
}

/// Converts an ONNX attribute to a value. Plain kinds become typed values; graphs,
/// sparse tensors, type protos and references stay serialised (OpaqueAttribute).
[[nodiscard]] inline AttributeValue attribute_from_proto(const pb::AttributeProto& a, const std::string& where) {
    if (!a.ref_attr_name().empty()) return OpaqueAttribute{a.SerializeAsString()};
    switch (a.type()) {
        case pb::AttributeProto::INT: return a.i();
        case pb::AttributeProto::FLOAT: return static_cast<double>(a.f());
        case pb::AttributeProto::STRING: return a.s();
        case pb::AttributeProto::INTS: return std::vector<std::int64_t>(a.ints().begin(), a.ints().end());
        case pb::AttributeProto::FLOATS: return std::vector<double>(a.floats().begin(), a.floats().end());
        case pb::AttributeProto::STRINGS: return std::vector<std::string>(a.strings().begin(), a.strings().end());
        case pb::AttributeProto::TENSOR:
            if (a.t().data_type() != static_cast<int>(DType::String) && a.t().data_location() != pb::TensorProto::EXTERNAL)
                return std::make_shared<const Tensor>(tensor_from_proto(a.t(), where));
            return OpaqueAttribute{a.SerializeAsString()};
        default: return OpaqueAttribute{a.SerializeAsString()};
    }
}

/// Writes `value` as the ONNX attribute `name` into `out`.
inline void attribute_to_proto(const std::string& name, const AttributeValue& value, pb::AttributeProto& out) {
    if (const auto* opaque = std::get_if<OpaqueAttribute>(&value)) {
        out.ParseFromString(opaque->serialized);
        out.set_name(name);
        return;
    }
    out.set_name(name);
    std::visit(
        [&](const auto& v) {
            using V = std::decay_t<decltype(v)>;
            if constexpr (std::is_same_v<V, std::int64_t>) {
                out.set_type(pb::AttributeProto::INT);
                out.set_i(v);
            } else if constexpr (std::is_same_v<V, double>) {
                out.set_type(pb::AttributeProto::FLOAT);
                out.set_f(static_cast<float>(v));
            } else if constexpr (std::is_same_v<V, std::string>) {
                out.set_type(pb::AttributeProto::STRING);
                out.set_s(v);
            } else if constexpr (std::is_same_v<V, std::vector<std::int64_t>>) {
                out.set_type(pb::AttributeProto::INTS);
                for (auto x : v) out.add_ints(x);
            } else if constexpr (std::is_same_v<V, std::vector<double>>) {
                out.set_type(pb::AttributeProto::FLOATS);
                for (auto x : v) out.add_floats(static_cast<float>(x));
            } else if constexpr (std::is_same_v<V, std::vector<std::string>>) {
                out.set_type(pb::AttributeProto::STRINGS);
                for (const auto& x : v) out.add_strings(x);
            } else if constexpr (std::is_same_v<V, TensorPtr>) {
                out.set_type(pb::AttributeProto::TENSOR);
                if (v) *out.mutable_t() = tensor_to_proto(*v, "");
            }
        },
        value);
}

/// The opset from which a reduction takes its axes as an input rather than an attribute.
[[nodiscard]] constexpr std::int64_t reduce_axes_input_since(OpKind op) noexcept {
    constexpr std::int64_t reduce_sum_since = 13, others_since = 18;
    return op == OpKind::ReduceSum ? reduce_sum_since : others_since;
}

}  // namespace rlflow::onnx_io::detail
