#pragma once
/// \file
/// What the substitution generator enumerates: input variables (small tensors of fixed
/// types) and ops (an op kind whose attributes follow from its input types). The default
/// follows TASO's generator inputs (the TASO paper, Jia et al., SOSP 2019): matrices,
/// square weights, images, conv kernels of four shapes and a scalar, with matmul,
/// element-wise add and mul, scalar mul, convolutions (1x1, 3x3, 1x3, 3x1 by the kernel;
/// stride 1 and 2; SAME padding; no activation or a fused relu; grouped when the kernel
/// says so), relu, concat, split in halves, 2-D transpose, enlarge to 3x3 and 3x3 average
/// and max pools.

#include <rlflow/core/attributes.hpp>
#include <rlflow/core/detail/op_definitions.hpp>
#include <rlflow/core/error.hpp>
#include <rlflow/core/op_kind.hpp>
#include <rlflow/core/shape.hpp>
#include <rlflow/rewrite/constant_tensor.hpp>
#include <rlflow/synth/detail/rewrite_names.hpp>

#include <algorithm>
#include <cstdint>
#include <functional>
#include <optional>
#include <span>
#include <string>
#include <vector>

namespace rlflow::synth {

/// The attributes of a generator op for given input types, or nullopt when the op does not
/// apply to them (shape inference then decides the rest).
using AttributeBuilder = std::function<std::optional<Attributes>(std::span<const TensorType>)>;

/// What a tensor stands for in a network: data flowing through it, a weight, a
/// convolution's per-channel bias, or a scalar. Roles only steer enumeration away from
/// graphs no network holds (a convolution of two kernels, a relu of a weight); generated
/// rules do not carry them.
enum class TensorRole : std::uint8_t { data, weight, bias, scalar };

/// The roles an op accepts: per input slot one role, or `any` (the same role as input 0);
/// its output has input 0's role, or `data` when `makes_data`.
struct RoleSignature {
    enum class Slot : std::uint8_t { data, weight, bias, scalar, same };
    std::vector<Slot> inputs;
    bool makes_data = false;
};

/// One op the generator may apply.
struct GeneratorOp {
    /// Unique, for `--ops` lists and reports ("conv_s1_relu").
    std::string name;
    OpKind op = OpKind::Identity;
    std::size_t arity = 1;
    AttributeBuilder attributes;
    RoleSignature roles;
    /// An op of the extended space (ops of modern exports past TASO's inputs): enumerated
    /// only when `--ops` names it, so that the default space, and the library generated
    /// from it, stay TASO's.
    bool extended = false;
};

/// The fixed value of a generator constant: `fill` (rewrite/constant_tensor.hpp) with the value
/// numerator / 210^exponent, which the exact evaluator holds exactly (1/9 = 4900 / 210^2).
struct GeneratorConstant {
    ConstantFill fill = ConstantFill::uniform;
    std::int64_t numerator = 1;
    std::int64_t exponent = 0;
    /// The value as a rule writes it: rounded to float32 first, so that the float32 tensor
    /// a rewrite builds reads back as the same value when a rule matches it.
    [[nodiscard]] double rule_value() const {
        double v = static_cast<double>(numerator);
        for (std::int64_t e = 0; e < exponent; ++e) v /= 210.0;
        return static_cast<double>(static_cast<float>(v));
    }
};

/// One leaf of the generated graphs: an input variable, or a constant (TASO's identity
/// kernel, pooling kernel, identity matrix and ones), which becomes a Constant node of the
/// rule rather than a rule variable, with its shape given by the rule's variables' dims.
struct GeneratorVariable {
    std::string name;
    TensorType type;
    TensorRole role = TensorRole::data;
    std::optional<GeneratorConstant> constant;
    /// The names of the ops that may read it (empty: any). Constants are read only where
    /// their law lives (an identity kernel by convolutions and adds, ones by products), or
    /// every rule of the space would come again with a constant in a variable's place.
    std::vector<std::string> readers;
    [[nodiscard]] bool is_constant() const noexcept { return constant.has_value(); }
};

/// The generator's search space.
struct GeneratorSpace {
    std::vector<GeneratorVariable> variables;
    std::vector<GeneratorOp> ops;
};

namespace detail {

inline TensorType float_tensor(Shape shape) { return {DType::Float32, std::move(shape)}; }

/// SAME padding for an odd kernel at stride 1: (k - 1) / 2 on each side of each axis.
inline std::vector<std::int64_t> same_pads(const Shape& kernel) {
    const std::int64_t h = (kernel[2] - 1) / 2, w = (kernel[3] - 1) / 2;
    return {h, w, h, w};
}

/// A convolution with the kernel's own size, SAME padding, `stride` and `activation`;
/// grouped when the kernel has fewer input channels than the image; a third input is a
/// bias with one value per output channel.
inline AttributeBuilder conv_builder(std::int64_t stride, Activation activation) {
    return [=](std::span<const TensorType> in) -> std::optional<Attributes> {
        if (in[0].shape.rank() != 4 || in[1].shape.rank() != 4 || in[1].shape[1] == 0) return std::nullopt;
        if (in[1].shape[2] % 2 == 0 || in[1].shape[3] % 2 == 0) return std::nullopt;
        if (in.size() == 3 && in[2].shape != Shape{in[1].shape[0]}) return std::nullopt;
        if (in[0].shape[1] % in[1].shape[1] != 0) return std::nullopt;
        Attributes a;
        a.set("strides", std::vector<std::int64_t>{stride, stride});
        a.set("pads", same_pads(in[1].shape));
        a.set("group", in[0].shape[1] / in[1].shape[1]);
        a.set("activation", static_cast<std::int64_t>(activation));
        return a;
    };
}

/// A 3x3 pool at stride 1 with SAME padding; an average pool divides by 9 everywhere
/// (count_include_pad, PyTorch's default and the convolution with a pooling kernel).
inline AttributeBuilder pool_builder(bool average) {
    return [=](std::span<const TensorType> in) -> std::optional<Attributes> {
        if (in[0].shape.rank() != 4) return std::nullopt;
        Attributes a;
        a.set("kernel_shape", std::vector<std::int64_t>{3, 3});
        a.set("pads", std::vector<std::int64_t>{1, 1, 1, 1});
        if (average) a.set("count_include_pad", std::int64_t{1});
        return a;
    };
}

inline AttributeBuilder axis_builder(std::int64_t axis) {
    return [=](std::span<const TensorType> in) -> std::optional<Attributes> {
        if (in[0].shape.rank() <= axis) return std::nullopt;
        Attributes a;
        a.set("axis", axis);
        return a;
    };
}

/// Split into two equal halves along `axis`.
inline AttributeBuilder halves_builder(std::int64_t axis) {
    return [=](std::span<const TensorType> in) -> std::optional<Attributes> {
        if (in[0].shape.rank() <= axis) return std::nullopt;
        const std::int64_t d = in[0].shape[static_cast<int>(axis)];
        if (d < 2 || d % 2 != 0) return std::nullopt;
        Attributes a;
        a.set("axis", axis);
        a.set("split", std::vector<std::int64_t>{d / 2, d / 2});
        return a;
    };
}

/// The 2-D transpose.
inline AttributeBuilder transpose_2d_builder() {
    return [](std::span<const TensorType> in) -> std::optional<Attributes> {
        if (in[0].shape.rank() != 2) return std::nullopt;
        Attributes a;
        a.set("perm", std::vector<std::int64_t>{1, 0});
        return a;
    };
}

/// Enlarge a smaller conv kernel to 3x3.
inline AttributeBuilder enlarge_builder() {
    return [](std::span<const TensorType> in) -> std::optional<Attributes> {
        const Shape& k = in[0].shape;
        if (k.rank() != 4 || k[2] > 3 || k[3] > 3 || (k[2] == 3 && k[3] == 3)) return std::nullopt;
        Attributes a;
        a.set("kernel_shape", std::vector<std::int64_t>{3, 3});
        return a;
    };
}

/// Element-wise ops take equal shapes or a scalar (shape {1}) second operand.
inline AttributeBuilder elementwise_builder(bool scalar) {
    return [=](std::span<const TensorType> in) -> std::optional<Attributes> {
        const bool is_scalar = in[1].shape == Shape{1};
        if (scalar ? !is_scalar || in[0].shape == Shape{1} : in[0].shape != in[1].shape) return std::nullopt;
        return Attributes{};
    };
}

/// 2-D matrix products only (as TASO): batched products of small rank-4 kernels are
/// element-wise products in disguise.
inline AttributeBuilder matrix_builder() {
    return [](std::span<const TensorType> in) -> std::optional<Attributes> {
        if (in[0].shape.rank() != 2 || in[1].shape.rank() != 2) return std::nullopt;
        return Attributes{};
    };
}

/// A reduction over the last axis of a matrix, keeping it (a row's sum, mean or max).
inline AttributeBuilder row_reduce_builder() {
    return [](std::span<const TensorType> in) -> std::optional<Attributes> {
        if (in[0].shape.rank() != 2) return std::nullopt;
        Attributes a;
        a.set("axes", std::vector<std::int64_t>{1});
        a.set("keepdims", std::int64_t{1});
        return a;
    };
}

/// Nearest 2x upsampling of an image as PyTorch's nn.Upsample exports it (asymmetric
/// coordinates, floor), in Resize's canonical form.
inline AttributeBuilder upsample_builder() {
    return [](std::span<const TensorType> in) -> std::optional<Attributes> {
        if (in[0].shape.rank() != 4) return std::nullopt;
        Attributes a;
        a.set("mode", std::string("nearest"));
        a.set("coordinate_transformation_mode", std::string("asymmetric"));
        a.set("nearest_mode", std::string("floor"));
        a.set("scales", std::vector<double>{1.0, 1.0, 2.0, 2.0});
        ::rlflow::detail::ResizeOp::normalize(a, in, "generator op upsample2");
        return a;
    };
}

inline AttributeBuilder no_attributes() {
    return [](std::span<const TensorType>) -> std::optional<Attributes> { return Attributes{}; };
}

}  // namespace detail

/// Every op the generator knows: TASO's generator inputs (Jia et al., SOSP 2019), two
/// variables of each kind: matrices (2,4), square weights (4,4), images (2,4,5,5), conv
/// kernels 3x3, 1x1, 1x3, 3x1 and a depthwise 3x3 (4,1,3,3), a scalar (shape {1}) and
/// biases (4); TASO's constants: a 3x3 identity kernel, a depthwise 3x3 average-pooling
/// kernel, an identity matrix and ones; TASO's ops; and the extended ops, ops of modern
/// exports with an exact form and axioms: row sums, means and maxima, and nearest 2x
/// upsampling. Not among them: LeakyRelu, HardSigmoid and HardSwish, whose constants
/// (0.01, 0.2, 1/6 as float32) have no exact form, so the generator could not tell their
/// graphs apart exactly; and strided Slice and Expand, whose attributes hold the
/// enumeration's dims in a form no rule term spells for every shape (a canonical Slice of
/// every other row ends at dim or dim - 1 by parity).
[[nodiscard]] inline GeneratorSpace generator_space() {
    using detail::float_tensor;
    GeneratorSpace space;
    const auto add = [&](const std::string& name, Shape shape, int count, TensorRole role) {
        for (int i = 1; i <= count; ++i)
            space.variables.push_back({name + std::to_string(i), float_tensor(shape), role, std::nullopt, {}});
    };
    add("x", {2, 4}, 2, TensorRole::data);
    add("w", {4, 4}, 2, TensorRole::weight);
    add("i", {2, 4, 5, 5}, 2, TensorRole::data);
    add("k", {4, 4, 3, 3}, 2, TensorRole::weight);
    add("p", {4, 4, 1, 1}, 2, TensorRole::weight);
    add("h", {4, 4, 1, 3}, 1, TensorRole::weight);
    add("v", {4, 4, 3, 1}, 1, TensorRole::weight);
    add("d", {4, 1, 3, 3}, 1, TensorRole::weight);
    add("s", {1}, 1, TensorRole::scalar);
    // Convolution biases: every convolution of a trained network carries one once batch
    // norms are folded, and rules about bias-free convolutions do not match it. They are
    // read by the biased convolutions and by the ops that combine biases as the kernels'
    // laws combine kernels (sums, scalings, channel concats and splits).
    for (int i = 1; i <= 2; ++i)
        space.variables.push_back({"b" + std::to_string(i), float_tensor({4}), TensorRole::bias, std::nullopt,
                                   {"add", "scale", "concat0", "split0", "conv_s1_bias", "conv_s1_relu_bias",
                                    "conv_s2_bias", "conv_s2_relu_bias"}});
    const auto constant = [&](const std::string& name, Shape shape, TensorRole role, GeneratorConstant value,
                              std::vector<std::string> readers) {
        space.variables.push_back({name, float_tensor(std::move(shape)), role, value, std::move(readers)});
    };
    // TASO's constant laws: conv(x, identity kernel) = x and conv(x, pooling kernel) =
    // avgpool(x) (stride 1, no activation), matmul(x, I) = x, x * ones = x; and the adds
    // that fold an identity into a kernel or a matrix (conv(x, k) + x = conv(x, k + I)).
    constant("eye_kernel", {4, 4, 3, 3}, TensorRole::weight, {ConstantFill::identity, 1, 0}, {"conv_s1", "add"});
    constant("pool_kernel", {4, 1, 3, 3}, TensorRole::weight, {ConstantFill::uniform, 4900, 2}, {"conv_s1"});  // 1/9
    constant("eye", {4, 4}, TensorRole::weight, {ConstantFill::identity, 1, 0}, {"matmul", "add"});
    constant("ones", {2, 4}, TensorRole::data, {ConstantFill::uniform, 1, 0}, {"mul"});
    using detail::conv_builder;
    using Slot = RoleSignature::Slot;
    const RoleSignature unary{{Slot::same}}, binary{{Slot::same, Slot::same}}, on_data{{Slot::data}},
        weighted{{Slot::same, Slot::weight}}, scaled{{Slot::same, Slot::scalar}}, conv{{Slot::data, Slot::weight}, true},
        biased_conv{{Slot::data, Slot::weight, Slot::bias}, true}, on_weight{{Slot::weight}};
    space.ops = {
        {"matmul", OpKind::MatMul, 2, detail::matrix_builder(), weighted},
        {"add", OpKind::Add, 2, detail::elementwise_builder(false), binary},
        {"mul", OpKind::Mul, 2, detail::elementwise_builder(false), binary},
        {"scale", OpKind::Mul, 2, detail::elementwise_builder(true), scaled},
        {"relu", OpKind::Relu, 1, detail::no_attributes(), on_data},
        {"conv_s1", OpKind::Conv2D, 2, conv_builder(1, Activation::None), conv},
        {"conv_s1_relu", OpKind::Conv2D, 2, conv_builder(1, Activation::Relu), conv},
        {"conv_s2", OpKind::Conv2D, 2, conv_builder(2, Activation::None), conv},
        {"conv_s2_relu", OpKind::Conv2D, 2, conv_builder(2, Activation::Relu), conv},
        {"conv_s1_bias", OpKind::Conv2D, 3, conv_builder(1, Activation::None), biased_conv},
        {"conv_s1_relu_bias", OpKind::Conv2D, 3, conv_builder(1, Activation::Relu), biased_conv},
        {"conv_s2_bias", OpKind::Conv2D, 3, conv_builder(2, Activation::None), biased_conv},
        {"conv_s2_relu_bias", OpKind::Conv2D, 3, conv_builder(2, Activation::Relu), biased_conv},
        {"concat0", OpKind::Concat, 2, detail::axis_builder(0), binary},
        {"concat1", OpKind::Concat, 2, detail::axis_builder(1), binary},
        {"split0", OpKind::Split, 1, detail::halves_builder(0), unary},
        {"split1", OpKind::Split, 1, detail::halves_builder(1), unary},
        {"transpose", OpKind::Transpose, 1, detail::transpose_2d_builder(), unary},
        {"enlarge", OpKind::Enlarge, 1, detail::enlarge_builder(), on_weight},
        {"avgpool", OpKind::AveragePool, 1, detail::pool_builder(true), on_data},
        {"maxpool", OpKind::MaxPool, 1, detail::pool_builder(false), on_data},
        {"reducesum1", OpKind::ReduceSum, 1, detail::row_reduce_builder(), unary, true},
        {"reducemean1", OpKind::ReduceMean, 1, detail::row_reduce_builder(), unary, true},
        {"reducemax1", OpKind::ReduceMax, 1, detail::row_reduce_builder(), on_data, true},
        {"upsample2", OpKind::Resize, 1, detail::upsample_builder(), on_data, true},
    };
    return space;
}

/// TASO's space: generator_space() without the extended ops. `rlflow rules generate`
/// enumerates it unless `--ops` names ops.
[[nodiscard]] inline GeneratorSpace default_generator_space() {
    GeneratorSpace space = generator_space();
    std::erase_if(space.ops, [](const GeneratorOp& op) { return op.extended; });
    return space;
}

/// `space` restricted to the ops named in `names`, in `space`'s order (all variables
/// kept). Throws precondition_error naming an unknown op.
[[nodiscard]] inline GeneratorSpace restrict_ops(const GeneratorSpace& space, std::span<const std::string> names) {
    GeneratorSpace out{space.variables, {}};
    for (const std::string& name : names)
        RLFLOW_EXPECTS(std::any_of(space.ops.begin(), space.ops.end(), [&](const GeneratorOp& o) { return o.name == name; }),
                       precondition_error, "unknown generator op '" + name + "'");
    for (const GeneratorOp& op : space.ops)
        if (std::find(names.begin(), names.end(), op.name) != names.end()) out.ops.push_back(op);
    return out;
}

}  // namespace rlflow::synth
