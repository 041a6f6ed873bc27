// Constant tensors in rules: the fills, what a graph constant reads as, and rules that
// build such constants (applier) and find them again (matcher).
#include "support.hpp"

#include <rlflow/rewrite/constant_tensor.hpp>
#include <rlflow/rewrite/rule_text.hpp>

using namespace rewrite_test;
using rewrite::ConstantFill;

namespace {

/// `x` through a stride-1, SAME-padded conv with constant kernel `kernel` and `group`.
std::vector<Tensor> conv_with(const Tensor& x, const Tensor& kernel, std::int64_t group) {
    Graph g;
    const TensorRef in{g.add_input("x", x.type()), 0};
    const TensorRef k{g.add_constant("k", kernel), 0};
    const std::int64_t pad = kernel.shape()[2] / 2;
    Attributes a;
    a.set("pads", std::vector<std::int64_t>{pad, pad, pad, pad});
    a.set("group", group);
    g.add_output({g.add_node(OpKind::Conv2D, {in, k}, a, "conv"), 0}, "y");
    return exec::Executor{}.run(g, {{"x", x}}).outputs;
}

Tensor random_tensor(const Shape& s, std::uint64_t seed) {
    Rng rng(seed);
    std::vector<float> v(static_cast<std::size_t>(s.numel()));
    for (float& f : v) f = static_cast<float>(rng.uniform(-1.0, 1.0));
    return Tensor::from_floats(s, std::move(v));
}

float max_abs_diff(const Tensor& a, const Tensor& b) {
    REQUIRE(a.shape() == b.shape());
    float d = 0;
    for (std::size_t i = 0; i < a.floats().size(); ++i) d = std::max(d, std::abs(a.floats()[i] - b.floats()[i]));
    return d;
}

constexpr std::string_view pool_rules = R"(rlflow-rules 1

rule pool_as_conv
  var x
  src p = AveragePool(x) kernel_shape=[3, 3] pads=[1, 1, 1, 1] strides=[1, 1] count_include_pad=1
  dst k = Constant() value=0.1111111119389534 shape=[dim(x, 1), 1, 3, 3] fill="uniform"
  dst c = Conv2D(x, k) kernel_shape=[3, 3] pads=[1, 1, 1, 1] strides=[1, 1] dilations=[1, 1] group=dim(x, 1) activation=0
  out p -> c
end

rule conv_as_pool
  var x
  src k = Constant() value=0.1111111119389534 shape=[dim(x, 1), 1, 3, 3] fill="uniform"
  src c = Conv2D(x, k) kernel_shape=[3, 3] pads=[1, 1, 1, 1] strides=[1, 1] dilations=[1, 1] group=dim(x, 1) activation=0
  dst p = AveragePool(x) kernel_shape=[3, 3] pads=[1, 1, 1, 1] strides=[1, 1] count_include_pad=1
  out c -> p
end
)";

}  // namespace

TEST_CASE("constant fills: identity matrices and conv kernels, uniform tensors, and what each reads as") {
    const Tensor eye = rewrite::constant_tensor(Shape{3, 3}, 1.0, ConstantFill::identity);
    CHECK(std::vector<float>(eye.floats().begin(), eye.floats().end()) == std::vector<float>{1, 0, 0, 0, 1, 0, 0, 0, 1});
    // A depthwise identity kernel: one tap per channel, at the centre.
    const Tensor depthwise = rewrite::constant_tensor(Shape{2, 1, 3, 3}, 2.0, ConstantFill::identity);
    CHECK(depthwise.floats()[4] == 2.0f);
    CHECK(depthwise.floats()[9 + 4] == 2.0f);
    CHECK(std::count(depthwise.floats().begin(), depthwise.floats().end(), 0.0f) == 16);

    const auto form = rewrite::constant_form(depthwise);
    REQUIRE(form.has_value());
    CHECK(form->fill == ConstantFill::identity);
    CHECK(form->value == 2.0);
    const auto ones = rewrite::constant_form(rewrite::constant_tensor(Shape{2, 4}, 1.0, ConstantFill::uniform));
    REQUIRE(ones.has_value());
    CHECK(ones->fill == ConstantFill::uniform);
    CHECK(ones->value == 1.0);
    // A tensor that is neither reads as nothing.
    CHECK_FALSE(rewrite::constant_form(Tensor::from_floats(Shape{2, 2}, {1, 0, 0, 2})).has_value());
    CHECK_FALSE(rewrite::constant_form(Tensor::from_floats(Shape{2, 2}, {1, 1, 0, 1})).has_value());
    // An identity needs a matrix or an odd kernel.
    CHECK_THROWS_AS((void)rewrite::constant_tensor(Shape{2, 2, 2, 2}, 1.0, ConstantFill::identity), shape_error);
    CHECK_THROWS_AS((void)rewrite::constant_tensor(Shape{4}, 1.0, ConstantFill::identity), shape_error);
}

TEST_CASE("an identity kernel is the identity convolution, grouped or not, and a 1/9 kernel is a 3x3 average pool") {
    const Tensor x = random_tensor(Shape{2, 4, 5, 5}, 3);
    for (const std::int64_t group : {1, 2, 4}) {
        CAPTURE(group);
        const Tensor kernel = rewrite::constant_tensor(Shape{4, 4 / group, 3, 3}, 1.0, ConstantFill::identity);
        CHECK(max_abs_diff(conv_with(x, kernel, group)[0], x) == 0.0f);
    }
    const Tensor one_by_one = rewrite::constant_tensor(Shape{4, 4, 1, 1}, 1.0, ConstantFill::identity);
    CHECK(max_abs_diff(conv_with(x, one_by_one, 1)[0], x) == 0.0f);

    const Graph pool = average_pool_graph(x.shape());
    const Tensor pooled = exec::Executor{}.run(pool, {{"x", x}}).outputs[0];
    const Tensor kernel = rewrite::constant_tensor(Shape{4, 1, 3, 3}, 1.0 / 9, ConstantFill::uniform);
    CHECK(max_abs_diff(conv_with(x, kernel, 4)[0], pooled) < 1e-6f);
}

TEST_CASE("a rule builds a constant tensor of its match's shape, and another rule finds it again") {
    const RuleSet rules(rewrite::parse_rules_text(pool_rules, "pool.rules"));
    // The text form holds constant tensors exactly.
    const std::vector<rewrite::Rule> parsed = rewrite::parse_rules_text(pool_rules);
    CHECK(rewrite::to_text(parsed) == pool_rules);

    const Graph g = average_pool_graph(Shape{1, 6, 7, 7});
    const std::vector<Tensor> before = run_seeded(g);

    const auto to_conv = rewrite::find_locations(rules, rules.at("pool_as_conv").id, g);
    REQUIRE(to_conv.size() == 1);
    // The reverse rule finds no constant to start from.
    CHECK(rewrite::find_locations(rules, rules.at("conv_as_pool").id, g).empty());
    const Graph as_conv = rewrite::apply_copy(g, rules, rules.at("pool_as_conv").id, to_conv[0]);
    const Node& conv = as_conv.node(as_conv.outputs()[0].value.node);
    REQUIRE(conv.op == OpKind::Conv2D);
    CHECK(conv.attributes.get_int("group", 0) == 6);
    const Node& kernel = as_conv.node(conv.inputs[1].node);
    REQUIRE(kernel.op == OpKind::Constant);
    CHECK(kernel.data->shape() == Shape{6, 1, 3, 3});
    CHECK(max_abs_diff(run_seeded(as_conv)[0], before[0]) < 1e-6f);

    const auto back = rewrite::find_locations(rules, rules.at("conv_as_pool").id, as_conv);
    REQUIRE(back.size() == 1);
    const Graph again = rewrite::apply_copy(as_conv, rules, rules.at("conv_as_pool").id, back[0]);
    CHECK(again.node(again.outputs()[0].value.node).op == OpKind::AveragePool);

    // Built by hand, the pooling kernel is found; a constant of another value or fill is not.
    const auto conv_on_constant = [&](const Tensor& weights) {
        Graph h;
        const TensorRef in{h.add_input("x", f32({1, 6, 7, 7})), 0};
        Attributes c;
        c.set("pads", std::vector<std::int64_t>{1, 1, 1, 1});
        c.set("group", std::int64_t{6});
        h.add_output({h.add_node(OpKind::Conv2D, {in, {h.add_constant("k", weights), 0}}, c, "conv"), 0}, "y");
        return rewrite::find_locations(rules, rules.at("conv_as_pool").id, h).size();
    };
    const Shape kernel_shape{6, 1, 3, 3};
    CHECK(conv_on_constant(rewrite::constant_tensor(kernel_shape, 1.0 / 9, ConstantFill::uniform)) == 1);
    CHECK(conv_on_constant(rewrite::constant_tensor(kernel_shape, 0.125, ConstantFill::uniform)) == 0);
    CHECK(conv_on_constant(rewrite::constant_tensor(kernel_shape, 1.0 / 9, ConstantFill::identity)) == 0);
    CHECK(conv_on_constant(rewrite::constant_tensor(Shape{6, 1, 1, 1}, 1.0 / 9, ConstantFill::uniform)) == 0);
}

TEST_CASE("a tensor constant in a rule needs a shape and a known fill that fits it") {
    const auto error_of = [](std::string_view constant) {
        const std::string rule = "rlflow-rules 1\n\nrule r\n  var x\n  src c = " + std::string(constant)
                           + "\n  src m = Mul(x, c)\n  dst y = Relu(x)\n  out m -> y\nend\n";
        try {
            (void)rewrite::parse_rules_text(rule, "c.rules");
        } catch (const rule_error& e) {
            return std::string(e.what());
        }
        return std::string();
    };
    CHECK(error_of(R"(Constant() value=1 shape=[dim(x, 0), dim(x, 1)])").find("needs both 'shape' and 'fill'") != std::string::npos);
    CHECK(error_of(R"(Constant() value=1 fill="uniform")").find("needs both 'shape' and 'fill'") != std::string::npos);
    CHECK(error_of(R"(Constant() value=1 shape=[dim(x, 0), 3, 3] fill="identity")").find("rank 2 or 4") != std::string::npos);
    CHECK(error_of(R"(Constant() value=1 shape=[dim(x, 0), 3] fill="zeros")").find("fill must be") != std::string::npos);
    CHECK(error_of(R"(Constant() value=1 shape=[dim(x, 0), dim(x, 1)] fill="identity")").empty());
}

TEST_CASE("a rule constant larger than max_constant_elements is refused, when parsed or when built") {
    const std::string rule = "rlflow-rules 1\n\nrule r\n  var x\n  src c = Constant() value=1 shape=[50000, 50000] fill=\"uniform\""
                             "\n  src m = Mul(x, c)\n  dst y = Relu(x)\n  out m -> y\nend\n";
    CHECK_THROWS_WITH_AS((void)rewrite::parse_rules_text(rule, "huge.rules"), doctest::Contains("more than 268435456 elements"),
                         rule_error);
    // Ten dims of 100,000 overflow a 64-bit count: still refused, not wrapped round.
    CHECK(rewrite::constant_too_large(std::vector<std::int64_t>(10, 100000)));
    CHECK(rewrite::constant_too_large(std::vector<std::int64_t>{16385, 16384}));
    CHECK_FALSE(rewrite::constant_too_large(std::vector<std::int64_t>{16384, 16384}));
    // A symbolic shape is checked when the constant is built for a match.
    CHECK_THROWS_WITH_AS((void)rewrite::constant_tensor(Shape{1 << 15, 1 << 14}, 1.0, ConstantFill::uniform),
                         doctest::Contains("more than 268435456 elements"), shape_error);
}
