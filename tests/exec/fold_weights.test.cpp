// Folding weight-only work into new weights, so a written graph runs what the cost model
// prices: a Conv + BatchNorm fold of ResNet-18, folded values checked by hand, and the
// nodes folding must leave in place (run-time weights, opaque ops, non-float tensors).
#include "../tensor_types.hpp"
#include <rlflow/core/memory.hpp>
#include <rlflow/cost/analytic.hpp>
#include <rlflow/cost/cost_model.hpp>
#include <rlflow/exec.hpp>
#include <rlflow/models/zoo.hpp>
#include <rlflow/rewrite/applier.hpp>
#include <rlflow/rewrite/builtin_rules.hpp>
#include <rlflow/rewrite/matcher.hpp>

#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <memory>
#include <set>
#include <string>
#include <vector>

using namespace rlflow;

namespace {

constexpr std::uint64_t weight_seed = 11;
constexpr std::uint64_t input_seed = 12;


TensorPtr shared_floats(const Shape& s, std::vector<float> values) {
    return std::make_shared<const Tensor>(Tensor::from_floats(s, std::move(values)));
}

std::size_t count_op(const Graph& g, OpKind op) {
    return static_cast<std::size_t>(std::count_if(g.nodes().begin(), g.nodes().end(), [&](const Node& n) { return n.op == op; }));
}

/// Computed (not source) nodes that are weight-only.
std::size_t weight_only_computed(const Graph& g) {
    const std::vector<char> marks = weight_only_nodes(g);
    return static_cast<std::size_t>(std::count_if(g.nodes().begin(), g.nodes().end(), [&](const Node& n) {
        return marks[n.id.value] && !n.traits().has(op_flag_source);
    }));
}

/// Applies built-in rule `name` at its first location until none is left; returns how
/// many times it applied.
std::size_t apply_everywhere(Graph& g, std::string_view name) {
    const rewrite::RuleSet rules = rewrite::builtin_rules();
    const std::uint32_t id = rules.at(name).id;
    std::size_t applied = 0;
    for (auto found = rewrite::find_locations(rules, id, g); !found.empty(); found = rewrite::find_locations(rules, id, g)) {
        g = rewrite::apply_copy(g, rules, id, found.front());
        ++applied;
    }
    return applied;
}

/// The largest |a - b| / (1 + |b|) over every element of every output.
double worst_relative_error(const std::vector<Tensor>& actual, const std::vector<Tensor>& expected) {
    REQUIRE(actual.size() == expected.size());
    double worst = 0;
    for (std::size_t k = 0; k < actual.size(); ++k) {
        REQUIRE(actual[k].shape() == expected[k].shape());
        const auto a = actual[k].floats();
        const auto b = expected[k].floats();
        for (std::size_t i = 0; i < a.size(); ++i)
            worst = std::max(worst, std::abs(static_cast<double>(a[i]) - b[i]) / (1.0 + std::abs(static_cast<double>(b[i]))));
    }
    return worst;
}

/// The weight node named `name`, which must exist.
const Node& weight_named(const Graph& g, const std::string& name) {
    const auto& weights = g.weights();
    const auto it = std::find_if(weights.begin(), weights.end(), [&](NodeId id) { return g.node(id).name == name; });
    REQUIRE_MESSAGE(it != weights.end(), "no weight named " << name);
    return g.node(*it);
}

std::vector<float> values_of(const Node& n) {
    REQUIRE(n.data);
    return {n.data->floats().begin(), n.data->floats().end()};
}

}  // namespace

TEST_CASE("folding ResNet-18 after Conv + BatchNorm folding turns the weight arithmetic into weights") {
    Graph rewritten = models::build_zoo_model("resnet18");
    exec::fill_random_weights(rewritten, weight_seed);
    const std::size_t batch_norms = count_op(rewritten, OpKind::BatchNormalization);
    REQUIRE(batch_norms > 0);
    REQUIRE(apply_everywhere(rewritten, "fold_conv_batchnorm") == batch_norms);  // every BatchNorm follows a conv
    // Each fold leaves Add, Sqrt, Div, Reshape, Mul (kernel), Mul, Sub (offset) on weights.
    constexpr std::size_t arithmetic_per_fold = 7;
    REQUIRE(weight_only_computed(rewritten) == arithmetic_per_fold * batch_norms);

    Graph folded = rewritten;
    const std::size_t tensors = exec::fold_weight_only(folded);
    CHECK_NOTHROW(folded.validate());
    // The folded convolution reads two of them: its kernel and its offset.
    CHECK(tensors == 2 * batch_norms);
    CHECK(weight_only_computed(folded) == 0);
    // Per fold: the 7 ops, their epsilon Constant and the 5 weights they read (kernel,
    // gamma, beta, mean, variance) go; the 2 folded weights come.
    constexpr std::size_t removed_per_fold = arithmetic_per_fold + 1 + 5 - 2;
    CHECK(folded.num_nodes() == rewritten.num_nodes() - removed_per_fold * batch_norms);

    // Same kernels on the same values: only rounding differences may remain.
    constexpr double tolerance = 1e-5;
    const std::vector<Tensor> inputs = exec::random_inputs(rewritten, input_seed);
    const exec::Executor executor;
    CHECK(worst_relative_error(executor.run(folded, inputs).outputs, executor.run(rewritten, inputs).outputs) <= tolerance);

    // The price was already that of the folded graph: the weight-only ops were free.
    cost::CostModel<cost::AnalyticBackend> model;
    CHECK(model.graph_cost(folded) == doctest::Approx(model.graph_cost(rewritten)).epsilon(1e-12));
}

TEST_CASE("fold_weight_only computes folded values from the weights alone, and a weight-only graph output becomes a weight") {
    Graph g;
    const NodeId x = g.add_input("x", f32({2, 3}));
    const NodeId w = g.add_weight("W", f32({2, 3}), shared_floats({2, 3}, {1, 2, 3, 4, 5, 6}));
    const NodeId half = g.add_constant("half", Tensor::from_floats({1}, {0.5f}));
    const NodeId scaled = g.add_node(OpKind::Mul, {{w, 0}, {half, 0}}, {}, "scaled");
    g.add_output({g.add_node(OpKind::Add, {{x, 0}, {scaled, 0}}, {}, "y"), 0}, "y");
    g.add_output({scaled, 0}, "scaled_out");

    CHECK(exec::fold_weight_only(g) == 1);
    CHECK_NOTHROW(g.validate());
    const Node& folded = weight_named(g, "scaled_folded");
    CHECK(values_of(folded) == std::vector<float>{0.5f, 1.0f, 1.5f, 2.0f, 2.5f, 3.0f});  // halves are exact
    CHECK(g.outputs()[1].value == TensorRef{folded.id, 0});
    CHECK(g.outputs()[1].name == "scaled_out");
    CHECK(g.node(g.outputs()[0].value.node).inputs[1] == TensorRef{folded.id, 0});
    // W, half and the Mul are gone: x, the folded weight and y remain.
    CHECK(g.num_nodes() == 3);
    CHECK_FALSE(g.contains(w));
    CHECK_FALSE(g.contains(half));
    CHECK_FALSE(g.contains(scaled));
}

TEST_CASE("fold_weight_only leaves what is computed from a weight without data, a run-time input") {
    Graph g;
    const NodeId x = g.add_input("x", f32({1, 8}));
    const NodeId w = g.add_weight("W", f32({8, 16}));
    const NodeId s = g.add_constant("s", Tensor::from_floats({1}, {0.5f}));
    const NodeId scaled = g.add_node(OpKind::Mul, {{w, 0}, {s, 0}}, {}, "scaled");
    g.add_output({g.add_node(OpKind::MatMul, {{x, 0}, {scaled, 0}}, {}, "y"), 0});
    const std::uint64_t revision = g.revision();

    CHECK(exec::fold_weight_only(g) == 0);
    CHECK(g.revision() == revision);  // not edited at all
    CHECK(g.contains(scaled));
}

TEST_CASE("fold_weight_only leaves a zero-input opaque op and what reads it, and folds the rest") {
    Graph g;
    const Attributes shape{{"shape", std::vector<std::int64_t>{2, 2}}};
    const NodeId noise = g.add_opaque("RandomNormal", "", {}, {f32({2, 2})}, shape, "noise");
    const NodeId w = g.add_weight("W", f32({2, 2}), shared_floats({2, 2}, {1, 2, 3, 4}));
    const NodeId doubled = g.add_node(OpKind::Add, {{w, 0}, {w, 0}}, {}, "doubled");
    const NodeId sum = g.add_node(OpKind::Add, {{noise, 0}, {doubled, 0}}, {}, "sum");
    const NodeId rectified = g.add_node(OpKind::Relu, {{sum, 0}}, {}, "rectified");
    g.add_output({rectified, 0});

    CHECK(exec::fold_weight_only(g) == 1);
    CHECK(g.contains(noise));
    CHECK(g.contains(sum));
    CHECK(g.contains(rectified));
    CHECK_FALSE(g.contains(doubled));
    const Node& folded = weight_named(g, "doubled_folded");
    CHECK(values_of(folded) == std::vector<float>{2, 4, 6, 8});
    CHECK(g.node(sum).inputs[1] == TensorRef{folded.id, 0});
}

TEST_CASE("weight-only ops the executor cannot run stay in place, and so does what is computed from them") {
    // The executor runs float32 only: an int64 sum of constants cannot be folded here.
    Graph g;
    const NodeId a = g.add_constant("a", Tensor::from_values(DType::Int64, Shape{2}, std::vector<std::int64_t>{1, 2}));
    const NodeId b = g.add_constant("b", Tensor::from_values(DType::Int64, Shape{2}, std::vector<std::int64_t>{3, 4}));
    const NodeId sum = g.add_node(OpKind::Add, {{a, 0}, {b, 0}}, {}, "sum");
    const NodeId twice = g.add_node(OpKind::Add, {{sum, 0}, {sum, 0}}, {}, "twice");
    g.add_output({twice, 0});
    const NodeId x = g.add_input("x", f32({2}));
    const NodeId w = g.add_weight("W", f32({2}), shared_floats({2}, {1, 2}));
    const NodeId zeroed = g.add_node(OpKind::Sub, {{w, 0}, {w, 0}}, {}, "zeroed");
    g.add_output({g.add_node(OpKind::Add, {{x, 0}, {zeroed, 0}}, {}, "y"), 0});

    CHECK(exec::fold_weight_only(g) == 1);  // the float Sub only
    CHECK(g.contains(sum));
    CHECK(g.contains(twice));
    CHECK_FALSE(g.contains(zeroed));
    CHECK(values_of(weight_named(g, "zeroed_folded")) == std::vector<float>{0, 0});
}

TEST_CASE("folded weights get readable unique names, the same on every run") {
    // Both outputs of a Split of W are read at run time; a graph input already holds the
    // name the first would take.
    const auto build = [] {
        Graph g;
        const NodeId x = g.add_input("parts_folded_0", f32({2, 3}));
        const NodeId w = g.add_weight("W", f32({4, 3}), shared_floats({4, 3}, {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11}));
        const NodeId parts = g.add_node(OpKind::Split, {{w, 0}},
                                        {{"axis", std::int64_t{0}}, {"split", std::vector<std::int64_t>{1, 3}}}, "parts");
        g.add_output({g.add_node(OpKind::Add, {{x, 0}, {parts, 0}}, {}, "shifted"), 0});
        g.add_output({g.add_node(OpKind::MatMul, {{x, 0}, {parts, 1}}, {}, "projected"), 0});
        return g;
    };
    Graph first = build();
    Graph second = build();
    CHECK(exec::fold_weight_only(first) == 2);
    CHECK(exec::fold_weight_only(second) == 2);

    CHECK(values_of(weight_named(first, "parts_folded_0_2")) == std::vector<float>{0, 1, 2});
    CHECK(values_of(weight_named(first, "parts_folded_1")) == std::vector<float>{3, 4, 5, 6, 7, 8, 9, 10, 11});
    std::set<std::string> names;
    for (const Node& n : first.nodes()) CHECK_MESSAGE(names.insert(n.name).second, "duplicate name " << n.name);

    REQUIRE(first.weights().size() == second.weights().size());
    for (std::size_t i = 0; i < first.weights().size(); ++i) {
        const Node& a = first.node(first.weights()[i]);
        const Node& b = second.node(second.weights()[i]);
        CHECK(a.id == b.id);
        CHECK(a.name == b.name);
        CHECK(values_of(a) == values_of(b));
    }
}
