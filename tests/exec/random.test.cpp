#include "support.hpp"

#include <cmath>

using namespace exec_test;

namespace {

/// x -> Conv -> BatchNorm, all parameters weights without data.
struct ConvBn {
    Graph g;
    NodeId w, scale, bias, mean, var;
    ConvBn() {
        const auto x = g.add_input("x", f32({1, 16, 5, 5}));
        w = g.add_weight("w", f32({8, 16, 3, 3}));
        scale = g.add_weight("scale", f32({8}));
        bias = g.add_weight("bias", f32({8}));
        mean = g.add_weight("mean", f32({8}));
        var = g.add_weight("var", f32({8}));
        const auto conv = g.add_node(OpKind::Conv2D, {{x, 0}, {w, 0}});
        const auto bn = g.add_node(OpKind::BatchNormalization, {{conv, 0}, {scale, 0}, {bias, 0}, {mean, 0}, {var, 0}});
        g.add_output({bn, 0});
    }
    const Tensor& data(NodeId id) const { return *g.node(id).data; }
};

}  // namespace

TEST_CASE("fill_random_weights is deterministic under a seed and differs across seeds") {
    ConvBn a, b, c;
    rlflow::exec::fill_random_weights(a.g, 42);
    rlflow::exec::fill_random_weights(b.g, 42);
    rlflow::exec::fill_random_weights(c.g, 43);
    for (const NodeId id : {a.w, a.scale, a.bias, a.mean, a.var}) {
        REQUIRE(a.g.node(id).data);
        CHECK(a.data(id) == b.data(id));
        CHECK_FALSE(a.data(id) == c.data(id));
    }
    CHECK_FALSE(a.data(a.bias) == a.data(a.mean));  // each weight has its own stream
}

TEST_CASE("fill_random_weights gives batch norm variance strictly positive values") {
    ConvBn net;
    rlflow::exec::fill_random_weights(net.g, 1);
    for (const float v : net.data(net.var).floats()) {
        CHECK(v >= 0.5f);
        CHECK(v < 1.5f);
    }
    bool some_negative = false;
    for (const float v : net.data(net.mean).floats()) some_negative = some_negative || v < 0;
    CHECK(some_negative);  // only the variance slot is positive
}

TEST_CASE("fill_random_weights scales kernels by fan-in and keeps existing data") {
    ConvBn net;
    const auto given = std::make_shared<const Tensor>(Tensor::from_floats({8}, std::vector<float>(8, 7.0f)));
    net.g.set_weight_data(net.scale, given);
    rlflow::exec::fill_random_weights(net.g, 3);
    CHECK(net.g.node(net.scale).data == given);
    const double bound = 1.0 / std::sqrt(16.0 * 3 * 3);
    double largest = 0;
    for (const float v : net.data(net.w).floats()) largest = std::max(largest, std::abs(static_cast<double>(v)));
    CHECK(largest <= bound);
    CHECK(largest > 0.8 * bound);  // 1152 draws come near the bound
    for (const float v : net.data(net.bias).floats()) CHECK(std::abs(v) <= 1.0f);
}

TEST_CASE("random_inputs draws one deterministic U(-1, 1) tensor per graph input") {
    Graph g;
    g.add_input("a", f32({3, 4}));
    g.add_input("b", f32({5}));
    const auto first = rlflow::exec::random_inputs(g, 9);
    const auto again = rlflow::exec::random_inputs(g, 9);
    const auto other = rlflow::exec::random_inputs(g, 10);
    REQUIRE(first.size() == 2);
    CHECK(first[0].shape() == Shape{3, 4});
    CHECK(first[1].shape() == Shape{5});
    CHECK(first == again);
    CHECK_FALSE(first[0] == other[0]);
    for (const Tensor& t : first)
        for (const float v : t.floats()) {
            CHECK(v >= -1.0f);
            CHECK(v < 1.0f);
        }
}

TEST_CASE("random_inputs draws positive values for an input a consumer needs positive") {
    // A region cut out of a graph can start at a batch norm's variance.
    Graph g;
    const auto x = g.add_input("x", f32({1, 4, 3, 3}));
    const auto var = g.add_input("var", f32({4}));
    const auto reshaped = g.add_node(OpKind::Reshape, {{var, 0}}, {{"shape", std::vector<std::int64_t>{4}}});
    std::vector<rlflow::TensorRef> bn_inputs{{x, 0}};
    for (const char* name : {"scale", "bias", "mean"}) bn_inputs.push_back({g.add_weight(name, f32({4})), 0});
    bn_inputs.push_back({reshaped, 0});
    g.add_output({g.add_node(OpKind::BatchNormalization, bn_inputs), 0});
    const auto inputs = rlflow::exec::random_inputs(g, 4);
    bool x_negative = false;
    for (const float v : inputs[0].floats()) x_negative = x_negative || v < 0;
    CHECK(x_negative);
    for (const float v : inputs[1].floats()) {
        CHECK(v >= 0.5f);  // seen through the Reshape view
        CHECK(v < 1.5f);
    }
}
