#pragma once
/// \file
/// The prover's axioms about tensor constants (rewrite/constant_tensor.hpp), after TASO's
/// constant axioms (the TASO paper, Jia et al., SOSP 2019): a convolution with an identity
/// kernel, an average pool as a depthwise convolution with a uniform 1/9 kernel, products
/// with an identity matrix and with ones. prover.hpp validates and encodes them like every
/// other axiom.
///
/// Each is written with the literal attributes that normalisation gives the generator's
/// ops (generator_config.hpp): a 3x3 convolution at stride 1 with SAME pads, dilations 1,
/// no activation; a 3x3 average pool with pads 1 that counts the padding.

#include <rlflow/rewrite/builtin_rules.hpp>
#include <rlflow/rewrite/detail/rule_text_writer.hpp>
#include <rlflow/synth/detail/rewrite_names.hpp>

#include <array>
#include <string>
#include <string_view>

namespace rlflow::synth::detail {

/// The element of a 3x3 average-pooling kernel as a rule writes it: 1/9 rounded to
/// float32 (GeneratorConstant::rule_value), so the axiom's literal is the one generated
/// rules hold. The convolution multiplies by this float where AveragePool divides by 9, so
/// the axiom holds up to float32 rounding (relative 3e-8, well within the numeric
/// validation's tolerance); the prover, like TASO, reads it as exact.
inline constexpr double average_pool_kernel_value = static_cast<double>(static_cast<float>(1.0 / 9));

/// A convolution with an identity kernel is the identity: output channel o reads input
/// channel (o / I) * I + o mod I = o, where I = kernel dim 1 is the channels per group. The
/// kernel's shape ties its output channels to the input's, so the output has the input's
/// shape; SAME pads at stride and dilation 1 put the kernel's centre on each pixel.
inline constexpr std::string_view identity_conv_axiom = R"(
rule conv_identity_kernel_{name}
  var x
  src i = Constant() value=1 shape=[dim(x, 1), {inputs}, {size}, {size}] fill="identity"
  src c = Conv2D(x, i) kernel_shape=[{size}, {size}] strides=[1, 1] pads=[{pad}, {pad}, {pad}, {pad}] dilations=[1, 1] group={group} activation=0
  out c -> x
end
)";

/// One instance of identity_conv_axiom: the kernel's input channels, size, SAME pad and
/// the convolution's group, as rule text.
struct IdentityKernel {
    std::string_view name, inputs, size, pad, group;
};

/// The identity kernels: group 1 (C, C, k, k) and depthwise (C, 1, 3, 3) with group C. A
/// depthwise 1x1 identity is all ones, which a graph shows as a uniform constant, so it
/// is left out.
inline constexpr std::array<IdentityKernel, 3> identity_conv_kernels{{
    {"1x1", "dim(x, 1)", "1", "0", "1"},
    {"3x3", "dim(x, 1)", "3", "1", "1"},
    {"3x3_depthwise", "1", "3", "1", "dim(x, 1)"},
}};

/// An average pool that counts its padding is the depthwise convolution with a uniform
/// kernel of 1/9 (TASO's pooling kernel). An identity kernel of one input channel copies a
/// one-channel image to every output channel, which is what adding the image to a tensor of
/// that many channels does by broadcasting (y of rank 4, so that its dim 1 is the channels
/// the sum broadcasts over). Products with an identity matrix (on either side; a vector or
/// batch dims on the other) and with ones are the other operand: for ones, where the
/// product keeps that operand's shape (ones of a broadcastable shape, too).
inline constexpr std::string_view constant_axioms = R"(
rule conv_average_pool_kernel
  var x
  src p = Constant() value={pool_value} shape=[dim(x, 1), 1, 3, 3] fill="uniform"
  src c = Conv2D(x, p) kernel_shape=[3, 3] strides=[1, 1] pads=[1, 1, 1, 1] dilations=[1, 1] group=dim(x, 1) activation=0
  dst a = AveragePool(x) kernel_shape=[3, 3] strides=[1, 1] pads=[1, 1, 1, 1] dilations=[1, 1] ceil_mode=0 count_include_pad=1
  out c -> a
end

rule matmul_identity_right
  var x
  src i = Constant() value=1 shape=[dim(x, -1), dim(x, -1)] fill="identity"
  src m = MatMul(x, i)
  out m -> x
end

rule matmul_identity_left
  var x
  src i = Constant() value=1 shape=[dim(x, -2), dim(x, -2)] fill="identity"
  src m = MatMul(i, x)
  out m -> x
end

rule add_of_single_channel_identity_conv
  var x y
  src i = Constant() value=1 shape=[dim(y, 1), 1, 3, 3] fill="identity"
  src c = Conv2D(x, i) kernel_shape=[3, 3] strides=[1, 1] pads=[1, 1, 1, 1] dilations=[1, 1] group=1 activation=0
  src a = Add(y, c)
  dst b = Add(y, x)
  out a -> b
  require rank_equals(y, 4)
end

rule matmul_identity_left_vector
  var x
  src i = Constant() value=1 shape=[dim(x, 0), dim(x, 0)] fill="identity"
  src m = MatMul(i, x)
  out m -> x
  require rank_equals(x, 1)
end

rule mul_by_ones
  var x
  sym s
  src o = Constant() value=1 shape=$s fill="uniform"
  src m = Mul(x, o)
  out m -> x
  require same_shape(m, x)
end
)";

/// The text of the constant axioms.
[[nodiscard]] inline std::string constant_axioms_text() {
    std::string text;
    for (const IdentityKernel& k : identity_conv_kernels)
        text += substitute(std::string(identity_conv_axiom),
                           {{"name", k.name}, {"inputs", k.inputs}, {"size", k.size}, {"pad", k.pad}, {"group", k.group}});
    return text + substitute(std::string(constant_axioms), {{"pool_value", shortest_double(average_pool_kernel_value)}});
}

// Instances: images whose channel counts are not 1 (an identity kernel of one channel
// is a single 1, which a graph shows as uniform) and of odd and even sizes.
inline constexpr std::string_view constant_conv_instances = "x=(1,4,6,6); x=(2,3,5,7)";
inline constexpr std::string_view matmul_identity_right_instances = "x=(2,3); x=(2,4,3); x=(3,)";
inline constexpr std::string_view single_channel_identity_instances
    = "y=(1,4,5,5) x=(1,1,5,5); y=(2,3,6,6) x=(2,1,6,6); y=(1,3,5,5) x=(2,1,5,5)";
inline constexpr std::string_view matmul_identity_left_instances = "x=(3,2); x=(2,3,4)";
inline constexpr std::string_view matmul_identity_left_vector_instances = "x=(3,); x=(5,)";
inline constexpr std::string_view mul_by_ones_instances = "x=(2,3) $s=[2,3]; x=(2,3) $s=[1,3]; x=(4,) $s=[4]";

}  // namespace rlflow::synth::detail
