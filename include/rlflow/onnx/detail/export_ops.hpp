#pragma once
/// \file
/// How each core op is written as standard ONNX (opsets 11-17, and 18 where an attribute
/// moved to an input; pools also in the older opsets of imported models). Fused
/// convolutions become Conv + activation, or ORT's com.microsoft.FusedConv on request;
/// attributes that ONNX takes as constant inputs (Reshape's shape, Split's sizes, Pad's
/// pads, Clip's bounds) become initializers.

#include <rlflow/core/graph.hpp>
#include <rlflow/onnx/detail/attributes.hpp>

#include <onnx/defs/schema.h>

#include <algorithm>
#include <cmath>
#include <initializer_list>
#include <limits>
#include <set>
#include <string>
#include <string_view>
#include <unordered_set>
#include <vector>

namespace rlflow::onnx_io::detail {

inline constexpr std::string_view microsoft_domain = "com.microsoft";

/// Hands out tensor names that are unique within the exported graph.
class NameTable {
public:
    /// Reserves `name` if free and returns it; otherwise returns a fresh variant.
    std::string claim(const std::string& name) {
        if (m_used.insert(name).second) return name;
        for (std::size_t i = 1;; ++i) {
            std::string candidate = name + "__" + std::to_string(i);
            if (m_used.insert(candidate).second) return candidate;
        }
    }

private:
    std::unordered_set<std::string> m_used;
};

/// What an export function sees and may add to.
struct ExportContext {
    const Node& node;
    std::int64_t opset;
    bool fused_conv_microsoft;
    /// Tensor names of the node's inputs ("" for absent) and outputs.
    std::vector<std::string> inputs;
    std::vector<std::string> outputs;
    std::vector<TensorType> input_types;
    pb::GraphProto& graph;
    /// Tensor names and node names, each unique in the graph.
    NameTable& names;
    NameTable& node_names;
    std::set<std::string>& domains;
    /// Per output: whether a node or the graph's outputs read it.
    std::vector<bool> outputs_read;

    pb::NodeProto& emit(std::string_view op_type, const std::vector<std::string>& in, const std::vector<std::string>& out,
                        std::string_view domain = {}) {
        pb::NodeProto& n = *graph.add_node();
        n.set_op_type(std::string(op_type));
        n.set_name(node_names.claim(node.name));
        if (!domain.empty()) {
            n.set_domain(std::string(domain));
            domains.insert(std::string(domain));
        }
        for (const auto& i : in) n.add_input(i);
        for (const auto& o : out) n.add_output(o);
        return n;
    }
    /// Copies the node's attributes except `skipped`.
    void copy_attributes(pb::NodeProto& n, std::initializer_list<std::string_view> skipped = {}) const {
        copy_attributes_except(n, std::vector<std::string_view>(skipped));
    }
    void copy_attributes_except(pb::NodeProto& n, const std::vector<std::string_view>& skipped) const {
        for (const auto& [name, value] : node.attributes) {
            if (std::find(skipped.begin(), skipped.end(), name) != skipped.end()) continue;
            attribute_to_proto(name, value, *n.add_attribute());
        }
    }
    /// Adds `value` as an initializer and returns its name.
    std::string initializer(const std::string& hint, const Tensor& value) {
        const std::string name = names.claim(hint);
        *graph.add_initializer() = tensor_to_proto(value, name);
        return name;
    }
    /// Adds an int64 vector initializer and returns its name.
    std::string ints_initializer(const std::string& hint, const std::vector<std::int64_t>& values) {
        return initializer(hint, Tensor::from_values(DType::Int64, Shape{static_cast<std::int64_t>(values.size())}, values));
    }
    /// Adds a float scalar initializer and returns its name.
    std::string scalar_initializer(const std::string& hint, double value) {
        return initializer(hint, Tensor::from_floats(Shape{}, {static_cast<float>(value)}));
    }
    [[noreturn]] void fail(const std::string& message) const { throw onnx_error(node.describe() + ": " + message); }
};

using ExportFn = void (*)(ExportContext&);

inline void export_direct(ExportContext& c) {
    pb::NodeProto& n = c.emit(op_traits(c.node.op).onnx_name, c.inputs, c.outputs);
    c.copy_attributes(n);
}

inline void export_conv(ExportContext& c) {
    constexpr std::string_view activation_ops[] = {"", "Relu", "Sigmoid", "Tanh"};
    const auto act = static_cast<std::size_t>(c.node.attributes.get_int("activation", 0));
    if (act == 0) {
        c.copy_attributes(c.emit("Conv", c.inputs, c.outputs), {"activation"});
        return;
    }
    if (c.fused_conv_microsoft) {
        pb::NodeProto& n = c.emit("FusedConv", c.inputs, c.outputs, microsoft_domain);
        c.copy_attributes(n, {"activation"});
        attribute_to_proto("activation", std::string(activation_ops[act]), *n.add_attribute());
        return;
    }
    const std::string pre = c.names.claim(c.outputs[0] + "_preactivation");
    c.copy_attributes(c.emit("Conv", c.inputs, {pre}), {"activation"});
    c.emit(activation_ops[act], {pre}, c.outputs);
}

inline void export_reshape(ExportContext& c) {
    constexpr std::int64_t allowzero_since = 14;
    const auto& shape = c.node.attributes.get_ints("shape");
    pb::NodeProto& n = c.emit("Reshape", {c.inputs[0], c.ints_initializer(c.outputs[0] + "_shape", shape)}, c.outputs);
    // The resolved target may hold a real 0; without allowzero ONNX would copy that dim.
    if (std::find(shape.begin(), shape.end(), 0) != shape.end()) {
        if (c.opset < allowzero_since) c.fail("a zero-sized reshape target needs opset 14");
        attribute_to_proto("allowzero", std::int64_t{1}, *n.add_attribute());
    }
}

/// Expand takes its target shape as an int64 input.
inline void export_expand(ExportContext& c) {
    c.emit("Expand", {c.inputs[0], c.ints_initializer(c.outputs[0] + "_shape", c.node.attributes.get_ints("shape"))},
           c.outputs);
}

inline void export_split(ExportContext& c) {
    constexpr std::int64_t input_since = 13;
    if (c.opset < input_since) {
        export_direct(c);
        return;
    }
    const auto& parts = c.node.attributes.get_ints("split");
    // One part read (an imported Slice or Gather): a Slice, which computes only that part.
    if (std::count(c.outputs_read.begin(), c.outputs_read.end(), true) == 1) {
        const auto kept = static_cast<std::size_t>(std::find(c.outputs_read.begin(), c.outputs_read.end(), true)
                                                   - c.outputs_read.begin());
        std::int64_t begin = 0;
        for (std::size_t i = 0; i < kept; ++i) begin += parts[i];
        const std::string& out = c.outputs[kept];
        const std::vector<std::string> in{c.inputs[0], c.ints_initializer(out + "_starts", {begin}),
                                          c.ints_initializer(out + "_ends", {begin + parts[kept]}),
                                          c.ints_initializer(out + "_axes", {c.node.attributes.get_int("axis", 0)})};
        c.emit("Slice", in, {out});
        return;
    }
    const std::string sizes = c.ints_initializer(c.outputs[0] + "_split", parts);
    c.copy_attributes(c.emit("Split", {c.inputs[0], sizes}, c.outputs), {"split"});
}

inline void export_pad(ExportContext& c) {
    constexpr std::int64_t inputs_since = 11;
    if (c.opset < inputs_since) {
        export_direct(c);
        return;
    }
    std::vector<std::string> in{c.inputs[0], c.ints_initializer(c.outputs[0] + "_pads", c.node.attributes.get_ints("pads"))};
    const std::string& mode = c.node.attributes.get<std::string>("mode");
    if (mode == "constant") in.push_back(c.scalar_initializer(c.outputs[0] + "_value", c.node.attributes.get_float("value", 0)));
    c.copy_attributes(c.emit("Pad", in, c.outputs), {"pads", "value"});
}

inline void export_clip(ExportContext& c) {
    constexpr std::int64_t inputs_since = 11;
    const double lo = c.node.attributes.get_float("min", -INFINITY), hi = c.node.attributes.get_float("max", INFINITY);
    if (c.opset < inputs_since) {
        constexpr double largest = std::numeric_limits<float>::max();
        pb::NodeProto& n = c.emit("Clip", c.inputs, c.outputs);
        attribute_to_proto("min", std::max(lo, -largest), *n.add_attribute());
        attribute_to_proto("max", std::min(hi, largest), *n.add_attribute());
        return;
    }
    std::vector<std::string> in{c.inputs[0], std::isinf(lo) ? "" : c.scalar_initializer(c.outputs[0] + "_min", lo)};
    if (!std::isinf(hi)) in.push_back(c.scalar_initializer(c.outputs[0] + "_max", hi));
    while (in.back().empty()) in.pop_back();
    c.emit("Clip", in, c.outputs);
}

inline void export_softmax(ExportContext& c) {
    constexpr std::int64_t single_axis_since = 13;
    const int rank = c.node.outputs[0].type.shape.rank();
    if (c.opset < single_axis_since && c.node.attributes.get_int("axis", -1) != rank - 1)
        c.fail("Softmax over a middle axis needs opset 13");
    export_direct(c);
}

/// Adds attribute `name` to `skipped` when the opset written predates `since`, the opset
/// that defined it: the older op computes what the attribute's default does, so it may be
/// left out at its default (`at_default`), and nothing else can be written.
inline void omit_before(const ExportContext& c, std::vector<std::string_view>& skipped, std::string_view name,
                        std::int64_t since, bool at_default) {
    if (c.opset >= since) return;
    if (!at_default) c.fail(std::string(name) + " other than its default needs opset " + std::to_string(since));
    skipped.push_back(name);
}

/// MaxPool and AveragePool, with the attributes an older model's opset defines: ceil_mode
/// came with MaxPool-10 and AveragePool-10, MaxPool's dilations with MaxPool-10,
/// count_include_pad with AveragePool-7, and AveragePool's dilations with AveragePool-19.
inline void export_pool(ExportContext& c) {
    constexpr std::int64_t ceil_mode_since = 10;
    constexpr std::int64_t max_pool_dilations_since = 10;
    constexpr std::int64_t count_include_pad_since = 7;
    const Attributes& a = c.node.attributes;
    const bool average = c.node.op == OpKind::AveragePool;
    const auto& dilations = a.get_ints("dilations");
    const bool undilated = std::all_of(dilations.begin(), dilations.end(), [](std::int64_t d) { return d == 1; });
    std::vector<std::string_view> skipped;
    if (average) {
        if (!undilated) c.fail("dilated AveragePool needs opset 19");
        skipped.push_back("dilations");
        omit_before(c, skipped, "count_include_pad", count_include_pad_since, a.get_int("count_include_pad", 0) == 0);
    } else {
        omit_before(c, skipped, "dilations", max_pool_dilations_since, undilated);
    }
    omit_before(c, skipped, "ceil_mode", ceil_mode_since, a.get_int("ceil_mode", 0) == 0);
    c.copy_attributes_except(c.emit(average ? "AveragePool" : "MaxPool", c.inputs, c.outputs), skipped);
}

/// ReduceMean, ReduceSum, ReduceMax: axes as an attribute, or as an input from the opset
/// that made them one (reduce_axes_input_since).
inline void export_reduce(ExportContext& c) {
    const bool as_input = c.opset >= reduce_axes_input_since(c.node.op);
    const auto& axes = c.node.attributes.get_ints("axes");
    std::vector<std::string> in{c.inputs[0]};
    if (as_input && !axes.empty()) in.push_back(c.ints_initializer(c.outputs[0] + "_axes", axes));
    pb::NodeProto& n = c.emit(op_traits(c.node.op).onnx_name, in, c.outputs);
    c.copy_attributes(n, {"axes"});
    if (!as_input && !axes.empty()) attribute_to_proto("axes", axes, *n.add_attribute());
}

/// HardSwish came with opset 14; before it, the same function is HardSigmoid(1/6, 1/2)
/// times its input.
inline void export_hard_swish(ExportContext& c) {
    constexpr std::int64_t hard_swish_since = 14;
    if (c.opset >= hard_swish_since) {
        export_direct(c);
        return;
    }
    const std::string gate = c.names.claim(c.outputs[0] + "_gate");
    pb::NodeProto& n = c.emit("HardSigmoid", c.inputs, {gate});
    attribute_to_proto("alpha", 1.0 / 6.0, *n.add_attribute());
    attribute_to_proto("beta", 0.5, *n.add_attribute());
    c.emit("Mul", {c.inputs[0], gate}, c.outputs);
}

/// Slice with steps (opset 10 on): the axes it changes, with their canonical starts, ends
/// (INT64_MIN for "before index 0", which ONNX clamps the same way) and steps.
inline void export_slice(ExportContext& c) {
    constexpr std::int64_t steps_since = 10;
    if (c.opset < steps_since) c.fail("Slice with steps needs opset 10");
    const Shape& x = c.input_types.at(0).shape;
    const auto& starts = c.node.attributes.get_ints("starts");
    const auto& ends = c.node.attributes.get_ints("ends");
    const auto& steps = c.node.attributes.get_ints("steps");
    std::vector<std::int64_t> s, e, a, k;
    for (int d = 0; d < x.rank(); ++d) {
        const auto i = static_cast<std::size_t>(d);
        if (starts[i] == 0 && ends[i] == x[d] && steps[i] == 1) continue;
        s.push_back(starts[i]);
        e.push_back(ends[i]);
        a.push_back(d);
        k.push_back(steps[i]);
    }
    const std::string& out = c.outputs[0];
    c.emit("Slice", {c.inputs[0], c.ints_initializer(out + "_starts", s), c.ints_initializer(out + "_ends", e),
                     c.ints_initializer(out + "_axes", a), c.ints_initializer(out + "_steps", k)},
           c.outputs);
}

/// Gelu is ONNX's from opset 20, and written as Gelu where the ONNX library rlflow checks
/// its exports with knows it (libonnx 1.15 on). Otherwise the exact form is written as the
/// operations PyTorch exports, (x * (Erf(x / sqrt 2) + 1)) * 0.5, which compute exec's Gelu
/// bit for bit and which ONNX Runtime fuses back into one kernel; the tanh form as
/// (x * 0.5) * (Tanh(sqrt(2/pi) * (x + 0.044715 * x^3)) + 1).
inline void export_gelu(ExportContext& c) {
    constexpr std::int64_t gelu_since = 20;
    const ::onnx::OpSchema* schema = ::onnx::OpSchemaRegistry::Schema("Gelu", static_cast<int>(c.opset));
    if (c.opset >= gelu_since && schema != nullptr) {
        export_direct(c);
        return;
    }
    const std::string& x = c.inputs[0];
    const std::string& out = c.outputs[0];
    const auto temp = [&](std::string_view what) { return c.names.claim(out + "_" + std::string(what)); };
    const std::string one = c.scalar_initializer(out + "_one", 1.0), half = c.scalar_initializer(out + "_half", 0.5);
    if (c.node.attributes.get<std::string>("approximate") == "tanh") {
        const std::string square = temp("square"), cube = temp("cube"), scaled_cube = temp("scaled_cube"), inner = temp("inner"),
                          argument = temp("argument"), t = temp("tanh"), gate = temp("gate"), halved = temp("halved");
        c.emit("Mul", {x, x}, {square});
        c.emit("Mul", {square, x}, {cube});
        c.emit("Mul", {cube, c.scalar_initializer(out + "_cubic", 0.044715)}, {scaled_cube});
        c.emit("Add", {x, scaled_cube}, {inner});
        c.emit("Mul", {inner, c.scalar_initializer(out + "_root_two_over_pi", 0.7978845608028654)}, {argument});
        c.emit("Tanh", {argument}, {t});
        c.emit("Add", {t, one}, {gate});
        c.emit("Mul", {x, half}, {halved});
        c.emit("Mul", {halved, gate}, c.outputs);
        return;
    }
    const std::string scaled = temp("scaled"), e = temp("erf"), gate = temp("gate"), gated = temp("gated");
    c.emit("Div", {x, c.scalar_initializer(out + "_root_two", 1.4142135623730951)}, {scaled});
    c.emit("Erf", {scaled}, {e});
    c.emit("Add", {e, one}, {gate});
    c.emit("Mul", {x, gate}, {gated});
    c.emit("Mul", {gated, half}, c.outputs);
}

/// Resize: scales where ONNX Runtime computes this op's sizes from them (floor of scale
/// times the axis, in float32), else the sizes (from which it computes these scales).
/// Opsets 11 and 12 take roi and scales as inputs even when empty.
inline void export_resize(ExportContext& c) {
    constexpr std::int64_t optional_inputs_since = 13, resize_since = 11;
    if (c.opset < resize_since) c.fail("Resize needs opset 11");
    const Shape& x = c.input_types.at(0).shape;
    const auto& scales = c.node.attributes.get<std::vector<double>>("scales");
    const auto& sizes = c.node.attributes.get_ints("sizes");
    bool by_scales = true;
    for (int d = 0; d < x.rank(); ++d)
        by_scales = by_scales && rlflow::detail::ResizeOp::scaled_length(x[d], scales[static_cast<std::size_t>(d)]) == sizes[static_cast<std::size_t>(d)];
    const std::string& out = c.outputs[0];
    const bool old = c.opset < optional_inputs_since;
    const auto floats = [&](const std::string& hint, const std::vector<double>& values) {
        const Shape shape{static_cast<std::int64_t>(values.size())};
        return c.initializer(hint, Tensor::from_floats(shape, std::vector<float>(values.begin(), values.end())));
    };
    std::vector<std::string> in{c.inputs[0], old ? floats(out + "_roi", {}) : std::string()};
    if (by_scales) {
        in.push_back(floats(out + "_scales", scales));
    } else {
        in.push_back(old ? floats(out + "_scales", {}) : std::string());
        in.push_back(c.ints_initializer(out + "_sizes", sizes));
    }
    c.copy_attributes(c.emit("Resize", in, c.outputs), {"scales", "sizes"});
}

inline void export_layer_norm(ExportContext& c) {
    constexpr std::int64_t layer_norm_since = 17;
    if (c.opset < layer_norm_since) c.fail("LayerNormalization needs opset 17");
    export_direct(c);
}

/// Enlarge is a centred zero Pad of the kernel's two spatial axes.
inline void export_enlarge(ExportContext& c) {
    const Shape& from = c.input_types.at(0).shape;
    const Shape& to = c.node.outputs[0].type.shape;
    const std::int64_t top = (to[2] - from[2]) / 2, left = (to[3] - from[3]) / 2;
    const std::vector<std::int64_t> pads{0, 0, top, left, 0, 0, to[2] - from[2] - top, to[3] - from[3] - left};
    c.emit("Pad", {c.inputs[0], c.ints_initializer(c.outputs[0] + "_pads", pads)}, c.outputs);
}

/// The 0/1 mask, shaped (M, n*count, 1, 1), that keeps block b = layout.block(o) of
/// output channel o of a merged (M, n*count, kh, kw) kernel.
[[nodiscard]] inline Tensor merge_gconv_mask(const Shape& merged, const rlflow::detail::MergeGConvOp::Layout& layout) {
    const std::int64_t filters = merged[0], channels = merged[1], block_size = channels / layout.count;
    std::vector<float> mask(static_cast<std::size_t>(filters * channels), 0.0f);
    for (std::int64_t o = 0; o < filters; ++o)
        std::fill_n(mask.begin() + o * channels + layout.block(o) * block_size, block_size, 1.0f);
    return Tensor::from_floats(Shape{filters, channels, 1, 1}, std::move(mask));
}

/// MergeGConv is `count` copies of the kernel side by side on the input-channel axis
/// (Concat), times a 0/1 mask that keeps each output channel's own block (Mul). Both are
/// core ops, so the model also imports back when the kernel has no data. Exact for finite
/// weights: an infinite or NaN weight times 0 is NaN rather than 0.
inline void export_merge_gconv(ExportContext& c) {
    if (c.input_types.at(0).dtype != DType::Float32) c.fail("MergeGConv is exported for float32 kernels only");
    const Shape& merged = c.node.outputs[0].type.shape;
    const auto layout = rlflow::detail::MergeGConvOp::layout(c.node.attributes, merged[0]);
    const std::string copies = c.names.claim(c.outputs[0] + "_copies");
    const std::vector<std::string> kernels(static_cast<std::size_t>(layout.count), c.inputs[0]);
    pb::NodeProto& concat = c.emit("Concat", kernels, {copies});
    attribute_to_proto("axis", std::int64_t{1}, *concat.add_attribute());
    c.emit("Mul", {copies, c.initializer(c.outputs[0] + "_mask", merge_gconv_mask(merged, layout))}, c.outputs);
}

}  // namespace rlflow::onnx_io::detail
