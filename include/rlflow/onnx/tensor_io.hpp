#pragma once
/// \file
/// Conversion between ONNX TensorProto and rlflow::Tensor, and reading the `.pb` tensor
/// files of the ONNX test data.

#include <rlflow/core/error.hpp>
#include <rlflow/core/tensor.hpp>

#include <onnx/onnx_pb.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>

namespace rlflow::onnx_io {

namespace pb = ::onnx;

namespace detail {

/// Copies typed repeated-field values into raw little-endian bytes of `size` bytes each.
template <class Field, class Stored>
std::vector<std::byte> pack_field(const Field& field, std::size_t size) {
    std::vector<std::byte> bytes(static_cast<std::size_t>(field.size()) * size);
    for (int i = 0; i < field.size(); ++i) {
        const auto value = static_cast<Stored>(field.Get(i));
        std::memcpy(bytes.data() + static_cast<std::size_t>(i) * size, &value, size);
    }
    return bytes;
}

/// The bytes of a TensorProto's typed data fields (raw_data is read in place).
inline std::vector<std::byte> tensor_proto_bytes(const pb::TensorProto& t, DType dtype, const std::string& where) {
    const std::size_t size = dtype_size(dtype);
    switch (dtype) {
        case DType::Float32: return pack_field<decltype(t.float_data()), float>(t.float_data(), size);
        case DType::Float64: return pack_field<decltype(t.double_data()), double>(t.double_data(), size);
        case DType::Int64: return pack_field<decltype(t.int64_data()), std::int64_t>(t.int64_data(), size);
        case DType::UInt32:
        case DType::UInt64: return pack_field<decltype(t.uint64_data()), std::uint64_t>(t.uint64_data(), size);
        case DType::Int32: return pack_field<decltype(t.int32_data()), std::int32_t>(t.int32_data(), size);
        case DType::Int16:
        case DType::UInt16:
        case DType::Float16:
        case DType::BFloat16: return pack_field<decltype(t.int32_data()), std::uint16_t>(t.int32_data(), size);
        case DType::Int8:
        case DType::UInt8:
        case DType::Bool: return pack_field<decltype(t.int32_data()), std::uint8_t>(t.int32_data(), size);
        default: throw onnx_error(where + ": tensor '" + t.name() + "' has unsupported data type "
                                  + std::string(dtype_name(dtype)));
    }
}

}  // namespace detail

/// Initializers up to this size keep their data in structure_only().
inline constexpr std::size_t structure_data_limit = 4096;

/// A copy of `model` without the data of its large initializers (names, types and
/// shapes stay), for passes such as shape inference that only read the structure.
[[nodiscard]] inline pb::ModelProto structure_only(const pb::ModelProto& model) {
    pb::ModelProto copy;
    copy.set_ir_version(model.ir_version());
    *copy.mutable_opset_import() = model.opset_import();
    *copy.mutable_functions() = model.functions();
    const pb::GraphProto& from = model.graph();
    pb::GraphProto& to = *copy.mutable_graph();
    to.set_name(from.name());
    *to.mutable_node() = from.node();
    *to.mutable_input() = from.input();
    *to.mutable_output() = from.output();
    *to.mutable_value_info() = from.value_info();
    *to.mutable_sparse_initializer() = from.sparse_initializer();
    for (const auto& init : from.initializer()) {
        // Small tensors may be shapes that inference reads (Reshape targets): keep them.
        if (init.ByteSizeLong() <= structure_data_limit) {
            *to.add_initializer() = init;
            continue;
        }
        pb::TensorProto& t = *to.add_initializer();
        t.set_name(init.name());
        t.set_data_type(init.data_type());
        *t.mutable_dims() = init.dims();
    }
    return copy;
}

/// The shape of a TensorProto.
[[nodiscard]] inline Shape tensor_proto_shape(const pb::TensorProto& t, const std::string& where) {
    if (t.dims_size() > Shape::max_rank)
        throw onnx_error(where + ": tensor '" + t.name() + "' has rank " + std::to_string(t.dims_size()) + " > "
                         + std::to_string(Shape::max_rank));
    Shape s;
    std::int64_t elements = 1;
    for (const auto d : t.dims()) {
        if (d < 0) throw onnx_error(where + ": tensor '" + t.name() + "' has a negative dimension");
        if (__builtin_mul_overflow(elements, d, &elements))  // found by fuzzing (tests/fuzz/corpus/tensor_pb)
            throw onnx_error(where + ": tensor '" + t.name() + "' claims more elements than a 64-bit count holds");
        s.push_back(d);
    }
    return s;
}

/// Converts a TensorProto (raw or typed data) into a Tensor. `where` names the file
/// for errors. External data and string tensors are rejected with onnx_error.
[[nodiscard]] inline Tensor tensor_from_proto(const pb::TensorProto& t, const std::string& where) {
    if (t.data_location() == pb::TensorProto::EXTERNAL)
        throw onnx_error(where + ": tensor '" + t.name() + "' uses external data, which is not supported");
    if (!is_valid_dtype(t.data_type()) || t.data_type() == static_cast<int>(DType::String)
        || t.data_type() == static_cast<int>(DType::Undefined))
        throw onnx_error(where + ": tensor '" + t.name() + "' has unsupported data type " + std::to_string(t.data_type()));
    const auto dtype = static_cast<DType>(t.data_type());
    const Shape shape = tensor_proto_shape(t, where);
    std::vector<std::byte> typed;
    if (!t.has_raw_data()) typed = detail::tensor_proto_bytes(t, dtype, where);
    const std::span<const std::byte> bytes =
        t.has_raw_data() ? std::as_bytes(std::span(t.raw_data().data(), t.raw_data().size())) : std::span(typed);
    std::int64_t needed = 0;
    if (__builtin_mul_overflow(shape.numel(), static_cast<std::int64_t>(dtype_size(dtype)), &needed))
        throw onnx_error(where + ": tensor '" + t.name() + "' claims more bytes than a 64-bit count holds");
    if (static_cast<std::int64_t>(bytes.size()) != needed)
        throw onnx_error(where + ": tensor '" + t.name() + "' holds " + std::to_string(bytes.size()) + " bytes, its shape "
                         + shape.to_string() + " needs " + std::to_string(needed));
    return Tensor::from_raw(dtype, shape, bytes);
}

/// Converts a Tensor into a TensorProto with raw data.
[[nodiscard]] inline pb::TensorProto tensor_to_proto(const Tensor& t, const std::string& name) {
    pb::TensorProto p;
    p.set_name(name);
    p.set_data_type(static_cast<int>(t.dtype()));
    for (const auto d : t.shape().dims()) p.add_dims(d);
    const auto raw = t.raw();
    p.set_raw_data(std::string(reinterpret_cast<const char*>(raw.data()), raw.size()));
    return p;
}

/// Reads a whole file; throws onnx_error naming it if it cannot be read.
[[nodiscard]] inline std::string read_file(const std::filesystem::path& path) {
    std::ifstream in(path, std::ios::binary | std::ios::ate);
    if (!in) throw onnx_error(path.string() + ": cannot open file");
    const std::streamoff size = in.tellg();
    if (size < 0) throw onnx_error(path.string() + ": cannot read file");
    std::string bytes(static_cast<std::size_t>(size), '\0');
    in.seekg(0);
    if (!in.read(bytes.data(), size)) throw onnx_error(path.string() + ": cannot read file");
    return bytes;
}

/// Loads a serialised TensorProto file (the ONNX test data's input_N.pb / output_N.pb).
[[nodiscard]] inline Tensor load_tensor_file(const std::filesystem::path& path) {
    pb::TensorProto t;
    const std::string bytes = read_file(path);
    if (!t.ParseFromString(bytes)) throw onnx_error(path.string() + ": not a serialised ONNX TensorProto");
    return tensor_from_proto(t, path.string());
}

/// Loads DIR/PREFIX_0.pb, DIR/PREFIX_1.pb, ... until one is missing (the ONNX test-data
/// layout: input_N.pb and output_N.pb).
[[nodiscard]] inline std::vector<Tensor> load_tensor_files(const std::filesystem::path& dir, const std::string& prefix) {
    std::vector<Tensor> tensors;
    for (int i = 0;; ++i) {
        const auto file = dir / (prefix + "_" + std::to_string(i) + ".pb");
        if (!std::filesystem::exists(file)) return tensors;
        tensors.push_back(load_tensor_file(file));
    }
}

}  // namespace rlflow::onnx_io
