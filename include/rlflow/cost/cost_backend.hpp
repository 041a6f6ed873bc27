#pragma once
/// \file
/// The cost-backend concept: what prices one op. A backend is a type checked at compile
/// time (analytic roofline, CPU profiler, cuDNN/cuBLAS profiler); CostModel<Backend> adds
/// the cache and sums graph costs.

#include <rlflow/core/attributes.hpp>
#include <rlflow/core/canonical.hpp>
#include <rlflow/core/op_kind.hpp>
#include <rlflow/core/shape.hpp>

#include <concepts>
#include <span>
#include <string>

namespace rlflow::cost {

/// One op as a backend sees it: kind, attributes and the types it reads and writes.
struct OpSignature {
    OpKind op = OpKind::Opaque;
    const Attributes& attributes;
    std::span<const TensorType> inputs;
    std::span<const TensorType> outputs;
};

/// A backend prices ops in milliseconds. `name()` identifies it and its settings (it keys
/// persistent caches, so two backends that price differently must have different names).
template <class B>
concept CostBackend = requires(B& backend, const B& const_backend, const OpSignature& op) {
    { backend.op_cost_ms(op) } -> std::convertible_to<double>;
    { const_backend.name() } -> std::convertible_to<std::string>;
};

template <class B>
inline constexpr bool is_cost_backend_v = CostBackend<B>;

/// The bytes that identify a signature for caching: op, attributes and types.
[[nodiscard]] inline std::string signature_key(const OpSignature& op) {
    rlflow::detail::ByteWriter w;
    w.u64(static_cast<std::uint64_t>(op.op));
    for (const auto types : {op.inputs, op.outputs}) {
        w.u64(types.size());
        for (const TensorType& t : types) rlflow::detail::encode_type(w, t);
    }
    w.u64(op.attributes.size());
    for (const auto& [name, value] : op.attributes) {
        w.str(name);
        rlflow::detail::encode_attribute_value(w, value);
    }
    return w.take();
}

}  // namespace rlflow::cost
