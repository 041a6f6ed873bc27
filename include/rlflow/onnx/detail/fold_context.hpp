#pragma once
/// \file
/// What the constant folder's evaluators see of a node: its constant inputs, attributes,
/// opset, and a way to report a genuinely invalid node as an `onnx_error`.

#include <rlflow/core/detail/typed_ops.hpp>
#include <rlflow/core/error.hpp>
#include <rlflow/core/shape.hpp>
#include <rlflow/core/tensor.hpp>
#include <rlflow/onnx/tensor_io.hpp>

#include <algorithm>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace rlflow::onnx_io::detail {

/// The largest number of elements a folded output may hold; larger outputs are left unfolded.
inline constexpr std::int64_t max_fold_elements = std::int64_t{1} << 26;

/// A node whose folded outputs would take more bytes than this, and more than its constant
/// inputs do (a Tile, Expand or ConstantOfShape that blows a small value up), is kept as the
/// op: written out as a constant it would bloat the model (onnxsim's users complain of just
/// that, onnxsim #178 and #309), and the runtime computes it once at load anyway.
inline constexpr std::size_t fold_bytes_limit = std::size_t{1} << 20;

/// Inputs of a node being folded: each present input has either a constant value or (for
/// Shape/Size) at least a static type. `value == nullptr` means not constant.
struct FoldInput {
    const Tensor* value = nullptr;
    std::optional<TensorType> type;
};

namespace folding {

/// The opset in which Unsqueeze/Squeeze axes, Split's split and ReduceSum's axes turned from
/// attributes into inputs.
inline constexpr std::int64_t inputs_replace_attributes_opset = 13;

/// The outputs of a folded node, or nullopt when it cannot be folded.
using FoldResult = std::optional<std::vector<Tensor>>;

/// A one-output result.
[[nodiscard]] inline FoldResult single(std::optional<Tensor> tensor) {
    if (!tensor) return std::nullopt;
    std::vector<Tensor> outputs;
    outputs.push_back(std::move(*tensor));
    return outputs;
}

/// `dims` as a Shape, or nullopt when the rank exceeds Shape::max_rank or the element count
/// exceeds max_fold_elements. Dimensions must be non-negative.
[[nodiscard]] inline std::optional<Shape> bounded_shape(std::span<const std::int64_t> dims) {
    if (dims.size() > static_cast<std::size_t>(Shape::max_rank)) return std::nullopt;
    if (std::find(dims.begin(), dims.end(), 0) != dims.end()) return Shape(dims);
    std::int64_t count = 1;
    for (const auto d : dims) {
        RLFLOW_ASSERT(d > 0);
        if (count > max_fold_elements / d) return std::nullopt;
        count *= d;
    }
    return Shape(dims);
}

/// The product of `dims`, or nullopt on int64 overflow.
[[nodiscard]] inline std::optional<std::int64_t> checked_product(std::span<const std::int64_t> dims) {
    std::int64_t product = 1;
    for (const auto d : dims)
        if (__builtin_mul_overflow(product, d, &product)) return std::nullopt;
    return product;
}

/// The node, its inputs and opset, with attribute readers and error reporting.
class FoldContext {
public:
    FoldContext(const pb::NodeProto& node, std::span<const FoldInput> inputs, std::int64_t opset,
                const std::string& where)
        : m_node(node), m_inputs(inputs), m_opset(opset), m_where(where) {}

    [[nodiscard]] const pb::NodeProto& node() const noexcept { return m_node; }
    [[nodiscard]] std::int64_t opset() const noexcept { return m_opset; }
    [[nodiscard]] std::size_t input_count() const noexcept { return static_cast<std::size_t>(m_node.input_size()); }
    [[nodiscard]] std::size_t output_count() const noexcept { return static_cast<std::size_t>(m_node.output_size()); }

    /// True when input `i` exists and is not an omitted optional input (empty name).
    [[nodiscard]] bool has_input(std::size_t i) const {
        return i < input_count() && !m_node.input(static_cast<int>(i)).empty();
    }
    /// The constant value of a present input (fold_node checked that it is constant).
    [[nodiscard]] const Tensor& value(std::size_t i) const {
        RLFLOW_ASSERT(has_input(i) && i < m_inputs.size() && m_inputs[i].value != nullptr);
        return *m_inputs[i].value;
    }
    /// The value of an optional input, or nullptr when it is omitted.
    [[nodiscard]] const Tensor* optional_value(std::size_t i) const { return has_input(i) ? &value(i) : nullptr; }
    /// The type of a present input: its value's, or the static type it was given.
    [[nodiscard]] std::optional<TensorType> type(std::size_t i) const {
        if (!has_input(i) || i >= m_inputs.size()) return std::nullopt;
        if (m_inputs[i].value != nullptr) return m_inputs[i].value->type();
        return m_inputs[i].type;
    }

    /// "<where>: node '<name>' (<op>)"; an unnamed node is named by its first output.
    [[nodiscard]] std::string describe() const {
        const std::string& name = m_node.name().empty() && m_node.output_size() > 0 ? m_node.output(0) : m_node.name();
        return m_where + ": node '" + name + "' (" + m_node.op_type() + ")";
    }
    /// Throws onnx_error: "<where>: node '<name>' (<op>): <message>".
    [[noreturn]] void fail(const std::string& message) const { throw onnx_error(describe() + ": " + message); }
    /// Fails unless the node has between `low` and `high` inputs (omitted ones included).
    void expect_inputs(std::size_t low, std::size_t high) const {
        if (input_count() < low || input_count() > high)
            fail("expects " + (low == high ? std::to_string(low) : std::to_string(low) + " to " + std::to_string(high))
                 + " inputs, got " + std::to_string(input_count()));
    }
    /// Normalises `axis` into [0, rank), failing when it is out of range.
    [[nodiscard]] int axis(std::int64_t axis, int rank) const {
        const std::int64_t a = axis < 0 ? axis + rank : axis;
        if (a < 0 || a >= rank)
            fail("axis " + std::to_string(axis) + " out of range for rank " + std::to_string(rank));
        return static_cast<int>(a);
    }

    /// The attribute called `name`, or nullptr.
    [[nodiscard]] const pb::AttributeProto* attribute(std::string_view name) const {
        for (const auto& a : m_node.attribute())
            if (a.name() == name) return &a;
        return nullptr;
    }
    [[nodiscard]] std::optional<std::int64_t> optional_int(std::string_view name) const {
        const auto* a = attribute(name);
        if (a == nullptr) return std::nullopt;
        expect_attribute_type(*a, pb::AttributeProto::INT, "an int");
        return a->i();
    }
    [[nodiscard]] std::int64_t int_attribute(std::string_view name, std::int64_t fallback) const {
        return optional_int(name).value_or(fallback);
    }
    [[nodiscard]] std::optional<std::vector<std::int64_t>> ints_attribute(std::string_view name) const {
        const auto* a = attribute(name);
        if (a == nullptr) return std::nullopt;
        expect_attribute_type(*a, pb::AttributeProto::INTS, "a list of ints");
        return std::vector<std::int64_t>(a->ints().begin(), a->ints().end());
    }
    /// A required int attribute.
    [[nodiscard]] std::int64_t required_int(std::string_view name) const {
        const auto value = optional_int(name);
        if (!value) fail("missing required attribute '" + std::string(name) + "'");
        return *value;
    }

    /// The elements of an int32 or int64 input, as int64.
    [[nodiscard]] std::vector<std::int64_t> integers(std::size_t i) const {
        const Tensor& t = value(i);
        if (auto values = rlflow::detail::typed::integer_values(t)) return std::move(*values);
        fail("input " + std::to_string(i) + " must be int32 or int64, got " + std::string(dtype_name(t.dtype())));
    }
    /// The integers of a 1-D (or scalar) int input, e.g. a shape or axes.
    [[nodiscard]] std::vector<std::int64_t> integer_list(std::size_t i) const {
        if (value(i).shape().rank() > 1)
            fail("input " + std::to_string(i) + " must be 1-D, got shape " + value(i).shape().to_string());
        return integers(i);
    }
    /// The axes from attribute `name` before opset `input_since`, else from input `input`.
    [[nodiscard]] std::optional<std::vector<std::int64_t>> axes(std::string_view name, std::int64_t input_since,
                                                                std::size_t input) const {
        if (m_opset < input_since) return ints_attribute(name);
        if (!has_input(input)) return std::nullopt;
        return integer_list(input);
    }

private:
    void expect_attribute_type(const pb::AttributeProto& a, pb::AttributeProto::AttributeType expected,
                               std::string_view what) const {
        if (a.type() != expected && a.type() != pb::AttributeProto::UNDEFINED)
            fail("attribute '" + a.name() + "' must be " + std::string(what));
    }

    const pb::NodeProto& m_node;
    std::span<const FoldInput> m_inputs;
    std::int64_t m_opset;
    const std::string& m_where;
};

[[nodiscard]] inline std::string list_to_string(const std::vector<std::int64_t>& values) {
    std::string s = "[";
    for (std::size_t i = 0; i < values.size(); ++i) s += (i ? "," : "") + std::to_string(values[i]);
    return s + "]";
}

/// Normalises every axis in `axes` against `rank`, failing on duplicates or out-of-range ones.
[[nodiscard]] inline std::vector<int> unique_axes(const FoldContext& c, const std::vector<std::int64_t>& axes, int rank) {
    std::vector<int> result;
    for (const auto a : axes) {
        const int axis = c.axis(a, rank);
        if (std::find(result.begin(), result.end(), axis) != result.end())
            c.fail("axes " + list_to_string(axes) + " repeat an axis");
        result.push_back(axis);
    }
    return result;
}

}  // namespace folding
}  // namespace rlflow::onnx_io::detail
