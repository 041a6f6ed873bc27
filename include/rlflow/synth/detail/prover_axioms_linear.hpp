#pragma once
/// \file
/// Operator axioms of the prover (synth/prover.hpp), in the rule text form: convolution
/// (bilinear, per batch element and per output channel), kernels grown by Enlarge, and
/// MatMul and Gemm. Their instances and guards are in detail/prover_axioms.hpp.

#include <string_view>

namespace rlflow::synth::detail {

/// Convolution is bilinear and acts per batch element and per output channel. Where
/// an Add would broadcast, or concatenated parts could split unevenly, same_shape keeps the
/// target defined; the concat-of-bias form is guarded by its target's convolutions instead
/// (bias sizes need not follow the weights otherwise).
inline constexpr std::string_view conv_axioms = R"(
rule conv_of_input_sum
  var x y w
  src a = Add(x, y)
  src c = Conv2D(a, w) kernel_shape=$k strides=$s pads=$p dilations=$d group=$g activation=0
  dst e = Conv2D(x, w) kernel_shape=$k strides=$s pads=$p dilations=$d group=$g activation=0
  dst f = Conv2D(y, w) kernel_shape=$k strides=$s pads=$p dilations=$d group=$g activation=0
  dst h = Add(e, f)
  out c -> h
  require same_shape(x, y)
end

rule conv_of_weight_sum
  var x v w
  src a = Add(v, w)
  src c = Conv2D(x, a) kernel_shape=$k strides=$s pads=$p dilations=$d group=$g activation=0
  dst e = Conv2D(x, v) kernel_shape=$k strides=$s pads=$p dilations=$d group=$g activation=0
  dst f = Conv2D(x, w) kernel_shape=$k strides=$s pads=$p dilations=$d group=$g activation=0
  dst h = Add(e, f)
  out c -> h
  require same_shape(v, w)
end

rule conv_sum_of_channel_parts
  var x y v w
  src e = Conv2D(x, v) kernel_shape=$k strides=$s pads=$p dilations=$d group=1 activation=0
  src f = Conv2D(y, w) kernel_shape=$k strides=$s pads=$p dilations=$d group=1 activation=0
  src h = Add(e, f)
  dst a = Concat(x, y) axis=1
  dst b = Concat(v, w) axis=1
  dst c = Conv2D(a, b) kernel_shape=$k strides=$s pads=$p dilations=$d group=1 activation=0
  out h -> c
  require same_shape(x, y)
  require same_shape(v, w)
end

rule conv_of_batch_concat
  var x y w
  src c = Concat(x, y) axis=0
  src v = Conv2D(c, w) kernel_shape=$k strides=$s pads=$p dilations=$d group=$g activation=$a
  dst e = Conv2D(x, w) kernel_shape=$k strides=$s pads=$p dilations=$d group=$g activation=$a
  dst f = Conv2D(y, w) kernel_shape=$k strides=$s pads=$p dilations=$d group=$g activation=$a
  dst h = Concat(e, f) axis=0
  out v -> h
end

rule channel_concat_of_convs
  var x v w
  src e = Conv2D(x, v) kernel_shape=$k strides=$s pads=$p dilations=$d group=1 activation=$a
  src f = Conv2D(x, w) kernel_shape=$k strides=$s pads=$p dilations=$d group=1 activation=$a
  src c = Concat(e, f) axis=1
  dst u = Concat(v, w) axis=0
  dst h = Conv2D(x, u) kernel_shape=$k strides=$s pads=$p dilations=$d group=1 activation=$a
  out c -> h
end

rule conv_of_weight_concat
  var x v w
  src u = Concat(v, w) axis=0
  src h = Conv2D(x, u) kernel_shape=$k strides=$s pads=$p dilations=$d group=1 activation=$a
  dst e = Conv2D(x, v) kernel_shape=$k strides=$s pads=$p dilations=$d group=1 activation=$a
  dst f = Conv2D(x, w) kernel_shape=$k strides=$s pads=$p dilations=$d group=1 activation=$a
  dst c = Concat(e, f) axis=1
  out h -> c
end

rule channel_concat_of_convs_bias
  var x v w b1 b2
  src e = Conv2D(x, v, b1) kernel_shape=$k strides=$s pads=$p dilations=$d group=1 activation=$a
  src f = Conv2D(x, w, b2) kernel_shape=$k strides=$s pads=$p dilations=$d group=1 activation=$a
  src c = Concat(e, f) axis=1
  dst u = Concat(v, w) axis=0
  dst b = Concat(b1, b2) axis=0
  dst h = Conv2D(x, u, b) kernel_shape=$k strides=$s pads=$p dilations=$d group=1 activation=$a
  out c -> h
end

rule conv_of_weight_concat_bias
  var x v w b1 b2
  src u = Concat(v, w) axis=0
  src b = Concat(b1, b2) axis=0
  src h = Conv2D(x, u, b) kernel_shape=$k strides=$s pads=$p dilations=$d group=1 activation=$a
  dst e = Conv2D(x, v, b1) kernel_shape=$k strides=$s pads=$p dilations=$d group=1 activation=$a
  dst f = Conv2D(x, w, b2) kernel_shape=$k strides=$s pads=$p dilations=$d group=1 activation=$a
  dst c = Concat(e, f) axis=1
  out h -> c
end
)";

/// A convolution with its kernel Enlarge'd (zero-padded, centred) and each pad grown by
/// half the growth computes the same. The target's kernel_shape and pads are not functions
/// of the source conv, and a rule's symbols must be bound by its source, so a second
/// convolution on the same input (the witness `c2`, unchanged by the rewrite) binds them:
/// exactly the situation of merging two convolutions of different kernel sizes.
inline constexpr std::string_view enlarge_axioms = R"(
rule conv_enlarge
  var x w1 w2
  src c1 = Conv2D(x, w1) kernel_shape=$k1 strides=$s pads=$p1 dilations=[1, 1] group=$g activation=$a
  src c2 = Conv2D(x, w2) kernel_shape=$k strides=$s2 pads=$p dilations=$d2 group=$g2 activation=$a2
  dst e = Enlarge(w1) kernel_shape=$k
  dst c = Conv2D(x, e) kernel_shape=$k strides=$s pads=$p dilations=[1, 1] group=$g activation=$a
  out c1 -> c
  require kernel_enlargeable($k1, $p1, $k, $p)
end

rule conv_enlarge_bias
  var x w1 w2 b1 b2
  src c1 = Conv2D(x, w1, b1) kernel_shape=$k1 strides=$s pads=$p1 dilations=[1, 1] group=$g activation=$a
  src c2 = Conv2D(x, w2, b2) kernel_shape=$k strides=$s2 pads=$p dilations=$d2 group=$g2 activation=$a2
  dst e = Enlarge(w1) kernel_shape=$k
  dst c = Conv2D(x, e, b1) kernel_shape=$k strides=$s pads=$p dilations=[1, 1] group=$g activation=$a
  out c1 -> c
  require kernel_enlargeable($k1, $p1, $k, $p)
end
)";

/// The same for the SAME-padded kernels TASO enumerates, enlarged to 3x3; with literal
/// kernels and pads the target needs no witness.
inline constexpr std::string_view literal_enlarge_axiom = R"(
rule conv_enlarge_{name}
  var x w
  src c = Conv2D(x, w) kernel_shape={kernel} strides=$s pads={pads} dilations=[1, 1] group=$g activation=$a
  dst e = Enlarge(w) kernel_shape=[3, 3]
  dst f = Conv2D(x, e) kernel_shape=[3, 3] strides=$s pads=[1, 1, 1, 1] dilations=[1, 1] group=$g activation=$a
  out c -> f
end
)";

/// MatMul laws. Associativity needs matrices (with a vector or batch dims one side may be
/// defined and the other not), distributivity equal shapes (a broadcast Add could pair a
/// row with a matrix), and the sum of products the products' shapes equal.
inline constexpr std::string_view matmul_axioms = R"(
rule matmul_associative
  var x y z
  src a = MatMul(x, y)
  src b = MatMul(a, z)
  dst c = MatMul(y, z)
  dst d = MatMul(x, c)
  out b -> d
  require rank_equals(x, 2)
  require rank_equals(y, 2)
  require rank_equals(z, 2)
end

rule matmul_associative_reversed
  var x y z
  src a = MatMul(y, z)
  src b = MatMul(x, a)
  dst c = MatMul(x, y)
  dst d = MatMul(c, z)
  out b -> d
  require rank_equals(x, 2)
  require rank_equals(y, 2)
  require rank_equals(z, 2)
end

rule matmul_distributes_left
  var x y z
  src a = Add(y, z)
  src m = MatMul(x, a)
  dst p = MatMul(x, y)
  dst q = MatMul(x, z)
  dst s = Add(p, q)
  out m -> s
  require same_shape(y, z)
end

rule matmul_factors_left
  var x y z
  src p = MatMul(x, y)
  src q = MatMul(x, z)
  src s = Add(p, q)
  dst a = Add(y, z)
  dst m = MatMul(x, a)
  out s -> m
  require same_shape(y, z)
end

rule matmul_distributes_right
  var x y z
  src a = Add(x, y)
  src m = MatMul(a, z)
  dst p = MatMul(x, z)
  dst q = MatMul(y, z)
  dst s = Add(p, q)
  out m -> s
  require same_shape(x, y)
end

rule matmul_factors_right
  var x y z
  src p = MatMul(x, z)
  src q = MatMul(y, z)
  src s = Add(p, q)
  dst a = Add(x, y)
  dst m = MatMul(a, z)
  out s -> m
  require same_shape(x, y)
end

rule matmul_of_column_concat
  var x y z
  src c = Concat(y, z) axis=1
  src m = MatMul(x, c)
  dst p = MatMul(x, y)
  dst q = MatMul(x, z)
  dst e = Concat(p, q) axis=rank(x)-1
  out m -> e
  require rank_equals(y, 2)
end

rule column_concat_of_matmuls
  var x y z
  src p = MatMul(x, y)
  src q = MatMul(x, z)
  src e = Concat(p, q) axis=rank(x)-1
  dst c = Concat(y, z) axis=1
  dst m = MatMul(x, c)
  out e -> m
  require rank_equals(y, 2)
  require rank_equals(z, 2)
end

rule matmul_of_column_concat_triple
  var x y z u
  src c = Concat(y, z, u) axis=1
  src m = MatMul(x, c)
  dst p = MatMul(x, y)
  dst q = MatMul(x, z)
  dst r = MatMul(x, u)
  dst e = Concat(p, q, r) axis=rank(x)-1
  out m -> e
  require rank_equals(y, 2)
end

rule column_concat_of_matmuls_triple
  var x y z u
  src p = MatMul(x, y)
  src q = MatMul(x, z)
  src r = MatMul(x, u)
  src e = Concat(p, q, r) axis=rank(x)-1
  dst c = Concat(y, z, u) axis=1
  dst m = MatMul(x, c)
  out e -> m
  require rank_equals(y, 2)
  require rank_equals(z, 2)
  require rank_equals(u, 2)
end

rule matmul_sum_of_blocks
  var x y z w
  src p = MatMul(x, y)
  src q = MatMul(z, w)
  src s = Add(p, q)
  dst a = Concat(x, z) axis=1
  dst b = Concat(y, w) axis=0
  dst m = MatMul(a, b)
  out s -> m
  require rank_equals(x, 2)
  require rank_equals(y, 2)
  require rank_equals(z, 2)
  require rank_equals(w, 2)
  require same_shape(p, q)
end

rule gemm_definition
  var a b c
  src g = Gemm(a, b, c) alpha=1 beta=1 transA=0 transB=0
  dst m = MatMul(a, b)
  dst s = Add(m, c)
  out g -> s
end
)";

}  // namespace rlflow::synth::detail
