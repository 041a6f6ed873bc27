#include "support.hpp"

using namespace exec_test;

namespace {

/// The sizes of one grouped convolution whose groups are merged `count` at a time.
struct MergeCase {
    std::int64_t group;
    std::int64_t count;
    /// Input channels per group.
    std::int64_t channels;
    /// Output channels per group.
    std::int64_t filters;
    std::int64_t kernel;
    std::int64_t stride;
    bool bias;
};

Attributes merge_attributes(std::int64_t count, std::int64_t group) { return {{"count", count}, {"group", group}}; }

/// Conv(x, W, group) and Conv(x, MergeGConv(W), group / count) side by side, with the same
/// strides, SAME-style pads, fused Relu and optional bias.
Graph merged_and_original(const MergeCase& c) {
    constexpr std::int64_t batch = 2, height = 7, width = 6;
    const std::int64_t pad = c.kernel / 2;
    Graph g;
    const NodeId x = g.add_input("x", f32({batch, c.channels * c.group, height, width}));
    const NodeId w = g.add_input("w", f32({c.filters * c.group, c.channels, c.kernel, c.kernel}));
    std::vector<rlflow::TensorRef> original_inputs{{x, 0}, {w, 0}};
    if (c.bias) original_inputs.push_back({g.add_input("b", f32({c.filters * c.group})), 0});
    std::vector<rlflow::TensorRef> merged_inputs = original_inputs;
    merged_inputs[1] = {g.add_node(OpKind::MergeGConv, {{w, 0}}, merge_attributes(c.count, c.group), "merge"), 0};
    const Attributes common{{"strides", Ints{c.stride, c.stride}}, {"pads", Ints{pad, pad, pad, pad}},
                            {"activation", std::int64_t{1}}};
    Attributes original_attributes = common, merged_attributes = common;
    original_attributes.set("group", c.group);
    merged_attributes.set("group", c.group / c.count);
    g.add_output({g.add_node(OpKind::Conv2D, original_inputs, original_attributes, "original"), 0});
    g.add_output({g.add_node(OpKind::Conv2D, merged_inputs, merged_attributes, "merged"), 0});
    return g;
}

}  // namespace

TEST_CASE("merge_gconv puts each output channel's kernel in its group's block and zeros elsewhere") {
    constexpr std::int64_t group = 6, count = 3, channels = 2, filters = 2;
    const Tensor w = random_tensor(Shape{group * filters, channels, 2, 3}, 60);
    const Shape out{group * filters, channels * count, 2, 3};
    std::vector<double> expected;
    for (std::int64_t i = 0; i < out.numel(); ++i) {
        const Index k = unravel(i, out);
        const std::int64_t block = (k[0] / filters) % count;
        const bool inside = k[1] / channels == block;
        expected.push_back(inside ? at(w, ravel({k[0], k[1] - block * channels, k[2], k[3]}, w.shape())) : 0.0);
    }
    check_close(run_op(OpKind::MergeGConv, {w}, merge_attributes(count, group)).at(0), out, expected, 0.0);
}

TEST_CASE("a grouped conv over a merged kernel with fewer groups computes the same result") {
    const MergeCase cases[] = {
        {.group = 4, .count = 2, .channels = 1, .filters = 2, .kernel = 1, .stride = 1, .bias = false},
        {.group = 4, .count = 4, .channels = 2, .filters = 1, .kernel = 3, .stride = 2, .bias = true},
        {.group = 6, .count = 3, .channels = 3, .filters = 2, .kernel = 3, .stride = 1, .bias = true},
        {.group = 8, .count = 2, .channels = 1, .filters = 1, .kernel = 3, .stride = 2, .bias = false},
        {.group = 3, .count = 1, .channels = 2, .filters = 3, .kernel = 1, .stride = 2, .bias = true},
        {.group = 6, .count = 6, .channels = 1, .filters = 2, .kernel = 3, .stride = 1, .bias = false},
    };
    for (const MergeCase& c : cases) {
        CAPTURE(c.group);
        CAPTURE(c.count);
        CAPTURE(c.kernel);
        CAPTURE(c.stride);
        const Graph g = merged_and_original(c);
        const auto result = rlflow::exec::Executor{}.run(g, rlflow::exec::random_inputs(g, 61)).outputs;
        const std::vector<double> expected(result[0].floats().begin(), result[0].floats().end());
        CHECK(result[0].floats().size() > 0);
        check_close(result[1], result[0].shape(), expected);
    }
}

TEST_CASE("merge_gconv rejects a count that does not divide the group count, naming the node") {
    Graph g;
    const NodeId w = g.add_input("w", f32({8, 2, 3, 3}));
    CHECK_THROWS_WITH_AS(g.add_node(OpKind::MergeGConv, {{w, 0}}, merge_attributes(3, 4), "merge"),
                         "[rlflow.shape_error] MergeGConv node 'merge' (#1): count 3 does not divide group 4",
                         rlflow::shape_error);
    CHECK_THROWS_WITH_AS(g.add_node(OpKind::MergeGConv, {{w, 0}}, merge_attributes(1, 3), "merge"),
                         "[rlflow.shape_error] MergeGConv node 'merge' (#1): group 3 does not divide the 8 output "
                         "channels of kernel (8,2,3,3)",
                         rlflow::shape_error);
    CHECK_THROWS_WITH_AS(g.add_node(OpKind::MergeGConv, {{w, 0}}, {{"group", std::int64_t{4}}}, "merge"),
                         doctest::Contains("missing required attribute 'count'"), rlflow::graph_error);
}
