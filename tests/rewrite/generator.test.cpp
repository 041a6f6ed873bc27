// The substitution generator: enumeration, exact fingerprints, pairing, pruning and
// verification, on small spaces that run in seconds.
#include "support.hpp"

#include <rlflow/rewrite/generator.hpp>
#include <rlflow/rewrite/rule_text.hpp>

#include <filesystem>
#include <fstream>
#include <sstream>

using namespace rewrite_test;
using rewrite::GeneratedRules;
using rewrite::GeneratorOptions;
using rewrite::GeneratorSpace;

namespace {

/// Matrices and square weights with matmul, add, transpose, concat and split along axis 1.
GeneratorSpace matrix_space() {
    const std::vector<std::string> ops = {"matmul", "add", "transpose", "concat1", "split1"};
    GeneratorSpace space = rewrite::restrict_ops(rewrite::default_generator_space(), ops);
    std::erase_if(space.variables, [](const rewrite::GeneratorVariable& v) { return v.type.shape.rank() != 2; });
    return space;
}

GeneratorOptions quick(std::size_t max_ops, unsigned jobs = 1) {
    GeneratorOptions o;
    o.max_ops = max_ops;
    o.jobs = jobs;
    o.float_trials = 2;
    o.proof_timeout_ms = 500;
    return o;
}

/// The rule whose text (without its name line) contains every piece of `pieces`.
const rewrite::Rule* find_rule(const GeneratedRules& g, std::initializer_list<std::string_view> pieces) {
    for (const rewrite::Rule& r : g.rules) {
        const std::string text = rewrite::to_text(std::span(&r, 1));
        if (std::all_of(pieces.begin(), pieces.end(), [&](std::string_view p) { return text.find(p) != std::string::npos; }))
            return &r;
    }
    return nullptr;
}

}  // namespace

TEST_CASE("generator finds transpose involution and split-concat cancellation, each rule verified") {
    const GeneratedRules g = rewrite::generate_rules(matrix_space(), quick(2));
    CHECK(g.report.graphs > 50);
    CHECK(g.report.classes > 0);
    CHECK(g.report.rejected == 0);
    CHECK(g.rules.size() == g.report.proved + g.report.tested);
    // Transpose(Transpose(x)) -> x.
    CHECK(find_rule(g, {"src src0 = Transpose(", "src src1 = Transpose(src0)", "out src1 -> "}) != nullptr);
    // Split(Concat(a, b)) -> a, b: two outputs mapped to variables.
    const rewrite::Rule* cancel = find_rule(g, {"= Concat(", "= Split(src0) ", "out src1 -> ", "out src1:1 -> "});
    REQUIRE(cancel != nullptr);
    CHECK(cancel->target.empty());
    for (const rewrite::Rule& r : g.rules) {
        CAPTURE(r.name);
        CHECK(r.verification != rewrite::Verification::rejected);
        CHECK(r.verification != rewrite::Verification::none);
        CHECK_NOTHROW(rewrite::validate_rule(r));
        // Every target reads only variables of the source, and sides differ.
        CHECK_FALSE(r.source == r.target);
    }
}

TEST_CASE("generator results do not depend on the number of workers") {
    const GeneratedRules one = rewrite::generate_rules(matrix_space(), quick(2, 1));
    const GeneratedRules two = rewrite::generate_rules(matrix_space(), quick(2, 2));
    CHECK(rewrite::to_text(one.rules) == rewrite::to_text(two.rules));
    CHECK(one.report.graphs == two.report.graphs);
    CHECK(one.report.candidates == two.report.candidates);
}

TEST_CASE("generator pruning removes disconnected sources, renamings and common sub- and supergraphs") {
    const GeneratedRules g = rewrite::generate_rules(matrix_space(), quick(3, 2));
    const auto& r = g.report;
    CHECK(r.pruned_renaming > 0);
    CHECK(r.pruned_common_subgraph > 0);
    CHECK(r.pruned_common_supergraph > 0);
    CHECK(r.pruned_subsumed > 0);
    CHECK(r.candidates == r.pruned_disconnected + r.pruned_common_subgraph + r.pruned_common_supergraph
                              + r.pruned_renaming + r.pruned_subsumed + r.pruned_redundant + r.pruned_constant_shape
                              + r.pruned_constant_as_variable
                              + r.proved + r.tested + r.rejected);
    // matmul distributes over add: x (w1 + w2) = x w1 + x w2, three ops on one side.
    CHECK(find_rule(g, {"= Add(", "= MatMul(", "dst dst0 = MatMul("}) != nullptr);
    // No two kept rules are renamings of each other: their texts differ once names are dropped.
    std::set<std::string> shapes;
    for (const rewrite::Rule& rule : g.rules) {
        rewrite::Rule anonymous = rule;
        anonymous.name = "r";
        for (std::size_t i = 0; i < anonymous.variables.size(); ++i) anonymous.variables[i] = "v" + std::to_string(i);
        CHECK_MESSAGE(shapes.insert(rewrite::to_text(std::span(&anonymous, 1))).second, rule.name);
    }
}

TEST_CASE("every generated rule rewrites a real instance of its source to an equal graph") {
    const GeneratorSpace space = matrix_space();
    const GeneratedRules g = rewrite::generate_rules(space, quick(2));
    GeneratorOptions o = quick(2);
    for (const rewrite::Rule& rule : g.rules) {
        CAPTURE(rule.name);
        const auto instances = rewrite::detail::rule_instances(rule, space, o);
        const auto report = rewrite::check_rule_numerically(rule, instances);
        CHECK(report.equal);
        CHECK(report.instances_checked >= 1);
    }
}

TEST_CASE("the generator regenerates the committed small rule library exactly") {
    // A change to the generator that changes this library must be deliberate: the test
    // writes what it generated next to the build, to be copied over the committed file.
    GeneratorOptions o = quick(2, 2);
    o.prove = false;  // statuses would depend on Z3's timing
    const std::string generated = rewrite::to_text(rewrite::generate_rules(matrix_space(), o).rules);
    const std::filesystem::path committed = std::filesystem::path(RLFLOW_SOURCE_DIR) / "tests/data/rules/matrix_k2.rules";
    const std::filesystem::path fresh = std::filesystem::path(RLFLOW_BINARY_DIR) / "matrix_k2.rules";
    std::ofstream(fresh) << generated;
    std::ifstream in(committed);
    REQUIRE_MESSAGE(in.good(), committed.string());
    std::stringstream expected;
    expected << in.rdbuf();
    CHECK_MESSAGE(generated == expected.str(), "generated rules differ from " << committed << "; see " << fresh);
}

TEST_CASE("generator constants: TASO's constant laws are found, sized by the rule's variables, and check at every shape") {
    const std::vector<std::string> ops = {"conv_s1", "add", "avgpool", "matmul", "mul"};
    GeneratorOptions o = quick(2, 2);
    const GeneratedRules g = rewrite::generate_rules(rewrite::restrict_ops(rewrite::default_generator_space(), ops), o);
    // avgpool(x) = conv(x, 1/9 depthwise kernel), the kernel and the group sized by x's channels.
    const rewrite::Rule* pool = find_rule(g, {"src src0 = AveragePool(i1)", "shape=[dim(i1, 1), 1, 3, 3] fill=\"uniform\"",
                                              "group=dim(i1, 1)", "out src0 -> dst1"});
    REQUIRE(pool != nullptr);
    // conv(x, k) + x = conv(x, k + I): the residual folded into the kernel.
    const rewrite::Rule* fold = find_rule(g, {"src src0 = Conv2D(i1, k1)", "= Add(src0, i1)", "fill=\"identity\"",
                                              "= Add(k1, dst0)", "= Conv2D(i1, dst1)"});
    REQUIRE(fold != nullptr);
    // matmul(x, I) = x and x * ones = x, each constant square where it is an identity.
    REQUIRE(find_rule(g, {"shape=[dim(x1, 1), dim(x1, 1)] fill=\"identity\"", "= MatMul(x1, src0)", "out src1 -> x1"}) != nullptr);
    REQUIRE(find_rule(g, {"fill=\"uniform\"", "= Mul(x1, src0)", "out src1 -> x1"}) != nullptr);
    // No kept rule has a constant that could be any tensor, and every rule with a constant is
    // checked at the enumeration shapes and at the larger variant, where its constant grows.
    for (const rewrite::Rule& r : g.rules) {
        const bool constant = std::any_of(r.source.begin(), r.source.end(), [](const auto& n) { return n.op == OpKind::Constant; })
                              || std::any_of(r.target.begin(), r.target.end(), [](const auto& n) { return n.op == OpKind::Constant; });
        if (!constant) continue;
        CAPTURE(r.name);
        const auto report = rewrite::check_rule_numerically(r, rewrite::detail::rule_instances(r, rewrite::default_generator_space(), o));
        CHECK(report.equal);
        CHECK(report.instances_checked == 2);
    }
    // Rewriting with the pool rule builds a kernel of the graph's channel count.
    const Graph graph = average_pool_graph(Shape{1, 10, 6, 6});
    const RuleSet one(std::vector<rewrite::Rule>{*pool});
    const auto found = rewrite::find_locations(one, 0, graph);
    REQUIRE(found.size() == 1);
    const Graph rewritten = rewrite::apply_copy(graph, one, 0, found[0]);
    const Node& conv = rewritten.node(rewritten.outputs()[0].value.node);
    CHECK(conv.attributes.get_int("group", 0) == 10);
    CHECK(rewritten.node(conv.inputs[1].node).data->shape() == Shape{10, 1, 3, 3});
}

TEST_CASE("generator: biased convolutions give rules about biases, and what a built-in rule does is pruned") {
    const std::vector<std::string> ops = {"conv_s1_bias", "conv_s1_relu_bias", "relu", "concat0", "concat1"};
    GeneratorSpace space = rewrite::restrict_ops(rewrite::default_generator_space(), ops);
    // Images, 3x3 and 1x1 kernels and biases.
    std::erase_if(space.variables, [](const rewrite::GeneratorVariable& v) {
        return v.is_constant() || std::string_view("ikpb").find(v.name[0]) == std::string_view::npos;
    });
    GeneratorOptions o = quick(3, 2);
    const GeneratedRules all = rewrite::generate_rules(space, o);
    CHECK(all.report.pruned_known == 0);
    // Relu after a biased convolution is the convolution with relu fused.
    const std::initializer_list<std::string_view> fusion = {"src src1 = Relu(src0)\n  dst dst0 = Conv2D(", "b1) activation=1",
                                                            "out src1 -> dst0\n  status"};
    REQUIRE(find_rule(all, fusion) != nullptr);
    // Two biased convolutions of one image, concatenated by channel, are one convolution of
    // the concatenated kernels and biases.
    const std::initializer_list<std::string_view> merge = {"src src2 = Concat(src0, src1) axis=1", "dst dst1 = Concat(b",
                                                           "= Conv2D(i1, dst0, dst1)", "out src2 -> dst2"};
    CHECK(find_rule(all, merge) != nullptr);
    o.known_rules = builtin();
    const GeneratedRules pruned = rewrite::generate_rules(space, o);
    CHECK(pruned.report.pruned_known > 0);
    CHECK(pruned.rules.size() + pruned.report.pruned_known == all.rules.size());
    CHECK(find_rule(pruned, fusion) == nullptr);
    // Names stay consecutive after pruning.
    for (std::size_t i = 0; i < pruned.rules.size(); ++i) CHECK(pruned.rules[i].name == rewrite::detail::generated_rule_name(i));
    // What is left, no built-in rule does.
    for (const rewrite::Rule& r : pruned.rules)
        CHECK_FALSE(rewrite::known_rule_doing(r, rewrite::detail::rule_instances(r, space, o).front(), *builtin()));
}
