#pragma once
/// \file
/// Element types. The numeric values equal ONNX's `TensorProto::DataType`, so import and
/// export map them without a table. Every op computes on `Float32`; the typed ops (Where,
/// the comparisons, Cast, Gather, Expand, ...) also on int32, int64 and bool; the rest are
/// carried.

#include <cstddef>
#include <cstdint>
#include <string_view>

namespace rlflow {

/// Tensor element type (values are ONNX TensorProto.DataType codes).
enum class DType : std::uint8_t {
    Undefined = 0,
    Float32 = 1,
    UInt8 = 2,
    Int8 = 3,
    UInt16 = 4,
    Int16 = 5,
    Int32 = 6,
    Int64 = 7,
    String = 8,
    Bool = 9,
    Float16 = 10,
    Float64 = 11,
    UInt32 = 12,
    UInt64 = 13,
    Complex64 = 14,
    Complex128 = 15,
    BFloat16 = 16,
};

/// Bytes per element; 0 for Undefined and String (variable size).
[[nodiscard]] constexpr std::size_t dtype_size(DType t) noexcept {
    switch (t) {
        case DType::Bool:
        case DType::UInt8:
        case DType::Int8: return 1;
        case DType::UInt16:
        case DType::Int16:
        case DType::Float16:
        case DType::BFloat16: return 2;
        case DType::Float32:
        case DType::Int32:
        case DType::UInt32: return 4;
        case DType::Float64:
        case DType::Int64:
        case DType::UInt64:
        case DType::Complex64: return 8;
        case DType::Complex128: return 16;
        case DType::Undefined:
        case DType::String: return 0;
    }
    return 0;
}

/// Lower-case name as ONNX spells it ("float", "int64", ...).
[[nodiscard]] constexpr std::string_view dtype_name(DType t) noexcept {
    switch (t) {
        case DType::Undefined: return "undefined";
        case DType::Float32: return "float";
        case DType::UInt8: return "uint8";
        case DType::Int8: return "int8";
        case DType::UInt16: return "uint16";
        case DType::Int16: return "int16";
        case DType::Int32: return "int32";
        case DType::Int64: return "int64";
        case DType::String: return "string";
        case DType::Bool: return "bool";
        case DType::Float16: return "float16";
        case DType::Float64: return "double";
        case DType::UInt32: return "uint32";
        case DType::UInt64: return "uint64";
        case DType::Complex64: return "complex64";
        case DType::Complex128: return "complex128";
        case DType::BFloat16: return "bfloat16";
    }
    return "?";
}

/// The element types the reference executor holds: float32 for every op, and int32, int64
/// and bool for the typed ops and the views (op_flag_typed).
[[nodiscard]] constexpr bool is_executable_dtype(DType t) noexcept {
    return t == DType::Float32 || t == DType::Int32 || t == DType::Int64 || t == DType::Bool;
}

/// True for a code this enum knows (used to reject corrupt files).
[[nodiscard]] constexpr bool is_valid_dtype(int code) noexcept { return code >= 0 && code <= 16; }

}  // namespace rlflow
