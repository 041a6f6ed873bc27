// The typed ops: Where, the comparisons, the logical ops, Cast, Expand and Gather on
// int64, int32, bool and float tensors, against naive references written from the ONNX
// definitions; and whole graphs that carry int and bool tensors between them.
#include "support.hpp"

#include <rlflow/core/memory.hpp>
#include <rlflow/exec/random.hpp>

#include <cmath>
#include <cstdint>
#include <limits>
#include <vector>

using namespace exec_test;

namespace {

Tensor int64s(const Shape& shape, const std::vector<std::int64_t>& v) { return Tensor::from_values(DType::Int64, shape, v); }
Tensor int32s(const Shape& shape, const std::vector<std::int32_t>& v) { return Tensor::from_values(DType::Int32, shape, v); }
Tensor bools(const Shape& shape, const std::vector<std::uint8_t>& v) { return Tensor::from_values(DType::Bool, shape, v); }
Tensor floats(const Shape& shape, std::vector<float> v) { return Tensor::from_floats(shape, std::move(v)); }

std::vector<std::uint8_t> bool_values(const Tensor& t) {
    REQUIRE(t.dtype() == DType::Bool);
    return t.to_vector<std::uint8_t>();
}

}  // namespace

TEST_CASE("Where picks x where the bool condition holds, broadcasting all three") {
    const Tensor condition = bools({2, 1}, {1, 0});
    const Tensor x = random_tensor({2, 3}, 5);
    const Tensor y = floats({3}, {-7, -8, -9});
    const Tensor out = run_op(OpKind::Where, {condition, x, y}).at(0);
    REQUIRE(out.shape() == Shape{2, 3});
    for (std::int64_t i = 0; i < 3; ++i) {
        CHECK(out.floats()[static_cast<std::size_t>(i)] == x.floats()[static_cast<std::size_t>(i)]);
        CHECK(out.floats()[static_cast<std::size_t>(3 + i)] == y.floats()[static_cast<std::size_t>(i)]);
    }
    // Values of an integer dtype are picked the same way.
    const Tensor picked = run_op(OpKind::Where, {bools({3}, {0, 1, 0}), int64s({3}, {1, 2, 3}), int64s({}, {-1})}).at(0);
    CHECK(picked.to_vector<std::int64_t>() == std::vector<std::int64_t>{-1, 2, -1});
}

TEST_CASE("Equal, Less and Greater give bools over broadcast int64, int32 and float operands") {
    const Tensor a = int64s({2, 3}, {1, 5, -3, 0, 7, 2});
    const Tensor b = int64s({3}, {1, 4, 2});
    CHECK(bool_values(run_op(OpKind::Equal, {a, b}).at(0)) == std::vector<std::uint8_t>{1, 0, 0, 0, 0, 1});
    CHECK(bool_values(run_op(OpKind::Less, {a, b}).at(0)) == std::vector<std::uint8_t>{0, 0, 1, 1, 0, 0});
    CHECK(bool_values(run_op(OpKind::Greater, {a, b}).at(0)) == std::vector<std::uint8_t>{0, 1, 0, 0, 1, 0});
    const Tensor narrow = int32s({2}, {-1, 9});
    CHECK(bool_values(run_op(OpKind::Less, {narrow, int32s({}, {0})}).at(0)) == std::vector<std::uint8_t>{1, 0});
    const Tensor f = floats({4}, {-0.5f, 0.0f, 0.5f, std::numeric_limits<float>::quiet_NaN()});
    CHECK(bool_values(run_op(OpKind::Greater, {f, floats({}, {0.0f})}).at(0)) == std::vector<std::uint8_t>{0, 0, 1, 0});
    CHECK(bool_values(run_op(OpKind::Equal, {f, f}).at(0)) == std::vector<std::uint8_t>{1, 1, 1, 0});  // NaN != NaN
    CHECK(bool_values(run_op(OpKind::Equal, {bools({2}, {1, 0}), bools({2}, {1, 1})}).at(0))
          == std::vector<std::uint8_t>{1, 0});
}

TEST_CASE("Not, And and Or follow their truth tables") {
    const Tensor p = bools({4}, {0, 0, 1, 1});
    const Tensor q = bools({4}, {0, 1, 0, 1});
    CHECK(bool_values(run_op(OpKind::Not, {p}).at(0)) == std::vector<std::uint8_t>{1, 1, 0, 0});
    CHECK(bool_values(run_op(OpKind::And, {p, q}).at(0)) == std::vector<std::uint8_t>{0, 0, 0, 1});
    CHECK(bool_values(run_op(OpKind::Or, {p, q}).at(0)) == std::vector<std::uint8_t>{0, 1, 1, 1});
    CHECK(bool_values(run_op(OpKind::Or, {p, bools({}, {1})}).at(0)) == std::vector<std::uint8_t>{1, 1, 1, 1});
}

TEST_CASE("Cast truncates floats toward zero, tests != 0 for bool, and refuses NaN as an integer") {
    const auto cast = [](const Tensor& x, DType to) {
        return run_op(OpKind::Cast, {x}, Attributes{{"to", static_cast<std::int64_t>(to)}}).at(0);
    };
    const Tensor x = floats({5}, {-1.7f, -0.5f, 0.0f, 2.9f, 3.0f});
    CHECK(cast(x, DType::Int64).to_vector<std::int64_t>() == std::vector<std::int64_t>{-1, 0, 0, 2, 3});
    CHECK(cast(x, DType::Int32).to_vector<std::int32_t>() == std::vector<std::int32_t>{-1, 0, 0, 2, 3});
    CHECK(bool_values(cast(x, DType::Bool)) == std::vector<std::uint8_t>{1, 1, 0, 1, 1});
    const Tensor back = cast(int64s({3}, {-2, 0, 16777217}), DType::Float32);
    CHECK(back.floats()[0] == -2.0f);
    CHECK(back.floats()[2] == 16777216.0f);  // the nearest float, as a C++ conversion rounds
    CHECK(cast(bools({2}, {1, 0}), DType::Float32).floats()[0] == 1.0f);
    CHECK(cast(int64s({2}, {5, 0}), DType::Bool).to_vector<std::uint8_t>() == std::vector<std::uint8_t>{1, 0});
    CHECK_THROWS_AS((void)cast(floats({1}, {std::numeric_limits<float>::quiet_NaN()}), DType::Int64), rlflow::shape_error);
}

TEST_CASE("Expand repeats size-1 and missing leading dims to the attribute's shape") {
    const Tensor x = random_tensor({3, 1}, 9);
    const Tensor out = run_op(OpKind::Expand, {x}, Attributes{{"shape", Ints{2, 1, 4}}}).at(0);
    REQUIRE(out.shape() == Shape{2, 3, 4});
    for (std::int64_t i = 0; i < out.numel(); ++i) {
        const Index index = unravel(i, out.shape());
        CHECK(at(out, i) == at(x, index[1]));
    }
    const Tensor mask = run_op(OpKind::Expand, {bools({1, 2}, {1, 0})}, Attributes{{"shape", Ints{2, 2}}}).at(0);
    CHECK(bool_values(mask) == std::vector<std::uint8_t>{1, 0, 1, 0});
}

TEST_CASE("Gather takes int64 or int32 indices of any shape along an axis, negative ones from the end") {
    const Tensor table = random_tensor({4, 3}, 11);
    const Tensor rows = run_op(OpKind::Gather, {table, int64s({2, 2}, {3, 0, -1, 1})}, Attributes{{"axis", std::int64_t{0}}}).at(0);
    REQUIRE(rows.shape() == Shape{2, 2, 3});
    const std::vector<std::int64_t> picked{3, 0, 3, 1};
    for (std::int64_t i = 0; i < rows.numel(); ++i)
        CHECK(at(rows, i) == at(table, picked[static_cast<std::size_t>(i / 3)] * 3 + i % 3));
    const Tensor columns = run_op(OpKind::Gather, {table, int32s({}, {-1})}, Attributes{{"axis", std::int64_t{-1}}}).at(0);
    REQUIRE(columns.shape() == Shape{4});
    for (std::int64_t r = 0; r < 4; ++r) CHECK(at(columns, r) == at(table, r * 3 + 2));
    const Tensor ids = run_op(OpKind::Gather, {int64s({3}, {10, 20, 30}), int64s({2}, {2, 2})}).at(0);
    CHECK(ids.to_vector<std::int64_t>() == std::vector<std::int64_t>{30, 30});
    CHECK_THROWS_AS((void)run_op(OpKind::Gather, {table, int64s({1}, {4})}), rlflow::shape_error);
    CHECK_THROWS_AS((void)run_op(OpKind::Gather, {table, int64s({1}, {-5})}), rlflow::shape_error);
}

TEST_CASE("inference refuses element types a typed op does not compute on") {
    Graph g;
    const auto input = [&](const char* name, DType dtype, const Shape& shape) {
        return rlflow::TensorRef{g.add_input(name, TensorType{dtype, shape}), 0};
    };
    const auto f = input("f", DType::Float32, {3});
    const auto i = input("i", DType::Int64, {3});
    const auto b = input("b", DType::Bool, {3});
    const auto h = input("h", DType::Float16, {3});
    CHECK_THROWS_AS(g.add_node(OpKind::Where, {f, f, f}), rlflow::shape_error);       // condition not bool
    CHECK_THROWS_AS(g.add_node(OpKind::Where, {b, f, i}), rlflow::shape_error);       // x and y differ
    CHECK_THROWS_AS(g.add_node(OpKind::Less, {b, b}), rlflow::shape_error);           // bools are not ordered
    CHECK_THROWS_AS(g.add_node(OpKind::Equal, {f, i}), rlflow::shape_error);          // types differ
    CHECK_THROWS_AS(g.add_node(OpKind::And, {i, i}), rlflow::shape_error);            // not bools
    CHECK_THROWS_AS(g.add_node(OpKind::Gather, {f, f}), rlflow::shape_error);         // float indices
    CHECK_THROWS_AS(g.add_node(OpKind::Equal, {h, h}), rlflow::shape_error);          // float16 is carried only
    CHECK_THROWS_AS(g.add_node(OpKind::Cast, {f}, Attributes{{"to", std::int64_t{10}}}), rlflow::shape_error);
    CHECK_THROWS_AS(g.add_node(OpKind::Expand, {f}, Attributes{{"shape", Ints{2, 4}}}), rlflow::shape_error);
    constexpr std::int64_t huge = std::int64_t{1} << 40;  // a shape from a file whose bytes overflow int64
    CHECK_THROWS_AS(g.add_node(OpKind::Expand, {f}, Attributes{{"shape", Ints{huge, huge, 3}}}), rlflow::shape_error);
    CHECK(g.type({g.add_node(OpKind::Less, {i, i}), 0}) == TensorType{DType::Bool, {3}});
    CHECK(g.type({g.add_node(OpKind::Cast, {b}, Attributes{{"to", std::int64_t{1}}}), 0}) == TensorType{DType::Float32, {3}});
}

TEST_CASE("a graph carries int64 and bool tensors from its inputs through views to its outputs") {
    // An attention mask as exporters write it: ids -> Equal(0) -> Unsqueeze -> Where(-inf-ish,
    // scores); the mask and the cast ids are outputs too.
    Graph g;
    const auto ids = g.add_input("ids", TensorType{DType::Int64, {2, 4}});
    const auto scores = g.add_input("scores", f32({2, 3, 4}));
    const auto zero = g.add_constant("zero", int64s({}, {0}));
    const auto low = g.add_constant("low", floats({}, {-1e9f}));
    const auto pad = g.add_node(OpKind::Equal, {{ids, 0}, {zero, 0}}, {}, "pad");
    const auto mask = g.add_node(OpKind::Reshape, {{pad, 0}}, Attributes{{"shape", Ints{2, 1, 4}}}, "mask");
    const auto masked = g.add_node(OpKind::Where, {{mask, 0}, {low, 0}, {scores, 0}}, {}, "masked");
    const auto as_float = g.add_node(OpKind::Cast, {{ids, 0}}, Attributes{{"to", std::int64_t{1}}}, "as_float");
    g.add_output({masked, 0});
    g.add_output({pad, 0});
    g.add_output({as_float, 0});
    const Tensor id_values = int64s({2, 4}, {5, 0, 7, 0, 0, 1, 1, 2});
    const Tensor score_values = random_tensor({2, 3, 4}, 13);
    const rlflow::exec::RunResult result = rlflow::exec::Executor{}.run(g, std::vector<Tensor>{id_values, score_values});
    REQUIRE(result.outputs.size() == 3);
    for (std::int64_t i = 0; i < 24; ++i) {
        const Index index = unravel(i, {2, 3, 4});
        const bool padded = id_values.to_vector<std::int64_t>()[static_cast<std::size_t>(index[0] * 4 + index[2])] == 0;
        CHECK(at(result.outputs[0], i) == (padded ? -1e9f : at(score_values, i)));
    }
    CHECK(bool_values(result.outputs[1]) == std::vector<std::uint8_t>{0, 1, 0, 1, 1, 0, 0, 0});
    CHECK(result.outputs[2].floats()[0] == 5.0f);
    CHECK(result.peak_activation_bytes == rlflow::memory_profile(g).peak_activation_bytes);

    // Random inputs give the ids 0 or 1, both present.
    const auto inputs = rlflow::exec::random_inputs(g, 7);
    REQUIRE(inputs[0].dtype() == DType::Int64);
    const auto drawn = inputs[0].to_vector<std::int64_t>();
    CHECK(std::all_of(drawn.begin(), drawn.end(), [](std::int64_t v) { return v == 0 || v == 1; }));
    CHECK(std::count(drawn.begin(), drawn.end(), 1) > 0);
    CHECK(std::count(drawn.begin(), drawn.end(), 0) > 0);
}
