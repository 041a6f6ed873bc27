#pragma once
/// \file
/// How each ONNX op in the default domain maps onto a core op. An import function either
/// returns the core node to create or std::nullopt, and then the node is carried as an
/// opaque node: any attribute or input it does not understand makes it opaque, so an
/// import never changes what a node computes.

#include <rlflow/core/op_traits.hpp>
#include <rlflow/onnx/detail/attributes.hpp>

#include <algorithm>
#include <cctype>
#include <array>
#include <initializer_list>
#include <limits>
#include <span>

namespace rlflow::onnx_io::detail {

/// One input of the ONNX node being imported.
struct ImportOperand {
    /// Empty for an absent optional input.
    std::string name;
    /// The type, when known exactly (a static float tensor for core ops).
    std::optional<TensorType> type;
    /// The value, when the input is a known constant.
    const Tensor* constant = nullptr;
};

/// What an import function sees of an ONNX node.
struct ImportContext {
    const pb::NodeProto& node;
    std::int64_t opset;
    std::span<const ImportOperand> inputs;
    std::string where;

    [[nodiscard]] bool present(std::size_t i) const { return i < inputs.size() && !inputs[i].name.empty(); }
    [[nodiscard]] const Tensor* constant(std::size_t i) const { return present(i) ? inputs[i].constant : nullptr; }
    [[nodiscard]] const Shape* shape(std::size_t i) const {
        return present(i) && inputs[i].type ? &inputs[i].type->shape : nullptr;
    }
};

/// The core node an ONNX node becomes: which ONNX inputs stay tensor inputs (the others
/// were folded into attributes), and the attributes.
struct CoreNodeSpec {
    OpKind op;
    std::vector<std::size_t> tensor_inputs;
    Attributes attributes;
    /// For a single-output ONNX node expressed by a multi-output core op (a Slice as one
    /// part of a Split): the core output that carries the ONNX output.
    std::optional<std::uint32_t> selected_output = std::nullopt;
    /// Core ops applied in turn to that output, each with it as its one input (a Gather of
    /// one index is a part of a Split and a Reshape that drops the axis).
    std::vector<CoreNodeSpec> then = {};
    /// Core ops applied in turn to a tensor input before the op reads it, per entry of
    /// `tensor_inputs` (empty: none); each has that input as its one input (an Einsum's
    /// operands transposed and reshaped into a MatMul's).
    std::vector<std::vector<CoreNodeSpec>> before = {};
};

using ImportFn = std::optional<CoreNodeSpec> (*)(const ImportContext&);

/// An ONNX attribute the core op has no slot for, accepted only with its neutral value.
struct IgnorableAttribute {
    std::string_view name;
    std::int64_t neutral;
};

/// Why the core op of `spec` cannot take these operands (nullopt: it can): an input with
/// no known type, of an element type the op does not hold (holds_dtype: float32, and
/// int32, int64 and bool in the typed ops and views), or with no static shape; for a typed
/// op, element types or shapes its inference refuses (a bool Less, an int condition), so
/// that such a node stays opaque with this reason rather than failing the import.
[[nodiscard]] inline std::optional<std::string> operand_problem(const CoreNodeSpec& spec,
                                                                std::span<const ImportOperand> operands,
                                                                const std::string& where) {
    std::vector<TensorType> types;
    for (const std::size_t i : spec.tensor_inputs) {
        if (i >= operands.size()) return "input " + std::to_string(i) + " is missing";
        const ImportOperand& o = operands[i];
        if (!o.type) return "input '" + o.name + "' has no known type";
        if (!holds_dtype(spec.op, o.type->dtype))
            return "input '" + o.name + "' is " + std::string(dtype_name(o.type->dtype))
                   + "; core ops compute on float32, and the typed ops (Where, Cast, Gather, ...) on int32, int64 "
                     "and bool as well";
        if (!o.type->shape.is_static()) return "input '" + o.name + "' has no static shape (bind it with --dim)";
        types.push_back(*o.type);
    }
    const OpTraits& traits = op_traits(spec.op);
    if (!traits.has(op_flag_typed) || !spec.before.empty()) return std::nullopt;
    const auto count = static_cast<int>(types.size());
    if (count < traits.min_inputs || (traits.max_inputs >= 0 && count > traits.max_inputs))
        return std::string(traits.name) + " takes " + std::to_string(traits.min_inputs) + " inputs, the node has "
               + std::to_string(count);
    try {
        Attributes attributes = spec.attributes;
        traits.normalize(attributes, types, where);
        (void)traits.infer(OpContext{attributes, types, {}, where});
    } catch (const shape_error& e) {
        return std::string("input types outside what rlflow implements: ") + e.what();
    }
    return std::nullopt;
}

/// The first `count` present inputs, in order.
[[nodiscard]] inline std::vector<std::size_t> first_inputs(const ImportContext& c, std::size_t count) {
    std::vector<std::size_t> out;
    for (std::size_t i = 0; i < std::min(count, c.inputs.size()); ++i)
        if (c.present(i)) out.push_back(i);
    return out;
}

/// Copies the node's attributes that the core op's schema names (types must match).
/// Returns nullopt on any other attribute, unless it is `skipped` (handled by the caller)
/// or ignorable with its neutral value.
[[nodiscard]] inline std::optional<Attributes> schema_attributes(const ImportContext& c, OpKind op,
                                                                std::initializer_list<std::string_view> skipped = {},
                                                                std::initializer_list<IgnorableAttribute> ignorable = {}) {
    const OpTraits& t = op_traits(op);
    Attributes out;
    for (const auto& a : c.node.attribute()) {
        if (std::find(skipped.begin(), skipped.end(), a.name()) != skipped.end()) continue;
        const auto ignore = std::find_if(ignorable.begin(), ignorable.end(),
                                         [&](const IgnorableAttribute& i) { return i.name == a.name(); });
        if (ignore != ignorable.end()) {
            if (a.type() == pb::AttributeProto::INT && a.i() != ignore->neutral) return std::nullopt;
            continue;
        }
        const auto spec = std::find_if(t.attributes.begin(), t.attributes.end(),
                                       [&](const AttributeSpec& s) { return s.name == a.name(); });
        if (spec == t.attributes.end()) return std::nullopt;
        AttributeValue value = attribute_from_proto(a, c.where);
        if (value.index() != static_cast<std::size_t>(spec->type)) return std::nullopt;
        out.set(a.name(), std::move(value));
    }
    return out;
}

/// The common case: the first `arity` inputs stay tensors, attributes map by name.
template <OpKind Op, std::size_t Arity>
std::optional<CoreNodeSpec> import_direct(const ImportContext& c) {
    auto attributes = schema_attributes(c, Op);
    if (!attributes || c.inputs.size() > Arity) return std::nullopt;
    return CoreNodeSpec{Op, first_inputs(c, Arity), std::move(*attributes)};
}

/// The integer values of a constant input (int32 or int64), if it is one.
[[nodiscard]] inline std::optional<std::vector<std::int64_t>> constant_ints(const ImportContext& c, std::size_t i) {
    const Tensor* t = c.constant(i);
    if (!t) return std::nullopt;
    return rlflow::detail::typed::integer_values(*t);
}

/// The value of a constant scalar float input, if it is one.
[[nodiscard]] inline std::optional<double> constant_scalar(const ImportContext& c, std::size_t i) {
    const Tensor* t = c.constant(i);
    if (!t || t->dtype() != DType::Float32 || t->numel() != 1) return std::nullopt;
    return static_cast<double>(t->floats()[0]);
}

/// Resolves ONNX auto_pad into explicit [begins..., ends...] pads for a 2-D window op.
/// Returns false if the padding cannot be resolved (non-static input, or window
/// attributes that do not have one value per spatial axis).
inline bool resolve_auto_pad(const ImportContext& c, Attributes& attributes, const std::vector<std::int64_t>& kernel) {
    constexpr std::size_t spatial_axes = 2;
    constexpr std::size_t leading_axes = 2;  // N, C
    const std::string mode = attribute_string(c.node, "auto_pad", "NOTSET");
    if (mode == "NOTSET") return true;
    const Shape* x = c.shape(0);
    if (!x || x->rank() != static_cast<int>(leading_axes + spatial_axes)) return false;
    const auto strides = attributes.get_or<std::vector<std::int64_t>>("strides", {1, 1});
    const auto dilations = attributes.get_or<std::vector<std::int64_t>>("dilations", {1, 1});
    if (kernel.size() != spatial_axes || strides.size() != spatial_axes || dilations.size() != spatial_axes) return false;
    if (std::any_of(strides.begin(), strides.end(), [](std::int64_t s) { return s < 1; })) return false;
    std::vector<std::int64_t> pads(2 * spatial_axes, 0);
    if (mode == "SAME_UPPER" || mode == "SAME_LOWER") {
        for (std::size_t i = 0; i < spatial_axes; ++i) {
            const std::int64_t in = (*x)[static_cast<int>(leading_axes + i)];
            const std::int64_t out = (in + strides[i] - 1) / strides[i];
            const std::int64_t total = std::max<std::int64_t>(0, (out - 1) * strides[i] + (kernel[i] - 1) * dilations[i] + 1 - in);
            const std::int64_t small = total / 2;
            pads[i] = mode == "SAME_UPPER" ? small : total - small;
            pads[i + spatial_axes] = total - pads[i];
        }
    } else if (mode != "VALID") {
        return false;
    }
    attributes.set("pads", pads);
    return true;
}

inline std::optional<CoreNodeSpec> import_conv(const ImportContext& c) {
    constexpr int image_rank = 4;  // core Conv2D is NCHW
    const Shape* x = c.shape(0);
    const Shape* w = c.shape(1);
    if (!x || !w || x->rank() != image_rank || w->rank() != image_rank) return std::nullopt;
    auto attributes = schema_attributes(c, OpKind::Conv2D, {"auto_pad"});
    if (!attributes || attributes->has("activation")) return std::nullopt;
    if (!resolve_auto_pad(c, *attributes, {(*w)[2], (*w)[3]})) return std::nullopt;
    return CoreNodeSpec{OpKind::Conv2D, first_inputs(c, 3), std::move(*attributes)};
}

template <OpKind Op>
std::optional<CoreNodeSpec> import_pool(const ImportContext& c) {
    constexpr int image_rank = 4;  // core pools are 2-D over NCHW
    const Shape* x = c.shape(0);
    auto attributes = schema_attributes(c, Op, {"auto_pad"}, {{"storage_order", 0}});
    if (!x || x->rank() != image_rank || !attributes || !attributes->has("kernel_shape")) return std::nullopt;
    // Explicit SAME/VALID pads and ceil mode together would count windows differently
    // from ONNX, which sizes auto_pad outputs without ceil mode's extra window.
    const bool automatic = attribute_string(c.node, "auto_pad", "NOTSET") != "NOTSET";
    if (automatic && attributes->get_int("ceil_mode", 0) != 0) return std::nullopt;
    if (!resolve_auto_pad(c, *attributes, attributes->get_ints("kernel_shape"))) return std::nullopt;
    return CoreNodeSpec{Op, {0}, std::move(*attributes)};
}

inline std::optional<CoreNodeSpec> import_clip(const ImportContext& c) {
    constexpr std::int64_t inputs_since = 11;
    if (c.opset < inputs_since) {
        // Clip-6's bounds default to the float range, not to infinity.
        auto spec = import_direct<OpKind::Clip, 1>(c);
        constexpr double largest = std::numeric_limits<float>::max();
        if (spec && !spec->attributes.has("min")) spec->attributes.set("min", -largest);
        if (spec && !spec->attributes.has("max")) spec->attributes.set("max", largest);
        return spec;
    }
    if (c.node.attribute_size() != 0) return std::nullopt;
    Attributes attributes;
    for (const auto& [slot, name] : {std::pair{std::size_t{1}, "min"}, std::pair{std::size_t{2}, "max"}}) {
        if (!c.present(slot)) continue;
        const auto value = constant_scalar(c, slot);
        if (!value) return std::nullopt;
        attributes.set(name, *value);
    }
    return CoreNodeSpec{OpKind::Clip, {0}, std::move(attributes)};
}

inline std::optional<CoreNodeSpec> import_softmax(const ImportContext& c) {
    constexpr std::int64_t single_axis_since = 13;
    auto spec = import_direct<OpKind::Softmax, 1>(c);
    if (!spec || c.opset >= single_axis_since) return spec;
    // Before opset 13 Softmax normalised over all dims from `axis` on (default 1); that
    // equals the single-axis op only when `axis` is the last dimension.
    const Shape* x = c.shape(0);
    if (!x) return std::nullopt;
    std::int64_t axis = spec->attributes.get_int("axis", 1);
    if (axis < 0) axis += x->rank();
    if (axis != x->rank() - 1) return std::nullopt;
    spec->attributes.set("axis", axis);
    return spec;
}

inline std::optional<CoreNodeSpec> import_split(const ImportContext& c) {
    constexpr std::int64_t input_since = 13;
    auto attributes = schema_attributes(c, OpKind::Split);
    const Shape* x = c.shape(0);
    if (!attributes || !x) return std::nullopt;
    // Split-1's optional second input also held the sizes; only the opset-13 form is read.
    if (c.present(1) && c.opset < input_since) return std::nullopt;
    if (c.present(1)) {
        const auto sizes = constant_ints(c, 1);
        if (!sizes) return std::nullopt;
        attributes->set("split", *sizes);
    }
    if (!attributes->has("split")) {  // equal parts, one per output
        const auto parts = static_cast<std::int64_t>(c.node.output_size());
        const std::int64_t axis = attributes->get_int("axis", 0);
        if (axis < -x->rank() || axis >= x->rank()) return std::nullopt;
        const std::int64_t extent = (*x)[static_cast<int>(axis < 0 ? axis + x->rank() : axis)];
        if (parts == 0 || extent % parts != 0) return std::nullopt;
        attributes->set("split", std::vector<std::int64_t>(static_cast<std::size_t>(parts), extent / parts));
    }
    return CoreNodeSpec{OpKind::Split, {0}, std::move(*attributes)};
}

inline std::optional<CoreNodeSpec> import_reshape(const ImportContext& c) {
    auto attributes = schema_attributes(c, OpKind::Reshape);
    const auto shape = constant_ints(c, 1);
    if (!attributes || !shape) return std::nullopt;
    attributes->set("shape", *shape);
    return CoreNodeSpec{OpKind::Reshape, {0}, std::move(*attributes)};
}

inline std::optional<CoreNodeSpec> import_pad(const ImportContext& c) {
    constexpr std::int64_t inputs_since = 11;
    if (c.opset < inputs_since) return import_direct<OpKind::Pad, 1>(c);
    auto attributes = schema_attributes(c, OpKind::Pad);
    const auto pads = constant_ints(c, 1);
    if (!attributes || !pads || c.present(3)) return std::nullopt;
    // Modes the core op lacks (opset 19's "wrap") stay opaque.
    constexpr std::string_view core_modes[] = {"constant", "reflect", "edge"};
    const std::string mode = attributes->get_or<std::string>("mode", "constant");
    if (std::find(std::begin(core_modes), std::end(core_modes), mode) == std::end(core_modes)) return std::nullopt;
    attributes->set("pads", *pads);
    if (c.present(2)) {
        const auto value = constant_scalar(c, 2);
        if (!value) return std::nullopt;
        attributes->set("value", *value);
    }
    return CoreNodeSpec{OpKind::Pad, {0}, std::move(*attributes)};
}

/// ReduceMean, ReduceSum, ReduceMax: axes from the attribute, or from a constant input
/// (with noop_with_empty_axes: no axes is an Identity rather than every axis).
template <OpKind Op>
std::optional<CoreNodeSpec> import_reduce(const ImportContext& c) {
    if (c.opset < reduce_axes_input_since(Op)) return import_direct<Op, 1>(c);
    auto attributes = schema_attributes(c, Op, {"noop_with_empty_axes"});
    if (!attributes || attributes->has("axes") || c.inputs.size() > 2) return std::nullopt;
    std::vector<std::int64_t> axes;
    if (c.present(1)) {
        const auto given = constant_ints(c, 1);
        if (!given) return std::nullopt;
        axes = *given;
    }
    if (axes.empty() && attribute_int(c.node, "noop_with_empty_axes", 0) != 0) return CoreNodeSpec{OpKind::Identity, {0}, {}};
    attributes->set("axes", axes);
    return CoreNodeSpec{Op, {0}, std::move(*attributes)};
}

/// HardSwish exists from opset 14; a model of an older opset that uses it is invalid.
inline std::optional<CoreNodeSpec> import_hard_swish(const ImportContext& c) {
    constexpr std::int64_t hard_swish_since = 14;
    if (c.opset < hard_swish_since) return std::nullopt;
    return import_direct<OpKind::HardSwish, 1>(c);
}

inline std::optional<CoreNodeSpec> import_batch_norm(const ImportContext& c) {
    auto attributes = schema_attributes(c, OpKind::BatchNormalization, {"momentum"},
                                        {{"spatial", 1}, {"training_mode", 0}, {"is_test", 1}});
    if (!attributes) return std::nullopt;
    return CoreNodeSpec{OpKind::BatchNormalization, first_inputs(c, 5), std::move(*attributes)};
}

/// Gemm before opset 7 had a "broadcast" flag; with it set the semantics are today's.
inline std::optional<CoreNodeSpec> import_gemm(const ImportContext& c) {
    auto attributes = schema_attributes(c, OpKind::Gemm, {}, {{"broadcast", 1}});
    if (!attributes) return std::nullopt;
    return CoreNodeSpec{OpKind::Gemm, first_inputs(c, 3), std::move(*attributes)};
}

inline std::optional<CoreNodeSpec> import_layer_norm(const ImportContext& c) {
    auto attributes = schema_attributes(c, OpKind::LayerNormalization, {}, {{"stash_type", 1}});
    if (!attributes) return std::nullopt;
    return CoreNodeSpec{OpKind::LayerNormalization, first_inputs(c, 3), std::move(*attributes)};
}

/// The static output shape of Unsqueeze/Squeeze, whose axes come from an attribute
/// (before opset 13) or a constant input.
[[nodiscard]] inline std::optional<std::vector<std::int64_t>> squeeze_axes(const ImportContext& c) {
    constexpr std::int64_t axes_input_since = 13;
    if (c.opset < axes_input_since) return attribute_ints(c.node, "axes");
    if (!c.present(1)) return std::vector<std::int64_t>{};
    return constant_ints(c, 1);
}

/// Unsqueeze of a static tensor is a Reshape.
inline std::optional<CoreNodeSpec> import_unsqueeze(const ImportContext& c) {
    const Shape* x = c.shape(0);
    const auto axes = squeeze_axes(c);
    if (!x || !axes || axes->empty()) return std::nullopt;
    const int rank = x->rank() + static_cast<int>(axes->size());
    if (rank > Shape::max_rank) return std::nullopt;
    std::vector<bool> inserted(static_cast<std::size_t>(rank), false);
    for (auto a : *axes) {
        const std::int64_t axis = a < 0 ? a + rank : a;
        if (axis < 0 || axis >= rank || inserted[static_cast<std::size_t>(axis)]) return std::nullopt;
        inserted[static_cast<std::size_t>(axis)] = true;
    }
    std::vector<std::int64_t> out;
    int next = 0;
    for (int i = 0; i < rank; ++i) out.push_back(inserted[static_cast<std::size_t>(i)] ? 1 : (*x)[next++]);
    return CoreNodeSpec{OpKind::Reshape, {0}, Attributes{{"shape", out}}};
}

/// Squeeze of a static tensor is a Reshape.
inline std::optional<CoreNodeSpec> import_squeeze(const ImportContext& c) {
    const Shape* x = c.shape(0);
    const auto axes = squeeze_axes(c);
    if (!x || !axes) return std::nullopt;
    std::vector<bool> removed(static_cast<std::size_t>(x->rank()), false);
    for (int i = 0; i < x->rank(); ++i) removed[static_cast<std::size_t>(i)] = axes->empty() && (*x)[i] == 1;
    for (auto a : *axes) {
        const std::int64_t axis = a < 0 ? a + x->rank() : a;
        if (axis < 0 || axis >= x->rank() || (*x)[static_cast<int>(axis)] != 1) return std::nullopt;
        removed[static_cast<std::size_t>(axis)] = true;
    }
    std::vector<std::int64_t> out;
    for (int i = 0; i < x->rank(); ++i)
        if (!removed[static_cast<std::size_t>(i)]) out.push_back((*x)[i]);
    return CoreNodeSpec{OpKind::Reshape, {0}, Attributes{{"shape", out}}};
}

/// The core node that keeps [begin, end) of `axis` of a tensor of shape `x`: one part of a
/// Split ([before, kept, after], without empty parts), or nullopt when it keeps everything.
[[nodiscard]] inline std::optional<CoreNodeSpec> split_part(const Shape& x, int axis, std::int64_t begin, std::int64_t end) {
    const std::int64_t dim = x[axis];
    if (begin == 0 && end == dim) return std::nullopt;
    std::vector<std::int64_t> parts;
    if (begin > 0) parts.push_back(begin);
    parts.push_back(end - begin);
    if (end < dim) parts.push_back(dim - end);
    return CoreNodeSpec{OpKind::Split, {0}, Attributes{{"axis", std::int64_t{axis}}, {"split", parts}},
                        static_cast<std::uint32_t>(begin > 0 ? 1 : 0)};
}

/// `first` followed by `rest` (each a one-input core op on the previous one's output), or
/// an Identity when there is nothing to do.
[[nodiscard]] inline CoreNodeSpec chain(std::vector<CoreNodeSpec> stages) {
    if (stages.empty()) return CoreNodeSpec{OpKind::Identity, {0}, {}};
    CoreNodeSpec first = std::move(stages.front());
    first.then.assign(std::make_move_iterator(stages.begin() + 1), std::make_move_iterator(stages.end()));
    return first;
}

/// A Slice of a static tensor by constant starts, ends, axes and steps. With unit steps it
/// keeps a box: one Split part per sliced axis (the form rewrites know). Other steps make
/// a core Slice over every axis. A Slice that keeps nothing stays opaque.
inline std::optional<CoreNodeSpec> import_slice(const ImportContext& c) {
    constexpr std::int64_t inputs_since = 10;
    const Shape* x = c.shape(0);
    if (!x || c.opset < inputs_since) return std::nullopt;
    const auto starts = constant_ints(c, 1), ends = constant_ints(c, 2);
    auto axes = c.present(3) ? constant_ints(c, 3) : std::optional<std::vector<std::int64_t>>(std::vector<std::int64_t>{});
    const auto steps = c.present(4) ? constant_ints(c, 4) : std::optional<std::vector<std::int64_t>>(std::vector<std::int64_t>{});
    if (!starts || !ends || !axes || !steps || starts->size() != ends->size()) return std::nullopt;
    if ((!axes->empty() && axes->size() != starts->size()) || (!steps->empty() && steps->size() != starts->size()))
        return std::nullopt;  // malformed: ONNX Runtime rejects it, and it stays opaque here
    if (axes->empty())
        for (std::size_t i = 0; i < starts->size(); ++i) axes->push_back(static_cast<std::int64_t>(i));
    const auto rank = static_cast<std::size_t>(x->rank());
    std::vector<std::int64_t> all_starts(rank, 0), all_ends(rank, std::numeric_limits<std::int64_t>::max()),
        all_steps(rank, 1);
    std::vector<bool> seen(rank, false);
    for (std::size_t i = 0; i < starts->size(); ++i) {
        const std::int64_t axis = (*axes)[i] < 0 ? (*axes)[i] + x->rank() : (*axes)[i];
        if (axis < 0 || axis >= x->rank() || seen[static_cast<std::size_t>(axis)]) return std::nullopt;
        const auto a = static_cast<std::size_t>(axis);
        seen[a] = true;
        all_starts[a] = (*starts)[i];
        all_ends[a] = (*ends)[i];
        all_steps[a] = steps->empty() ? 1 : (*steps)[i];
        if (all_steps[a] == 0) return std::nullopt;  // invalid: ONNX Runtime rejects it
    }
    std::vector<rlflow::detail::SliceAxis> kept;
    for (std::size_t a = 0; a < rank; ++a) {
        kept.push_back(rlflow::detail::SliceOp::axis((*x)[static_cast<int>(a)], all_starts[a], all_ends[a], all_steps[a]));
        if (kept.back().count == 0) return std::nullopt;
    }
    if (std::any_of(kept.begin(), kept.end(), [](const rlflow::detail::SliceAxis& s) { return s.step != 1 && s.count > 1; }))
        return CoreNodeSpec{OpKind::Slice, {0}, Attributes{{"starts", all_starts}, {"ends", all_ends}, {"steps", all_steps}}};
    std::vector<CoreNodeSpec> stages;
    for (std::size_t a = 0; a < rank; ++a)
        if (auto part = split_part(*x, static_cast<int>(a), kept[a].start, kept[a].start + kept[a].count))
            stages.push_back(std::move(*part));
    return chain(std::move(stages));
}

/// A Gather of consecutive constant indices along an axis of float data: a part of a Split
/// (and a Reshape where the index is a scalar or has rank > 1), which rewrites see through.
[[nodiscard]] inline std::optional<CoreNodeSpec> gather_as_slice(const ImportContext& c, int axis) {
    const Shape* x = c.shape(0);
    const Tensor* indices_tensor = c.constant(1);
    const auto indices = constant_ints(c, 1);
    if (!x || !indices || !indices_tensor || indices->empty() || c.inputs[0].type->dtype != DType::Float32)
        return std::nullopt;
    const std::int64_t dim = (*x)[axis];
    std::vector<std::int64_t> kept;
    for (const auto index : *indices) {
        if (index < -dim || index >= dim) return std::nullopt;  // out of range: an error for the runtime
        kept.push_back(index < 0 ? index + dim : index);
        if (kept.size() > 1 && kept.back() != kept[kept.size() - 2] + 1) return std::nullopt;
    }
    const std::int64_t begin = kept.front(), end = kept.back() + 1;
    const Shape& index_shape = indices_tensor->shape();
    if (x->rank() - 1 + index_shape.rank() > Shape::max_rank) return std::nullopt;
    std::vector<CoreNodeSpec> stages;
    if (auto part = split_part(*x, axis, begin, end)) stages.push_back(std::move(*part));
    if (index_shape.rank() != 1) {
        std::vector<std::int64_t> out;
        for (int i = 0; i < axis; ++i) out.push_back((*x)[i]);
        for (const auto d : index_shape.dims()) out.push_back(d);
        for (int i = axis + 1; i < x->rank(); ++i) out.push_back((*x)[i]);
        stages.push_back(CoreNodeSpec{OpKind::Reshape, {0}, Attributes{{"shape", out}}});
    }
    return chain(std::move(stages));
}

/// Gather: consecutive constant indices on float data become a slice (gather_as_slice);
/// any other indices, constant or computed (token ids into an embedding), a core Gather.
inline std::optional<CoreNodeSpec> import_gather(const ImportContext& c) {
    const Shape* x = c.shape(0);
    auto attributes = schema_attributes(c, OpKind::Gather);
    if (!x || !attributes || x->rank() == 0 || c.inputs.size() != 2) return std::nullopt;
    const std::int64_t axis_attribute = attributes->get_int("axis", 0);
    if (axis_attribute < -x->rank() || axis_attribute >= x->rank()) return std::nullopt;
    const int axis = static_cast<int>(axis_attribute < 0 ? axis_attribute + x->rank() : axis_attribute);
    if (auto slice = gather_as_slice(c, axis)) return slice;
    // Constant indices out of range make the model invalid (ONNX Runtime fails to run it).
    if (const auto indices = constant_ints(c, 1); indices && rlflow::detail::typed::index_out_of_range(*indices, (*x)[axis]))
        return std::nullopt;
    attributes->set("axis", std::int64_t{axis});
    return CoreNodeSpec{OpKind::Gather, {0, 1}, std::move(*attributes)};
}

/// Expand with a constant shape input (folded into the attribute "shape").
inline std::optional<CoreNodeSpec> import_expand(const ImportContext& c) {
    const auto shape = constant_ints(c, 1);
    if (!shape || c.node.attribute_size() != 0 || c.inputs.size() != 2) return std::nullopt;
    return CoreNodeSpec{OpKind::Expand, {0}, Attributes{{"shape", *shape}}};
}

/// Cast; opset 19's "saturate" only changes float8 conversions, which rlflow never runs.
inline std::optional<CoreNodeSpec> import_cast(const ImportContext& c) {
    auto attributes = schema_attributes(c, OpKind::Cast, {"saturate"});
    if (!attributes || !attributes->has("to") || c.inputs.size() != 1) return std::nullopt;
    return CoreNodeSpec{OpKind::Cast, {0}, std::move(*attributes)};
}

/// Dropout passes its input through at inference (no training_mode, or a constant false
/// one), and in training with a constant ratio of 0 (PyTorch exports a p=0 attention
/// dropout that way); its mask output must not be read (the importer checks).
inline std::optional<CoreNodeSpec> import_dropout(const ImportContext& c) {
    constexpr std::int64_t inputs_since = 12;  // ratio and training_mode became inputs
    if (c.opset < inputs_since) return std::nullopt;
    for (const auto& a : c.node.attribute())
        if (a.name() != "seed") return std::nullopt;
    if (c.present(2)) {
        const Tensor* training = c.constant(2);
        if (!training || training->dtype() != DType::Bool || training->numel() != 1) return std::nullopt;
        if (training->raw()[0] != std::byte{0} && constant_scalar(c, 1) != 0.0) return std::nullopt;
    }
    return CoreNodeSpec{OpKind::Identity, {0}, {}};
}

/// Gelu is an ONNX op from opset 20 on (before it, exports write its Erf form, which the
/// importer fuses: onnx/detail/patterns.hpp).
inline std::optional<CoreNodeSpec> import_gelu(const ImportContext& c) {
    constexpr std::int64_t gelu_since = 20;
    if (c.opset < gelu_since) return std::nullopt;
    return import_direct<OpKind::Gelu, 1>(c);
}

inline std::optional<CoreNodeSpec> import_instance_norm(const ImportContext& c) {
    return import_direct<OpKind::InstanceNormalization, 3>(c);
}

/// The float values of a constant float32 input, if it is one.
[[nodiscard]] inline std::optional<std::vector<double>> constant_floats(const ImportContext& c, std::size_t i) {
    const Tensor* t = c.constant(i);
    if (!t || t->dtype() != DType::Float32) return std::nullopt;
    const auto values = t->floats();
    return std::vector<double>(values.begin(), values.end());
}

/// Resize (opset 11 on; Resize-10 rounds differently) in modes nearest and linear, with
/// constant scales or sizes over every axis. Cubic, tf_crop_and_resize, antialias,
/// `axes`, exclude_outside and aspect-ratio policies stay opaque; roi matters only to
/// tf_crop_and_resize and extrapolation_value only outside it, cubic_coeff_a only to cubic.
inline std::optional<CoreNodeSpec> import_resize(const ImportContext& c) {
    constexpr std::int64_t resize_since = 11;
    const Shape* x = c.shape(0);
    if (!x || c.opset < resize_since || c.inputs.size() > 4) return std::nullopt;
    auto attributes = schema_attributes(c, OpKind::Resize, {"cubic_coeff_a", "extrapolation_value", "keep_aspect_ratio_policy"},
                                        {{"exclude_outside", 0}, {"antialias", 0}});
    if (!attributes || attributes->has("scales") || attributes->has("sizes")) return std::nullopt;
    if (attribute_string(c.node, "keep_aspect_ratio_policy", "stretch") != "stretch") return std::nullopt;
    try {  // modes outside the core op's choices stay opaque
        Attributes probe = *attributes;
        rlflow::detail::ResizeOp::normalize(probe, {}, c.where);
    } catch (const rlflow::error&) {
        return std::nullopt;
    }
    const auto rank = static_cast<std::size_t>(x->rank());
    const auto scales = c.present(2) ? constant_floats(c, 2) : std::optional<std::vector<double>>(std::vector<double>{});
    const auto sizes = c.present(3) ? constant_ints(c, 3) : std::optional<std::vector<std::int64_t>>(std::vector<std::int64_t>{});
    if (!scales || !sizes || scales->empty() == sizes->empty()) return std::nullopt;  // exactly one of them
    if (!scales->empty()) {
        if (scales->size() != rank || std::any_of(scales->begin(), scales->end(), [](double v) { return !(v > 0.0); }))
            return std::nullopt;
        attributes->set("scales", *scales);
    } else {
        if (sizes->size() != rank || std::any_of(sizes->begin(), sizes->end(), [](std::int64_t v) { return v < 0; }))
            return std::nullopt;
        attributes->set("sizes", *sizes);
    }
    return CoreNodeSpec{OpKind::Resize, {0}, std::move(*attributes)};
}

/// The letters of a two-operand Einsum equation, in groups: in both operands and the
/// output (batch), in one operand and the output (rows: the first operand's, columns: the
/// second's), in both operands only (contracted); with the extent of each letter.
struct EinsumProduct {
    std::string a, b, out;
    std::string batch, rows, columns, contracted;
    std::vector<std::int64_t> extent = std::vector<std::int64_t>(128, -1);  // by ASCII letter

    [[nodiscard]] std::vector<std::int64_t> dims(const std::string& letters) const {
        std::vector<std::int64_t> d;
        for (const char l : letters) d.push_back(extent[static_cast<unsigned char>(l)]);
        return d;
    }
    [[nodiscard]] std::int64_t product(const std::string& letters) const {
        std::int64_t p = 1;
        for (const char l : letters) p *= extent[static_cast<unsigned char>(l)];
        return p;
    }
};

/// The groups of an Einsum equation that is a (batched) matrix product of operands of
/// shapes `a` and `b`: every letter names one axis of each term it is in (no ellipsis, no
/// letter twice in a term), none is summed over one operand alone, the output is explicit.
[[nodiscard]] inline std::optional<EinsumProduct> einsum_product(const std::string& text, const Shape& a, const Shape& b) {
    std::string equation;
    for (const char ch : text)
        if (ch != ' ') equation.push_back(ch);
    const auto comma = equation.find(','), arrow = equation.find("->");
    if (comma == std::string::npos || arrow == std::string::npos || comma > arrow) return std::nullopt;
    EinsumProduct e;
    e.a = equation.substr(0, comma);
    e.b = equation.substr(comma + 1, arrow - comma - 1);
    e.out = equation.substr(arrow + 2);
    const auto valid = [](const std::string& term, const Shape* shape) {
        if (shape && static_cast<int>(term.size()) != shape->rank()) return false;
        for (std::size_t i = 0; i < term.size(); ++i)
            if (!std::isalpha(static_cast<unsigned char>(term[i])) || term.find(term[i], i + 1) != std::string::npos) return false;
        return true;
    };
    if (!valid(e.a, &a) || !valid(e.b, &b) || !valid(e.out, nullptr)) return std::nullopt;
    for (const char l : e.a + e.b + e.out) {
        auto& extent = e.extent[static_cast<unsigned char>(l)];
        if (extent != -1) continue;  // seen
        const auto ia = e.a.find(l), ib = e.b.find(l);
        const bool in_a = ia != std::string::npos, in_b = ib != std::string::npos, in_out = e.out.find(l) != std::string::npos;
        if (!in_a && !in_b) return std::nullopt;  // an output letter in neither operand
        extent = in_a ? a[static_cast<int>(ia)] : b[static_cast<int>(ib)];
        if (in_a && in_b && extent != b[static_cast<int>(ib)]) return std::nullopt;
        if (in_a && in_b) (in_out ? e.batch : e.contracted).push_back(l);
        else if (!in_out) return std::nullopt;  // summed over one operand alone
        else (in_a ? e.rows : e.columns).push_back(l);
    }
    return e;
}

/// An Einsum that is a (batched) matrix product (einsum_product): each operand is
/// transposed to (batch, rows, contracted) or (batch, contracted, columns) and reshaped to
/// three groups, multiplied, then reshaped and transposed into the output's order.
inline std::optional<CoreNodeSpec> import_einsum(const ImportContext& c) {
    const Shape* a = c.shape(0);
    const Shape* b = c.shape(1);
    if (c.inputs.size() != 2 || !a || !b || c.node.attribute_size() != 1) return std::nullopt;
    const auto e = einsum_product(attribute_string(c.node, "equation", ""), *a, *b);
    if (!e) return std::nullopt;
    const std::string &ta = e->a, &tb = e->b, &to = e->out, &batch = e->batch, &rows = e->rows, &columns = e->columns,
                      &contracted = e->contracted;
    const auto product = [&](const std::string& letters) { return e->product(letters); };
    const auto dims = [&](const std::string& letters) { return e->dims(letters); };
    // (transpose of `from` into `to` unless it is the identity, reshape to `shape` unless
    // it already has it)
    const auto arrange = [&](const std::string& from, const std::string& to_order, const std::vector<std::int64_t>& shape) {
        std::vector<CoreNodeSpec> stages;
        std::vector<std::int64_t> perm;
        for (const char l : to_order) perm.push_back(static_cast<std::int64_t>(from.find(l)));
        bool identity = true;
        for (std::size_t i = 0; i < perm.size(); ++i) identity = identity && perm[i] == static_cast<std::int64_t>(i);
        if (!identity) stages.push_back(CoreNodeSpec{OpKind::Transpose, {0}, Attributes{{"perm", perm}}});
        if (dims(to_order) != shape) stages.push_back(CoreNodeSpec{OpKind::Reshape, {0}, Attributes{{"shape", shape}}});
        return stages;
    };
    std::vector<std::int64_t> a_shape = dims(batch), b_shape = dims(batch), product_shape = dims(batch);
    a_shape.insert(a_shape.end(), {product(rows), product(contracted)});
    b_shape.insert(b_shape.end(), {product(contracted), product(columns)});
    product_shape.insert(product_shape.end(), {product(rows), product(columns)});
    if (a_shape.size() > static_cast<std::size_t>(Shape::max_rank)) return std::nullopt;
    const std::string grouped = batch + rows + columns;
    CoreNodeSpec spec{OpKind::MatMul, {0, 1}, {}};
    spec.before = {arrange(ta, batch + rows + contracted, a_shape), arrange(tb, batch + contracted + columns, b_shape)};
    std::vector<CoreNodeSpec> after;
    if (dims(grouped) != product_shape) after.push_back(CoreNodeSpec{OpKind::Reshape, {0}, Attributes{{"shape", dims(grouped)}}});
    for (auto& stage : arrange(grouped, to, dims(to))) after.push_back(std::move(stage));
    spec.then = std::move(after);
    return spec;
}

/// ConvTranspose over NCHW with explicit pads (auto_pad NOTSET) and no output_shape, whose
/// output padding stays below the stride or dilation (ONNX Runtime's limit).
inline std::optional<CoreNodeSpec> import_conv_transpose(const ImportContext& c) {
    constexpr int image_rank = 4;
    const Shape* x = c.shape(0);
    const Shape* w = c.shape(1);
    if (!x || !w || x->rank() != image_rank || w->rank() != image_rank) return std::nullopt;
    if (attribute_string(c.node, "auto_pad", "NOTSET") != "NOTSET") return std::nullopt;
    auto attributes = schema_attributes(c, OpKind::ConvTranspose, {"auto_pad"});
    if (!attributes) return std::nullopt;
    if (!attributes->has("kernel_shape")) attributes->set("kernel_shape", std::vector<std::int64_t>{(*w)[2], (*w)[3]});
    try {
        rlflow::detail::ConvTransposeOp::normalize(*attributes, {}, c.where);
    } catch (const rlflow::error&) {
        return std::nullopt;
    }
    const auto& strides = attributes->get_ints("strides");
    const auto& dilations = attributes->get_ints("dilations");
    const auto& extra = attributes->get_ints("output_padding");
    for (std::size_t i = 0; i < 2; ++i)
        if (strides[i] < 1 || dilations[i] < 1 || extra[i] < 0 || extra[i] >= std::max(strides[i], dilations[i]))
            return std::nullopt;
    return CoreNodeSpec{OpKind::ConvTranspose, first_inputs(c, 3), std::move(*attributes)};
}

}  // namespace rlflow::onnx_io::detail
