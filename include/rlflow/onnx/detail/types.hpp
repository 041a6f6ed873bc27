#pragma once
/// \file
/// ONNX TypeProto <-> TensorType.

#include <rlflow/core/shape.hpp>
#include <rlflow/onnx/tensor_io.hpp>

#include <map>
#include <optional>
#include <string>

namespace rlflow::onnx_io::detail {

/// The tensor type a TypeProto describes, with symbolic dims bound from `dim_values`
/// and others left unknown; `exact` is cleared when the TensorType loses information
/// (unbound symbolic dims, unknown rank, rank > 6, non-tensor types).
[[nodiscard]] inline TensorType type_from_proto(const pb::TypeProto& type, const std::map<std::string, std::int64_t>& dim_values,
                                                bool& exact) {
    exact = true;
    if (!type.has_tensor_type() || !is_valid_dtype(type.tensor_type().elem_type())) {
        exact = false;
        return {DType::Undefined, {}};
    }
    const auto& tensor = type.tensor_type();
    TensorType out{static_cast<DType>(tensor.elem_type()), {}};
    if (!tensor.has_shape() || tensor.shape().dim_size() > Shape::max_rank) {
        exact = false;
        return {DType::Undefined, {}};
    }
    for (const auto& d : tensor.shape().dim()) {
        if (d.has_dim_value()) {
            out.shape.push_back(d.dim_value());
            continue;
        }
        const auto bound = d.has_dim_param() ? dim_values.find(d.dim_param()) : dim_values.end();
        exact = exact && bound != dim_values.end();
        out.shape.push_back(bound != dim_values.end() ? bound->second : Shape::unknown);
    }
    return out;
}

/// A TypeProto for a tensor type; unknown dims are left without a value.
inline void type_to_proto(const TensorType& t, pb::TypeProto& out) {
    auto* tensor = out.mutable_tensor_type();
    tensor->set_elem_type(static_cast<int>(t.dtype));
    auto* shape = tensor->mutable_shape();
    for (const auto d : t.shape.dims()) {
        auto* dim = shape->add_dim();
        if (d >= 0) dim->set_dim_value(d);
    }
}

}  // namespace rlflow::onnx_io::detail
