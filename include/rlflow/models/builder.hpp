#pragma once
/// \file
/// `models::Builder`: the few layer-level constructions the zoo builders share (conv,
/// batch norm, pools, linear layers, layer norm, GELU, multi-head self-attention), each
/// written the way PyTorch's ONNX exporter writes it, with torchvision-style names.
///
/// Naming. A layer's op node takes the module's name ("layer1.0.conv1") and its weights
/// the parameter names ("layer1.0.conv1.weight", "layer1.0.bn1.running_var"). Weights are
/// declared without data; `exec::fill_random_weights` (or an ONNX import) supplies it.
/// Every node name is unique, so tensor names are unique too, as ONNX requires.

#include <rlflow/core/graph.hpp>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <string>
#include <unordered_set>
#include <utility>
#include <vector>

namespace rlflow::models {

/// Classes of the ImageNet classifiers (torchvision's `num_classes` default).
inline constexpr std::int64_t imagenet_classes = 1000;
/// Colour channels of an image input.
inline constexpr std::int64_t rgb_channels = 3;
/// Side of the 224x224 ImageNet input of ResNet, SqueezeNet and ViT.
inline constexpr std::int64_t imagenet_resolution = 224;
/// torch.nn.BatchNorm2d's default epsilon.
inline constexpr double batch_norm_epsilon = 1e-5;

/// A 2-D sliding window: kernel, strides and ONNX pads (top, left, bottom, right).
struct Window {
    std::array<std::int64_t, 2> kernel{1, 1};
    std::array<std::int64_t, 2> stride{1, 1};
    std::array<std::int64_t, 4> pads{0, 0, 0, 0};

    /// A k x k window with stride `s` and `p` pixels of padding on every side.
    [[nodiscard]] static constexpr Window square(std::int64_t k, std::int64_t s = 1, std::int64_t p = 0) {
        return {{k, k}, {s, s}, {p, p, p, p}};
    }
    /// A kh x kw window with stride 1, padded ph rows and pw columns on both sides
    /// (Inception's 1x7 / 7x1 and 1x3 / 3x1 kernels).
    [[nodiscard]] static constexpr Window rect(std::int64_t kh, std::int64_t kw, std::int64_t ph, std::int64_t pw) {
        return {{kh, kw}, {1, 1}, {ph, pw, ph, pw}};
    }
    /// TensorFlow's SAME padding (ONNX SAME_UPPER) for an NCHW `input`: the output is
    /// ceil(in / s) and the odd pixel of padding goes to the bottom / right.
    [[nodiscard]] static Window same(std::int64_t k, std::int64_t s, const Shape& input) {
        Window w = square(k, s, 0);
        for (std::size_t axis = 0; axis < 2; ++axis) {
            const std::int64_t in = input[static_cast<int>(axis) + 2];
            const std::int64_t out = (in + s - 1) / s;
            const std::int64_t total = std::max<std::int64_t>((out - 1) * s + k - in, 0);
            w.pads[axis] = total / 2;
            w.pads[axis + 2] = total - total / 2;
        }
        return w;
    }
};

/// A convolution layer: output channels, window, groups, and whether it has a bias.
struct ConvSpec {
    std::int64_t out_channels = 0;
    Window window;
    std::int64_t group = 1;
    bool bias = false;
};

/// Names of a multi-head self-attention block: `scope` prefixes its internal nodes, the
/// other four name its linear projections.
struct AttentionNames {
    std::string scope;
    std::string query;
    std::string key;
    std::string value;
    std::string output;
};

/// Builds a Graph layer by layer. Every method returns the new layer's output tensor.
class Builder {
public:
    /// The graph built so far.
    [[nodiscard]] Graph& graph() noexcept { return m_graph; }
    [[nodiscard]] const Graph& graph() const noexcept { return m_graph; }
    /// Hands the finished graph over.
    [[nodiscard]] Graph finish() && { return std::move(m_graph); }

    /// The shape of a tensor built so far.
    [[nodiscard]] const Shape& shape(TensorRef x) const { return m_graph.type(x).shape; }

    // ---- sources and plain ops ----------------------------------------------------------

    /// A float32 graph input.
    TensorRef input(std::string name, const Shape& shape) {
        claim(name);
        return {m_graph.add_input(std::move(name), {DType::Float32, shape}), 0};
    }
    /// A float32 weight without data.
    TensorRef weight(std::string name, const Shape& shape) {
        claim(name);
        return {m_graph.add_weight(std::move(name), {DType::Float32, shape}), 0};
    }
    /// A float32 Constant filled with `value` (rank 0 for a scalar).
    TensorRef constant(std::string name, const Shape& shape, float value) {
        claim(name);
        std::vector<float> values(static_cast<std::size_t>(shape.numel()), value);
        return {m_graph.add_constant(std::move(name), Tensor::from_floats(shape, std::move(values))), 0};
    }
    /// A rank-0 float32 Constant, as the exporter writes Python scalars.
    TensorRef scalar(std::string name, float value) { return constant(std::move(name), Shape{}, value); }
    /// The (first) output of a new core op node named `name`.
    TensorRef op(OpKind kind, std::string name, std::vector<TensorRef> inputs, Attributes attributes = {}) {
        claim(name);
        return {m_graph.add_node(kind, std::move(inputs), std::move(attributes), std::move(name)), 0};
    }
    /// Marks `x` as a graph output named `name`.
    void output(TensorRef x, std::string name) { m_graph.add_output(x, std::move(name)); }

    TensorRef add(std::string name, TensorRef a, TensorRef b) { return op(OpKind::Add, std::move(name), {a, b}); }
    TensorRef mul(std::string name, TensorRef a, TensorRef b) { return op(OpKind::Mul, std::move(name), {a, b}); }
    TensorRef relu(std::string name, TensorRef x) { return op(OpKind::Relu, std::move(name), {x}); }
    TensorRef matmul(std::string name, TensorRef a, TensorRef b) { return op(OpKind::MatMul, std::move(name), {a, b}); }
    TensorRef concat(std::string name, std::vector<TensorRef> inputs, std::int64_t axis) {
        return op(OpKind::Concat, std::move(name), std::move(inputs), {{"axis", axis}});
    }
    TensorRef reshape(std::string name, TensorRef x, std::vector<std::int64_t> dims) {
        return op(OpKind::Reshape, std::move(name), {x}, {{"shape", std::move(dims)}});
    }
    TensorRef transpose(std::string name, TensorRef x, std::vector<std::int64_t> perm) {
        return op(OpKind::Transpose, std::move(name), {x}, {{"perm", std::move(perm)}});
    }
    /// torch.flatten(x, 1).
    TensorRef flatten(std::string name, TensorRef x) {
        return op(OpKind::Flatten, std::move(name), {x}, {{"axis", std::int64_t{1}}});
    }

    // ---- CNN layers ---------------------------------------------------------------------

    /// nn.Conv2d: weight "<name>.weight" (M, C/group, kh, kw), bias "<name>.bias" if any.
    TensorRef conv(const std::string& name, TensorRef x, const ConvSpec& spec) {
        const std::int64_t in_channels = shape(x)[1];
        const Window& w = spec.window;
        std::vector<TensorRef> inputs{
            x, weight(name + ".weight", {spec.out_channels, in_channels / spec.group, w.kernel[0], w.kernel[1]})};
        if (spec.bias) inputs.push_back(weight(name + ".bias", {spec.out_channels}));
        Attributes attributes = window_attributes(w);
        attributes.set("group", spec.group);
        return op(OpKind::Conv2D, name, std::move(inputs), std::move(attributes));
    }
    /// nn.BatchNorm2d in inference: scale, bias, running mean and variance per channel.
    TensorRef batch_norm(const std::string& name, TensorRef x, double epsilon = batch_norm_epsilon) {
        const Shape channels{shape(x)[1]};
        std::vector<TensorRef> inputs{x, weight(name + ".weight", channels), weight(name + ".bias", channels),
                                      weight(name + ".running_mean", channels),
                                      weight(name + ".running_var", channels)};
        return op(OpKind::BatchNormalization, name, std::move(inputs), {{"epsilon", epsilon}});
    }
    /// nn.MaxPool2d; `ceil_mode` as SqueezeNet uses it.
    TensorRef max_pool(std::string name, TensorRef x, const Window& window, bool ceil_mode = false) {
        Attributes attributes = window_attributes(window);
        attributes.set("ceil_mode", std::int64_t{ceil_mode ? 1 : 0});
        return op(OpKind::MaxPool, std::move(name), {x}, std::move(attributes));
    }
    /// nn.AvgPool2d; PyTorch's default counts the padding (count_include_pad=1).
    TensorRef average_pool(std::string name, TensorRef x, const Window& window, bool count_include_pad = true) {
        Attributes attributes = window_attributes(window);
        attributes.set("count_include_pad", std::int64_t{count_include_pad ? 1 : 0});
        return op(OpKind::AveragePool, std::move(name), {x}, std::move(attributes));
    }
    /// nn.AdaptiveAvgPool2d((1, 1)), which the exporter writes as GlobalAveragePool.
    TensorRef global_average_pool(std::string name, TensorRef x) {
        return op(OpKind::GlobalAveragePool, std::move(name), {x});
    }

    /// torchvision's classifier: avgpool (GlobalAveragePool) -> flatten -> fc (Gemm).
    TensorRef classifier_head(TensorRef features, std::int64_t classes = imagenet_classes) {
        return linear("fc", flatten("flatten", global_average_pool("avgpool", features)), classes);
    }

    // ---- dense layers -------------------------------------------------------------------

    /// nn.Linear on a 2-D input, exported as Gemm(transB=1): weight (out, in), bias (out).
    TensorRef linear(const std::string& name, TensorRef x, std::int64_t out_features) {
        const std::int64_t in_features = shape(x).dim(-1);
        const TensorRef w = weight(name + ".weight", {out_features, in_features});
        const TensorRef bias = weight(name + ".bias", {out_features});
        return op(OpKind::Gemm, name, {x, w, bias}, {{"transB", std::int64_t{1}}});
    }
    /// nn.Linear on an input of rank > 2, exported as MatMul + Add. The weight is stored
    /// as the exporter stores it, transposed to (in, out).
    TensorRef dense(const std::string& name, TensorRef x, std::int64_t out_features) {
        const std::int64_t in_features = shape(x).dim(-1);
        const TensorRef product = matmul(name + ".matmul", x, weight(name + ".weight", {in_features, out_features}));
        return add(name, product, weight(name + ".bias", {out_features}));
    }
    /// nn.LayerNorm over the last axis: weight and bias of the normalised size.
    TensorRef layer_norm(const std::string& name, TensorRef x, double epsilon) {
        const Shape features{shape(x).dim(-1)};
        std::vector<TensorRef> inputs{x, weight(name + ".weight", features), weight(name + ".bias", features)};
        return op(OpKind::LayerNormalization, name, std::move(inputs),
                  {{"axis", std::int64_t{-1}}, {"epsilon", epsilon}});
    }
    /// Exact GELU as torch.onnx exports it: (x * (1 + erf(x / sqrt 2))) * 0.5, that is
    /// Div, Erf, Add, Mul, Mul with scalar constants.
    TensorRef gelu(const std::string& name, TensorRef x) {
        const TensorRef scaled = op(OpKind::Div, name + ".div", {x, scalar(name + ".sqrt2", std::sqrt(2.0f))});
        const TensorRef erf = op(OpKind::Erf, name + ".erf", {scaled});
        const TensorRef shifted = add(name + ".add", erf, scalar(name + ".one", 1.0f));
        const TensorRef product = mul(name + ".mul", x, shifted);
        return mul(name, product, scalar(name + ".half", 0.5f));
    }
    /// Multi-head self-attention on (N, S, E) with three separate Q, K, V projections of
    /// the same input (the Q/K/V fusion target): softmax(Q K^T / sqrt(d)) V, heads merged
    /// and projected. Returns the output projection (before any residual).
    TensorRef self_attention(const AttentionNames& names, TensorRef x, std::int64_t heads) {
        const Shape& s = shape(x);
        const std::int64_t width = s[2];
        const std::int64_t head_width = width / heads;
        const TensorRef query = split_heads(names.query, dense(names.query, x, width), heads, {0, 2, 1, 3});
        const TensorRef key = split_heads(names.key, dense(names.key, x, width), heads, {0, 2, 3, 1});
        const TensorRef value = split_heads(names.value, dense(names.value, x, width), heads, {0, 2, 1, 3});
        const TensorRef scores = matmul(names.scope + ".scores", query, key);
        const TensorRef scale = scalar(names.scope + ".scale", std::sqrt(static_cast<float>(head_width)));
        const TensorRef scaled = op(OpKind::Div, names.scope + ".scaled_scores", {scores, scale});
        const TensorRef probabilities
            = op(OpKind::Softmax, names.scope + ".softmax", {scaled}, {{"axis", std::int64_t{-1}}});
        const TensorRef context = matmul(names.scope + ".context", probabilities, value);
        const TensorRef merged = transpose(names.scope + ".context.transpose", context, {0, 2, 1, 3});
        const TensorRef flat = reshape(names.scope + ".context.reshape", merged, {s[0], s[1], width});
        return dense(names.output, flat, width);
    }

private:
    /// (N, S, E) -> (N, S, heads, E/heads), then permuted by `perm` (heads to axis 1).
    TensorRef split_heads(const std::string& name, TensorRef x, std::int64_t heads, std::vector<std::int64_t> perm) {
        const Shape& s = shape(x);
        const TensorRef split = reshape(name + ".reshape", x, {s[0], s[1], heads, s[2] / heads});
        return transpose(name + ".transpose", split, std::move(perm));
    }
    static Attributes window_attributes(const Window& w) {
        return {{"kernel_shape", std::vector<std::int64_t>(w.kernel.begin(), w.kernel.end())},
                {"strides", std::vector<std::int64_t>(w.stride.begin(), w.stride.end())},
                {"pads", std::vector<std::int64_t>(w.pads.begin(), w.pads.end())}};
    }
    /// Names must be unique: ONNX value names are derived from them.
    void claim(const std::string& name) {
        RLFLOW_EXPECTS(m_names.insert(name).second, graph_error, "model builder: name '" + name + "' used twice");
    }

    Graph m_graph;
    std::unordered_set<std::string> m_names;
};

}  // namespace rlflow::models
