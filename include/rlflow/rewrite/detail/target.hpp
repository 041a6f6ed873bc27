#pragma once
/// \file
/// Instantiating a rule's target for one match without touching the graph: attribute
/// values and output types. The matcher uses it to reject locations whose rewrite would
/// not fit (so every location in a mask can be applied); the applier to build the nodes.

#include <rlflow/rewrite/detail/evaluate.hpp>

#include <vector>

namespace rlflow::rewrite::detail {

/// A target pattern instantiated for one match.
struct TargetInstance {
    /// Per target node, its attributes after normalisation.
    std::vector<Attributes> attributes;
    /// Per target node, its output types.
    std::vector<std::vector<TensorType>> types;
};

inline constexpr std::string_view target_where = "rewrite target";

/// The type of a target-side reference.
[[nodiscard]] inline const TensorType& target_type(PatternRef ref, const EvalContext& c, const TargetInstance& t) {
    return ref.is_variable() ? c.graph.type(c.location.variables[ref.index]) : t.types[ref.index][ref.output];
}

/// The shape of a target Constant with evaluated `attributes`: {} for a scalar; nullopt if
/// its fill is unknown or does not fit its shape.
[[nodiscard]] inline std::optional<Shape> constant_shape(const Attributes& attributes) {
    const auto* dims = std::get_if<std::vector<std::int64_t>>(attributes.find("shape"));
    if (!dims) return Shape{};
    const auto* fill_name = std::get_if<std::string>(attributes.find("fill"));
    const auto fill = fill_name ? parse_constant_fill(*fill_name) : std::nullopt;
    const Shape shape{std::span<const std::int64_t>(*dims)};
    if (!fill || !constant_fill_problem(shape, *fill).empty()) return std::nullopt;
    return shape;
}

/// The tensor of a target Constant with evaluated `attributes` (constant_shape must hold).
[[nodiscard]] inline Tensor constant_value(const Attributes& attributes) {
    const Shape shape = *constant_shape(attributes);
    const double value = std::get<double>(*attributes.find("value"));
    if (const auto* fill = std::get_if<std::string>(attributes.find("fill")))
        return constant_tensor(shape, value, *parse_constant_fill(*fill));
    return Tensor::from_floats(shape, {static_cast<float>(value)});
}

/// Builds the attributes and infers the types of target node `i`; false if it cannot.
[[nodiscard]] inline bool instantiate_node(const PatternNode& node, const EvalContext& c, TargetInstance& t) {
    Attributes attributes;
    for (const PatternAttribute& a : node.attributes) {
        auto value = evaluate(a.value, c);
        if (!value) return false;
        attributes.set(a.name, std::move(*value));
    }
    if (node.op == OpKind::Constant) {
        const auto shape = constant_shape(attributes);
        if (!shape || !std::holds_alternative<double>(*attributes.find("value"))) return false;
        t.types.push_back({TensorType{DType::Float32, *shape}});
        t.attributes.push_back(std::move(attributes));
        return true;
    }
    std::vector<TensorType> inputs;
    inputs.reserve(node.inputs.size());
    for (const PatternRef& r : node.inputs) inputs.push_back(target_type(r, c, t));
    const OpTraits& traits = op_traits(node.op);
    try {
        traits.normalize(attributes, inputs, target_where);
        t.types.push_back(traits.infer(OpContext{attributes, inputs, {}, target_where}));
    } catch (const shape_error&) {
        // Shapes or attribute values that do not fit the op: not a location.
        return false;
    }
    if (t.types.back().size() != node.num_outputs) return false;
    t.attributes.push_back(std::move(attributes));
    return true;
}

/// Instantiates the whole target; false if an expression cannot be computed, an op does
/// not accept its inputs, or a replacement's type differs from the output it replaces.
[[nodiscard]] inline bool instantiate_target(const Rule& rule, const EvalContext& c, TargetInstance& t) {
    t.attributes.clear();
    t.types.clear();
    for (const PatternNode& node : rule.target)
        if (!instantiate_node(node, c, t)) return false;
    for (const OutputMapping& m : rule.outputs)
        if (!(target_type(m.target, c, t) == c.graph.type(c.location.tensor(m.source)))) return false;
    return true;
}

}  // namespace rlflow::rewrite::detail
