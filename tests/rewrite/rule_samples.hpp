#pragma once
// Rules built by hand from the structs of rule.hpp, shared by the rule_text and rule_file
// tests. Together they use every AttrExpr kind, every IntTerm kind (with divisor, offset,
// a symbol axis and a negative axis), every Constraint kind, a two-output Split read
// through `label:1`, Constant nodes, `order` pairs and an output mapped to a variable.
// sample_rules_text is the same set in the text form, written out by hand.

#include <rlflow/rewrite/rule.hpp>

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace rule_samples {

using namespace rlflow;
using namespace rlflow::rewrite;

inline PatternRef var(std::uint32_t i) { return PatternRef::variable(i); }
inline PatternRef node(std::uint32_t i, std::uint32_t output = 0) { return PatternRef::node(i, output); }
inline AttrExpr integer_literal(std::int64_t v) { return AttrExpr::of(v); }
inline AttrExpr sym(std::uint32_t s) { return AttrExpr::of_symbol(s); }

inline PatternNode make_node(OpKind op, std::string label, std::vector<PatternRef> inputs,
                             std::vector<PatternAttribute> attributes = {}, std::uint32_t outputs = 1) {
    PatternNode n;
    n.op = op;
    n.label = std::move(label);
    n.inputs = std::move(inputs);
    n.attributes = std::move(attributes);
    n.num_outputs = outputs;
    return n;
}

/// kernel_shape, strides, pads, dilations from symbols 0..3 (or strides given), then
/// group and activation.
inline std::vector<PatternAttribute> conv_attributes(AttrExpr strides, AttrExpr group, AttrExpr activation,
                                                     std::uint32_t kernel = 0, std::uint32_t pads = 2) {
    return {{"kernel_shape", sym(kernel)}, {"strides", std::move(strides)}, {"pads", sym(pads)},
            {"dilations", sym(3)},         {"group", std::move(group)},     {"activation", std::move(activation)}};
}

inline Rule fuse_conv_relu() {
    Rule r;
    r.name = "fuse_conv_relu";
    r.variables = {"x", "w"};
    r.symbols = {"k", "s", "p", "d", "g"};
    r.source
        = {make_node(OpKind::Conv2D, "conv", {var(0), var(1)}, conv_attributes(sym(1), sym(4), integer_literal(0))),
           make_node(OpKind::Relu, "r", {node(0)})};
    r.target = {make_node(OpKind::Conv2D, "f", {var(0), var(1)}, conv_attributes(sym(1), sym(4), integer_literal(1)))};
    r.outputs = {{node(1), node(0)}};
    return r;
}

/// Two convolutions on one input: one convolution, then a two-output Split.
inline Rule merge_conv_pair() {
    Rule r;
    r.name = "merge_conv_pair";
    r.variables = {"x", "w1", "w2"};
    r.symbols = {"k", "s", "p", "d", "a"};
    const auto attributes = conv_attributes(sym(1), integer_literal(1), sym(4));
    r.source = {make_node(OpKind::Conv2D, "c1", {var(0), var(1)}, attributes),
                make_node(OpKind::Conv2D, "c2", {var(0), var(2)}, attributes)};
    const AttrExpr split = AttrExpr::of_ints({IntTerm::dim(var(1), 0), IntTerm::dim(var(2), 0)});
    r.target = {make_node(OpKind::Concat, "w", {var(1), var(2)}, {{"axis", integer_literal(0)}}),
                make_node(OpKind::Conv2D, "c", {var(0), node(0)}, attributes),
                make_node(OpKind::Split, "parts", {node(1)}, {{"axis", integer_literal(1)}, {"split", split}}, 2)};
    r.outputs = {{node(0), node(2)}, {node(1), node(2, 1)}};
    r.constraints = {{Constraint::Kind::same_shape, {var(1), var(2)}, {}, 0}};
    r.ordered = {{0, 1}};
    return r;
}

/// A smaller kernel zero-padded to a larger one (Enlarge), with literal strides.
inline Rule enlarge_kernel() {
    Rule r;
    r.name = "enlarge_kernel";
    r.variables = {"x", "w1", "w2"};
    r.symbols = {"k1", "p1", "d", "k2", "p2"};
    const AttrExpr strides = AttrExpr::of(std::vector<std::int64_t>{1, 1});
    const auto attributes = [&](std::uint32_t kernel, std::uint32_t pads) {
        return std::vector<PatternAttribute>{{"kernel_shape", sym(kernel)}, {"strides", strides},
                                             {"pads", sym(pads)},           {"dilations", sym(2)},
                                             {"group", integer_literal(1)}, {"activation", integer_literal(0)}};
    };
    r.source = {make_node(OpKind::Conv2D, "c1", {var(0), var(1)}, attributes(0, 1)),
                make_node(OpKind::Conv2D, "c2", {var(0), var(2)}, attributes(3, 4))};
    r.target = {make_node(OpKind::Enlarge, "e", {var(1)}, {{"kernel_shape", sym(3)}}),
                make_node(OpKind::Conv2D, "c", {var(0), node(0)}, attributes(3, 4))};
    r.outputs = {{node(0), node(1)}};
    r.constraints = {{Constraint::Kind::kernel_enlargeable, {}, {0, 1, 3, 4}, 0}};
    return r;
}

/// Transpose(Transpose(x, p), q) as one Transpose by the composed permutation.
inline Rule fuse_transpose_pair() {
    Rule r;
    r.name = "fuse_transpose_pair";
    r.variables = {"x"};
    r.symbols = {"p", "q"};
    r.source = {make_node(OpKind::Transpose, "t1", {var(0)}, {{"perm", sym(0)}}),
                make_node(OpKind::Transpose, "t2", {node(0)}, {{"perm", sym(1)}})};
    r.target = {make_node(OpKind::Transpose, "t", {var(0)}, {{"perm", AttrExpr::composed(0, 1)}})};
    r.outputs = {{node(1), node(0)}};
    r.constraints = {{Constraint::Kind::permutation_not_identity, {}, {0, 1}, 0}};
    return r;
}

/// Two transposes that cancel: the output is the variable itself.
inline Rule cancel_transpose_pair() {
    Rule r = fuse_transpose_pair();
    r.name = "cancel_transpose_pair";
    r.target.clear();
    r.outputs = {{node(1), var(0)}};
    r.constraints = {{Constraint::Kind::permutation_is_identity, {}, {0, 1}, 0}};
    return r;
}

/// BatchNormalization as elementwise ops, with the epsilon as a Constant node.
inline Rule expand_batchnorm() {
    Rule r;
    r.name = "expand_batchnorm";
    r.variables = {"x", "scale", "bias", "mean", "variance"};
    r.symbols = {"eps"};
    r.source = {
        make_node(OpKind::BatchNormalization, "bn", {var(0), var(1), var(2), var(3), var(4)}, {{"epsilon", sym(0)}})};
    r.target = {make_node(OpKind::Constant, "eps", {}, {{"value", sym(0)}}),
                make_node(OpKind::Add, "shifted", {var(4), node(0)}),
                make_node(OpKind::Sqrt, "deviation", {node(1)}),
                make_node(OpKind::Div, "factor", {var(1), node(2)}),
                make_node(OpKind::Sub, "centred", {var(0), var(3)}),
                make_node(OpKind::Mul, "scaled", {node(4), node(3)}),
                make_node(OpKind::Add, "y", {node(5), var(2)})};
    r.outputs = {{node(0), node(6)}};
    r.constraints = {{Constraint::Kind::rank_equals, {var(1)}, {}, 1},
                     {Constraint::Kind::broadcasts_to, {var(3), var(0)}, {}, 0}};
    return r;
}

/// Float literals (integral, fractional, tiny, negative) and a Constant with a literal.
inline Rule gemm_to_matmul() {
    Rule r;
    r.name = "gemm.to-matmul";
    r.variables = {"a", "b", "c"};
    r.source = {make_node(OpKind::Gemm, "g", {var(0), var(1), var(2)},
                          {{"alpha", AttrExpr::of(1.0)},
                           {"beta", AttrExpr::of(1.0)},
                           {"transA", integer_literal(0)},
                           {"transB", integer_literal(0)}})};
    r.target = {make_node(OpKind::MatMul, "m", {var(0), var(1)}), make_node(OpKind::Add, "s", {node(0), var(2)}),
                make_node(OpKind::Clip, "clip", {node(1)}, {{"min", AttrExpr::of(-0.5)}, {"max", AttrExpr::of(1e-05)}}),
                make_node(OpKind::Constant, "half", {}, {{"value", AttrExpr::of(0.5)}}),
                make_node(OpKind::Mul, "y", {node(2), node(3)})};
    r.outputs = {{node(0), node(4)}};
    r.constraints = {{Constraint::Kind::rank_equals, {var(0)}, {}, 2}};
    return r;
}

/// Every IntTerm kind and the integer and ints expressions, including ones that look
/// like bare literals or symbols (written with `+0`).
inline Rule integer_terms() {
    Rule r;
    r.name = "integer_terms";
    r.variables = {"x"};
    r.symbols = {"ax", "g"};
    r.source = {make_node(OpKind::Softmax, "sm", {var(0)}, {{"axis", sym(0)}}),
                make_node(OpKind::MergeGConv, "mg", {node(0)}, {{"count", integer_literal(4)}, {"group", sym(1)}})};
    IntTerm half_group = IntTerm::of_symbol(1);
    half_group.divisor = 2;
    half_group.offset = 1;
    IntTerm halved_dim = IntTerm::dim(var(0), 1);
    halved_dim.divisor = 2;
    halved_dim.offset = -3;
    const AttrExpr shape = AttrExpr::of_ints({IntTerm::dim(var(0), 0), half_group, IntTerm::dim(var(0), -1),
                                              IntTerm::dim_at_symbol(node(0), 0), IntTerm::literal(-1)});
    const AttrExpr pads
        = AttrExpr::of_ints({IntTerm::literal(0), IntTerm::literal(0), IntTerm::literal(1), IntTerm::literal(1)});
    r.target
        = {make_node(OpKind::Flatten, "f", {var(0)}, {{"axis", AttrExpr::of_integer(IntTerm::rank(var(0), -1))}}),
           make_node(OpKind::Reshape, "r", {node(0)}, {{"shape", shape}, {"allowzero", integer_literal(0)}}),
           make_node(OpKind::Pad, "p", {node(1)},
                     {{"pads", pads}, {"mode", AttrExpr::of(std::string("constant"))}, {"value", AttrExpr::of(0.5)}}),
           make_node(OpKind::Softmax, "s1", {node(2)}, {{"axis", AttrExpr::of_integer(IntTerm::of_symbol(1))}}),
           make_node(OpKind::Softmax, "s2", {node(3)}, {{"axis", AttrExpr::of_integer(IntTerm::literal(3))}}),
           make_node(OpKind::Softmax, "s3", {node(4)}, {{"axis", AttrExpr::of_integer(halved_dim)}})};
    r.outputs = {{node(1), node(5)}};
    return r;
}

/// The sample set; each rule's id is its position.
inline std::vector<Rule> sample_rules() {
    std::vector<Rule> rules = {fuse_conv_relu(),        merge_conv_pair(),  enlarge_kernel(), fuse_transpose_pair(),
                               cancel_transpose_pair(), expand_batchnorm(), gemm_to_matmul(), integer_terms()};
    for (std::size_t i = 0; i < rules.size(); ++i) rules[i].id = static_cast<std::uint32_t>(i);
    return rules;
}

/// sample_rules() in the text form, as to_text writes it.
inline constexpr std::string_view sample_rules_text = R"(rlflow-rules 1

rule fuse_conv_relu
  var x w
  sym k s p d g
  src conv = Conv2D(x, w) kernel_shape=$k strides=$s pads=$p dilations=$d group=$g activation=0
  src r = Relu(conv)
  dst f = Conv2D(x, w) kernel_shape=$k strides=$s pads=$p dilations=$d group=$g activation=1
  out r -> f
end

rule merge_conv_pair
  var x w1 w2
  sym k s p d a
  src c1 = Conv2D(x, w1) kernel_shape=$k strides=$s pads=$p dilations=$d group=1 activation=$a
  src c2 = Conv2D(x, w2) kernel_shape=$k strides=$s pads=$p dilations=$d group=1 activation=$a
  dst w = Concat(w1, w2) axis=0
  dst c = Conv2D(x, w) kernel_shape=$k strides=$s pads=$p dilations=$d group=1 activation=$a
  dst parts = Split(c) axis=1 split=[dim(w1, 0), dim(w2, 0)] outputs=2
  out c1 -> parts
  out c2 -> parts:1
  require same_shape(w1, w2)
  order c1 < c2
end

rule enlarge_kernel
  var x w1 w2
  sym k1 p1 d k2 p2
  src c1 = Conv2D(x, w1) kernel_shape=$k1 strides=[1, 1] pads=$p1 dilations=$d group=1 activation=0
  src c2 = Conv2D(x, w2) kernel_shape=$k2 strides=[1, 1] pads=$p2 dilations=$d group=1 activation=0
  dst e = Enlarge(w1) kernel_shape=$k2
  dst c = Conv2D(x, e) kernel_shape=$k2 strides=[1, 1] pads=$p2 dilations=$d group=1 activation=0
  out c1 -> c
  require kernel_enlargeable($k1, $p1, $k2, $p2)
end

rule fuse_transpose_pair
  var x
  sym p q
  src t1 = Transpose(x) perm=$p
  src t2 = Transpose(t1) perm=$q
  dst t = Transpose(x) perm=compose($p, $q)
  out t2 -> t
  require permutation_not_identity($p, $q)
end

rule cancel_transpose_pair
  var x
  sym p q
  src t1 = Transpose(x) perm=$p
  src t2 = Transpose(t1) perm=$q
  out t2 -> x
  require permutation_is_identity($p, $q)
end

rule expand_batchnorm
  var x scale bias mean variance
  sym eps
  src bn = BatchNormalization(x, scale, bias, mean, variance) epsilon=$eps
  dst eps = Constant() value=$eps
  dst shifted = Add(variance, eps)
  dst deviation = Sqrt(shifted)
  dst factor = Div(scale, deviation)
  dst centred = Sub(x, mean)
  dst scaled = Mul(centred, factor)
  dst y = Add(scaled, bias)
  out bn -> y
  require rank_equals(scale, 1)
  require broadcasts_to(mean, x)
end

rule gemm.to-matmul
  var a b c
  src g = Gemm(a, b, c) alpha=1 beta=1 transA=0 transB=0
  dst m = MatMul(a, b)
  dst s = Add(m, c)
  dst clip = Clip(s) min=-0.5 max=1e-05
  dst half = Constant() value=0.5
  dst y = Mul(clip, half)
  out g -> y
  require rank_equals(a, 2)
end

rule integer_terms
  var x
  sym ax g
  src sm = Softmax(x) axis=$ax
  src mg = MergeGConv(sm) count=4 group=$g
  dst f = Flatten(x) axis=rank(x)-1
  dst r = Reshape(f) shape=[dim(x, 0), $g/2+1, dim(x, -1), dim(sm, $ax), -1] allowzero=0
  dst p = Pad(r) pads=[0+0, 0, 1, 1] mode="constant" value=0.5
  dst s1 = Softmax(p) axis=$g+0
  dst s2 = Softmax(s1) axis=3+0
  dst s3 = Softmax(s2) axis=dim(x, 1)/2-3
  out mg -> s3
end
)";

}  // namespace rule_samples
