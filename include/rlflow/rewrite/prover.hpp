#pragma once
/// \file
/// A Z3 prover for substitution rules: a rule is `proved` when its equality follows, in
/// first-order logic, from operator axioms of our own. Each axiom is itself a rule in the
/// rule text form, checked numerically (check_rule_numerically) before it is used.
///
/// **Semantics.** Tensors are one uninterpreted sort. Its intended model is every tensor
/// plus one "undefined" value ⊥: an op gives ⊥ where its normalisation or shape inference
/// rejects its inputs or attribute values, and on any ⊥ input. `defined(t)` says t ≠ ⊥.
/// Lists of Ints are a sort of their own, built by `list_n(a_0, ..., a_{n-1})` with
/// `length` and `element` axioms; `shape(t)` is t's dims as such a list (rank = length,
/// dim = element). An op is one function symbol per (op, input count, output, output
/// count), so Split's parts and Concat's arities are separate symbols. Its arguments are
/// its inputs, then its attributes in schema order (Reshape's `allowzero`, which
/// normalisation always erases, excepted): Int as Int, Ints as a list, Float and String as
/// constants of uninterpreted sorts, one per distinct value, pairwise distinct. A symbol
/// means "normalise the attributes as the graph does, then compute", so a target attribute
/// such as `axis=rank(x)-1` denotes the node the applier builds. A scalar Constant (no
/// `shape`) is a rank-0 tensor taking its value, which is why a source one must carry
/// `require rank_equals(c, 0)` (it matches any one-element constant). A tensor Constant
/// (`shape` and `fill`) is a symbol of its own taking value, shape and fill: a source one
/// matches exactly the graph constants it denotes (constant_tensor.hpp), so it needs no
/// such requirement; it is defined where its fill fits its shape, and has that shape.
///
/// **A rule** reads: for all variables, symbols and source attributes, if every source node
/// output is defined, the constraints hold and every attribute expression can be evaluated
/// (an axis in range, an exact division, composable permutations), then each mapped source
/// output equals its target. Symbol-only constraints (permutation_is_identity, ...) and
/// compose() are uninterpreted; for the Int lists written in the axioms and the goal they
/// get ground facts computed by the matcher's own code. `broadcasts_to` stays uninterpreted.
///
/// **An axiom** is such a rule as a universally quantified formula whose E-matching pattern
/// is the source pattern's root terms (literal and derived source attributes become bound
/// variables with equations in the guard, so patterns hold no interpreted symbols). An
/// AxiomGuard::source_and_inner_target axiom is also guarded by the definedness of its
/// target's inner nodes. Axioms apply in the direction they are written; some are written
/// both ways. Every op symbol also gets the axiom "defined(f(x...)) → every x defined".
///
/// **Shape facts** per op (one table keyed by OpKind): under defined(t), what shape
/// inference guarantees about t's rank and some dims (a Conv's output channels are its
/// weight's dim 0, a Split part's axis dim is its size, an Add of equal ranks broadcasts dim
/// by dim, a tensor Constant has its `shape`, ...; a tensor Constant is also defined where
/// its fill fits). They are checked against shape inference on every distinct node of the
/// axioms' instances (one Z3 query per op over the concrete shapes; a graph Constant is read
/// through pattern_view) and used only for ops so checked.
///
/// **A goal** (the rule to prove) is asserted as premises over constants: its variables,
/// source and target outputs are defined (a location exists only where the target
/// instantiates), its constraints and expression conditions hold, and each mapped source
/// output has its target's shape; with the negation of "every mapped output equals its
/// target". Z3 searches by E-matching only: unsat is `proved`; otherwise it soon runs out
/// of instances. An optional second search with model-based instantiation
/// (ProverOptions::model_search_ms) may still prove the rule, or find a model of the axioms
/// and premises in which the outputs differ: `refuted` (the rule does not follow from the
/// axioms, which does not by itself make it false). Anything else is `unknown`.
///
/// Soundness rests on every axiom and shape fact being true in the intended model for all
/// values, ⊥ and attribute values no graph holds included; the comments on the axioms say
/// why the constraints they carry are needed. Numeric validation is a check on samples, not
/// a proof. Without Z3 (RLFLOW_HAS_Z3 undefined) the axioms are still validated numerically
/// and prove() answers `unknown`.

#include <rlflow/rewrite/builtin_rules.hpp>
#include <rlflow/rewrite/constant_tensor.hpp>
#include <rlflow/rewrite/detail/prover_constants.hpp>
#include <rlflow/rewrite/rule_check.hpp>
#include <rlflow/rewrite/rule_text.hpp>

#include <algorithm>
#include <array>
#include <cctype>
#include <charconv>
#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#ifdef RLFLOW_HAS_Z3
#include <z3++.h>
#endif

namespace rlflow::rewrite {

/// The outcome of one proof attempt.
enum class ProofStatus : std::uint8_t {
    /// The rule follows from the axioms.
    proved,
    /// Z3 gave up (timeout, incomplete quantifier reasoning), or the rule cannot be encoded.
    unknown,
    /// Z3 found a model of the axioms and premises in which the outputs differ.
    refuted,
};

/// "proved", "unknown" or "refuted".
[[nodiscard]] constexpr std::string_view proof_status_name(ProofStatus s) noexcept {
    constexpr std::string_view names[] = {"proved", "unknown", "refuted"};
    return names[static_cast<std::size_t>(s)];
}

/// The verdict on one rule.
struct ProofResult {
    ProofStatus status = ProofStatus::unknown;
    /// Wall-clock seconds, encoding included.
    double seconds = 0;
    std::string detail;
};

/// The numeric validation of one axiom (or one op's shape facts).
struct AxiomReport {
    std::string name;
    bool valid = false;
    std::string detail;
};

/// How hard the prover tries.
struct ProverOptions {
    /// Z3's time limit per rule for the E-matching search, which proves what it can in
    /// milliseconds and otherwise usually runs out of instances long before the limit.
    unsigned timeout_ms = 2000;
    /// Z3's random seed.
    std::uint64_t seed = 0;
    /// Time for a second search with model-based quantifier instantiation when E-matching
    /// finds no proof: the only way to `refuted`, and a rare way to `proved`; it seldom ends
    /// within seconds on these axioms, so 0 (the default) skips it.
    unsigned model_search_ms = 0;
};

/// What must be known defined before an axiom is used (see the file comment).
enum class AxiomGuard : std::uint8_t {
    /// The source: where it is defined (and the constraints hold), the target is defined
    /// and equal. Numeric validation demands the rule apply wherever its source fits.
    source,
    /// Also the target's inner nodes (those no output maps to): for identities that hold
    /// only where the target's parts fit.
    source_and_inner_target,
};

/// An operator axiom: a rule the prover may use once it passes its numeric instances.
struct Axiom {
    Rule rule;
    /// At least two, of different shapes; every one must fit.
    std::vector<RuleInstance> instances;
    AxiomGuard guard = AxiomGuard::source;
};

namespace detail {

/// The instances an axiom is validated on, and its guard.
struct AxiomSpec {
    std::string_view name;
    std::string_view instances;
    AxiomGuard guard = AxiomGuard::source;
};

/// The fewest instances, of different shapes, an axiom must pass.
inline constexpr std::size_t min_axiom_instances = 2;

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

/// The text of every axiom.
[[nodiscard]] inline std::string prover_axioms_text() {
    std::string text = "rlflow-rules 1\n";
    constexpr std::pair<std::string_view, Activation> activations[]
        = {{"Relu", Activation::Relu}, {"Sigmoid", Activation::Sigmoid}, {"Tanh", Activation::Tanh}};
    for (const auto& [op, code] : activations) {
        std::string name(op);
        std::transform(name.begin(), name.end(), name.begin(), [](unsigned char ch) { return static_cast<char>(std::tolower(ch)); });
        for (const bool bias : {false, true})
            text += substitute(std::string(conv_activation_axiom),
                               {{"act", name}, {"op", op}, {"code", std::to_string(static_cast<std::int64_t>(code))},
                                {"suffix", bias ? "_bias" : ""}, {"bias", bias ? ", b" : ""}});
    }
    constexpr std::pair<std::string_view, std::string_view> pools[]
        = {{"MaxPool", ""}, {"AveragePool", " count_include_pad=$i"}};
    for (const auto& [op, extra] : pools)
        for (const std::string_view axis : {"0", "1"})
            text += substitute(std::string(pool_concat_axiom),
                               {{"pool", op == "MaxPool" ? "max_pool" : "average_pool"}, {"op", op}, {"axis", axis}, {"extra", extra}});
    constexpr std::array<std::string_view, 3> small_kernels[]
        = {{"1x1", "[1, 1]", "[0, 0, 0, 0]"}, {"1x3", "[1, 3]", "[0, 1, 0, 1]"}, {"3x1", "[3, 1]", "[1, 0, 1, 0]"}};
    for (const auto& [name, kernel, pads] : small_kernels)
        text += substitute(std::string(literal_enlarge_axiom), {{"name", name}, {"kernel", kernel}, {"pads", pads}});
    for (const std::string_view part : {elementwise_axioms, scalar_axioms, relu_axioms, conv_axioms, enlarge_axioms,
                                        matmul_axioms, movement_axioms})
        text += part;
    return text + constant_axioms_text();
}

// Instances the axioms are validated on: shapes and attribute values of the kinds real
// graphs hold (strides, pads, groups, batch dims, broadcasting), two or three each.
inline constexpr std::string_view conv_axiom_instances = R"(
x=(1,4,6,6) w=(8,4,3,3) $k=[3,3] $s=[1,1] $p=[1,1,1,1] $d=[1,1] $g=1
x=(2,4,7,7) w=(4,2,1,3) $k=[1,3] $s=[2,2] $p=[0,1,0,1] $d=[2,1] $g=2)";
inline constexpr std::string_view conv_bias_axiom_instances = R"(
x=(1,4,6,6) w=(8,4,3,3) b=(8,) $k=[3,3] $s=[1,1] $p=[1,1,1,1] $d=[1,1] $g=1
x=(2,4,7,7) w=(4,2,1,3) b=(4,) $k=[1,3] $s=[2,2] $p=[0,1,0,1] $d=[2,1] $g=2)";
inline constexpr std::string_view max_pool_channel_instances = R"(
x=(1,2,5,5) y=(1,3,5,5) $k=[3,3] $s=[1,1] $p=[1,1,1,1] $d=[1,1] $m=0
x=(1,2,6,6) y=(1,1,6,6) $k=[2,2] $s=[2,2] $p=[0,0,1,1] $d=[1,1] $m=1)";
inline constexpr std::string_view max_pool_batch_instances = R"(
x=(1,2,5,5) y=(2,2,5,5) $k=[3,3] $s=[1,1] $p=[1,1,1,1] $d=[1,1] $m=0
x=(2,3,6,6) y=(1,3,6,6) $k=[2,2] $s=[2,2] $p=[0,0,1,1] $d=[1,1] $m=1)";
inline constexpr std::string_view average_pool_channel_instances = R"(
x=(1,2,5,5) y=(1,3,5,5) $k=[3,3] $s=[1,1] $p=[1,1,1,1] $d=[1,1] $m=0 $i=0
x=(1,2,6,6) y=(1,1,6,6) $k=[2,2] $s=[2,2] $p=[0,0,1,1] $d=[1,1] $m=1 $i=1)";
inline constexpr std::string_view average_pool_batch_instances = R"(
x=(1,2,5,5) y=(2,2,5,5) $k=[3,3] $s=[1,1] $p=[1,1,1,1] $d=[1,1] $m=0 $i=1
x=(2,3,6,6) y=(1,3,6,6) $k=[2,2] $s=[2,2] $p=[0,0,1,1] $d=[1,1] $m=1 $i=0)";
inline constexpr std::string_view ternary_elementwise_instances = "x=(2,3) y=(2,3) z=(2,3); x=(3,) y=(2,3) z=(2,1)";
inline constexpr std::string_view concat_pair_elementwise_instances
    = "x=(2,3) y=(4,3) z=(2,3) w=(4,3) $ax=0; x=(2,1,3) y=(2,2,3) z=(2,1,3) w=(2,2,3) $ax=1";
inline constexpr std::string_view conv_sum_instances = R"(
x=(1,4,6,6) y=(1,4,6,6) w=(8,4,3,3) $k=[3,3] $s=[1,1] $p=[1,1,1,1] $d=[1,1] $g=1
x=(2,4,7,7) y=(2,4,7,7) w=(4,2,1,3) $k=[1,3] $s=[2,2] $p=[0,1,0,1] $d=[2,1] $g=2)";
inline constexpr std::string_view conv_weight_sum_instances = R"(
x=(1,4,6,6) v=(8,4,3,3) w=(8,4,3,3) $k=[3,3] $s=[1,1] $p=[1,1,1,1] $d=[1,1] $g=1
x=(2,4,7,7) v=(4,2,1,3) w=(4,2,1,3) $k=[1,3] $s=[2,2] $p=[0,1,0,1] $d=[2,1] $g=2)";
inline constexpr std::string_view conv_channel_parts_instances = R"(
x=(1,2,5,5) y=(1,2,5,5) v=(3,2,3,3) w=(3,2,3,3) $k=[3,3] $s=[1,1] $p=[1,1,1,1] $d=[1,1]
x=(2,3,6,6) y=(2,3,6,6) v=(4,3,1,3) w=(4,3,1,3) $k=[1,3] $s=[2,2] $p=[0,1,0,1] $d=[1,2])";
inline constexpr std::string_view conv_batch_concat_instances = R"(
x=(1,4,5,5) y=(2,4,5,5) w=(3,4,3,3) $k=[3,3] $s=[1,1] $p=[1,1,1,1] $d=[1,1] $g=1 $a=0
x=(1,4,6,6) y=(1,4,6,6) w=(4,2,1,3) $k=[1,3] $s=[2,2] $p=[0,1,0,1] $d=[1,1] $g=2 $a=1)";
inline constexpr std::string_view conv_out_channel_instances = R"(
x=(1,4,6,6) v=(8,4,3,3) w=(6,4,3,3) $k=[3,3] $s=[1,1] $p=[1,1,1,1] $d=[1,1] $a=0
x=(2,3,7,7) v=(2,3,1,3) w=(5,3,1,3) $k=[1,3] $s=[2,2] $p=[0,1,0,1] $d=[2,1] $a=1)";
inline constexpr std::string_view conv_out_channel_bias_instances = R"(
x=(1,4,6,6) v=(8,4,3,3) w=(6,4,3,3) b1=(8,) b2=(6,) $k=[3,3] $s=[1,1] $p=[1,1,1,1] $d=[1,1] $a=0
x=(2,3,7,7) v=(2,3,1,3) w=(5,3,1,3) b1=(2,) b2=(5,) $k=[1,3] $s=[2,2] $p=[0,1,0,1] $d=[2,1] $a=2)";
inline constexpr std::string_view conv_enlarge_instances = R"(
x=(1,4,6,6) w1=(8,4,1,1) w2=(6,4,3,3) $k1=[1,1] $p1=[0,0,0,0] $k=[3,3] $p=[1,1,1,1] $s=[1,1] $g=1 $a=0 $s2=[1,1] $d2=[1,1] $g2=1 $a2=0
x=(2,4,7,7) w1=(4,2,1,3) w2=(6,4,3,5) $k1=[1,3] $p1=[0,1,0,1] $k=[3,5] $p=[1,2,1,2] $s=[2,2] $g=2 $a=1 $s2=[1,1] $d2=[1,1] $g2=1 $a2=0)";
inline constexpr std::string_view conv_enlarge_bias_instances = R"(
x=(1,4,6,6) w1=(8,4,1,1) w2=(6,4,3,3) b1=(8,) b2=(6,) $k1=[1,1] $p1=[0,0,0,0] $k=[3,3] $p=[1,1,1,1] $s=[1,1] $g=1 $a=0 $s2=[1,1] $d2=[1,1] $g2=1 $a2=0
x=(2,4,7,7) w1=(4,2,1,3) w2=(6,4,3,5) b1=(4,) b2=(6,) $k1=[1,3] $p1=[0,1,0,1] $k=[3,5] $p=[1,2,1,2] $s=[2,2] $g=2 $a=1 $s2=[1,1] $d2=[1,1] $g2=1 $a2=0)";
inline constexpr std::string_view matmul_chain_instances = "x=(2,3) y=(3,4) z=(4,5); x=(4,4) y=(4,2) z=(2,3)";
inline constexpr std::string_view matmul_left_instances = "x=(2,3) y=(3,4) z=(3,4); x=(2,5,3) y=(3,1) z=(3,1); x=(3,) y=(3,2) z=(3,2)";
inline constexpr std::string_view matmul_right_instances = "x=(2,3) y=(2,3) z=(3,4); x=(2,5,3) y=(2,5,3) z=(3,1); x=(3,) y=(3,) z=(3,2)";
inline constexpr std::string_view matmul_column_instances = "x=(3,4) y=(4,5) z=(4,2); x=(2,3,4) y=(4,1) z=(4,3); x=(4,) y=(4,2) z=(4,3)";
inline constexpr std::string_view matmul_column_triple_instances
    = "x=(3,4) y=(4,5) z=(4,2) u=(4,1); x=(2,3,4) y=(4,1) z=(4,3) u=(4,2); x=(4,) y=(4,2) z=(4,3) u=(4,1)";

/// Every axiom with its instances and guard; an axiom missing here is reported invalid.
inline constexpr AxiomSpec prover_axiom_specs[] = {
    {"conv_relu_fusion", conv_axiom_instances},
    {"conv_relu_fusion_bias", conv_bias_axiom_instances},
    {"conv_sigmoid_fusion", conv_axiom_instances},
    {"conv_sigmoid_fusion_bias", conv_bias_axiom_instances},
    {"conv_tanh_fusion", conv_axiom_instances},
    {"conv_tanh_fusion_bias", conv_bias_axiom_instances},
    {"max_pool_of_concat_axis0", max_pool_batch_instances},
    {"max_pool_of_concat_axis1", max_pool_channel_instances},
    {"average_pool_of_concat_axis0", average_pool_batch_instances},
    {"average_pool_of_concat_axis1", average_pool_channel_instances},
    {"add_commutative", "x=(2,3) y=(2,3); x=(3,) y=(2,3)"},
    {"add_associative", ternary_elementwise_instances},
    {"add_associative_reversed", ternary_elementwise_instances},
    {"mul_commutative", "x=(2,3) y=(2,3); x=(3,) y=(2,3)"},
    {"mul_associative", ternary_elementwise_instances},
    {"mul_associative_reversed", ternary_elementwise_instances},
    {"mul_distributes_over_add", ternary_elementwise_instances},
    {"mul_factors_out_of_add", ternary_elementwise_instances},
    {"mul_by_one", "x=(2,3); x=(4,)"},
    {"add_of_concats", concat_pair_elementwise_instances},
    {"mul_of_concats", concat_pair_elementwise_instances},
    {"scalar_mul_transpose", "x=(2,3) s=() $p=[1,0]; x=(2,3,4) s=() $p=[2,0,1]"},
    {"scalar_mul_matmul", "x=(2,3) y=(3,4) s=(); x=(2,2,3) y=(3,1) s=()"},
    {"scalar_mul_concat", "x=(2,3) y=(4,3) s=() $ax=0; x=(2,3) y=(2,1) s=() $ax=1"},
    {"scalar_mul_conv", R"(
x=(1,4,6,6) w=(8,4,3,3) s=() $k=[3,3] $st=[1,1] $p=[1,1,1,1] $d=[1,1] $g=1
x=(2,4,7,7) w=(4,2,1,3) s=() $k=[1,3] $st=[2,2] $p=[0,1,0,1] $d=[2,1] $g=2)"},
    {"scalar_mul_matmul_right", "x=(2,3) y=(3,4) s=(); x=(2,2,3) y=(3,1) s=(); x=(3,) y=(3,2) s=()"},
    {"scalar_mul_conv_weight", R"(
x=(1,4,6,6) w=(8,4,3,3) s=() $k=[3,3] $st=[1,1] $p=[1,1,1,1] $d=[1,1] $g=1
x=(2,4,7,7) w=(4,2,1,3) s=() $k=[1,3] $st=[2,2] $p=[0,1,0,1] $d=[2,1] $g=2)"},
    {"conv_enlarge_1x1", "x=(1,4,6,6) w=(8,4,1,1) $s=[1,1] $g=1 $a=0; x=(2,4,7,7) w=(4,2,1,1) $s=[2,2] $g=2 $a=1"},
    {"conv_enlarge_1x3", "x=(1,4,6,6) w=(8,4,1,3) $s=[1,1] $g=1 $a=0; x=(2,4,7,7) w=(4,2,1,3) $s=[2,1] $g=2 $a=3"},
    {"conv_enlarge_3x1", "x=(1,4,6,6) w=(8,4,3,1) $s=[1,1] $g=1 $a=0; x=(2,4,7,7) w=(4,2,3,1) $s=[1,2] $g=2 $a=2"},
    {"relu_of_concat", "x=(2,3) y=(4,3) $ax=0; x=(1,2,3) y=(1,4,3) $ax=1"},
    {"relu_of_transpose", "x=(2,3) $p=[1,0]; x=(2,3,4) $p=[1,2,0]"},
    {"split_of_relu", "x=(5,3) $ax=0 $sp=[2,3]; x=(2,6) $ax=1 $sp=[4,2]"},
    {"conv_of_input_sum", conv_sum_instances},
    {"conv_of_weight_sum", conv_weight_sum_instances},
    {"conv_sum_of_channel_parts", conv_channel_parts_instances},
    {"conv_of_batch_concat", conv_batch_concat_instances},
    {"channel_concat_of_convs", conv_out_channel_instances},
    {"conv_of_weight_concat", conv_out_channel_instances},
    {"channel_concat_of_convs_bias", conv_out_channel_bias_instances},
    {"conv_of_weight_concat_bias", conv_out_channel_bias_instances, AxiomGuard::source_and_inner_target},
    {"conv_enlarge", conv_enlarge_instances},
    {"conv_enlarge_bias", conv_enlarge_bias_instances},
    {"matmul_associative", matmul_chain_instances},
    {"matmul_associative_reversed", matmul_chain_instances},
    {"matmul_distributes_left", matmul_left_instances},
    {"matmul_factors_left", matmul_left_instances},
    {"matmul_distributes_right", matmul_right_instances},
    {"matmul_factors_right", matmul_right_instances},
    {"matmul_of_column_concat", matmul_column_instances},
    {"column_concat_of_matmuls", matmul_column_instances},
    {"matmul_of_column_concat_triple", matmul_column_triple_instances},
    {"column_concat_of_matmuls_triple", matmul_column_triple_instances},
    {"matmul_sum_of_blocks", "x=(2,3) y=(3,4) z=(2,5) w=(5,4); x=(1,2) y=(2,2) z=(1,1) w=(1,2)"},
    {"gemm_definition", "a=(3,4) b=(4,5) c=(5,); a=(2,3) b=(3,3) c=(2,3); a=(1,2) b=(2,4) c=()"},
    {"split_of_concat", "x=(2,3) y=(4,3) $ax=0; x=(2,3) y=(2,5) $ax=1"},
    {"split_of_concat_triple", "x=(2,3) y=(4,3) z=(1,3) $ax=0; x=(1,2,3) y=(1,1,3) z=(1,4,3) $ax=1"},
    {"concat_of_split", "y=(5,3) $ax=0 $sp=[2,3]; y=(2,3,4) $ax=2 $sp=[1,3]"},
    {"concat_of_split_triple", "y=(5,3) $ax=0 $sp=[2,1,2]; y=(2,6,4) $ax=1 $sp=[1,3,2]"},
    {"concat_grid_interchange", "a=(2,3) b=(2,1) c=(2,3) d=(2,1); a=(1,2,2) b=(1,1,2) c=(1,2,2) d=(1,1,2)"},
    {"transpose_pair_cancel", "x=(2,3,4) $p=[1,2,0] $q=[2,0,1]; x=(3,4) $p=[1,0] $q=[1,0]"},
    {"transpose_pair_compose", "x=(2,3,4) $p=[1,2,0] $q=[1,2,0]; x=(3,4) $p=[1,0] $q=[1,0]"},
    {"transpose_of_matmul", "x=(2,3) y=(3,4); x=(1,1) y=(1,5)"},
    {"transpose_of_row_concat", "x=(2,3) y=(4,3); x=(1,1) y=(2,1)"},
    {"transpose_of_column_concat", "x=(2,3) y=(2,4); x=(1,1) y=(1,2)"},
    {"transpose_of_add", "x=(2,3) y=(2,3) $p=[1,0]; x=(2,3,4) y=(2,3,4) $p=[2,0,1]"},
    {"transpose_of_mul", "x=(2,3) y=(2,3) $p=[1,0]; x=(2,3,4) y=(2,3,4) $p=[2,0,1]"},
    {"identity_elimination", "x=(2,3); x=()"},
    {"noop_reshape", "x=(2,3) $s=[2,3]; x=(4,) $s=[4]"},
    {"conv_identity_kernel_1x1", constant_conv_instances},
    {"conv_identity_kernel_3x3", constant_conv_instances},
    {"conv_identity_kernel_3x3_depthwise", constant_conv_instances},
    {"conv_average_pool_kernel", constant_conv_instances},
    {"matmul_identity_right", matmul_identity_right_instances},
    {"add_of_single_channel_identity_conv", single_channel_identity_instances},
    {"matmul_identity_left", matmul_identity_left_instances},
    {"matmul_identity_left_vector", matmul_identity_left_vector_instances},
    {"mul_by_ones", mul_by_ones_instances},
};

/// The spec of the axiom called `name`, if any.
[[nodiscard]] inline const AxiomSpec* find_axiom_spec(std::string_view name) noexcept {
    for (const AxiomSpec& spec : prover_axiom_specs)
        if (spec.name == name) return &spec;
    return nullptr;
}

/// Whether at least two instances give the variables different shapes.
[[nodiscard]] inline bool has_two_shapes(std::span<const RuleInstance> instances) {
    for (std::size_t i = 1; i < instances.size(); ++i)
        if (instances[i].variable_types != instances[0].variable_types) return true;
    return false;
}

/// Checks `axiom` numerically on its instances: every instance must fit, the rule must
/// apply there (its target must instantiate wherever its source does) and both sides must
/// agree, on at least two instances of different shapes.
[[nodiscard]] inline AxiomReport validate_axiom(const Axiom& axiom) {
    const std::string& name = axiom.rule.name;
    const RuleCheckReport check = check_rule_numerically(axiom.rule, axiom.instances);
    const std::string counts = std::to_string(check.instances_checked) + " of " + std::to_string(axiom.instances.size()) + " instances";
    if (!check.equal) return {name, false, "sides differ: " + check.detail};
    if (check.instances_checked != axiom.instances.size() || axiom.instances.size() < min_axiom_instances
        || !has_two_shapes(axiom.instances))
        return {name, false, "checked on " + counts + " (every instance must fit, two shapes at least)"};
    constexpr std::size_t room = 16;  // "-1.2e-308" and less
    std::array<char, room> difference{};
    char* end = std::to_chars(difference.data(), difference.data() + difference.size(), check.max_abs_diff,
                              std::chars_format::scientific, 1).ptr;
    return {name, true, "equal on " + counts + ", max |difference| " + std::string(difference.data(), end)};
}

#ifdef RLFLOW_HAS_Z3

/// Attributes normalisation always erases: no graph node holds them, so no function
/// symbol takes them.
inline constexpr std::pair<OpKind, std::string_view> attributes_erased_by_normalisation[] = {{OpKind::Reshape, "allowzero"}};

/// Whether pattern node `node` is a tensor Constant (one with a shape and a fill).
[[nodiscard]] inline bool is_tensor_constant(const PatternNode& node) {
    return node.op == OpKind::Constant && mentions(node, "shape");
}

/// The attributes an op's function symbol takes, in order: a scalar Constant its value, a
/// tensor Constant its value, shape and fill (pattern_attribute_type's types).
[[nodiscard]] inline std::vector<AttributeSpec> encoded_attributes(OpKind op, bool tensor_constant) {
    if (op == OpKind::Constant && tensor_constant)
        return {{"value", AttributeType::Float}, {"shape", AttributeType::Ints}, {"fill", AttributeType::String}};
    if (op == OpKind::Constant) return {{"value", AttributeType::Float}};
    std::vector<AttributeSpec> out;
    for (const AttributeSpec& spec : op_traits(op).attributes) {
        const bool erased = std::any_of(std::begin(attributes_erased_by_normalisation), std::end(attributes_erased_by_normalisation),
                                        [&](const auto& e) { return e.first == op && e.second == spec.name; });
        if (!erased) out.push_back(spec);
    }
    return out;
}

/// `∀ bound . body`, instantiated when the terms of `patterns` (together) match.
[[nodiscard]] inline z3::expr forall_with_patterns(const std::vector<z3::expr>& bound, const std::vector<z3::expr>& patterns,
                                                   const z3::expr& body) {
    if (bound.empty()) return body;
    z3::context& c = body.ctx();
    std::vector<Z3_app> variables;
    for (const z3::expr& b : bound) variables.push_back(Z3_to_app(c, b));
    std::vector<Z3_ast> terms(patterns.begin(), patterns.end());
    Z3_pattern pattern = Z3_mk_pattern(c, static_cast<unsigned>(terms.size()), terms.data());
    c.check_error();
    const z3::ast keep(c, Z3_pattern_to_ast(c, pattern));
    const Z3_ast quantifier = Z3_mk_forall_const(c, 0, static_cast<unsigned>(variables.size()), variables.data(), 1, &pattern, body);
    c.check_error();
    return z3::expr(c, quantifier);
}

/// One op function symbol.
struct OpSymbol {
    OpKind op = OpKind::Identity;
    std::uint32_t arity = 0;
    std::uint32_t output = 0;
    std::uint32_t outputs = 1;
    /// A tensor Constant, a symbol apart from scalar ones (is_tensor_constant).
    bool tensor_constant = false;
    friend auto operator<=>(const OpSymbol&, const OpSymbol&) = default;
};

/// The sorts, functions and literal constants of the encoding, in one Z3 context.
class Signature {
public:
    explicit Signature(z3::context& context)
        : m_context(context), m_tensor(context.uninterpreted_sort("Tensor")), m_int(context.int_sort()),
          m_ints(context.uninterpreted_sort("Ints")), m_scalar(context.uninterpreted_sort("Float")),
          m_text(context.uninterpreted_sort("String")), m_shape(context.function("shape", m_tensor, m_ints)),
          m_length(context.function("length", m_ints, m_int)), m_element(context.function("element", m_ints, m_int, m_int)),
          m_defined(context.function("defined", m_tensor, context.bool_sort())),
          m_compose(context.function("compose", m_ints, m_ints, m_ints)) {}
    Signature(const Signature&) = delete;
    Signature& operator=(const Signature&) = delete;

    [[nodiscard]] z3::context& context() const noexcept { return m_context; }
    [[nodiscard]] const z3::sort& tensor() const noexcept { return m_tensor; }
    /// The sort of an attribute type, if it can be encoded.
    [[nodiscard]] std::optional<z3::sort> attribute_sort(AttributeType type) const {
        switch (type) {
            case AttributeType::Int: return m_int;
            case AttributeType::Float: return m_scalar;
            case AttributeType::String: return m_text;
            case AttributeType::Ints: return m_ints;
            default: return std::nullopt;
        }
    }
    [[nodiscard]] z3::expr shape(const z3::expr& t) const { return m_shape(t); }
    [[nodiscard]] z3::expr rank(const z3::expr& t) const { return length(shape(t)); }
    [[nodiscard]] z3::expr dim(const z3::expr& t, const z3::expr& axis) const { return element(shape(t), axis); }
    [[nodiscard]] z3::expr length(const z3::expr& list) const { return m_length(list); }
    [[nodiscard]] z3::expr element(const z3::expr& list, const z3::expr& index) const { return m_element(list, index); }
    [[nodiscard]] z3::expr element(const z3::expr& list, int index) const { return m_element(list, m_context.int_val(index)); }
    [[nodiscard]] z3::expr dim(const z3::expr& t, int axis) const { return dim(t, m_context.int_val(axis)); }
    [[nodiscard]] z3::expr defined(const z3::expr& t) const { return m_defined(t); }
    [[nodiscard]] z3::expr compose(const z3::expr& inner, const z3::expr& outer) const { return m_compose(inner, outer); }

    /// The function symbol of `symbol` (made on first use).
    [[nodiscard]] z3::func_decl op_function(const OpSymbol& symbol) {
        if (const auto it = m_functions.find(symbol); it != m_functions.end()) return it->second;
        z3::sort_vector domain(m_context);
        for (std::uint32_t i = 0; i < symbol.arity; ++i) domain.push_back(m_tensor);
        for (const AttributeSpec& a : encoded_attributes(symbol.op, symbol.tensor_constant))
            domain.push_back(*attribute_sort(a.type));
        std::string name = std::string(op_name(symbol.op)) + (symbol.tensor_constant ? "Tensor" : "") + "/"
                           + std::to_string(symbol.arity);
        if (symbol.outputs != 1) name += "#" + std::to_string(symbol.output) + "of" + std::to_string(symbol.outputs);
        return m_functions.emplace(symbol, m_context.function(name.c_str(), domain, m_tensor)).first->second;
    }
    [[nodiscard]] const std::map<OpSymbol, z3::func_decl>& op_functions() const noexcept { return m_functions; }

    /// The predicate standing for a symbol-only constraint kind, or "composable".
    [[nodiscard]] z3::func_decl predicate(std::string_view name, std::size_t arity) {
        z3::sort_vector domain(m_context);
        for (std::size_t i = 0; i < arity; ++i) domain.push_back(m_ints);
        return m_context.function(std::string(name).c_str(), domain, m_context.bool_sort());
    }

    /// The list of `elements` (Int terms).
    [[nodiscard]] z3::expr list(const std::vector<z3::expr>& elements) {
        z3::expr_vector arguments(m_context);
        for (const z3::expr& e : elements) arguments.push_back(e);
        return list_function(elements.size())(arguments);
    }
    /// A literal list of Ints.
    [[nodiscard]] z3::expr ints(std::span<const std::int64_t> values) {
        std::vector<z3::expr> elements;
        for (const std::int64_t v : values) elements.push_back(m_context.int_val(v));
        return list(elements);
    }
    /// What the list constructors mean: `∀ a . length(list_n(a)) = n ∧ element(list_n(a), i) = a_i`
    /// for every length n made so far.
    [[nodiscard]] std::vector<z3::expr> list_axioms() {
        std::vector<z3::expr> axioms;
        for (std::size_t n = 0; n < m_lists.size(); ++n) {
            std::vector<z3::expr> elements;
            for (std::size_t i = 0; i < n; ++i) elements.push_back(m_context.int_const(("element " + std::to_string(i)).c_str()));
            const z3::expr made = list(elements);
            z3::expr body = length(made) == m_context.int_val(static_cast<unsigned>(n));
            for (std::size_t i = 0; i < n; ++i) body = body && element(made, static_cast<int>(i)) == elements[i];
            axioms.push_back(forall_with_patterns(elements, {made}, body));
        }
        return axioms;
    }
    /// The literal `value` of an encodable attribute type.
    [[nodiscard]] z3::expr literal(const AttributeValue& value) {
        if (const auto* i = std::get_if<std::int64_t>(&value)) return m_context.int_val(*i);
        if (const auto* ints_value = std::get_if<std::vector<std::int64_t>>(&value)) return ints(*ints_value);
        if (const auto* f = std::get_if<double>(&value)) return named_literal(m_scalars, float_name(*f), m_scalar);
        return named_literal(m_texts, quoted_string(std::get<std::string>(value)), m_text);
    }
    /// Distinct literals denote distinct values.
    [[nodiscard]] z3::expr literals_distinct() const {
        z3::expr_vector facts(m_context);
        for (const auto* set : {&m_scalars, &m_texts}) {
            z3::expr_vector values(m_context);
            for (const auto& [name, constant] : *set) values.push_back(constant);
            if (values.size() > 1) facts.push_back(z3::distinct(values));
        }
        return z3::mk_and(facts);
    }

private:
    /// Named by the shortest text that reads back as `value`: distinct doubles, distinct names.
    [[nodiscard]] static std::string float_name(double value) { return "float " + shortest_double(value); }
    [[nodiscard]] z3::expr named_literal(std::map<std::string, z3::expr>& set, const std::string& name, const z3::sort& sort) {
        if (const auto it = set.find(name); it != set.end()) return it->second;
        return set.emplace(name, m_context.constant(name.c_str(), sort)).first->second;
    }

    /// The constructor of lists of length n (made, with all shorter ones, on first use).
    [[nodiscard]] z3::func_decl list_function(std::size_t n) {
        while (m_lists.size() <= n) {
            z3::sort_vector domain(m_context);
            for (std::size_t i = 0; i < m_lists.size(); ++i) domain.push_back(m_int);
            m_lists.push_back(m_context.function(("list" + std::to_string(m_lists.size())).c_str(), domain, m_ints));
        }
        return m_lists[n];
    }

    z3::context& m_context;
    z3::sort m_tensor, m_int, m_ints, m_scalar, m_text;
    z3::func_decl m_shape, m_length, m_element, m_defined, m_compose;
    std::vector<z3::func_decl> m_lists;
    std::map<OpSymbol, z3::func_decl> m_functions;
    std::map<std::string, z3::expr> m_scalars, m_texts;
};

/// An op function symbol applied to arguments: what shape facts talk about.
struct Application {
    Signature& signature;
    OpSymbol symbol;
    std::vector<z3::expr> inputs;
    std::vector<z3::expr> attributes;
    z3::expr output;

    /// The argument of attribute `name` (one of the symbol's encoded attributes).
    [[nodiscard]] const z3::expr& attribute(std::string_view name) const {
        const std::vector<AttributeSpec> specs = encoded_attributes(symbol.op, symbol.tensor_constant);
        const auto it = std::find_if(specs.begin(), specs.end(), [&](const AttributeSpec& s) { return s.name == name; });
        RLFLOW_ASSERT(it != specs.end());
        return attributes[static_cast<std::size_t>(it - specs.begin())];
    }
    [[nodiscard]] z3::expr integer(int value) const { return signature.context().int_val(value); }
};

/// An axis as ONNX normalises it against rank `rank` (negative counts from the end).
[[nodiscard]] inline z3::expr normalised_axis(const z3::expr& axis, const z3::expr& rank) {
    return z3::ite(axis < 0, axis + rank, axis);
}

/// The most dims that shape facts going dim by dim describe (broadcasting, constant fills).
inline constexpr int max_spelled_out_rank = 6;

/// Conv2D: rank 4; batch from the input, output channels from the weight, whose spatial
/// dims are kernel_shape; the input's channels are the weight's times the group (written as
/// its two linear cases, group 1 and one channel per group); and the weight's shape is the
/// list of its four dims (so that same_shape can compare it with a constant's shape).
[[nodiscard]] inline z3::expr conv_shape_facts(const Application& a) {
    Signature& s = a.signature;
    const z3::expr &x = a.inputs[0], &w = a.inputs[1], &kernel = a.attribute("kernel_shape"), &group = a.attribute("group");
    const z3::expr ranks = s.rank(a.output) == 4 && s.rank(x) == 4 && s.rank(w) == 4;
    const z3::expr channels = s.dim(a.output, 0) == s.dim(x, 0) && s.dim(a.output, 1) == s.dim(w, 0)
                              && z3::implies(group == 1, s.dim(x, 1) == s.dim(w, 1))
                              && z3::implies(s.dim(w, 1) == 1, s.dim(x, 1) == group);
    const z3::expr weight = s.dim(w, 2) == s.element(kernel, 0) && s.dim(w, 3) == s.element(kernel, 1)
                            && s.shape(w) == s.list({s.dim(w, 0), s.dim(w, 1), s.dim(w, 2), s.dim(w, 3)});
    return ranks && channels && weight;
}

/// MatMul with a matrix on the right keeps the left operand's rank, contracts the left
/// operand's last dim with the matrix's rows and takes the matrix's columns as its last dim;
/// with a matrix on the left (and no vector on the right), the same mirrored. A matrix's
/// shape is the list of its two dims (so that same_shape can compare it with a constant's).
[[nodiscard]] inline z3::expr matmul_shape_facts(const Application& a) {
    Signature& s = a.signature;
    const z3::expr &x = a.inputs[0], &y = a.inputs[1], &out = a.output;
    const z3::expr x_last = s.rank(x) - 1, y_rows = s.rank(y) - 2;
    const z3::expr right_matrix = s.rank(out) == s.rank(x) && s.dim(x, x_last) == s.dim(y, 0) && s.dim(out, x_last) == s.dim(y, 1)
                                  && s.shape(y) == s.list({s.dim(y, 0), s.dim(y, 1)});
    const z3::expr left_matrix = s.rank(out) == s.rank(y) && s.dim(y, y_rows) == s.dim(x, 1) && s.dim(out, y_rows) == s.dim(x, 0)
                                 && s.dim(out, y_rows + 1) == s.dim(y, y_rows + 1);
    return s.rank(x) >= 1 && s.rank(y) >= 1 && z3::implies(s.rank(y) == 2, right_matrix)
           && z3::implies(s.rank(x) == 2 && s.rank(y) >= 2, left_matrix);
}

/// A tensor Constant has the shape its `shape` attribute gives.
[[nodiscard]] inline z3::expr tensor_constant_shape_facts(const Application& a) {
    return a.signature.shape(a.output) == a.attribute("shape");
}

/// Where a tensor Constant's fill fits its shape (constant_fill_problem finds nothing): a
/// known fill; every dim positive; an identity a matrix or a conv kernel with odd spatial
/// dims. There it is defined. A uniform fill of more than max_spelled_out_rank dims also
/// fits, but is not said to (the fact is sufficient, not necessary).
[[nodiscard]] inline z3::expr constant_fill_fits(const Application& a) {
    Signature& s = a.signature;
    const z3::expr &shape = a.attribute("shape"), &fill = a.attribute("fill");
    const auto positive_dims = [&](int rank) {
        z3::expr holds = s.length(shape) == rank;
        for (int i = 0; i < rank; ++i) holds = holds && s.element(shape, i) >= 1;
        return holds;
    };
    z3::expr_vector ranks(s.context());
    for (int rank = 0; rank <= max_spelled_out_rank; ++rank) ranks.push_back(positive_dims(rank));
    const auto odd = [&](int axis) { return z3::mod(s.element(shape, axis), 2) == 1; };
    const z3::expr identity_fits = positive_dims(2) || (positive_dims(4) && odd(2) && odd(3));
    const auto named = [&](ConstantFill f) { return fill == s.literal(std::string(constant_fill_name(f))); };
    return (named(ConstantFill::uniform) && z3::mk_or(ranks)) || (named(ConstantFill::identity) && identity_fits);
}

/// Concat: the parts' rank; the axis in range; its dim the sum of the parts'.
[[nodiscard]] inline z3::expr concat_shape_facts(const Application& a) {
    const Signature& s = a.signature;
    const z3::expr rank = s.rank(a.inputs[0]);
    const z3::expr axis = normalised_axis(a.attribute("axis"), rank);
    z3::expr facts = axis >= 0 && axis < rank && s.rank(a.output) == rank;
    z3::expr total = a.integer(0);
    for (const z3::expr& part : a.inputs) {
        facts = facts && s.rank(part) == rank;
        total = total + s.dim(part, axis);
    }
    return facts && s.dim(a.output, axis) == total;
}

/// Split part i: the input's rank; the axis in range; one size per part, its own on the axis.
[[nodiscard]] inline z3::expr split_shape_facts(const Application& a) {
    const Signature& s = a.signature;
    const z3::expr rank = s.rank(a.inputs[0]);
    const z3::expr axis = normalised_axis(a.attribute("axis"), rank);
    const z3::expr& sizes = a.attribute("split");
    return axis >= 0 && axis < rank && s.rank(a.output) == rank
           && s.length(sizes) == a.integer(static_cast<int>(a.symbol.outputs))
           && s.dim(a.output, axis) == s.element(sizes, static_cast<int>(a.symbol.output));
}

/// Transpose keeps the rank, and its permutation has that length.
[[nodiscard]] inline z3::expr transpose_shape_facts(const Application& a) {
    const Signature& s = a.signature;
    return s.rank(a.output) == s.rank(a.inputs[0]) && s.length(a.attribute("perm")) == s.rank(a.inputs[0]);
}

/// Enlarge keeps the kernel's channel dims and takes its spatial dims from kernel_shape.
[[nodiscard]] inline z3::expr enlarge_shape_facts(const Application& a) {
    const Signature& s = a.signature;
    const z3::expr &w = a.inputs[0], &kernel = a.attribute("kernel_shape");
    return s.rank(a.output) == 4 && s.rank(w) == 4 && s.dim(a.output, 0) == s.dim(w, 0) && s.dim(a.output, 1) == s.dim(w, 1)
           && s.dim(a.output, 2) == s.element(kernel, 0) && s.dim(a.output, 3) == s.element(kernel, 1);
}

/// Unary element-wise ops and Identity keep the shape.
[[nodiscard]] inline z3::expr same_shape_as_input(const Application& a) {
    return a.signature.shape(a.output) == a.signature.shape(a.inputs[0]);
}

/// Binary element-wise ops on equal shapes keep that shape. On operands of equal rank they
/// broadcast dim by dim (broadcast_shapes): the dims are equal or one is 1, and the result's
/// is the first operand's where the second's is 1, else the second's.
[[nodiscard]] inline z3::expr binary_elementwise_shape_facts(const Application& a) {
    const Signature& s = a.signature;
    const z3::expr &x = a.inputs[0], &y = a.inputs[1];
    z3::expr broadcast = s.rank(a.output) == s.rank(x);
    for (int i = 0; i < max_spelled_out_rank; ++i) {
        const z3::expr dx = s.dim(x, i), dy = s.dim(y, i);
        const z3::expr fits = dx == dy || dx == 1 || dy == 1;
        broadcast = broadcast && z3::implies(i < s.rank(x), fits && s.dim(a.output, i) == z3::ite(dy == 1, dx, dy));
    }
    return z3::implies(s.shape(x) == s.shape(y), s.shape(a.output) == s.shape(x)) && z3::implies(s.rank(x) == s.rank(y), broadcast);
}

using ShapeFacts = z3::expr (*)(const Application&);

/// The shape facts of `op` (a tensor Constant if `tensor_constant`), or nullptr if it has
/// none: the one table of them, with element-wise ops found by their traits. A scalar
/// Constant has none.
[[nodiscard]] inline ShapeFacts shape_facts_of(OpKind op, bool tensor_constant) noexcept {
    if (op == OpKind::Constant) return tensor_constant ? tensor_constant_shape_facts : nullptr;
    constexpr std::pair<OpKind, ShapeFacts> table[] = {
        {OpKind::Conv2D, conv_shape_facts},         {OpKind::MatMul, matmul_shape_facts},
        {OpKind::Concat, concat_shape_facts},       {OpKind::Split, split_shape_facts},
        {OpKind::Transpose, transpose_shape_facts}, {OpKind::Enlarge, enlarge_shape_facts},
        {OpKind::Identity, same_shape_as_input},
    };
    for (const auto& [kind, facts] : table)
        if (kind == op) return facts;
    const OpTraits& traits = op_traits(op);
    if (!traits.has(op_flag_elementwise)) return nullptr;
    return traits.max_inputs == 1 ? same_shape_as_input : binary_elementwise_shape_facts;
}

/// `∀ inputs, attributes . defined(f(...)) → every input defined ∧ facts`, triggered by
/// f(...): ops are strict (⊥ in, ⊥ out), and `facts` (if any) are the op's shape facts. With
/// its facts, a tensor Constant is also defined where its fill fits its shape.
[[nodiscard]] inline z3::expr op_axiom(Signature& s, const OpSymbol& symbol, ShapeFacts facts) {
    z3::context& c = s.context();
    std::vector<z3::expr> inputs, attributes;
    z3::expr_vector arguments(c);
    for (std::uint32_t i = 0; i < symbol.arity; ++i) inputs.push_back(c.constant(("input " + std::to_string(i)).c_str(), s.tensor()));
    for (const AttributeSpec& spec : encoded_attributes(symbol.op, symbol.tensor_constant))
        attributes.push_back(c.constant(("attribute " + std::string(spec.name)).c_str(), *s.attribute_sort(spec.type)));
    std::vector<z3::expr> bound = inputs;
    bound.insert(bound.end(), attributes.begin(), attributes.end());
    for (const z3::expr& b : bound) arguments.push_back(b);
    const Application application{s, symbol, inputs, attributes, s.op_function(symbol)(arguments)};
    z3::expr consequence = facts ? facts(application) : c.bool_val(true);
    for (const z3::expr& input : inputs) consequence = consequence && s.defined(input);
    z3::expr body = z3::implies(s.defined(application.output), consequence);
    if (facts && symbol.tensor_constant) body = body && z3::implies(constant_fill_fits(application), s.defined(application.output));
    return forall_with_patterns(bound, {application.output}, body);
}

/// Output `output` of graph node `n` as a symbol: a graph Constant reads as a tensor
/// Constant (its pattern_view gives value, shape and fill).
[[nodiscard]] inline OpSymbol graph_symbol(const Node& n, std::uint32_t output) {
    return {n.op, static_cast<std::uint32_t>(n.inputs.size()), output, static_cast<std::uint32_t>(n.outputs.size()),
            n.op == OpKind::Constant};
}

/// Asserts in `solver` what node `n` of `graph` is (its concrete input and output shapes and
/// attribute values as a pattern sees them, over constants named after `prefix`) and gives
/// its shape facts, for a Constant with its fill fitting; nullopt if the node holds an
/// attribute value the encoding has no literal for.
[[nodiscard]] inline std::optional<z3::expr> concrete_shape_facts(Signature& s, z3::solver& solver, const Graph& graph, const Node& n,
                                                                  const std::string& prefix) {
    z3::context& c = s.context();
    std::vector<z3::expr> inputs, attributes;
    for (const AttributeSpec& spec : encoded_attributes(n.op, graph_symbol(n, 0).tensor_constant)) {
        AttributeValue scratch;
        const AttributeValue* value = pattern_view(n, spec.name, scratch);
        if (!value || !s.attribute_sort(spec.type)) return std::nullopt;
        attributes.push_back(s.literal(*value));
    }
    z3::expr_vector arguments(c);
    for (std::size_t i = 0; i < n.inputs.size(); ++i) {
        inputs.push_back(c.constant((prefix + "input " + std::to_string(i)).c_str(), s.tensor()));
        solver.add(s.shape(inputs.back()) == s.ints(graph.type(n.inputs[i]).shape.dims()) && s.defined(inputs.back()));
        arguments.push_back(inputs.back());
    }
    for (const z3::expr& attribute : attributes) arguments.push_back(attribute);
    z3::expr_vector all(c);
    const auto outputs = static_cast<std::uint32_t>(n.outputs.size());
    for (std::uint32_t k = 0; k < outputs; ++k) {
        const OpSymbol symbol = graph_symbol(n, k);
        const Application application{s, symbol, inputs, attributes, s.op_function(symbol)(arguments)};
        solver.add(s.shape(application.output) == s.ints(n.outputs[k].type.shape.dims()) && s.defined(application.output));
        all.push_back(shape_facts_of(n.op, symbol.tensor_constant)(application));
        if (symbol.tensor_constant) all.push_back(constant_fill_fits(application));
    }
    return z3::mk_and(all);
}

/// Z3's time limit for checking one op's shape facts (they take milliseconds).
inline constexpr unsigned shape_check_timeout_ms = 10000;

/// A node of a graph, for checking shape facts.
struct NodeInGraph {
    const Graph* graph;
    const Node* node;
};

/// Whether the shape facts of every node of `nodes` (all of one op) hold: one query whose
/// negation must be unsat. `checked` counts the nodes that could be encoded.
[[nodiscard]] inline bool shape_facts_hold(Signature& s, std::span<const NodeInGraph> nodes, std::size_t& checked) {
    z3::solver solver(s.context(), z3::solver::simple());
    z3::expr_vector facts(s.context());
    checked = 0;
    for (std::size_t i = 0; i < nodes.size(); ++i)
        if (const auto fact = concrete_shape_facts(s, solver, *nodes[i].graph, *nodes[i].node, "node " + std::to_string(i) + " ")) {
            facts.push_back(*fact);
            ++checked;
        }
    solver.add(!z3::mk_and(facts));
    for (const z3::expr& axiom : s.list_axioms()) solver.add(axiom);
    z3::params parameters(s.context());
    parameters.set("timeout", shape_check_timeout_ms);
    parameters.set("mbqi", false);  // a failing fact shows as unknown, not as a model
    solver.set(parameters);
    return solver.check() == z3::unsat;
}

/// Encodes constraints that measure tensors; symbol-only ones become predicates.
[[nodiscard]] inline std::optional<z3::expr> tensor_constraint(Signature& s, const Constraint& c, const std::vector<z3::expr>& tensors) {
    switch (c.kind) {
        case Constraint::Kind::rank_equals: return s.rank(tensors[0]) == s.context().int_val(c.value);
        case Constraint::Kind::same_shape: return s.shape(tensors[0]) == s.shape(tensors[1]);
        case Constraint::Kind::broadcasts_to:
            return s.predicate(constraint_spec(c.kind).name, 2)(s.shape(tensors[0]), s.shape(tensors[1]));
        default: return std::nullopt;
    }
}

/// Why `rule` cannot be encoded, if it cannot.
[[nodiscard]] inline std::optional<std::string> encoding_problem(Signature& s, const Rule& rule) {
    for (const auto* side : {&rule.source, &rule.target})
        for (const PatternNode& node : *side) {
            const std::string where = "node '" + node.label + "' (" + std::string(op_name(node.op)) + ")";
            const std::vector<AttributeSpec> specs = encoded_attributes(node.op, is_tensor_constant(node));
            for (const AttributeSpec& spec : specs) {
                if (!s.attribute_sort(spec.type))
                    return where + ": attributes of type " + std::string(attribute_type_name(spec.type)) + " are not encoded";
                if (side == &rule.target && !mentions(node, spec.name))
                    return "target " + where + " leaves attribute '" + std::string(spec.name) + "' to its default";
            }
            for (const PatternAttribute& a : node.attributes)
                if (std::none_of(specs.begin(), specs.end(), [&](const AttributeSpec& spec) { return spec.name == a.name; }))
                    return where + " sets attribute '" + a.name + "', which normalisation erases";
        }
    for (std::uint32_t q = 0; q < rule.source.size(); ++q) {
        const auto rank_zero = [&](const Constraint& c) {
            return c.kind == Constraint::Kind::rank_equals && c.value == 0 && c.tensors[0] == PatternRef::node(q);
        };
        const PatternNode& node = rule.source[q];
        const bool scalar_constant = node.op == OpKind::Constant && !is_tensor_constant(node);
        if (scalar_constant && std::none_of(rule.constraints.begin(), rule.constraints.end(), rank_zero))
            return "source Constant '" + node.label + "' may match any one-element constant; require rank_equals(" + node.label
                   + ", 0)";
    }
    const std::vector<z3::expr> probe(2, s.context().constant("probe", s.tensor()));
    for (const Constraint& c : rule.constraints)
        if (constraint_spec(c.kind).tensors != 0 && !tensor_constraint(s, c, probe))
            return "constraint " + std::string(constraint_spec(c.kind).name) + " is not encoded";
    return std::nullopt;
}

/// Whether a rule is encoded as an axiom (over bound variables) or as the goal (over
/// constants).
enum class EncodingMode : std::uint8_t { axiom, goal };

/// One rule as Z3 terms and formulas (see the file comment). The rule must be valid and
/// have no encoding_problem.
class RuleEncoding {
public:
    RuleEncoding(Signature& signature, const Rule& rule, EncodingMode mode, AxiomGuard guard = AxiomGuard::source)
        : m_signature(signature), m_context(signature.context()), m_rule(rule), m_mode(mode), m_conditions(m_context),
          m_equalities(m_context) {
        declare_variables_and_symbols();
        for (const PatternNode& node : rule.source) m_source.push_back(encode_node(node, PatternSide::source));
        for (const Deferred& d : m_deferred) m_conditions.push_back(d.argument == expression(*d.expression));
        for (const PatternNode& node : rule.target) m_target.push_back(encode_node(node, PatternSide::target));
        for (const Constraint& c : rule.constraints) m_conditions.push_back(constraint(c));
        for (const OutputMapping& m : rule.outputs)
            m_equalities.push_back(tensor(m.source, PatternSide::source) == tensor(m.target, PatternSide::target));
        add_definedness(guard);
    }

    /// ∀ variables, symbols, source attributes . conditions → equalities, instantiated when
    /// the source pattern's root terms match.
    [[nodiscard]] z3::expr axiom() const {
        std::vector<z3::expr> roots;
        for (std::uint32_t q = 0; q < m_rule.source.size(); ++q)
            if (!consumed_in_source(q)) roots.push_back(m_source[q][0]);
        return forall_with_patterns(m_bound, roots, z3::implies(z3::mk_and(m_conditions), z3::mk_and(m_equalities)));
    }
    /// The premises, then the negated conclusion.
    [[nodiscard]] std::vector<z3::expr> goal() const {
        std::vector<z3::expr> assertions;
        for (unsigned i = 0; i < m_conditions.size(); ++i) assertions.push_back(m_conditions[i]);
        assertions.push_back(!z3::mk_and(m_equalities));
        return assertions;
    }
    /// The Int lists the rule writes literally (for ground facts about them).
    [[nodiscard]] const std::set<std::vector<std::int64_t>>& literal_lists() const noexcept { return m_literal_lists; }

private:
    /// A source attribute given by an expression: the argument, equated to it once every
    /// source node is encoded.
    struct Deferred {
        z3::expr argument;
        const AttrExpr* expression;
    };

    /// A constant; in an axiom, one of the bound variables.
    [[nodiscard]] z3::expr fresh(const std::string& name, const z3::sort& sort) {
        z3::expr constant = m_context.constant(name.c_str(), sort);
        if (m_mode == EncodingMode::axiom) m_bound.push_back(constant);
        return constant;
    }

    void declare_variables_and_symbols() {
        for (const std::string& name : m_rule.variables) {
            m_variables.push_back(fresh("var " + name, m_signature.tensor()));
            if (m_mode == EncodingMode::goal) m_conditions.push_back(m_signature.defined(m_variables.back()));
        }
        const auto types = symbol_types(m_rule);
        for (std::size_t s = 0; s < m_rule.symbols.size(); ++s)
            m_symbols.push_back(fresh("$" + m_rule.symbols[s], *m_signature.attribute_sort(*types[s])));
    }

    [[nodiscard]] bool consumed_in_source(std::uint32_t q) const {
        return std::any_of(m_rule.source.begin(), m_rule.source.end(), [&](const PatternNode& n) {
            return std::any_of(n.inputs.begin(), n.inputs.end(), [&](PatternRef r) { return !r.is_variable() && r.index == q; });
        });
    }

    [[nodiscard]] const z3::expr& tensor(PatternRef ref, PatternSide side) const {
        if (ref.is_variable()) return m_variables[ref.index];
        return (side == PatternSide::source ? m_source : m_target)[ref.index][ref.output];
    }

    /// One term per output of `node`.
    [[nodiscard]] std::vector<z3::expr> encode_node(const PatternNode& node, PatternSide side) {
        z3::expr_vector arguments(m_context);
        for (const PatternRef& r : node.inputs) arguments.push_back(tensor(r, side));
        const bool tensor_constant = is_tensor_constant(node);
        for (const AttributeSpec& spec : encoded_attributes(node.op, tensor_constant))
            arguments.push_back(attribute_argument(node, spec, side));
        std::vector<z3::expr> outputs;
        const auto arity = static_cast<std::uint32_t>(node.inputs.size());
        for (std::uint32_t k = 0; k < node.num_outputs; ++k)
            outputs.push_back(m_signature.op_function({node.op, arity, k, node.num_outputs, tensor_constant})(arguments));
        return outputs;
    }

    /// A target attribute is its expression. A source attribute is its symbol, or (an
    /// axiom's literal, any derived value) a fresh argument equated to its expression, or
    /// (left open) a fresh argument.
    [[nodiscard]] z3::expr attribute_argument(const PatternNode& node, const AttributeSpec& spec, PatternSide side) {
        const auto it = std::find_if(node.attributes.begin(), node.attributes.end(),
                                     [&](const PatternAttribute& a) { return a.name == spec.name; });
        const std::string name = "attribute " + node.label + "." + std::string(spec.name);
        if (it == node.attributes.end()) return fresh(name, *m_signature.attribute_sort(spec.type));
        const AttrExpr& e = it->value;
        const bool direct = e.kind == AttrExpr::Kind::symbol || (e.kind == AttrExpr::Kind::literal && m_mode == EncodingMode::goal);
        if (side == PatternSide::target || direct) return expression(e);
        z3::expr argument = fresh(name, *m_signature.attribute_sort(spec.type));
        m_deferred.push_back({argument, &e});
        return argument;
    }

    [[nodiscard]] z3::expr expression(const AttrExpr& e) {
        switch (e.kind) {
            case AttrExpr::Kind::literal:
                if (const auto* list = std::get_if<std::vector<std::int64_t>>(&e.literal)) m_literal_lists.insert(*list);
                return m_signature.literal(e.literal);
            case AttrExpr::Kind::symbol: return m_symbols[e.symbol];
            case AttrExpr::Kind::integer: return integer(e.terms[0]);
            case AttrExpr::Kind::ints: return int_list(e.terms);
            case AttrExpr::Kind::composed_permutation: {
                const z3::expr &inner = m_symbols[e.symbol], &outer = m_symbols[e.second_symbol];
                m_conditions.push_back(m_signature.predicate(composable_name, 2)(inner, outer));
                return m_signature.compose(inner, outer);
            }
        }
        RLFLOW_ASSERT(false);
        return m_context.int_val(0);
    }

    [[nodiscard]] z3::expr int_list(const std::vector<IntTerm>& terms) {
        std::vector<std::int64_t> literal;
        std::vector<z3::expr> elements;
        for (const IntTerm& t : terms) {
            if (t.kind == IntTerm::Kind::literal) literal.push_back(t.offset);
            elements.push_back(integer(t));
        }
        if (literal.size() == terms.size()) m_literal_lists.insert(literal);
        return m_signature.list(elements);
    }

    /// base / divisor + offset, with the conditions evaluate() needs to succeed: an axis in
    /// range, a known dim, an exact division.
    [[nodiscard]] z3::expr integer(const IntTerm& t) {
        z3::expr base = m_context.int_val(0);
        if (t.kind == IntTerm::Kind::symbol) base = m_symbols[t.symbol];
        if (t.kind == IntTerm::Kind::rank) base = m_signature.rank(tensor(t.tensor, PatternSide::source));
        if (t.kind == IntTerm::Kind::dim) {
            const z3::expr& measured = tensor(t.tensor, PatternSide::source);
            const z3::expr rank = m_signature.rank(measured);
            const z3::expr axis = normalised_axis(t.axis_from_symbol ? m_symbols[t.symbol] : m_context.int_val(t.axis), rank);
            base = m_signature.dim(measured, axis);
            m_conditions.push_back(axis >= 0 && axis < rank && base >= 0);
        }
        if (t.divisor != 1) {
            const z3::expr divisor = m_context.int_val(t.divisor);
            m_conditions.push_back(z3::mod(base, divisor) == 0);
            base = base / divisor;
        }
        return base + m_context.int_val(t.offset);
    }

    [[nodiscard]] z3::expr constraint(const Constraint& c) {
        const ConstraintSpec& spec = constraint_spec(c.kind);
        if (spec.tensors == 0) {
            z3::expr_vector arguments(m_context);
            for (const std::uint32_t s : c.symbols) arguments.push_back(m_symbols[s]);
            return m_signature.predicate(spec.name, spec.symbols)(arguments);
        }
        std::vector<z3::expr> tensors;
        for (const PatternRef& r : c.tensors) tensors.push_back(tensor(r, PatternSide::source));
        return *tensor_constraint(m_signature, c, tensors);
    }

    /// Source outputs are defined (the guard). A goal also knows its variables and target
    /// outputs defined and each replacement of the replaced output's shape; an axiom with
    /// the inner-target guard, its target's inner nodes defined.
    void add_definedness(AxiomGuard guard) {
        for (const auto& outputs : m_source)
            for (const z3::expr& t : outputs) m_conditions.push_back(m_signature.defined(t));
        const bool goal = m_mode == EncodingMode::goal;
        for (std::uint32_t q = 0; q < m_target.size(); ++q) {
            const bool mapped = std::any_of(m_rule.outputs.begin(), m_rule.outputs.end(),
                                            [&](const OutputMapping& m) { return !m.target.is_variable() && m.target.index == q; });
            if (goal || (guard == AxiomGuard::source_and_inner_target && !mapped))
                for (const z3::expr& t : m_target[q]) m_conditions.push_back(m_signature.defined(t));
        }
        if (!goal) return;
        for (const OutputMapping& m : m_rule.outputs)
            m_conditions.push_back(m_signature.shape(tensor(m.source, PatternSide::source))
                                   == m_signature.shape(tensor(m.target, PatternSide::target)));
    }

    static constexpr std::string_view composable_name = "composable";

    Signature& m_signature;
    z3::context& m_context;
    const Rule& m_rule;
    EncodingMode m_mode;
    std::vector<z3::expr> m_variables, m_symbols, m_bound;
    std::vector<std::vector<z3::expr>> m_source, m_target;
    std::vector<Deferred> m_deferred;
    z3::expr_vector m_conditions, m_equalities;
    std::set<std::vector<std::int64_t>> m_literal_lists;
};

/// The most ground facts written about one predicate; beyond it none are (sound: facts
/// only help proofs).
inline constexpr std::size_t max_ground_facts_per_predicate = 4096;

/// Calls `visit` with every tuple of `arity` indices below `count`.
template <class Visit>
void for_each_tuple(std::size_t count, std::size_t arity, Visit visit) {
    std::vector<std::size_t> tuple(arity, 0);
    if (count == 0 && arity > 0) return;
    for (;;) {
        visit(std::span<const std::size_t>(tuple));
        std::size_t i = 0;
        while (i < arity && ++tuple[i] == count) tuple[i++] = 0;
        if (i == arity) return;
    }
}

/// Whether count^arity stays within max_ground_facts_per_predicate.
[[nodiscard]] constexpr bool few_enough_tuples(std::size_t count, std::size_t arity) noexcept {
    std::size_t tuples = 1;
    for (std::size_t i = 0; i < arity; ++i)
        if ((tuples *= count) > max_ground_facts_per_predicate) return false;
    return true;
}

/// Ground facts on the Int lists `lists`: for every symbol-only constraint kind whether it
/// holds, and for every pair whether it composes and to what, computed by the matcher's
/// own evaluation (detail::holds, detail::evaluate).
[[nodiscard]] inline std::vector<z3::expr> ground_facts(Signature& s, const std::set<std::vector<std::int64_t>>& lists) {
    const std::vector<std::vector<std::int64_t>> values(lists.begin(), lists.end());
    const Graph nothing;
    const Location nowhere;
    SymbolTable table;
    const auto bind = [&](std::span<const std::size_t> tuple, z3::expr_vector& arguments) {
        table.reset(tuple.size());
        for (std::size_t i = 0; i < tuple.size(); ++i) {
            table.bind(static_cast<std::uint32_t>(i), values[tuple[i]]);
            arguments.push_back(s.ints(values[tuple[i]]));
        }
    };
    std::vector<z3::expr> facts;
    for (const ConstraintSpec& spec : constraint_specs) {
        if (spec.tensors != 0 || !few_enough_tuples(values.size(), spec.symbols)) continue;
        Constraint constraint{spec.kind, {}, {}, 0};
        for (std::uint32_t i = 0; i < spec.symbols; ++i) constraint.symbols.push_back(i);
        for_each_tuple(values.size(), spec.symbols, [&](std::span<const std::size_t> tuple) {
            z3::expr_vector arguments(s.context());
            bind(tuple, arguments);
            const z3::expr fact = s.predicate(spec.name, spec.symbols)(arguments);
            facts.push_back(holds(constraint, EvalContext{nothing, nowhere, table}) ? fact : !fact);
        });
    }
    if (!few_enough_tuples(values.size(), 2)) return facts;
    for_each_tuple(values.size(), 2, [&](std::span<const std::size_t> pair) {
        z3::expr_vector arguments(s.context());
        bind(pair, arguments);
        const auto composed = evaluate(AttrExpr::composed(0, 1), EvalContext{nothing, nowhere, table});
        const z3::expr composable = s.predicate("composable", 2)(arguments);
        facts.push_back(composed ? composable : !composable);
        if (composed) facts.push_back(s.compose(arguments[0], arguments[1]) == s.literal(*composed));
    });
    return facts;
}

/// The graphs of an axiom's instances, each instantiated source and its rewrite.
[[nodiscard]] inline std::vector<Graph> instance_graphs(const Axiom& axiom) {
    std::vector<Graph> graphs;
    const RuleSet rules(std::vector<Rule>{axiom.rule});
    for (const RuleInstance& instance : axiom.instances) {
        auto source = build_source(axiom.rule, instance);
        if (!source) continue;
        for (const Location& location : covering_locations(rules, *source))
            graphs.push_back(apply_copy(source->graph, rules, 0, location));
        graphs.push_back(std::move(source->graph));
    }
    return graphs;
}

/// A key telling nodes apart for the shape facts: op, input and output types, attributes.
[[nodiscard]] inline std::string shape_check_key(const Graph& graph, const Node& n) {
    std::string key(op_name(n.op));
    for (const TensorRef& in : n.inputs) key += " " + graph.type(in).to_string();
    for (const NodeOutput& out : n.outputs) key += " -> " + out.type.to_string();
    for (const auto& [name, value] : n.attributes) key += " " + name + "=" + instance_value_text(value);
    if (n.op == OpKind::Constant)  // its data, as a pattern sees it
        for (const std::string_view name : {"value", "fill"}) {
            AttributeValue scratch;
            if (const AttributeValue* view = pattern_view(n, name, scratch))
                key += " " + std::string(name) + "=" + instance_value_text(*view);
        }
    return key;
}

/// The prover's Z3 state: one context, the encoded axioms and the checked shape facts.
struct ProverState {
    z3::context context;
    Signature signature{context};
    std::vector<z3::expr> axioms;
    std::set<std::vector<std::int64_t>> axiom_lists;
    std::set<OpKind> checked_shape_ops;
    std::map<OpSymbol, z3::expr> op_axioms;
};

/// Encodes a numerically valid axiom; marks it invalid if it cannot be encoded.
inline void encode_axiom(ProverState& state, const Axiom& axiom, AxiomReport& report) {
    if (const auto problem = encoding_problem(state.signature, axiom.rule)) {
        report = {axiom.rule.name, false, "cannot be encoded: " + *problem};
        return;
    }
    const RuleEncoding encoding(state.signature, axiom.rule, EncodingMode::axiom, axiom.guard);
    state.axioms.push_back(encoding.axiom());
    state.axiom_lists.insert(encoding.literal_lists().begin(), encoding.literal_lists().end());
}

/// Checks the shape facts against shape inference on every distinct node of the valid
/// axioms' instances; one report per op, and the ops that passed are used.
[[nodiscard]] inline std::vector<AxiomReport> check_shape_facts(ProverState& state, std::span<const Axiom* const> axioms) {
    std::vector<Graph> graphs;
    for (const Axiom* axiom : axioms)
        for (Graph& graph : instance_graphs(*axiom)) graphs.push_back(std::move(graph));
    std::map<OpKind, std::vector<NodeInGraph>> nodes;
    std::set<std::string> seen;
    for (const Graph& graph : graphs)
        for (const Node& n : graph.nodes())
            if (shape_facts_of(n.op, graph_symbol(n, 0).tensor_constant) && seen.insert(shape_check_key(graph, n)).second)
                nodes[n.op].push_back({&graph, &n});
    std::vector<AxiomReport> reports;
    for (const auto& [op, of_op] : nodes) {
        std::size_t checked = 0;
        const bool held = shape_facts_hold(state.signature, of_op, checked);
        const bool valid = held && checked > 0;
        if (valid) state.checked_shape_ops.insert(op);
        reports.push_back({"shape facts of " + std::string(op_name(op)), valid,
                           (held ? "hold on " : "fail on one of ") + std::to_string(checked) + " distinct nodes"});
    }
    return reports;
}

/// The op axiom of every op symbol met so far, with shape facts where they were checked.
[[nodiscard]] inline std::vector<z3::expr> op_axioms(ProverState& state) {
    std::vector<z3::expr> out;
    std::vector<OpSymbol> symbols;
    for (const auto& entry : state.signature.op_functions()) symbols.push_back(entry.first);
    for (const OpSymbol& symbol : symbols) {
        auto it = state.op_axioms.find(symbol);
        if (it == state.op_axioms.end()) {
            const ShapeFacts facts
                = state.checked_shape_ops.contains(symbol.op) ? shape_facts_of(symbol.op, symbol.tensor_constant) : nullptr;
            it = state.op_axioms.emplace(symbol, op_axiom(state.signature, symbol, facts)).first;
        }
        out.push_back(it->second);
    }
    return out;
}

/// Runs a fresh solver on `assertions` for at most `timeout_ms`, with or without
/// model-based quantifier instantiation, and gives Z3's answer as a verdict.
[[nodiscard]] inline ProofResult run_solver(const z3::expr_vector& assertions, const ProverOptions& options,
                                            unsigned timeout_ms, bool model_based) {
    z3::solver solver(assertions.ctx(), z3::solver::simple());
    z3::params parameters(assertions.ctx());
    parameters.set("timeout", timeout_ms);
    parameters.set("random_seed", static_cast<unsigned>(options.seed));
    parameters.set("mbqi", model_based);
    solver.set(parameters);
    for (unsigned i = 0; i < assertions.size(); ++i) solver.add(assertions[i]);
    switch (solver.check()) {
        case z3::unsat: return {ProofStatus::proved, 0, "follows from the axioms"};
        case z3::sat: return {ProofStatus::refuted, 0, "Z3 found a model of the axioms and premises in which the outputs differ"};
        case z3::unknown: break;
    }
    std::string reason = solver.reason_unknown();
    if (reason.size() > 1 && reason.front() == '(' && reason.back() == ')') reason = reason.substr(1, reason.size() - 2);
    return {ProofStatus::unknown, 0, reason};
}

/// Everything asserted to prove `goal`: the axioms, the op axioms, the ground facts, the
/// premises and negated conclusion, and the meaning of the list constructors used.
[[nodiscard]] inline z3::expr_vector proof_assertions(ProverState& state, const RuleEncoding& goal) {
    z3::expr_vector assertions(state.context);
    for (const z3::expr& axiom : state.axioms) assertions.push_back(axiom);
    for (const z3::expr& axiom : op_axioms(state)) assertions.push_back(axiom);
    std::set<std::vector<std::int64_t>> lists = state.axiom_lists;
    lists.insert(goal.literal_lists().begin(), goal.literal_lists().end());
    for (const z3::expr& fact : ground_facts(state.signature, lists)) assertions.push_back(fact);
    assertions.push_back(state.signature.literals_distinct());
    for (const z3::expr& assertion : goal.goal()) assertions.push_back(assertion);
    for (const z3::expr& axiom : state.signature.list_axioms()) assertions.push_back(axiom);
    return assertions;
}

/// Proves `rule` from the state's axioms (see the file comment): E-matching first, which
/// proves a rule fast or runs out of instances; then, if options.model_search_ms allows, a
/// fresh search with model-based instantiation, which may still prove it or find a model of
/// its negation.
[[nodiscard]] inline ProofResult prove_with(ProverState& state, const ProverOptions& options, const Rule& rule) {
    if (const auto problem = encoding_problem(state.signature, rule)) return {ProofStatus::unknown, 0, "cannot be encoded: " + *problem};
    try {
        const z3::expr_vector assertions = proof_assertions(state, RuleEncoding(state.signature, rule, EncodingMode::goal));
        ProofResult result = run_solver(assertions, options, options.timeout_ms, false);
        if (result.status != ProofStatus::unknown) return result;
        result.detail = "no proof by E-matching (" + result.detail + ")";
        if (options.model_search_ms == 0) return result;
        ProofResult second = run_solver(assertions, options, options.model_search_ms, true);
        if (second.status == ProofStatus::unknown) second.detail = result.detail + ", nor by model-based instantiation (" + second.detail + ")";
        return second;
    } catch (const z3::exception& e) {
        return {ProofStatus::unknown, 0, std::string("Z3 error: ") + e.msg()};
    }
}

#else

/// Without Z3 there is no state.
struct ProverState {};

#endif  // RLFLOW_HAS_Z3

}  // namespace detail

/// The shipped axioms: the rules of detail::prover_axioms_text() with the instances and
/// guards of detail::prover_axiom_specs (an axiom without a spec gets no instances, so it
/// fails validation).
[[nodiscard]] inline std::vector<Axiom> builtin_axioms() {
    std::vector<Axiom> axioms;
    for (Rule& rule : parse_rules_text(detail::prover_axioms_text(), "<prover axioms>")) {
        Axiom axiom{std::move(rule), {}, AxiomGuard::source};
        if (const detail::AxiomSpec* spec = detail::find_axiom_spec(axiom.rule.name)) {
            axiom.instances = parse_rule_instances(axiom.rule, spec->instances);
            axiom.guard = spec->guard;
        }
        axioms.push_back(std::move(axiom));
    }
    return axioms;
}

/// Proves rules from operator axioms with Z3 (see the file comment). The axioms are
/// validated numerically on construction; only valid ones are used. Thread-compatible: use
/// one Prover per thread.
class Prover {
public:
    /// A prover over builtin_axioms().
    explicit Prover(ProverOptions options = {}) : Prover(builtin_axioms(), options) {}

    /// A prover over `axioms`. Throws rule_error if an axiom's rule is malformed.
    Prover(const std::vector<Axiom>& axioms, ProverOptions options)
        : m_options(options), m_state(std::make_unique<detail::ProverState>()) {
        std::vector<const Axiom*> valid;
        for (const Axiom& axiom : axioms) {
            AxiomReport report = detail::validate_axiom(axiom);
#ifdef RLFLOW_HAS_Z3
            if (report.valid) detail::encode_axiom(*m_state, axiom, report);
#endif
            if (report.valid) valid.push_back(&axiom);
            m_reports.push_back(std::move(report));
        }
#ifdef RLFLOW_HAS_Z3
        for (AxiomReport& report : detail::check_shape_facts(*m_state, valid)) m_reports.push_back(std::move(report));
#endif
    }

    /// Whether this build has Z3; without it prove() answers `unknown`.
    [[nodiscard]] static constexpr bool available() noexcept {
#ifdef RLFLOW_HAS_Z3
        return true;
#else
        return false;
#endif
    }

    /// Tries to prove `rule` within the timeout. Throws rule_error if the rule is malformed.
    [[nodiscard]] ProofResult prove(const Rule& rule) {
        const auto start = std::chrono::steady_clock::now();
        validate_rule(rule);
#ifdef RLFLOW_HAS_Z3
        ProofResult result = detail::prove_with(*m_state, m_options, rule);
#else
        ProofResult result{ProofStatus::unknown, 0, "built without Z3"};
#endif
        result.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
        return result;
    }

    /// The validation of every axiom (and, with Z3, of each op's shape facts); only valid
    /// ones are used.
    [[nodiscard]] const std::vector<AxiomReport>& axioms() const noexcept { return m_reports; }

private:
    [[maybe_unused]] ProverOptions m_options;
    std::unique_ptr<detail::ProverState> m_state;
    std::vector<AxiomReport> m_reports;
};

}  // namespace rlflow::rewrite
