#pragma once
/// \file
/// Operator axioms of the prover (synth/prover.hpp), in the rule text form: Concat,
/// Split, Transpose and the views (Identity, a no-op Reshape). Their instances and guards
/// are in detail/prover_axioms.hpp.

#include <string_view>

namespace rlflow::synth::detail {

/// Concat, Split, Transpose and views. Concat associativity is left out: TASO found it
/// breaks split bookkeeping. So is Reshape(Reshape(x, a), b) = Reshape(x, b): it holds for
/// the exact shapes graphs hold, but an axiom must hold for every value, and a `0` in b
/// copies a dim of the inner reshape on one side and of x on the other.
inline constexpr std::string_view movement_axioms = R"(
rule split_of_concat
  var x y
  sym ax
  src c = Concat(x, y) axis=$ax
  src s = Split(c) axis=$ax split=[dim(x, $ax), dim(y, $ax)] outputs=2
  out s:0 -> x
  out s:1 -> y
end

rule split_of_concat_triple
  var x y z
  sym ax
  src c = Concat(x, y, z) axis=$ax
  src s = Split(c) axis=$ax split=[dim(x, $ax), dim(y, $ax), dim(z, $ax)] outputs=3
  out s:0 -> x
  out s:1 -> y
  out s:2 -> z
end

rule concat_of_split
  var y
  sym ax sp
  src s = Split(y) axis=$ax split=$sp outputs=2
  src c = Concat(s:0, s:1) axis=$ax
  out c -> y
end

rule concat_of_split_triple
  var y
  sym ax sp
  src s = Split(y) axis=$ax split=$sp outputs=3
  src c = Concat(s:0, s:1, s:2) axis=$ax
  out c -> y
end

rule concat_grid_interchange
  var a b c d
  src r1 = Concat(a, b) axis=1
  src r2 = Concat(c, d) axis=1
  src g = Concat(r1, r2) axis=0
  dst c1 = Concat(a, c) axis=0
  dst c2 = Concat(b, d) axis=0
  dst h = Concat(c1, c2) axis=1
  out g -> h
  require same_shape(a, c)
  require same_shape(b, d)
end

rule transpose_pair_cancel
  var x
  src t1 = Transpose(x) perm=$p
  src t2 = Transpose(t1) perm=$q
  out t2 -> x
  require permutation_is_identity($p, $q)
end

rule transpose_pair_compose
  var x
  src t1 = Transpose(x) perm=$p
  src t2 = Transpose(t1) perm=$q
  dst t = Transpose(x) perm=compose($p, $q)
  out t2 -> t
end

rule transpose_of_matmul
  var x y
  src m = MatMul(x, y)
  src t = Transpose(m) perm=[1, 0]
  dst a = Transpose(y) perm=[1, 0]
  dst b = Transpose(x) perm=[1, 0]
  dst n = MatMul(a, b)
  out t -> n
  require rank_equals(x, 2)
  require rank_equals(y, 2)
end

rule transpose_of_row_concat
  var x y
  src c = Concat(x, y) axis=0
  src t = Transpose(c) perm=[1, 0]
  dst a = Transpose(x) perm=[1, 0]
  dst b = Transpose(y) perm=[1, 0]
  dst d = Concat(a, b) axis=1
  out t -> d
end

rule transpose_of_column_concat
  var x y
  src c = Concat(x, y) axis=1
  src t = Transpose(c) perm=[1, 0]
  dst a = Transpose(x) perm=[1, 0]
  dst b = Transpose(y) perm=[1, 0]
  dst d = Concat(a, b) axis=0
  out t -> d
end

rule transpose_of_add
  var x y
  src a = Add(x, y)
  src t = Transpose(a) perm=$p
  dst u = Transpose(x) perm=$p
  dst v = Transpose(y) perm=$p
  dst b = Add(u, v)
  out t -> b
  require same_shape(x, y)
end

rule transpose_of_mul
  var x y
  src a = Mul(x, y)
  src t = Transpose(a) perm=$p
  dst u = Transpose(x) perm=$p
  dst v = Transpose(y) perm=$p
  dst b = Mul(u, v)
  out t -> b
  require same_shape(x, y)
end

rule identity_elimination
  var x
  src i = Identity(x)
  out i -> x
end

rule noop_reshape
  var x
  src r = Reshape(x) shape=$s
  out r -> x
  require same_shape(x, r)
end
)";

}  // namespace rlflow::synth::detail
