#include <rlflow/rewrite/builtin_rules.hpp>
#include <rlflow/rewrite/rule_text.hpp>
#include <rlflow/synth/rule_check.hpp>

#include <doctest/doctest.h>

#include <map>
#include <string>
#include <string_view>

using namespace rlflow;
using namespace rlflow::rewrite;
using namespace rlflow::synth;

namespace {

/// The one rule in `text` (the body of a rule file, without the header).
Rule parse_one(std::string_view text) {
    const auto rules = parse_rules_text("rlflow-rules 1\n" + std::string(text), "<test>");
    REQUIRE(rules.size() == 1);
    return rules.front();
}

RuleCheckReport check(const Rule& rule, std::string_view instances) {
    return check_rule_numerically(rule, parse_rule_instances(rule, instances));
}

constexpr std::string_view conv_instances = R"(
x=(1,4,6,6) w=(8,4,3,3) $k=[3,3] $s=[1,1] $p=[1,1,1,1] $d=[1,1] $g=1
x=(2,4,7,7) w=(4,2,1,3) $k=[1,3] $s=[2,2] $p=[0,1,0,1] $d=[1,1] $g=2)";
constexpr std::string_view conv_bias_instances = R"(
x=(1,4,6,6) w=(8,4,3,3) b=(8,) $k=[3,3] $s=[1,1] $p=[1,1,1,1] $d=[1,1] $g=1
x=(2,4,7,7) w=(4,2,1,3) b=(4,) $k=[1,3] $s=[2,2] $p=[0,1,0,1] $d=[1,1] $g=2)";
constexpr std::string_view batchnorm_instances = R"(
x=(1,4,6,6) w=(8,4,3,3) gamma=(8,) beta=(8,) mean=(8,) variance=(8,) $k=[3,3] $s=[1,1] $p=[1,1,1,1] $d=[1,1] $g=1 $eps=1e-05
x=(2,4,5,5) w=(4,2,1,1) gamma=(4,) beta=(4,) mean=(4,) variance=(4,) $k=[1,1] $s=[2,2] $p=[0,0,0,0] $d=[1,1] $g=2 $eps=0.001)";
constexpr std::string_view batchnorm_bias_instances = R"(
x=(1,4,6,6) w=(8,4,3,3) b=(8,) gamma=(8,) beta=(8,) mean=(8,) variance=(8,) $k=[3,3] $s=[1,1] $p=[1,1,1,1] $d=[1,1] $g=1 $eps=1e-05
x=(2,4,5,5) w=(4,2,1,1) b=(4,) gamma=(4,) beta=(4,) mean=(4,) variance=(4,) $k=[1,1] $s=[2,2] $p=[0,0,0,0] $d=[1,1] $g=2 $eps=0.001)";
constexpr std::string_view conv_pair_instances = R"(
x=(1,4,6,6) w1=(8,4,3,3) w2=(6,4,3,3) $k=[3,3] $s=[1,1] $p=[1,1,1,1] $d=[1,1] $a=0
x=(2,3,7,7) w1=(2,3,1,3) w2=(5,3,1,3) $k=[1,3] $s=[2,2] $p=[0,1,0,1] $d=[2,1] $a=1)";
constexpr std::string_view conv_pair_bias_instances = R"(
x=(1,4,6,6) w1=(8,4,3,3) w2=(6,4,3,3) b1=(8,) b2=(6,) $k=[3,3] $s=[1,1] $p=[1,1,1,1] $d=[1,1] $a=0
x=(2,3,7,7) w1=(2,3,1,3) w2=(5,3,1,3) b1=(2,) b2=(5,) $k=[1,3] $s=[2,2] $p=[0,1,0,1] $d=[2,1] $a=1)";
constexpr std::string_view enlarge_pair_instances = R"(
x=(1,4,6,6) w1=(8,4,1,1) w2=(6,4,3,3) $k1=[1,1] $p1=[0,0,0,0] $k=[3,3] $p=[1,1,1,1] $s=[1,1] $a=0
x=(2,3,7,7) w1=(2,3,1,3) w2=(5,3,3,5) $k1=[1,3] $p1=[0,1,0,1] $k=[3,5] $p=[1,2,1,2] $s=[2,2] $a=1)";
constexpr std::string_view enlarge_pair_bias_instances = R"(
x=(1,4,6,6) w1=(8,4,1,1) w2=(6,4,3,3) b1=(8,) b2=(6,) $k1=[1,1] $p1=[0,0,0,0] $k=[3,3] $p=[1,1,1,1] $s=[1,1] $a=0
x=(2,3,7,7) w1=(2,3,1,3) w2=(5,3,3,5) b1=(2,) b2=(5,) $k1=[1,3] $p1=[0,1,0,1] $k=[3,5] $p=[1,2,1,2] $s=[2,2] $a=1)";
constexpr std::string_view group_conv_instances = R"(
x=(1,4,6,6) w=(8,1,3,3) $k=[3,3] $s=[1,1] $p=[1,1,1,1] $d=[1,1] $g=4 $a=0
x=(2,8,5,5) w=(4,2,1,1) $k=[1,1] $s=[2,2] $p=[0,0,0,0] $d=[1,1] $g=4 $a=1)";
constexpr std::string_view group_conv_bias_instances = R"(
x=(1,4,6,6) w=(8,1,3,3) b=(8,) $k=[3,3] $s=[1,1] $p=[1,1,1,1] $d=[1,1] $g=4 $a=0
x=(2,8,5,5) w=(4,2,1,1) b=(4,) $k=[1,1] $s=[2,2] $p=[0,0,0,0] $d=[1,1] $g=4 $a=1)";
constexpr std::string_view matmul_pair_instances = "x=(3,4) w1=(4,5) w2=(4,2); x=(2,3,4) w1=(4,1) w2=(4,3)";
constexpr std::string_view matmul_triple_instances = "x=(3,4) w1=(4,5) w2=(4,2) w3=(4,3); x=(2,3,4) w1=(4,1) w2=(4,3) w3=(4,2)";
constexpr std::string_view split_bias_pair_instances = "y=(3,6) b1=(2,) b2=(4,) $sp=[2,4]; y=(2,3,5) b1=(1,) b2=(4,) $sp=[1,4]";
constexpr std::string_view split_bias_triple_instances
    = "y=(3,6) b1=(2,) b2=(3,) b3=(1,) $sp=[2,3,1]; y=(2,3,5) b1=(1,) b2=(2,) b3=(2,) $sp=[1,2,2]";
constexpr std::string_view gemm_instances = "a=(3,4) b=(4,5) c=(5,); a=(2,3) b=(3,3) c=(2,3)";

/// Hand-chosen instances of every built-in rule, forward and reversed (two each, of
/// different shapes and attribute values).
const std::map<std::string, std::string_view, std::less<>> builtin_instances = {
    {"fuse_conv_relu", conv_instances}, {"fuse_conv_relu_bias", conv_bias_instances},
    {"fuse_conv_sigmoid", conv_instances}, {"fuse_conv_sigmoid_bias", conv_bias_instances},
    {"fuse_conv_tanh", conv_instances}, {"fuse_conv_tanh_bias", conv_bias_instances},
    {"unfuse_conv_relu", conv_instances}, {"unfuse_conv_relu_bias", conv_bias_instances},
    {"unfuse_conv_sigmoid", conv_instances}, {"unfuse_conv_sigmoid_bias", conv_bias_instances},
    {"unfuse_conv_tanh", conv_instances}, {"unfuse_conv_tanh_bias", conv_bias_instances},
    {"fold_conv_batchnorm", batchnorm_instances}, {"fold_conv_batchnorm_bias", batchnorm_bias_instances},
    {"merge_conv_pair", conv_pair_instances}, {"merge_conv_pair_bias", conv_pair_bias_instances},
    {"merge_conv_enlarge_pair", enlarge_pair_instances}, {"merge_conv_enlarge_pair_bias", enlarge_pair_bias_instances},
    {"merge_group_conv", group_conv_instances}, {"merge_group_conv_bias", group_conv_bias_instances},
    {"split_group_conv", group_conv_instances}, {"split_group_conv_bias", group_conv_bias_instances},
    {"merge_matmul_pair", matmul_pair_instances}, {"merge_matmul_triple", matmul_triple_instances},
    {"split_matmul_pair", matmul_pair_instances}, {"split_matmul_triple", matmul_triple_instances},
    {"merge_split_bias_pair", split_bias_pair_instances}, {"merge_split_bias_triple", split_bias_triple_instances},
    {"split_bias_pair", split_bias_pair_instances}, {"split_bias_triple", split_bias_triple_instances},
    {"fuse_matmul_add_gemm", gemm_instances}, {"unfuse_gemm", gemm_instances},
    {"fuse_batched_matmul_add_gemm", "x=(2,3,4) w=(4,5) c=(5,); x=(1,2,3) w=(3,3) c=(3,)"},
    {"cancel_transpose_pair", "x=(2,3,4) $p=[1,2,0] $q=[2,0,1]; x=(3,4) $p=[1,0] $q=[1,0]"},
    {"fuse_transpose_pair", "x=(2,3,4) $p=[1,2,0] $q=[1,2,0]; x=(2,3,4,5) $p=[0,2,1,3] $q=[3,1,2,0]"},
    {"eliminate_identity", "x=(2,3); x=()"},
    {"collapse_reshape_pair", "x=(2,6) $a=[3,4] $b=[12]; x=(2,3,4) $a=[6,4] $b=[4,6]"},
    {"eliminate_noop_reshape", "x=(2,3) r.shape=[2,3]; x=(4,) r.shape=[4]"},
    {"cancel_concat_split_pair", "x1=(2,3) x2=(4,3) $ax=0; x1=(2,3) x2=(2,5) $ax=1"},
    {"cancel_concat_split_triple", "x1=(2,3) x2=(4,3) x3=(1,3) $ax=0; x1=(1,2,3) x2=(1,1,3) x3=(1,4,3) $ax=1"},
    {"cancel_split_concat_pair", "y=(5,3) $ax=0 $sp=[2,3]; y=(2,3,4) $ax=2 $sp=[1,3]"},
    {"cancel_split_concat_triple", "y=(5,3) $ax=0 $sp=[2,1,2]; y=(2,6,4) $ax=1 $sp=[1,3,2]"},
};

}  // namespace

TEST_CASE("numeric rule check: every built-in rule checks equal on hand-chosen instances") {
    const RuleSet rules = builtin_rules();
    for (const Rule& rule : rules) {
        CAPTURE(rule.name);
        const auto it = builtin_instances.find(rule.name);
        REQUIRE_MESSAGE(it != builtin_instances.end(), "no instances for built-in rule " << rule.name);
        const auto instances = parse_rule_instances(rule, it->second);
        const RuleCheckReport report = check_rule_numerically(rule, instances);
        CHECK_MESSAGE(report.equal, report.detail);
        CHECK(report.instances_checked == instances.size());
        CHECK(report.instances_not_applicable == 0);
        CHECK(report.max_abs_diff < 1e-4);
    }
}

TEST_CASE("numeric rule check: relu does not distribute over add and the output is named") {
    const Rule wrong = parse_one(R"(
rule relu_distributes
  var x y
  src a = Add(x, y)
  src r = Relu(a)
  dst rx = Relu(x)
  dst ry = Relu(y)
  dst s = Add(rx, ry)
  out r -> s
end
)");
    const RuleCheckReport report = check(wrong, "x=(2,3) y=(2,3); x=(4,) y=(4,)");
    CHECK_FALSE(report.equal);
    CHECK(report.instances_checked == 1);
    CHECK(report.max_abs_diff > 1e-3);
    CHECK(report.detail.find("instance 0 (x=(2,3) y=(2,3))") != std::string::npos);
    CHECK(report.detail.find("output 'r:0' differs") != std::string::npos);
}

TEST_CASE("numeric rule check: a split with swapped outputs is caught at the output it swaps") {
    const Rule wrong = parse_one(R"(
rule swapped_split
  var x1 x2
  sym ax
  src c = Concat(x1, x2) axis=$ax
  src s = Split(c) axis=$ax split=[dim(x1, $ax), dim(x2, $ax)] outputs=2
  out s:0 -> x2
  out s:1 -> x1
end
)");
    // Parts of different sizes cannot be swapped (types differ): not applicable, skipped.
    const RuleCheckReport report = check(wrong, "x1=(2,3) x2=(4,3) $ax=0; x1=(2,3) x2=(2,3) $ax=0");
    CHECK_FALSE(report.equal);
    CHECK(report.instances_not_applicable == 1);
    CHECK(report.instances_checked == 1);
    CHECK(report.detail.find("instance 1") != std::string::npos);
    CHECK(report.detail.find("output 's:0' differs") != std::string::npos);
}

TEST_CASE("numeric rule check: instances whose shapes do not fit are skipped and not counted") {
    const Rule commute = parse_one(R"(
rule add_commutes
  var x y
  src a = Add(x, y)
  dst b = Add(y, x)
  out a -> b
end
)");
    const RuleCheckReport report = check(commute, "x=(2,3) y=(4,5); x=(2,3) y=(2,3); x=(3,) y=(2,3); x=(7,) y=(2,)");
    CHECK(report.equal);
    CHECK(report.instances_checked == 2);
    CHECK(report.instances_not_applicable == 0);
    const auto misfit = parse_rule_instances(commute, "x=(2,3) y=(4,5)");
    CHECK_FALSE(instantiate_source(commute, misfit.front()).has_value());
}

TEST_CASE("numeric rule check: instantiate_source builds the pattern with named inputs and outputs") {
    const Rule rule = builtin_rules().at("merge_conv_pair");
    const auto instances = parse_rule_instances(rule, conv_pair_instances);
    const auto graph = instantiate_source(rule, instances.front());
    REQUIRE(graph.has_value());
    REQUIRE(graph->inputs().size() == 3);
    CHECK(graph->node(graph->inputs()[0]).name == "x");
    CHECK(graph->type({graph->inputs()[1], 0}).shape == Shape{8, 4, 3, 3});
    REQUIRE(graph->outputs().size() == 2);
    CHECK(graph->outputs()[0].name == "c1:0");
    CHECK(graph->type(graph->outputs()[1].value).shape == Shape{1, 6, 6, 6});
    // A missing symbol, a value of the wrong type and a non-normalised axis do not fit.
    RuleInstance missing = instances.front();
    missing.symbols.erase("p");
    CHECK_FALSE(instantiate_source(rule, missing).has_value());
    RuleInstance wrong_type = instances.front();
    wrong_type.symbols["a"] = std::vector<std::int64_t>{0};
    CHECK_FALSE(instantiate_source(rule, wrong_type).has_value());
    const Rule cancel = builtin_rules().at("cancel_concat_split_pair");
    CHECK_FALSE(instantiate_source(cancel, parse_rule_instances(cancel, "x1=(2,3) x2=(2,5) $ax=-1").front()).has_value());
}

TEST_CASE("numeric rule check: instance text round-trips and names what is wrong") {
    const Rule rule = builtin_rules().at("eliminate_noop_reshape");
    const auto instances = parse_rule_instances(rule, "x=(2,3) r.shape=[2, 3]\n\n x=(4) r.shape=[4]");
    REQUIRE(instances.size() == 2);
    CHECK(instances[1].variable_types[0].shape == Shape{4});
    CHECK(to_text(rule, instances[0]) == "x=(2,3) r.shape=[2, 3]");
    CHECK(parse_rule_instances(rule, to_text(rule, instances[0])).front().symbols == instances[0].symbols);
    CHECK_THROWS_WITH_AS((void)parse_rule_instances(rule, "y=(2,3)"),
                         "[rlflow.rule_error] rule 'eliminate_noop_reshape' instance 0: rule 'eliminate_noop_reshape' has no "
                         "variable 'y'",
                         rule_error);
    CHECK_THROWS_WITH_AS((void)parse_rule_instances(rule, "r.shape=[2]"),
                         "[rlflow.rule_error] rule 'eliminate_noop_reshape' instance 0: no shape for variable 'x'", rule_error);
    CHECK_THROWS_AS((void)parse_rule_instances(rule, "x=(2,3) $k=1"), rule_error);
}

TEST_CASE("known rule: a generated-style rule a built-in rule does is found, a rule no built-in does is not") {
    const RuleSet builtin = builtin_rules();
    // Conv(1x3, bias) + Relu fused: what fuse_conv_relu_bias does, written with literals.
    const Rule fusion = parse_one(R"(rule g_fusion
  var i1 h1 b1
  src src0 = Conv2D(i1, h1, b1) activation=0 dilations=[1, 1] group=1 kernel_shape=[1, 3] pads=[0, 1, 0, 1] strides=[1, 1]
  src src1 = Relu(src0)
  dst dst0 = Conv2D(i1, h1, b1) activation=1 dilations=[1, 1] group=1 kernel_shape=[1, 3] pads=[0, 1, 0, 1] strides=[1, 1]
  out src1 -> dst0
end
)");
    const auto fusion_instance = parse_rule_instances(fusion, "i1=(2,4,5,5) h1=(4,4,1,3) b1=(4)");
    const auto doing = known_rule_doing(fusion, fusion_instance.front(), builtin);
    REQUIRE(doing.has_value());
    CHECK(builtin[*doing].name == "fuse_conv_relu_bias");
    // The same source with another (equal) target is not what the built-in rule does.
    const Rule unfused = parse_one(R"(rule g_relu_twice
  var i1 h1 b1
  src src0 = Conv2D(i1, h1, b1) activation=0 dilations=[1, 1] group=1 kernel_shape=[1, 3] pads=[0, 1, 0, 1] strides=[1, 1]
  src src1 = Relu(src0)
  dst dst0 = Conv2D(i1, h1, b1) activation=1 dilations=[1, 1] group=1 kernel_shape=[1, 3] pads=[0, 1, 0, 1] strides=[1, 1]
  dst dst1 = Relu(dst0)
  out src1 -> dst1
end
)");
    CHECK_FALSE(known_rule_doing(unfused, parse_rule_instances(unfused, "i1=(2,4,5,5) h1=(4,4,1,3) b1=(4)").front(), builtin));
    // A scalar pulled out of a matmul: no built-in rule does it.
    const Rule scale = parse_one(R"(rule g_scale
  var x1 w1 s1
  src src0 = Mul(w1, s1)
  src src1 = MatMul(x1, src0)
  dst dst0 = MatMul(x1, w1)
  dst dst1 = Mul(dst0, s1)
  out src1 -> dst1
end
)");
    CHECK_FALSE(known_rule_doing(scale, parse_rule_instances(scale, "x1=(2,4) w1=(4,4) s1=(1)").front(), builtin));
    // An instance the rule does not fit finds nothing.
    CHECK_FALSE(known_rule_doing(fusion, parse_rule_instances(fusion, "i1=(2,4,5,5) h1=(4,4,3,3) b1=(4)").front(), builtin));
}
