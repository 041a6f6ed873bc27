#pragma once
/// \file
/// The built-in rules: substitutions a small-graph generator cannot find (they need
/// attribute arithmetic, weight transforms or more ops than it enumerates), written in the
/// rule text form. TASO hand-wrote 18 such rules in C++; here they are data, checked like
/// any rule file, and each reversible one is also offered reversed, because an agent may
/// need to make a graph costlier for a step to reach a better one.

#include <rlflow/rewrite/rule_set.hpp>
#include <rlflow/rewrite/rule_text.hpp>

#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace rlflow::rewrite {

namespace detail {

/// Replaces every `from` in `text` by `to`.
[[nodiscard]] inline std::string replace_all(std::string text, std::string_view from, std::string_view to) {
    for (std::size_t at = text.find(from); at != std::string::npos; at = text.find(from, at + to.size()))
        text.replace(at, from.size(), to);
    return text;
}

/// Replaces each `{key}` in `text` by its value.
[[nodiscard]] inline std::string substitute(std::string text, std::initializer_list<std::pair<std::string_view, std::string_view>> values) {
    for (const auto& [key, value] : values) text = replace_all(std::move(text), "{" + std::string(key) + "}", value);
    return text;
}

/// The attributes every rule copies unchanged from a convolution.
inline constexpr std::string_view conv_window = "kernel_shape=$k strides=$s pads=$p dilations=$d";

/// Conv + activation fusion, with and without bias (activation codes as in Activation).
inline constexpr std::string_view conv_activation_rule = R"(
rule fuse_conv_{act}{suffix}
  var x w{bias}
  src conv = Conv2D(x, w{bias}) {window} group=$g activation=0
  src a = {op}(conv)
  dst f = Conv2D(x, w{bias}) {window} group=$g activation={code}
  out a -> f
end
)";

/// Conv + BatchNorm folding: scale f = gamma / sqrt(var + eps) goes into the kernel,
/// the shift into a bias. The new weights are computed from weights only.
inline constexpr std::string_view conv_batchnorm_rule = R"(
rule fold_conv_batchnorm{suffix}
  var x w{bias} gamma beta mean variance
  src conv = Conv2D(x, w{bias}) {window} group=$g activation=0
  src bn = BatchNormalization(conv, gamma, beta, mean, variance) epsilon=$eps
  dst eps = Constant() value=$eps
  dst shifted = Add(variance, eps)
  dst deviation = Sqrt(shifted)
  dst factor = Div(gamma, deviation)
  dst column = Reshape(factor) shape=[-1, 1, 1, 1]
  dst kernel = Mul(w, column)
{shift}
  dst folded = Conv2D(x, kernel, offset) {window} group=$g activation=0
  out bn -> folded
end
)";
inline constexpr std::string_view shift_without_bias = R"(  dst centred = Mul(mean, factor)
  dst offset = Sub(beta, centred))";
inline constexpr std::string_view shift_with_bias = R"(  dst centred = Sub(b, mean)
  dst scaled = Mul(centred, factor)
  dst offset = Add(scaled, beta))";

/// Two convolutions on one input become one on concatenated kernels, then a Split along
/// channels. The `_enlarge` form zero-pads the first kernel to the second's size (its
/// pads grow to match, so its output is unchanged), which needs undilated convolutions.
inline constexpr std::string_view conv_pair_rule = R"(
rule merge_conv{kind}_pair{suffix}
  var x w1 w2{biases}
  src c1 = Conv2D(x, w1{b1}) kernel_shape={k1} strides=$s pads={p1} dilations={d} group=1 activation=$a
  src c2 = Conv2D(x, w2{b2}) kernel_shape=$k strides=$s pads=$p dilations={d} group=1 activation=$a
{enlarge}
  dst w = Concat({first}, w2) axis=0
{bias_concat}
  dst c = Conv2D(x, w{b}) kernel_shape=$k strides=$s pads=$p dilations={d} group=1 activation=$a
  dst parts = Split(c) axis=1 split=[dim(w1, 0), dim(w2, 0)] outputs=2
  out c1 -> parts:0
  out c2 -> parts:1
{requirement}
end
)";

/// Grouped convolution: pairs of groups merge into one group of a block-diagonal kernel.
inline constexpr std::string_view group_conv_rule = R"(
rule merge_group_conv{suffix}
  var x w{bias}
  src conv = Conv2D(x, w{bias}) {window} group=$g activation=$a
  dst merged = MergeGConv(w) count=2 group=$g
  dst wide = Conv2D(x, merged{bias}) {window} group=$g/2 activation=$a
  out conv -> wide
end
)";

/// n-way rules are written once as templates, expanded by expand_parts().

/// Parallel MatMuls sharing their left operand (Q, K, V) become one MatMul on the
/// concatenated right operands, then a Split of the last axis.
inline constexpr std::string_view matmul_parts_rule = R"(
rule merge_matmul_{name}
  var x <<w#>>
  src m# = MatMul(x, w#)
  dst w = Concat(<<w#>>) axis=1
  dst m = MatMul(x, w)
  dst parts = Split(m) axis=rank(x)-1 split=[<<dim(w#, 1)>>] outputs={n}
  out m# -> parts:@
  require rank_equals(w#, 2)
  order m# < m%
end
)";

/// Per-part bias Adds after a Split of the last axis become one Add before it.
inline constexpr std::string_view split_bias_parts_rule = R"(
rule merge_split_bias_{name}
  var y <<b#>>
  sym sp
  src parts = Split(y) axis=rank(y)-1 split=$sp outputs={n}
  src a# = Add(parts:@, b#)
  dst b = Concat(<<b#>>) axis=0
  dst a = Add(y, b)
  dst split = Split(a) axis=rank(y)-1 split=$sp outputs={n}
  out a# -> split:@
  require rank_equals(b#, 1)
end
)";

/// A Split that undoes a Concat, and a Concat that undoes a Split.
inline constexpr std::string_view concat_split_parts_rules = R"(
rule cancel_concat_split_{name}
  var <<x#>>
  sym ax
  src c = Concat(<<x#>>) axis=$ax
  src s = Split(c) axis=$ax split=[<<dim(x#, $ax)>>] outputs={n}
  out s:@ -> x#
end

rule cancel_split_concat_{name}
  var y
  sym ax sp
  src s = Split(y) axis=$ax split=$sp outputs={n}
  src c = Concat(<<s:@>>) axis=$ax
  out c -> y
end
)";

/// Expands an n-way template (which holds no comments, as `#` is a marker here): `{n}` is n; a `<<...>>` segment is written n times,
/// comma-separated; then a line holding `#` is written n times (`#` counts 1..n and `@`
/// 0..n-1), and a line holding `%` n - 1 times (`#` is i and `%` is i + 1).
[[nodiscard]] inline std::string expand_parts(std::string_view text, std::size_t n) {
    const auto numbered = [](std::string line, std::size_t i) {
        line = replace_all(std::move(line), "#", std::to_string(i));
        line = replace_all(std::move(line), "@", std::to_string(i - 1));
        return replace_all(std::move(line), "%", std::to_string(i + 1));
    };
    std::string out;
    for (std::size_t start = 0; start < text.size();) {
        const std::size_t end = std::min(text.find('\n', start), text.size());
        std::string line(text.substr(start, end - start));
        start = end + 1;
        for (std::size_t open = line.find("<<"); open != std::string::npos; open = line.find("<<")) {
            const std::size_t close = line.find(">>", open);
            const std::string item = line.substr(open + 2, close - open - 2);
            std::string list;
            for (std::size_t i = 1; i <= n; ++i) list += (i > 1 ? ", " : "") + numbered(item, i);
            line.replace(open, close + 2 - open, list);
        }
        const bool per_part = line.find_first_of("#@") != std::string::npos;
        const bool per_link = line.find('%') != std::string::npos;
        if (!per_part && !per_link) out += line + "\n";
        for (std::size_t i = 1; (per_part || per_link) && i <= (per_link ? n - 1 : n); ++i) out += numbered(line, i) + "\n";
    }
    return substitute(std::move(out), {{"n", std::to_string(n)}});
}

/// MatMul + bias Add as one Gemm; on rank-3 activations through views.
inline constexpr std::string_view gemm_rules = R"(
rule fuse_matmul_add_gemm
  var a b c
  src m = MatMul(a, b)
  src s = Add(m, c)
  dst g = Gemm(a, b, c) alpha=1 beta=1 transA=0 transB=0
  out s -> g
  require rank_equals(a, 2)
  require rank_equals(b, 2)
end

rule fuse_batched_matmul_add_gemm
  var x w c
  src m = MatMul(x, w)
  src s = Add(m, c)
  dst rows = Reshape(x) shape=[-1, dim(x, 2)]
  dst g = Gemm(rows, w, c) alpha=1 beta=1 transA=0 transB=0
  dst back = Reshape(g) shape=[dim(x, 0), dim(x, 1), dim(w, 1)]
  out s -> back
  require rank_equals(x, 3)
  require rank_equals(w, 2)
  require rank_equals(c, 1)
end
)";

/// Two Transposes in a row: nothing when they cancel, else one Transpose.
inline constexpr std::string_view transpose_pair_rule = R"(
rule {name}_transpose_pair
  var x
  src t1 = Transpose(x) perm=$p
  src t2 = Transpose(t1) perm=$q
{target}
  require permutation_{condition}($p, $q)
end
)";

/// Eliminations: ops that cancel or collapse.
inline constexpr std::string_view elimination_rules = R"(
rule eliminate_identity
  var x
  src i = Identity(x)
  out i -> x
end

rule collapse_reshape_pair
  var x
  src r1 = Reshape(x) shape=$a
  src r2 = Reshape(r1) shape=$b
  dst r = Reshape(x) shape=$b
  out r2 -> r
end

rule eliminate_noop_reshape
  var x
  src r = Reshape(x)
  out r -> x
  require same_shape(x, r)
end

)";

/// The text of every forward built-in rule.
[[nodiscard]] inline std::string builtin_rules_text() {
    std::string text = "rlflow-rules 1\n";
    struct FusedActivation {
        std::string_view name, op;
        Activation code;
    };
    constexpr FusedActivation activations[] = {
        {"relu", "Relu", Activation::Relu}, {"sigmoid", "Sigmoid", Activation::Sigmoid}, {"tanh", "Tanh", Activation::Tanh}};
    for (const FusedActivation& activation : activations) {
        const std::string code = std::to_string(static_cast<std::int64_t>(activation.code));
        for (const bool bias : {false, true})
            text += substitute(std::string(conv_activation_rule),
                               {{"act", activation.name}, {"op", activation.op}, {"code", code},
                                {"suffix", bias ? "_bias" : ""}, {"bias", bias ? ", b" : ""}, {"window", conv_window}});
    }
    for (const bool bias : {false, true})
        text += substitute(std::string(conv_batchnorm_rule),
                           {{"suffix", bias ? "_bias" : ""}, {"bias", bias ? ", b" : ""},
                            {"shift", bias ? shift_with_bias : shift_without_bias}, {"window", conv_window}});
    for (const bool enlarge : {false, true})
        for (const bool bias : {false, true})
            text += substitute(
                std::string(conv_pair_rule),
                {{"kind", enlarge ? "_enlarge" : ""}, {"suffix", bias ? "_bias" : ""}, {"biases", bias ? " b1 b2" : ""},
                 {"b1", bias ? ", b1" : ""}, {"b2", bias ? ", b2" : ""}, {"b", bias ? ", b" : ""},
                 {"k1", enlarge ? "$k1" : "$k"}, {"p1", enlarge ? "$p1" : "$p"}, {"d", enlarge ? "[1, 1]" : "$d"},
                 {"bias_concat", bias ? "  dst b = Concat(b1, b2) axis=0" : ""},
                 {"enlarge", enlarge ? "  dst first = Enlarge(w1) kernel_shape=$k" : ""}, {"first", enlarge ? "first" : "w1"},
                 {"requirement", enlarge ? "  require kernel_enlargeable($k1, $p1, $k, $p)" : "  order c1 < c2"}});
    for (const bool bias : {false, true})
        text += substitute(std::string(group_conv_rule),
                           {{"suffix", bias ? "_bias" : ""}, {"bias", bias ? ", b" : ""}, {"window", conv_window}});
    constexpr std::pair<std::size_t, std::string_view> arities[] = {{2, "pair"}, {3, "triple"}};
    for (const std::string_view rule : {matmul_parts_rule, split_bias_parts_rule})
        for (const auto& [n, name] : arities) text += substitute(expand_parts(rule, n), {{"name", name}});
    text += gemm_rules;
    text += substitute(std::string(transpose_pair_rule), {{"name", "cancel"}, {"target", "  out t2 -> x"}, {"condition", "is_identity"}});
    text += substitute(std::string(transpose_pair_rule),
                       {{"name", "fuse"}, {"target", "  dst t = Transpose(x) perm=compose($p, $q)\n  out t2 -> t"},
                        {"condition", "not_identity"}});
    text += elimination_rules;
    for (const auto& [n, name] : arities) text += substitute(expand_parts(concat_split_parts_rules, n), {{"name", name}});
    return text;
}

}  // namespace detail

/// Built-in rules that also make sense read right to left, with the reversed rule's name.
inline constexpr std::pair<std::string_view, std::string_view> reversible_builtin_rules[] = {
    {"fuse_conv_relu", "unfuse_conv_relu"},
    {"fuse_conv_relu_bias", "unfuse_conv_relu_bias"},
    {"fuse_conv_sigmoid", "unfuse_conv_sigmoid"},
    {"fuse_conv_sigmoid_bias", "unfuse_conv_sigmoid_bias"},
    {"fuse_conv_tanh", "unfuse_conv_tanh"},
    {"fuse_conv_tanh_bias", "unfuse_conv_tanh_bias"},
    {"merge_group_conv", "split_group_conv"},
    {"merge_group_conv_bias", "split_group_conv_bias"},
    {"merge_matmul_pair", "split_matmul_pair"},
    {"merge_matmul_triple", "split_matmul_triple"},
    {"merge_split_bias_pair", "split_bias_pair"},
    {"merge_split_bias_triple", "split_bias_triple"},
    {"fuse_matmul_add_gemm", "unfuse_gemm"},
};

/// The built-in rules: forward rules in a fixed order, then the reversed ones, so ids
/// are stable across runs.
[[nodiscard]] inline RuleSet builtin_rules() {
    std::vector<Rule> rules = parse_rules_text(detail::builtin_rules_text(), "<builtin rules>");
    RuleSet set(rules);
    for (const auto& [forward, backward] : reversible_builtin_rules) set.add(reversed(set.at(forward), std::string(backward)));
    return set;
}

}  // namespace rlflow::rewrite
