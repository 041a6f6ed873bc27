#include "../tensor_types.hpp"
#include <rlflow/cost.hpp>

#include <doctest/doctest.h>

#include <cmath>
#include <memory>
#include <optional>
#include <string>

using namespace rlflow;

namespace {

using Ints = std::vector<std::int64_t>;


/// Prices an op by its FLOPs, scaled by a drift that grows with every measurement, as a
/// shared machine's speed moves between requests: two measurements of one kernel never
/// agree. With `canonical`, it takes the forms ONNX Runtime runs ops in.
template <bool Canonical>
struct DriftingBackend {
    static constexpr bool prices_in_context = true;
    int measured = 0;
    double op_cost_ms(const cost::OpSignature& op) {
        constexpr double drift_per_measurement = 0.07;
        ++measured;
        const double fused = op.producer ? op_flops(*op.producer) : 0.0;
        return (op_flops(op) + fused) * 1e-6 * (1.0 + drift_per_measurement * measured);
    }
    [[nodiscard]] std::string name() const { return Canonical ? "drifting:canonical" : "drifting"; }
    [[nodiscard]] std::optional<cost::OwnedSignature> canonical(const cost::OpSignature& op) const
        requires Canonical
    {
        return cost::detail::ort_canonical(op);
    }

private:
    static double op_flops(const cost::OpSignature& op) {
        return op_traits(op.op).flops(OpContext{op.attributes, op.inputs, op.outputs, "priced"});
    }
};
static_assert(cost::CanonicalCostBackend<DriftingBackend<true>>);
static_assert(!cost::CanonicalCostBackend<DriftingBackend<false>>);

std::shared_ptr<const Tensor> data(const Shape& s) { return std::make_shared<const Tensor>(s); }

/// A [1, 32, 16] activation times a [16, 24] weight plus a bias of 24, written three
/// ways ORT runs alike: MatMul + Add on the 3-D activation, Reshape + Gemm + Reshape, and
/// Reshape + 2-D MatMul + Add + Reshape.
enum class Form { batched_matmul_add, gemm, rows_matmul_add };

Graph linear(Form form) {
    Graph g;
    const TensorRef x{g.add_input("x", f32({1, 32, 16})), 0};
    const TensorRef w{g.add_weight("w", f32({16, 24}), data({16, 24})), 0};
    const TensorRef b{g.add_weight("b", f32({24}), data({24})), 0};
    if (form == Form::batched_matmul_add) {
        const NodeId m = g.add_node(OpKind::MatMul, {x, w});
        g.add_output({g.add_node(OpKind::Add, {{m, 0}, b}), 0});
        return g;
    }
    const NodeId rows = g.add_node(OpKind::Reshape, {x}, {{"shape", Ints{32, 16}}});
    NodeId product;
    if (form == Form::gemm) {
        product = g.add_node(OpKind::Gemm, {{rows, 0}, w, b});
    } else {
        const NodeId m = g.add_node(OpKind::MatMul, {{rows, 0}, w});
        product = g.add_node(OpKind::Add, {{m, 0}, b});
    }
    g.add_output({g.add_node(OpKind::Reshape, {{product, 0}}, {{"shape", Ints{1, 32, 24}}}), 0});
    return g;
}

}  // namespace

TEST_CASE("ways of writing one ORT kernel get one price, however the machine drifts between measurements") {
    cost::CostModel<DriftingBackend<true>> model;
    const double batched = model.graph_cost(linear(Form::batched_matmul_add));
    const double gemm = model.graph_cost(linear(Form::gemm));
    const double rows = model.graph_cost(linear(Form::rows_matmul_add));
    CHECK(batched > 0);
    // The three sums are the one Gemm price, reached through different sums of doubles.
    constexpr double rounding = 1e-12;
    CHECK(gemm == doctest::Approx(batched).epsilon(rounding));
    CHECK(rows == doctest::Approx(batched).epsilon(rounding));

    // Without the canonical forms, each way is measured apart and carries its own drift.
    cost::CostModel<DriftingBackend<false>> apart;
    const double apart_batched = apart.graph_cost(linear(Form::batched_matmul_add));
    const double apart_gemm = apart.graph_cost(linear(Form::gemm));
    CHECK(std::abs(apart_gemm - apart_batched) > 0.01 * apart_batched);
}

TEST_CASE("a fused convolution and the Conv + Relu it is written as get one price") {
    const auto conv_relu = [](bool fused) {
        Graph g;
        const TensorRef x{g.add_input("x", f32({1, 8, 8, 8})), 0};
        const TensorRef w{g.add_weight("w", f32({8, 8, 3, 3}), data({8, 8, 3, 3})), 0};
        const TensorRef b{g.add_weight("b", f32({8}), data({8})), 0};
        Attributes conv{{"pads", Ints{1, 1, 1, 1}}};
        if (fused) conv.set("activation", static_cast<std::int64_t>(Activation::Relu));
        const NodeId c = g.add_node(OpKind::Conv2D, {x, w, b}, conv);
        g.add_output({fused ? c : g.add_node(OpKind::Relu, {{c, 0}}), 0});
        return g;
    };
    cost::CostModel<DriftingBackend<true>> model;
    const double apart = model.graph_cost(conv_relu(false));
    CHECK(apart > 0);
    CHECK(model.graph_cost(conv_relu(true)) == doctest::Approx(apart).epsilon(1e-12));
    cost::CostModel<DriftingBackend<false>> drifting;
    const double drifting_apart = drifting.graph_cost(conv_relu(false));
    CHECK(std::abs(drifting.graph_cost(conv_relu(true)) - drifting_apart) > 0.01 * drifting_apart);
}

TEST_CASE("only what ORT fuses takes the Gemm form: a constant weight and a constant bias row") {
    Graph g;
    const TensorRef x{g.add_input("x", f32({2, 8, 16})), 0};
    const TensorRef w{g.add_weight("w", f32({16, 24}), data({16, 24})), 0};
    const TensorRef runtime_w{g.add_input("runtime_w", f32({16, 24})), 0};
    const TensorRef bias{g.add_weight("bias", f32({24}), data({24})), 0};
    const TensorRef residual{g.add_input("residual", f32({2, 8, 24})), 0};
    const TensorRef wide{g.add_weight("wide", f32({3, 1, 1, 24}), data({3, 1, 1, 24})), 0};
    const auto pair_form = [&](TensorRef weight, TensorRef addend) {
        const NodeId m = g.add_node(OpKind::MatMul, {x, weight});
        const NodeId a = g.add_node(OpKind::Add, {{m, 0}, addend});
        g.add_output({a, 0});
        const std::vector<char> constant = weight_only_nodes(g);
        const std::vector<TensorType> head_in = g.types_of(g.node(m).inputs);
        const std::vector<TensorType> head_out{g.node(m).outputs[0].type};
        const std::vector<char> head_constant{0, static_cast<char>(constant[weight.node.value])};
        const cost::OpSignature head{OpKind::MatMul, g.node(m).attributes, head_in, head_out, head_constant};
        const std::vector<TensorType> tail_in = g.types_of(g.node(a).inputs);
        const std::vector<TensorType> tail_out{g.node(a).outputs[0].type};
        const std::vector<char> tail_constant{0, static_cast<char>(constant[addend.node.value])};
        cost::OpSignature tail{OpKind::Add, g.node(a).attributes, tail_in, tail_out, tail_constant};
        tail.producer = &head;
        return cost::detail::ort_canonical(tail);
    };
    const std::optional<cost::OwnedSignature> fused = pair_form(w, bias);
    REQUIRE(fused);
    CHECK(fused->op == OpKind::Gemm);
    CHECK(fused->inputs[0].shape == Shape{16, 16});
    CHECK(fused->outputs[0].shape == Shape{16, 24});
    CHECK_FALSE(pair_form(runtime_w, bias));  // ORT prepacks only a constant weight
    CHECK_FALSE(pair_form(w, residual));      // a residual Add is not a bias
    CHECK_FALSE(pair_form(w, wide));          // a bias that widens the product

    // A batched MatMul by a matrix is the 2-D MatMul of its rows; a 2-D one is itself.
    const std::vector<TensorType> batched_in{f32({2, 8, 16}), f32({16, 24})};
    const std::vector<TensorType> batched_out{f32({2, 8, 24})};
    const Attributes none;
    const auto rows = cost::detail::ort_canonical(cost::OpSignature{OpKind::MatMul, none, batched_in, batched_out});
    REQUIRE(rows);
    CHECK(rows->inputs[0].shape == Shape{16, 16});
    CHECK_FALSE(cost::detail::ort_canonical(rows->view()));
}
