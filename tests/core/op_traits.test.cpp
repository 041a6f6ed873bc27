#include <rlflow/core/graph.hpp>
#include <rlflow/core/op_traits.hpp>
#include <rlflow/core/statistics.hpp>

#include <doctest/doctest.h>

#include <limits>
#include <set>
#include <utility>

using namespace rlflow;

TEST_CASE("the op table has one row per kind with unique names") {
    std::set<std::string_view> names, onnx_names;
    for (std::size_t i = 0; i < op_kind_count; ++i) {
        const OpTraits& t = op_traits(static_cast<OpKind>(i));
        CHECK(static_cast<std::size_t>(t.kind) == i);
        CHECK(names.insert(t.name).second);
        if (!t.onnx_name.empty()) CHECK(onnx_names.insert(t.onnx_name).second);
        const bool complete = t.infer != nullptr && t.flops != nullptr && t.normalize != nullptr;
        CHECK_MESSAGE(complete, t.name);
        CHECK(op_kind_from_name(t.name) == t.kind);
    }
}

TEST_CASE("ONNX names map to core kinds and unknown ones do not") {
    CHECK(op_kind_from_onnx("Conv") == OpKind::Conv2D);
    CHECK(op_kind_from_onnx("LayerNormalization") == OpKind::LayerNormalization);
    CHECK_FALSE(op_kind_from_onnx("NonMaxSuppression").has_value());
    CHECK_FALSE(op_kind_from_onnx("").has_value());
}

TEST_CASE("conv and matmul FLOPs count two operations per multiply-add") {
    Graph g;
    const auto x = g.add_input("x", {DType::Float32, Shape{1, 64, 56, 56}});
    const auto w = g.add_weight("w", {DType::Float32, Shape{64, 64, 3, 3}});
    g.add_node(OpKind::Conv2D, {{x, 0}, {w, 0}}, {{"pads", std::vector<std::int64_t>{1, 1, 1, 1}}});
    const auto a = g.add_input("a", {DType::Float32, Shape{128, 768}});
    const auto b = g.add_weight("b", {DType::Float32, Shape{768, 768}});
    g.add_node(OpKind::MatMul, {{a, 0}, {b, 0}});
    const GraphStatistics s = graph_statistics(g);
    const double conv_flops = 2.0 * 64 * 56 * 56 * 64 * 9;
    const double matmul_flops = 2.0 * 128 * 768 * 768;
    CHECK(s.flops == doctest::Approx(conv_flops + matmul_flops));
    CHECK(s.parameters == 64 * 64 * 9 + 768 * 768);
    CHECK(s.op_histogram.at("Conv2D") == 1);
    CHECK(s.op_nodes == 2);
}

TEST_CASE("merge_gconv widens a grouped kernel's input channels by count and costs no flops") {
    Graph g;
    const auto w = g.add_weight("w", {DType::Float32, Shape{32, 4, 3, 3}});
    const auto merged = g.add_node(OpKind::MergeGConv, {{w, 0}},
                                   {{"count", std::int64_t{4}}, {"group", std::int64_t{8}}}, "merge");
    CHECK(g.type({merged, 0}) == TensorType{DType::Float32, Shape{32, 16, 3, 3}});
    CHECK(op_traits(OpKind::MergeGConv).onnx_name.empty());
    const GraphStatistics s = graph_statistics(g);
    CHECK(s.flops == 0.0);
    CHECK(s.op_histogram.at("MergeGConv") == 1);
}

TEST_CASE("views move no bytes, copies move every byte they read and write") {
    const std::vector<TensorType> in{{DType::Float32, Shape{4, 4}}};
    const std::vector<TensorType> out{{DType::Float32, Shape{16}}};
    CHECK(op_bytes(op_traits(OpKind::Reshape), in, out) == 0.0);
    CHECK(op_bytes(op_traits(OpKind::Transpose), in, in) == 128.0);
    CHECK(op_bytes(op_traits(OpKind::Concat), in, out) == 128.0);
}

TEST_CASE("opaque nodes keep the types their importer gave and are never interpreted") {
    Graph g;
    const auto x = g.add_input("x", {DType::Float32, Shape{1, 3}});
    Attributes attrs{{"center_point_box", std::int64_t{0}}, {"payload", OpaqueAttribute{"\x12\x03"}}};
    const auto n = g.add_opaque("NonMaxSuppression", "", {{x, 0}, {}, {x, 0}}, {{DType::Int64, Shape{Shape::unknown, 3}}},
                                attrs, "nms");
    CHECK(g.node(n).describe() == "NonMaxSuppression node 'nms' (#1)");
    CHECK(g.type({n, 0}).dtype == DType::Int64);
    CHECK_FALSE(g.node(n).inputs[1].present());
    g.add_output({n, 0});
    CHECK_NOTHROW(g.validate());
    CHECK(graph_statistics(g).opaque_nodes == 1);
}

TEST_CASE("attributes compare by content regardless of insertion order") {
    Attributes a{{"b", std::int64_t{1}}, {"a", std::vector<std::int64_t>{1, 2}}};
    Attributes b;
    b.set("a", std::vector<std::int64_t>{1, 2});
    b.set("b", std::int64_t{1});
    CHECK(a == b);
    CHECK(a.begin()->first == "a");
    b.set("t", std::make_shared<const Tensor>(Tensor::from_floats(Shape{1}, {1.0f})));
    a.set("t", std::make_shared<const Tensor>(Tensor::from_floats(Shape{1}, {1.0f})));
    CHECK(a == b);
    a.set("t", std::make_shared<const Tensor>(Tensor::from_floats(Shape{1}, {2.0f})));
    CHECK_FALSE(a == b);
    CHECK_THROWS_WITH_AS((void)a.get<double>("b"), doctest::Contains("wrong type"), graph_error);
    CHECK(a.get_int("missing", 42) == 42);
}

TEST_CASE("validate catches data that does not match a weight's type") {
    Graph g;
    CHECK_THROWS_AS(g.add_weight("w", {DType::Float32, Shape{2}},
                                 std::make_shared<const Tensor>(Tensor::from_floats(Shape{3}, {1, 2, 3}))),
                    shape_error);
    const auto w = g.add_weight("w", {DType::Float32, Shape{2}});
    CHECK_THROWS_AS(g.set_weight_data(w, std::make_shared<const Tensor>(Tensor::from_floats(Shape{3}, {1, 2, 3}))),
                    shape_error);
    g.set_weight_data(w, std::make_shared<const Tensor>(Tensor::from_floats(Shape{2}, {1, 2})));
    CHECK(g.node(w).data->floats()[1] == 2.0f);
}

TEST_CASE("a Slice normalises to clamped starts and ends on every axis, the same from any spelling") {
    constexpr std::int64_t before_zero = std::numeric_limits<std::int64_t>::min();
    constexpr std::int64_t past_end = std::numeric_limits<std::int64_t>::max();
    const auto sliced = [](const std::vector<std::int64_t>& starts, const std::vector<std::int64_t>& ends,
                           const std::vector<std::int64_t>& steps) {
        Graph g;
        const auto x = g.add_input("x", {DType::Float32, Shape{8, 5}});
        const auto s = g.add_node(OpKind::Slice, {{x, 0}}, {{"starts", starts}, {"ends", ends}, {"steps", steps}});
        return std::pair{g.node(s).attributes, g.type({s, 0}).shape};
    };
    // x[::2, ::-1] spelled three ways.
    const auto [a, shape_a] = sliced({0, -1}, {past_end, before_zero}, {2, -1});
    const auto [b, shape_b] = sliced({-100, 4}, {8, -6}, {2, -1});
    const auto [c, shape_c] = sliced({0, 100}, {7, -100}, {2, -1});
    CHECK(shape_a == Shape{4, 5});
    CHECK(a.get_ints("starts") == std::vector<std::int64_t>{0, 4});
    CHECK(a.get_ints("ends") == std::vector<std::int64_t>{7, before_zero});
    CHECK(a == b);
    CHECK(a == c);
    CHECK(shape_b == shape_a);
    CHECK(shape_c == shape_a);
    // Normalising the canonical form changes nothing.
    const auto [again, shape_again] = sliced(a.get_ints("starts"), a.get_ints("ends"), a.get_ints("steps"));
    CHECK(again == a);
    CHECK(shape_again == shape_a);
    // Steps beyond the axis are clamped to it, as ONNX Runtime does (no overflow), and an
    // axis read once has step 1: the last row, three ways.
    constexpr std::int64_t lowest = std::numeric_limits<std::int64_t>::min();
    const auto [last_row, last_shape] = sliced({7, 0}, {8, 5}, {1, 1});
    CHECK(last_shape == Shape{1, 5});
    CHECK(sliced({-1, 0}, {before_zero, 5}, {lowest, 1}).first == last_row);
    CHECK(sliced({7, 0}, {past_end, 5}, {past_end, 1}).first == last_row);
    CHECK(sliced({0, 0}, {past_end, 5}, {past_end, 1}).second == Shape{1, 5});
    CHECK(sliced({0, 4}, {past_end, before_zero}, {past_end, lowest}).second == Shape{1, 1});
    // A slice that keeps nothing, and the errors.
    CHECK(sliced({3, 0}, {3, 5}, {1, 2}).second == Shape{0, 3});
    CHECK(sliced({3, 0}, {3, 5}, {1, 2}).first == sliced({6, 0}, {1, 5}, {3, 2}).first);
    CHECK_THROWS_AS(sliced({0, 0}, {8, 5}, {1, 0}), shape_error);
    CHECK_THROWS_AS(sliced({0}, {8}, {1}), shape_error);
}
