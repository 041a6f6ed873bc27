#pragma once
/// \file
/// Operator axioms of the prover (synth/prover.hpp), in the rule text form, for the ops of
/// modern exports: the reductions and nearest Resize, which the generator's extended space
/// enumerates, and strided Slice and Expand, for rules written by hand (`rlflow rules
/// verify`). Their instances and guards are in detail/prover_axioms.hpp.
///
/// Left out on purpose: Relu(ReduceMax(x)) = ReduceMax(Relu(x)) fails where a reduced axis
/// is empty (the float result is -infinity on one side and 0 on the other), and no
/// constraint of the rule language says "not empty"; an axiom must hold for every value.

#include <string_view>

namespace rlflow::synth::detail {

/// Reductions that are linear in their input (ReduceSum, ReduceMean; the mean of an empty
/// group is NaN on both sides): {op} and {name} substituted.
inline constexpr std::string_view linear_reduce_axioms = R"(
rule {name}_of_add
  var x y
  src a = Add(x, y)
  src r = {op}(a) axes=$a keepdims=$k
  dst p = {op}(x) axes=$a keepdims=$k
  dst q = {op}(y) axes=$a keepdims=$k
  dst s = Add(p, q)
  out r -> s
  require same_shape(x, y)
end

rule add_of_{name}s
  var x y
  src p = {op}(x) axes=$a keepdims=$k
  src q = {op}(y) axes=$a keepdims=$k
  src s = Add(p, q)
  dst a = Add(x, y)
  dst r = {op}(a) axes=$a keepdims=$k
  out s -> r
  require same_shape(x, y)
end

rule {name}_of_scalar_mul
  var x s
  src m = Mul(x, s)
  src r = {op}(m) axes=$a keepdims=$k
  dst p = {op}(x) axes=$a keepdims=$k
  dst n = Mul(p, s)
  out r -> n
  require rank_equals(s, 0)
end

)";

/// A sum of a matrix product's columns (rows) is the product with the summed columns (rows)
/// of its right (left) operand. Not for ReduceMean: over an empty axis the mean is NaN on one
/// side and a sum of no products, 0, on the other.
inline constexpr std::string_view reduce_sum_matmul_axioms = R"(
rule reduce_sum_of_matmul_columns
  var x y
  src m = MatMul(x, y)
  src r = ReduceSum(m) axes=[1] keepdims=1
  dst c = ReduceSum(y) axes=[1] keepdims=1
  dst n = MatMul(x, c)
  out r -> n
  require rank_equals(x, 2)
  require rank_equals(y, 2)
end

rule reduce_sum_of_matmul_rows
  var x y
  src m = MatMul(x, y)
  src r = ReduceSum(m) axes=[0] keepdims=1
  dst c = ReduceSum(x) axes=[0] keepdims=1
  dst n = MatMul(c, y)
  out r -> n
  require rank_equals(x, 2)
  require rank_equals(y, 2)
end
)";

/// Any reduction over axis 1 of rank-2 parts stacked along axis 0 reduces each part:
/// {op} and {name} substituted.
inline constexpr std::string_view reduce_concat_axiom = R"(
rule {name}_of_row_concat
  var x y
  src c = Concat(x, y) axis=0
  src r = {op}(c) axes=[1] keepdims=$k
  dst p = {op}(x) axes=[1] keepdims=$k
  dst q = {op}(y) axes=[1] keepdims=$k
  dst d = Concat(p, q) axis=0
  out r -> d
  require rank_equals(x, 2)
end
)";

/// A sum over the axis parts are concatenated on is the sum of the parts' sums.
inline constexpr std::string_view reduce_sum_concat_axiom = R"(
rule reduce_sum_of_column_concat
  var x y
  src c = Concat(x, y) axis=1
  src r = ReduceSum(c) axes=[1] keepdims=1
  dst p = ReduceSum(x) axes=[1] keepdims=1
  dst q = ReduceSum(y) axes=[1] keepdims=1
  dst s = Add(p, q)
  out r -> s
  require rank_equals(x, 2)
end
)";

/// Element-wise binary ops (Add, Mul) on equal shapes commute with any Slice and with
/// Expand: {op} and {name} substituted.
inline constexpr std::string_view binary_movement_axioms = R"(
rule slice_of_{name}
  var x y
  src a = {op}(x, y)
  src s = Slice(a) starts=$b ends=$e steps=$t
  dst p = Slice(x) starts=$b ends=$e steps=$t
  dst q = Slice(y) starts=$b ends=$e steps=$t
  dst d = {op}(p, q)
  out s -> d
  require same_shape(x, y)
end

rule {name}_of_expands
  var x y
  src p = Expand(x) shape=$s
  src q = Expand(y) shape=$s
  src a = {op}(p, q)
  dst b = {op}(x, y)
  dst e = Expand(b) shape=$s
  out a -> e
  require same_shape(x, y)
end
)";

/// Slice, Expand and nearest Resize only move elements, so element-wise ops commute with
/// them. A Resize that scales by [1, 1, 2, 2] has sizes twice its input's spatial dims
/// (ResizeOp: a scale of exactly 2 from given sizes means sizes of 2 x dim), so parts
/// concatenated after it had equal spatial dims before.
inline constexpr std::string_view movement_model_axioms = R"(
rule relu_of_slice
  var x
  src s = Slice(x) starts=$b ends=$e steps=$t
  src r = Relu(s)
  dst a = Relu(x)
  dst u = Slice(a) starts=$b ends=$e steps=$t
  out r -> u
end

rule slice_of_scalar_mul
  var x s
  src m = Mul(x, s)
  src c = Slice(m) starts=$b ends=$e steps=$t
  dst p = Slice(x) starts=$b ends=$e steps=$t
  dst n = Mul(p, s)
  out c -> n
  require rank_equals(s, 0)
end

rule relu_of_expand
  var x
  src e = Expand(x) shape=$s
  src r = Relu(e)
  dst a = Relu(x)
  dst f = Expand(a) shape=$s
  out r -> f
end

rule relu_of_nearest_resize
  var x
  src z = Resize(x) mode="nearest" coordinate_transformation_mode=$c nearest_mode=$n scales=$f sizes=$o
  src r = Relu(z)
  dst a = Relu(x)
  dst u = Resize(a) mode="nearest" coordinate_transformation_mode=$c nearest_mode=$n scales=$f sizes=$o
  out r -> u
end

rule add_of_nearest_resizes
  var x y
  src p = Resize(x) mode="nearest" coordinate_transformation_mode=$c nearest_mode=$n scales=$f sizes=$o
  src q = Resize(y) mode="nearest" coordinate_transformation_mode=$c nearest_mode=$n scales=$f sizes=$o
  src a = Add(p, q)
  dst b = Add(x, y)
  dst u = Resize(b) mode="nearest" coordinate_transformation_mode=$c nearest_mode=$n scales=$f sizes=$o
  out a -> u
  require same_shape(x, y)
end

rule channel_concat_of_nearest_resizes
  var x y
  src p = Resize(x) mode="nearest" coordinate_transformation_mode=$c nearest_mode=$n scales=[1, 1, 2, 2] sizes=$o
  src q = Resize(y) mode="nearest" coordinate_transformation_mode=$c nearest_mode=$n scales=[1, 1, 2, 2] sizes=$w
  src d = Concat(p, q) axis=1
  dst e = Concat(x, y) axis=1
  dst u = Resize(e) mode="nearest" coordinate_transformation_mode=$c nearest_mode=$n scales=[1, 1, 2, 2] sizes=[dim(d, 0), dim(d, 1), dim(d, 2), dim(d, 3)]
  out d -> u
end
)";

/// A 1x1 convolution at stride 1 works pixel by pixel, so it commutes with a nearest 2x
/// upsampling over the spatial axes (fused activation and groups included): {suffix} and
/// {bias} substituted.
inline constexpr std::string_view pointwise_conv_resize_axiom = R"(
rule pointwise_conv_of_upsample{suffix}
  var x w{bias}
  src z = Resize(x) mode="nearest" coordinate_transformation_mode=$c nearest_mode=$n scales=[1, 1, 2, 2] sizes=$o
  src c = Conv2D(z, w{bias}) kernel_shape=[1, 1] strides=[1, 1] pads=[0, 0, 0, 0] dilations=$d group=$g activation=$a
  dst e = Conv2D(x, w{bias}) kernel_shape=[1, 1] strides=[1, 1] pads=[0, 0, 0, 0] dilations=$d group=$g activation=$a
  dst u = Resize(e) mode="nearest" coordinate_transformation_mode=$c nearest_mode=$n scales=[1, 1, 2, 2] sizes=[dim(c, 0), dim(c, 1), dim(c, 2), dim(c, 3)]
  out c -> u
end
)";

}  // namespace rlflow::synth::detail
