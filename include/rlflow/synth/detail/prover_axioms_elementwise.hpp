#pragma once
/// \file
/// Operator axioms of the prover (synth/prover.hpp), in the rule text form: the definition
/// of a fused activation, pooling of a concatenation, and the laws of element-wise ops,
/// of multiplication by a scalar and of Relu. Their instances and guards are in
/// detail/prover_axioms.hpp.

#include <string_view>

namespace rlflow::synth::detail {

/// Conv + fused activation: the definition of Conv2D's `activation` attribute.
inline constexpr std::string_view conv_activation_axiom = R"(
rule conv_{act}_fusion{suffix}
  var x w{bias}
  src c = Conv2D(x, w{bias}) kernel_shape=$k strides=$s pads=$p dilations=$d group=$g activation=0
  src a = {op}(c)
  dst f = Conv2D(x, w{bias}) kernel_shape=$k strides=$s pads=$p dilations=$d group=$g activation={code}
  out a -> f
end
)";

/// Pooling is per batch element and channel, so it commutes with concatenation there.
inline constexpr std::string_view pool_concat_axiom = R"(
rule {pool}_of_concat_axis{axis}
  var x y
  src c = Concat(x, y) axis={axis}
  src p = {op}(c) kernel_shape=$k strides=$s pads=$p dilations=$d ceil_mode=$m{extra}
  dst a = {op}(x) kernel_shape=$k strides=$s pads=$p dilations=$d ceil_mode=$m{extra}
  dst b = {op}(y) kernel_shape=$k strides=$s pads=$p dilations=$d ceil_mode=$m{extra}
  dst e = Concat(a, b) axis={axis}
  out p -> e
end
)";

/// Element-wise laws. Broadcasting keeps them exact: where the source broadcasts, so does
/// the target (per axis, sizes are equal or 1 on both sides).
inline constexpr std::string_view elementwise_axioms = R"(
rule add_commutative
  var x y
  src a = Add(x, y)
  dst b = Add(y, x)
  out a -> b
end

rule add_associative
  var x y z
  src a = Add(x, y)
  src b = Add(a, z)
  dst c = Add(y, z)
  dst d = Add(x, c)
  out b -> d
end

rule add_associative_reversed
  var x y z
  src a = Add(y, z)
  src b = Add(x, a)
  dst c = Add(x, y)
  dst d = Add(c, z)
  out b -> d
end

rule mul_commutative
  var x y
  src a = Mul(x, y)
  dst b = Mul(y, x)
  out a -> b
end

rule mul_associative
  var x y z
  src a = Mul(x, y)
  src b = Mul(a, z)
  dst c = Mul(y, z)
  dst d = Mul(x, c)
  out b -> d
end

rule mul_associative_reversed
  var x y z
  src a = Mul(y, z)
  src b = Mul(x, a)
  dst c = Mul(x, y)
  dst d = Mul(c, z)
  out b -> d
end

rule mul_distributes_over_add
  var x y z
  src a = Add(x, y)
  src m = Mul(a, z)
  dst p = Mul(x, z)
  dst q = Mul(y, z)
  dst s = Add(p, q)
  out m -> s
end

rule mul_factors_out_of_add
  var x y z
  src p = Mul(x, z)
  src q = Mul(y, z)
  src s = Add(p, q)
  dst a = Add(x, y)
  dst m = Mul(a, z)
  out s -> m
end

rule mul_by_one
  var x
  src one = Constant() value=1
  src m = Mul(x, one)
  out m -> x
  require rank_equals(one, 0)
end

rule add_of_concats
  var x y z w
  sym ax
  src c = Concat(x, y) axis=$ax
  src e = Concat(z, w) axis=$ax
  src a = Add(c, e)
  dst p = Add(x, z)
  dst q = Add(y, w)
  dst f = Concat(p, q) axis=$ax
  out a -> f
  require same_shape(x, z)
  require same_shape(y, w)
end

rule mul_of_concats
  var x y z w
  sym ax
  src c = Concat(x, y) axis=$ax
  src e = Concat(z, w) axis=$ax
  src a = Mul(c, e)
  dst p = Mul(x, z)
  dst q = Mul(y, w)
  dst f = Concat(p, q) axis=$ax
  out a -> f
  require same_shape(x, z)
  require same_shape(y, w)
end
)";

/// Multiplication by a scalar (a rank-0 tensor) commutes with linear ops.
inline constexpr std::string_view scalar_axioms = R"(
rule scalar_mul_transpose
  var x s
  src m = Mul(x, s)
  src t = Transpose(m) perm=$p
  dst u = Transpose(x) perm=$p
  dst n = Mul(u, s)
  out t -> n
  require rank_equals(s, 0)
end

rule scalar_mul_matmul
  var x y s
  src m = Mul(x, s)
  src p = MatMul(m, y)
  dst q = MatMul(x, y)
  dst n = Mul(q, s)
  out p -> n
  require rank_equals(s, 0)
end

rule scalar_mul_matmul_right
  var x y s
  src m = Mul(y, s)
  src p = MatMul(x, m)
  dst q = MatMul(x, y)
  dst n = Mul(q, s)
  out p -> n
  require rank_equals(s, 0)
end

rule scalar_mul_concat
  var x y s
  sym ax
  src m = Mul(x, s)
  src n = Mul(y, s)
  src c = Concat(m, n) axis=$ax
  dst d = Concat(x, y) axis=$ax
  dst e = Mul(d, s)
  out c -> e
  require rank_equals(s, 0)
end

rule scalar_mul_conv
  var x w s
  src m = Mul(x, s)
  src c = Conv2D(m, w) kernel_shape=$k strides=$st pads=$p dilations=$d group=$g activation=0
  dst e = Conv2D(x, w) kernel_shape=$k strides=$st pads=$p dilations=$d group=$g activation=0
  dst n = Mul(e, s)
  out c -> n
  require rank_equals(s, 0)
end

rule scalar_mul_conv_weight
  var x w s
  src m = Mul(w, s)
  src c = Conv2D(x, m) kernel_shape=$k strides=$st pads=$p dilations=$d group=$g activation=0
  dst e = Conv2D(x, w) kernel_shape=$k strides=$st pads=$p dilations=$d group=$g activation=0
  dst n = Mul(e, s)
  out c -> n
  require rank_equals(s, 0)
end
)";

/// Relu commutes with data movement.
inline constexpr std::string_view relu_axioms = R"(
rule relu_of_concat
  var x y
  sym ax
  src c = Concat(x, y) axis=$ax
  src r = Relu(c)
  dst a = Relu(x)
  dst b = Relu(y)
  dst d = Concat(a, b) axis=$ax
  out r -> d
end

rule relu_of_transpose
  var x
  src t = Transpose(x) perm=$p
  src r = Relu(t)
  dst a = Relu(x)
  dst u = Transpose(a) perm=$p
  out r -> u
end

rule split_of_relu
  var x
  sym ax sp
  src r = Relu(x)
  src s = Split(r) axis=$ax split=$sp outputs=2
  dst t = Split(x) axis=$ax split=$sp outputs=2
  dst a = Relu(t:0)
  dst b = Relu(t:1)
  out s:0 -> a
  out s:1 -> b
end
)";

}  // namespace rlflow::synth::detail
