#pragma once
/// \file
/// The cost-backend concept: what prices one op. A backend is a type checked at compile
/// time (analytic roofline, CPU profiler, cuDNN/cuBLAS profiler); CostModel<Backend> adds
/// the cache and sums graph costs.

#include <rlflow/core/attributes.hpp>
#include <rlflow/core/canonical.hpp>
#include <rlflow/core/op_kind.hpp>
#include <rlflow/core/shape.hpp>
#include <rlflow/core/tensor.hpp>

#include <concepts>
#include <optional>
#include <span>
#include <string>
#include <vector>

namespace rlflow::cost {

/// One op as a backend sees it: kind, attributes, the types it reads and writes, and
/// which inputs are known before the model runs (weights with data, constants and what
/// is folded from them: initializers in the written model, which a runtime may prepack
/// or reorder once, at load time). Empty `constant_inputs` means none are.
struct OpSignature {
    OpKind op = OpKind::Opaque;
    const Attributes& attributes;
    std::span<const TensorType> inputs;
    std::span<const TensorType> outputs;
    std::span<const char> constant_inputs = {};
    /// The values of small constant inputs (at most max_signature_value_elements, read
    /// from a Weight or Constant node), null where unknown or large. A runtime may choose
    /// its kernel by them (ONNX Runtime squares for Pow(x, 2) and calls powf for any
    /// other exponent), so they are part of the signature; large ones (weights) are not.
    std::span<const Tensor* const> constant_values = {};
    /// When not null, input `producer_slot` is the output of this op (its only use): the
    /// pair is priced together, as a runtime that fuses the two runs it.
    const OpSignature* producer = nullptr;
    std::uint32_t producer_slot = 0;

    /// Whether input `i` is known before the model runs.
    [[nodiscard]] bool constant_input(std::size_t i) const noexcept {
        return i < constant_inputs.size() && constant_inputs[i] != 0;
    }
    /// The value of input `i` when the signature holds it, else null.
    [[nodiscard]] const Tensor* constant_value(std::size_t i) const noexcept {
        return i < constant_values.size() ? constant_values[i] : nullptr;
    }
};

/// An op signature that owns what it points to, for a backend that prices an op as
/// another form of it (CanonicalCostBackend). It has no producer: a canonical form is
/// one op. Constant values point into the graph the original signature came from.
struct OwnedSignature {
    OpKind op = OpKind::Opaque;
    Attributes attributes;
    std::vector<TensorType> inputs;
    std::vector<TensorType> outputs;
    std::vector<char> constant_inputs;
    std::vector<const Tensor*> constant_values;

    [[nodiscard]] OpSignature view() const {
        return OpSignature{op, attributes, inputs, outputs, constant_inputs, constant_values};
    }
};

/// The most elements a constant input may have for its value to be in a signature.
inline constexpr std::int64_t max_signature_value_elements = 16;

/// A backend prices ops in milliseconds. `name()` identifies it and its settings (it keys
/// persistent caches, so two backends that price differently must have different names).
template <class B>
concept CostBackend = requires(B& backend, const B& const_backend, const OpSignature& op) {
    { backend.op_cost_ms(op) } -> std::convertible_to<double>;
    { const_backend.name() } -> std::convertible_to<std::string>;
};

template <class B>
inline constexpr bool is_cost_backend_v = CostBackend<B>;

/// A backend whose runtime may run an op together with the op producing its input (ONNX
/// Runtime fuses MatMul + Add into Gemm, Conv + Add or BatchNorm into Conv, at some
/// levels Conv + activation): CostModel prices such a consumer by what it adds to its
/// producer, price(producer + consumer) - price(producer), measured, not assumed.
template <class B>
concept ContextCostBackend = CostBackend<B> && B::prices_in_context;

/// A backend whose runtime runs some ops, or producer-consumer pairs, as another op
/// (ONNX Runtime runs MatMul + bias Add as one Gemm, and a MatMul of a 3-D activation by
/// a matrix as the 2-D MatMul of its rows). `canonical(op)` gives that form, or nullopt
/// when `op` runs as it is; the form is its own canonical form. CostModel prices and
/// caches the form, so every way of writing one kernel gets one price, measured once:
/// two prices of one kernel measured apart would differ by the machine's drift, and a
/// search would take that difference for a gain.
template <class B>
concept CanonicalCostBackend = CostBackend<B> && requires(const B& backend, const OpSignature& op) {
    { backend.canonical(op) } -> std::same_as<std::optional<OwnedSignature>>;
};

/// A backend that prices many ops in one call (one round trip to a measuring process);
/// CostModel batches the signatures of a new graph through it.
template <class B>
concept BatchCostBackend = CostBackend<B> && requires(B& backend, std::span<const OpSignature> ops) {
    { backend.op_costs_ms(ops) } -> std::convertible_to<std::vector<double>>;
};

/// Appends to `w` the bytes that identify a signature for caching (signature_key), so
/// that a caller pricing many ops reuses one buffer.
inline void write_signature_key(rlflow::detail::ByteWriter& w, const OpSignature& op);

/// The bytes that identify a signature for caching: op, attributes, types, which inputs
/// are constant and the values of small constants.
[[nodiscard]] inline std::string signature_key(const OpSignature& op) {
    rlflow::detail::ByteWriter w;
    write_signature_key(w, op);
    return w.take();
}

inline void write_signature_key(rlflow::detail::ByteWriter& w, const OpSignature& op) {
    w.u64(static_cast<std::uint64_t>(op.op));
    for (const auto types : {op.inputs, op.outputs}) {
        w.u64(types.size());
        for (const TensorType& t : types) rlflow::detail::encode_type(w, t);
    }
    for (std::size_t i = 0; i < op.inputs.size(); ++i) {
        const Tensor* value = op.constant_value(i);
        w.u64(value ? 2 : op.constant_input(i) ? 1 : 0);
        if (value) w.str(std::string_view(reinterpret_cast<const char*>(value->raw().data()), value->raw().size()));
    }
    w.u64(op.producer ? op.producer_slot + 1 : 0);
    if (op.producer) w.str(signature_key(*op.producer));
    w.u64(op.attributes.size());
    for (const auto& [name, value] : op.attributes) {
        w.str(name);
        rlflow::detail::encode_attribute_value(w, value);
    }
}

}  // namespace rlflow::cost
