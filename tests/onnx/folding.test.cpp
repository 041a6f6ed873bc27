// The ONNX importer's static constant folder: every op on hand-computed cases, the opset
// dependent forms, the cases it declines, the errors it raises, and the ONNX backend node
// tests of every foldable op.
#include "../tensor_types.hpp"
#include <rlflow/onnx/detail/folding.hpp>

#include <doctest/doctest.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <filesystem>
#include <limits>
#include <map>
#include <optional>
#include <string>
#include <vector>

using namespace rlflow;
namespace pb = ::onnx;
namespace fold = rlflow::onnx_io::detail;

namespace {

using Ints = std::vector<std::int64_t>;
using Floats = std::vector<float>;

/// A NodeProto with attributes added by chained calls.
struct NodeBuilder {
    pb::NodeProto proto;

    NodeBuilder(const std::string& op, const std::vector<std::string>& inputs, const std::vector<std::string>& outputs = {"y"},
                const std::string& name = "n") {
        proto.set_op_type(op);
        proto.set_name(name);
        for (const auto& i : inputs) proto.add_input(i);
        for (const auto& o : outputs) proto.add_output(o);
    }
    NodeBuilder& attr(const std::string& name, std::int64_t value) {
        auto* a = proto.add_attribute();
        a->set_name(name);
        a->set_type(pb::AttributeProto::INT);
        a->set_i(value);
        return *this;
    }
    NodeBuilder& attr(const std::string& name, const Ints& values) {
        auto* a = proto.add_attribute();
        a->set_name(name);
        a->set_type(pb::AttributeProto::INTS);
        for (const auto v : values) a->add_ints(v);
        return *this;
    }
    NodeBuilder& attr(const std::string& name, const Tensor& value) {
        auto* a = proto.add_attribute();
        a->set_name(name);
        a->set_type(pb::AttributeProto::TENSOR);
        *a->mutable_t() = onnx_io::tensor_to_proto(value, name);
        return *this;
    }
};

Tensor int_scalar(std::int64_t value) { return ints({value}, Shape{}); }
Tensor int32s(const std::vector<std::int32_t>& values, std::optional<Shape> shape = std::nullopt) {
    return Tensor::from_values(DType::Int32, shape.value_or(Shape{static_cast<std::int64_t>(values.size())}), values);
}
Tensor floats(const Floats& values, std::optional<Shape> shape = std::nullopt) {
    return Tensor::from_floats(shape.value_or(Shape{static_cast<std::int64_t>(values.size())}), values);
}
Tensor bools(const std::vector<std::uint8_t>& values, std::optional<Shape> shape = std::nullopt) {
    return Tensor::from_values(DType::Bool, shape.value_or(Shape{static_cast<std::int64_t>(values.size())}), values);
}

/// Folds `node` with a constant per input (nullptr for an omitted or non-constant input).
std::optional<std::vector<Tensor>> fold_all(const NodeBuilder& node, const std::vector<const Tensor*>& values,
                                            std::int64_t opset = 13) {
    std::vector<fold::FoldInput> inputs;
    for (const Tensor* v : values) inputs.push_back({v, std::nullopt});
    return fold::fold_node(node.proto, inputs, opset, "model.onnx");
}
/// The single output of a fold that must succeed.
Tensor fold_one(const NodeBuilder& node, const std::vector<const Tensor*>& values, std::int64_t opset = 13) {
    auto outputs = fold_all(node, values, opset);
    REQUIRE(outputs.has_value());
    REQUIRE(outputs->size() == 1);
    return (*outputs)[0];
}

Ints as_ints(const Tensor& t) {
    REQUIRE(t.dtype() == DType::Int64);
    return t.to_vector<std::int64_t>();
}
Floats as_floats(const Tensor& t) { return t.to_vector<float>(); }
std::vector<std::uint8_t> as_bools(const Tensor& t) {
    REQUIRE(t.dtype() == DType::Bool);
    return t.to_vector<std::uint8_t>();
}

}  // namespace

TEST_CASE("folding Shape needs only a static type and honours the opset 15 start and end") {
    const fold::FoldInput typed{nullptr, TensorType{DType::Float32, Shape{2, 3, 4}}};
    const auto shape_of = [&](const NodeBuilder& node) {
        auto outputs = fold::fold_node(node.proto, std::span(&typed, 1), 15, "m.onnx");
        REQUIRE(outputs.has_value());
        return as_ints((*outputs)[0]);
    };
    CHECK(shape_of(NodeBuilder("Shape", {"x"})) == Ints{2, 3, 4});
    CHECK(shape_of(NodeBuilder("Shape", {"x"}).attr("start", -2)) == Ints{3, 4});
    CHECK(shape_of(NodeBuilder("Shape", {"x"}).attr("start", 1).attr("end", -1)) == Ints{3});
    CHECK(shape_of(NodeBuilder("Shape", {"x"}).attr("start", -10).attr("end", 10)) == Ints{2, 3, 4});
    CHECK(shape_of(NodeBuilder("Shape", {"x"}).attr("start", 2).attr("end", 1)).empty());

    const fold::FoldInput partly_known{nullptr, TensorType{DType::Float32, Shape{Shape::unknown, 8}}};
    const NodeBuilder whole("Shape", {"x"});
    CHECK_FALSE(fold::fold_node(whole.proto, std::span(&partly_known, 1), 15, "m").has_value());
    const auto tail = fold::fold_node(NodeBuilder("Shape", {"x"}).attr("start", 1).proto, std::span(&partly_known, 1), 15, "m");
    REQUIRE(tail.has_value());
    CHECK(as_ints((*tail)[0]) == Ints{8});

    const auto size = fold::fold_node(NodeBuilder("Size", {"x"}).proto, std::span(&typed, 1), 13, "m");
    REQUIRE(size.has_value());
    CHECK((*size)[0].shape() == Shape{});
    CHECK(as_ints((*size)[0]) == Ints{24});
    CHECK_FALSE(fold::fold_node(NodeBuilder("Size", {"x"}).proto, std::span(&partly_known, 1), 13, "m").has_value());
}

TEST_CASE("folding Gather picks elements with negative int32 indices and keeps a scalar index scalar") {
    const Tensor data = ints({10, 20, 30, 40});
    const Tensor indices = int32s({-1, 0, 2});
    CHECK(as_ints(fold_one(NodeBuilder("Gather", {"d", "i"}), {&data, &indices})) == Ints{40, 10, 30});
    const Tensor scalar = int_scalar(-2);
    const Tensor picked = fold_one(NodeBuilder("Gather", {"d", "i"}), {&data, &scalar});
    CHECK(picked.shape() == Shape{});
    CHECK(as_ints(picked) == Ints{30});
}

TEST_CASE("folding Gather on axis 1 of a float matrix takes columns in index order") {
    const Tensor matrix = floats({1, 2, 3, 4, 5, 6}, Shape{2, 3});
    const Tensor indices = ints({2, 0}, Shape{1, 2});
    const Tensor out = fold_one(NodeBuilder("Gather", {"d", "i"}).attr("axis", 1), {&matrix, &indices});
    CHECK(out.shape() == Shape{2, 1, 2});
    CHECK(as_floats(out) == Floats{3, 1, 6, 4});
    const Tensor last = int_scalar(-1);
    const Tensor row = fold_one(NodeBuilder("Gather", {"d", "i"}).attr("axis", -2), {&matrix, &last});
    CHECK(row.shape() == Shape{3});
    CHECK(as_floats(row) == Floats{4, 5, 6});
}

TEST_CASE("folding GatherElements replaces the axis coordinate of each position by its index") {
    // ONNX's example: data [[1, 2], [3, 4]], indices [[0, 0], [1, 0]] on axis 1.
    const Tensor data = floats({1, 2, 3, 4}, Shape{2, 2});
    const Tensor indices = ints({0, 0, 1, 0}, Shape{2, 2});
    const Tensor out = fold_one(NodeBuilder("GatherElements", {"d", "i"}).attr("axis", 1), {&data, &indices});
    CHECK(out.shape() == Shape{2, 2});
    CHECK(as_floats(out) == Floats{1, 1, 4, 3});
    // Negative indices on axis 0, fewer columns than the data: out[i][j] = data[idx][j].
    const Tensor grid = ints({1, 2, 3, 4, 5, 6, 7, 8, 9}, Shape{3, 3});
    const Tensor rows = int32s({-1, 0, 1, -3}, Shape{2, 2});
    const Tensor picked = fold_one(NodeBuilder("GatherElements", {"d", "i"}), {&grid, &rows});
    CHECK(picked.shape() == Shape{2, 2});
    CHECK(as_ints(picked) == Ints{7, 2, 4, 2});
    const Tensor far = ints({3, 0}, Shape{1, 2});
    CHECK_THROWS_WITH_AS(fold_all(NodeBuilder("GatherElements", {"d", "i"}), {&grid, &far}),
                         doctest::Contains("index 3 out of range for axis of size 3"), onnx_error);
    const Tensor flat = ints({0, 1});
    CHECK_THROWS_WITH_AS(fold_all(NodeBuilder("GatherElements", {"d", "i"}), {&grid, &flat}),
                         doctest::Contains("indices have rank 1, data 2"), onnx_error);
}

TEST_CASE("folding Slice counts negative starts from the end and clamps out-of-range ends") {
    const Tensor data = ints({0, 1, 2, 3, 4, 5, 6, 7, 8, 9});
    const Tensor starts = ints({-3}), ends = ints({1000});
    CHECK(as_ints(fold_one(NodeBuilder("Slice", {"x", "s", "e"}), {&data, &starts, &ends})) == Ints{7, 8, 9});

    const Tensor matrix = ints({0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11}, Shape{3, 4});
    const Tensor one = ints({1}), minus_one = ints({-1}), axis1 = ints({1});
    const Tensor cols = fold_one(NodeBuilder("Slice", {"x", "s", "e", "a"}), {&matrix, &one, &minus_one, &axis1});
    CHECK(cols.shape() == Shape{3, 2});
    CHECK(as_ints(cols) == Ints{1, 2, 5, 6, 9, 10});
    const Tensor far = ints({20}), beyond = ints({30});
    CHECK(fold_one(NodeBuilder("Slice", {"x", "s", "e"}), {&data, &far, &beyond}).shape() == Shape{0});
}

TEST_CASE("folding Slice with negative steps walks backwards, clamping to the first element") {
    const Tensor data = ints({0, 1, 2, 3, 4, 5});
    const Tensor last = ints({-1}), lowest = ints({std::numeric_limits<std::int64_t>::min()}), axis0 = ints({0});
    const Tensor minus_two = ints({-2});
    CHECK(as_ints(fold_one(NodeBuilder("Slice", {"x", "s", "e", "a", "p"}), {&data, &last, &lowest, &axis0, &minus_two}))
          == Ints{5, 3, 1});
    const Tensor ten = ints({10}), minus_hundred = ints({-100}), minus_one = ints({-1});
    // Axes omitted (empty input name), steps given.
    CHECK(as_ints(fold_one(NodeBuilder("Slice", {"x", "s", "e", "", "p"}),
                           {&data, &ten, &minus_hundred, nullptr, &minus_one}))
          == Ints{5, 4, 3, 2, 1, 0});

    const Tensor matrix = ints({0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11}, Shape{3, 4});
    const Tensor starts = ints({2, 0}), ends = ints({0, 3}), axes = ints({0, -1}), steps = ints({-1, 2});
    const Tensor out = fold_one(NodeBuilder("Slice", {"x", "s", "e", "a", "p"}), {&matrix, &starts, &ends, &axes, &steps});
    CHECK(out.shape() == Shape{2, 2});
    CHECK(as_ints(out) == Ints{8, 10, 4, 6});
}

TEST_CASE("folding Unsqueeze reads axes from the attribute in opset 11 and from the input in opset 13") {
    const Tensor data = floats({1, 2, 3});
    const Tensor old_form = fold_one(NodeBuilder("Unsqueeze", {"x"}).attr("axes", Ints{0, -1}), {&data}, 11);
    CHECK(old_form.shape() == Shape{1, 3, 1});
    CHECK(as_floats(old_form) == Floats{1, 2, 3});
    const Tensor axes = ints({0, -1});
    CHECK(fold_one(NodeBuilder("Unsqueeze", {"x", "a"}), {&data, &axes}, 13).shape() == Shape{1, 3, 1});
    const Tensor middle = ints({1});
    const Tensor matrix = floats({1, 2, 3, 4}, Shape{2, 2});
    CHECK(fold_one(NodeBuilder("Unsqueeze", {"x", "a"}), {&matrix, &middle}, 13).shape() == Shape{2, 1, 2});
    CHECK_THROWS_WITH_AS(fold_all(NodeBuilder("Unsqueeze", {"x", "a"}), {&data, &axes}, 11),
                         doctest::Contains("expects 1 inputs, got 2"), onnx_error);
    const Tensor repeated = ints({0, 0});
    CHECK_THROWS_WITH_AS(fold_all(NodeBuilder("Unsqueeze", {"x", "a"}), {&data, &repeated}, 13),
                         doctest::Contains("repeat an axis"), onnx_error);
}

TEST_CASE("folding Squeeze removes the given axes, or every size-1 dimension without axes") {
    const Tensor data = floats({1, 2, 3, 4, 5, 6}, Shape{1, 3, 1, 2});
    const Tensor axis = ints({-2});
    CHECK(fold_one(NodeBuilder("Squeeze", {"x", "a"}), {&data, &axis}, 13).shape() == Shape{1, 3, 2});
    CHECK(fold_one(NodeBuilder("Squeeze", {"x"}).attr("axes", Ints{0}), {&data}, 11).shape() == Shape{3, 1, 2});
    const Tensor all = fold_one(NodeBuilder("Squeeze", {"x"}), {&data}, 13);
    CHECK(all.shape() == Shape{3, 2});
    CHECK(as_floats(all) == Floats{1, 2, 3, 4, 5, 6});
    const Tensor wide = ints({1});
    CHECK_THROWS_WITH_AS(fold_all(NodeBuilder("Squeeze", {"x", "a"}), {&data, &wide}, 13),
                         doctest::Contains("cannot squeeze axis 1 of size 3"), onnx_error);
}

TEST_CASE("folding Concat joins shape vectors and float matrices along a negative axis") {
    const Tensor a = ints({1, 2}), b = ints({3}), empty = ints({});
    CHECK(as_ints(fold_one(NodeBuilder("Concat", {"a", "b", "c"}).attr("axis", 0), {&a, &empty, &b})) == Ints{1, 2, 3});
    const Tensor left = floats({1, 2}, Shape{2, 1}), right = floats({3, 4, 5, 6}, Shape{2, 2});
    const Tensor joined = fold_one(NodeBuilder("Concat", {"l", "r"}).attr("axis", -1), {&left, &right});
    CHECK(joined.shape() == Shape{2, 3});
    CHECK(as_floats(joined) == Floats{1, 3, 4, 2, 5, 6});
    CHECK_THROWS_WITH_AS(fold_all(NodeBuilder("Concat", {"l", "r"}).attr("axis", 0), {&left, &right}),
                         doctest::Contains("does not match input 0"), onnx_error);
    CHECK_THROWS_WITH_AS(fold_all(NodeBuilder("Concat", {"a", "b"}), {&a, &b}),
                         doctest::Contains("missing required attribute 'axis'"), onnx_error);
}

TEST_CASE("folding ConstantOfShape fills float zeros by default and repeats an int64 value") {
    const Tensor shape = ints({2, 3});
    const Tensor zeros = fold_one(NodeBuilder("ConstantOfShape", {"s"}), {&shape});
    CHECK(zeros.type() == TensorType{DType::Float32, Shape{2, 3}});
    CHECK(as_floats(zeros) == Floats(6, 0.0f));
    const Tensor seven = ints({7});
    const Tensor filled = fold_one(NodeBuilder("ConstantOfShape", {"s"}).attr("value", seven), {&shape});
    CHECK(filled.shape() == Shape{2, 3});
    CHECK(as_ints(filled) == Ints(6, 7));
    const Tensor no_dims = ints({});
    const Tensor scalar = fold_one(NodeBuilder("ConstantOfShape", {"s"}).attr("value", seven), {&no_dims});
    CHECK(scalar.shape() == Shape{});
    CHECK(as_ints(scalar) == Ints{7});
}

TEST_CASE("folding Cast truncates floats toward zero and converts ints, bools and float16") {
    const Tensor x = floats({-2.7f, -0.5f, 0.0f, 0.5f, 2.9f});
    CHECK(as_ints(fold_one(NodeBuilder("Cast", {"x"}).attr("to", 7), {&x})) == Ints{-2, 0, 0, 0, 2});
    CHECK(fold_one(NodeBuilder("Cast", {"x"}).attr("to", 6), {&x}).to_vector<std::int32_t>()
          == std::vector<std::int32_t>{-2, 0, 0, 0, 2});
    CHECK(as_bools(fold_one(NodeBuilder("Cast", {"x"}).attr("to", 9), {&x})) == std::vector<std::uint8_t>{1, 1, 0, 1, 1});
    const Tensor i = ints({3, -1, 300});
    CHECK(as_floats(fold_one(NodeBuilder("Cast", {"x"}).attr("to", 1), {&i})) == Floats{3, -1, 300});
    // int64 -> uint8 wraps modulo 256.
    CHECK(fold_one(NodeBuilder("Cast", {"x"}).attr("to", 2), {&i}).to_vector<std::uint8_t>()
          == std::vector<std::uint8_t>{3, 255, 44});
    const Tensor b = bools({1, 0});
    CHECK(as_ints(fold_one(NodeBuilder("Cast", {"x"}).attr("to", 7), {&b})) == Ints{1, 0});

    // float16 bits: 1 = 0x3C00, 65504 = 0x7BFF (largest), 1 + 2^-11 ties to even 0x3C00,
    // 2^-24 = 0x0001 (smallest subnormal), 1e-8 underflows to 0, 1e6 overflows to infinity.
    const Tensor h = floats({1.0f, 65504.0f, 1.0f + 0x1p-11f, 0x1p-24f, 1e-8f, 1e6f, -2.0f});
    const Tensor halves = fold_one(NodeBuilder("Cast", {"x"}).attr("to", 10), {&h});
    CHECK(halves.to_vector<std::uint16_t>() == std::vector<std::uint16_t>{0x3C00, 0x7BFF, 0x3C00, 0x0001, 0, 0x7C00, 0xC000});
    CHECK(as_floats(fold_one(NodeBuilder("Cast", {"x"}).attr("to", 1), {&halves}))
          == Floats{1.0f, 65504.0f, 1.0f, 0x1p-24f, 0.0f, std::numeric_limits<float>::infinity(), -2.0f});

    const Tensor nan = floats({std::nanf("")}), huge = floats({1e20f});
    CHECK_FALSE(fold_all(NodeBuilder("Cast", {"x"}).attr("to", 7), {&nan}).has_value());
    CHECK_FALSE(fold_all(NodeBuilder("Cast", {"x"}).attr("to", 6), {&huge}).has_value());
}

TEST_CASE("folding Reshape copies 0 dimensions, infers -1 and rejects impossible shapes") {
    const Tensor data = floats(Floats(24, 1.0f), Shape{2, 3, 4});
    const Tensor keep_first = ints({0, -1});
    CHECK(fold_one(NodeBuilder("Reshape", {"x", "s"}), {&data, &keep_first}).shape() == Shape{2, 12});
    const Tensor flat = ints({-1});
    CHECK(fold_one(NodeBuilder("Reshape", {"x", "s"}), {&data, &flat}).shape() == Shape{24});
    const Tensor middle = ints({4, 0, -1});
    CHECK(fold_one(NodeBuilder("Reshape", {"x", "s"}), {&data, &middle}).shape() == Shape{4, 3, 2});
    const Tensor empty = floats({}, Shape{0, 4});
    const Tensor zero_kept = ints({4, 0});
    CHECK(fold_one(NodeBuilder("Reshape", {"x", "s"}).attr("allowzero", 1), {&empty, &zero_kept}).shape() == Shape{4, 0});

    const Tensor two_inferred = ints({-1, -1}), uneven = ints({5, -1}), wrong = ints({5, 5});
    CHECK_THROWS_WITH_AS(fold_all(NodeBuilder("Reshape", {"x", "s"}), {&data, &two_inferred}),
                         doctest::Contains("more than one -1"), onnx_error);
    CHECK_THROWS_WITH_AS(fold_all(NodeBuilder("Reshape", {"x", "s"}), {&data, &uneven}),
                         doctest::Contains("cannot infer the -1"), onnx_error);
    CHECK_THROWS_WITH_AS(fold_all(NodeBuilder("Reshape", {"x", "s"}), {&data, &wrong}),
                         doctest::Contains("cannot reshape (2,3,4) to [5,5]"), onnx_error);
}

TEST_CASE("folding Transpose permutes data and reverses the dimensions by default") {
    const Tensor matrix = floats({1, 2, 3, 4, 5, 6}, Shape{2, 3});
    const Tensor t = fold_one(NodeBuilder("Transpose", {"x"}), {&matrix});
    CHECK(t.shape() == Shape{3, 2});
    CHECK(as_floats(t) == Floats{1, 4, 2, 5, 3, 6});
    const Tensor cube = ints({0, 1, 2, 3, 4, 5, 6, 7}, Shape{2, 2, 2});
    // Output dim d walks input axis perm[d]: out[i][j][k] = in[j][k][i], with in[a][b][c] = 4a + 2b + c.
    CHECK(as_ints(fold_one(NodeBuilder("Transpose", {"x"}).attr("perm", Ints{2, 0, 1}), {&cube}))
          == Ints{0, 2, 4, 6, 1, 3, 5, 7});
    CHECK_THROWS_WITH_AS(fold_all(NodeBuilder("Transpose", {"x"}).attr("perm", Ints{0, 0}), {&matrix}),
                         doctest::Contains("perm [0,0] is not a permutation"), onnx_error);
}

TEST_CASE("folding Flatten splits the shape at a possibly negative axis") {
    const Tensor data = floats(Floats(24, 2.0f), Shape{2, 3, 4});
    CHECK(fold_one(NodeBuilder("Flatten", {"x"}), {&data}).shape() == Shape{2, 12});
    CHECK(fold_one(NodeBuilder("Flatten", {"x"}).attr("axis", -1), {&data}).shape() == Shape{6, 4});
    CHECK(fold_one(NodeBuilder("Flatten", {"x"}).attr("axis", 0), {&data}).shape() == Shape{1, 24});
}

TEST_CASE("folding Expand broadcasts numpy style in both directions") {
    const Tensor column = ints({1, 2, 3}, Shape{3, 1});
    const Tensor target = ints({2, 1, 4});
    const Tensor out = fold_one(NodeBuilder("Expand", {"x", "s"}), {&column, &target});
    CHECK(out.shape() == Shape{2, 3, 4});
    Ints expected;
    for (int copy = 0; copy < 2; ++copy)
        for (std::int64_t row = 1; row <= 3; ++row) expected.insert(expected.end(), 4, row);
    CHECK(as_ints(out) == expected);
    const Tensor row = floats({1, 2, 3});
    const Tensor ones = ints({1, 1});
    const Tensor kept = fold_one(NodeBuilder("Expand", {"x", "s"}), {&row, &ones});
    CHECK(kept.shape() == Shape{1, 3});
    CHECK(as_floats(kept) == Floats{1, 2, 3});
    const Tensor clash = ints({2});
    CHECK_THROWS_WITH_AS(fold_all(NodeBuilder("Expand", {"x", "s"}), {&row, &clash}),
                         doctest::Contains("cannot broadcast (3,) to [2]"), onnx_error);
}

TEST_CASE("folding Tile repeats every dimension") {
    const Tensor data = ints({1, 2, 3, 4}, Shape{2, 2});
    const Tensor wide = ints({1, 2});
    const Tensor out = fold_one(NodeBuilder("Tile", {"x", "r"}), {&data, &wide});
    CHECK(out.shape() == Shape{2, 4});
    CHECK(as_ints(out) == Ints{1, 2, 1, 2, 3, 4, 3, 4});
    const Tensor tall = ints({2, 1});
    CHECK(as_ints(fold_one(NodeBuilder("Tile", {"x", "r"}), {&data, &tall})) == Ints{1, 2, 3, 4, 1, 2, 3, 4});
}

TEST_CASE("folding Range counts up and down in ints and floats") {
    const Tensor zero = int_scalar(0), ten = int_scalar(10), three = int_scalar(3);
    CHECK(as_ints(fold_one(NodeBuilder("Range", {"a", "b", "c"}), {&zero, &ten, &three})) == Ints{0, 3, 6, 9});
    const Tensor from = int32s({10}, Shape{}), to = int32s({4}, Shape{}), down = int32s({-2}, Shape{});
    CHECK(fold_one(NodeBuilder("Range", {"a", "b", "c"}), {&from, &to, &down}).to_vector<std::int32_t>()
          == std::vector<std::int32_t>{10, 8, 6});
    const Tensor one = floats({1}, Shape{}), two = floats({2}, Shape{}), quarter = floats({0.25f}, Shape{});
    CHECK(as_floats(fold_one(NodeBuilder("Range", {"a", "b", "c"}), {&one, &two, &quarter})) == Floats{1, 1.25f, 1.5f, 1.75f});
    CHECK(fold_one(NodeBuilder("Range", {"a", "b", "c"}), {&ten, &zero, &three}).shape() == Shape{0});
    const Tensor still = int_scalar(0);
    CHECK_THROWS_WITH_AS(fold_all(NodeBuilder("Range", {"a", "b", "c"}), {&zero, &ten, &still}),
                         doctest::Contains("delta is 0"), onnx_error);
}

TEST_CASE("folding arithmetic broadcasts and divides integers toward zero") {
    const Tensor column = ints({10, 20}, Shape{2, 1}), row = ints({1, 2, 3});
    const Tensor sum = fold_one(NodeBuilder("Add", {"a", "b"}), {&column, &row});
    CHECK(sum.shape() == Shape{2, 3});
    CHECK(as_ints(sum) == Ints{11, 12, 13, 21, 22, 23});
    CHECK(as_ints(fold_one(NodeBuilder("Sub", {"a", "b"}), {&row, &column})) == Ints{-9, -8, -7, -19, -18, -17});
    const Tensor a = int32s({3, -4}), b = int32s({5});
    CHECK(fold_one(NodeBuilder("Mul", {"a", "b"}), {&a, &b}).to_vector<std::int32_t>() == std::vector<std::int32_t>{15, -20});
    const Tensor n = ints({7, -7, 7, -7}), d = ints({2, 2, -2, -2});
    CHECK(as_ints(fold_one(NodeBuilder("Div", {"a", "b"}), {&n, &d})) == Ints{3, -3, -3, 3});
    const Tensor f = floats({1, -3}), g = floats({4, 0});
    const Floats quotient = as_floats(fold_one(NodeBuilder("Div", {"a", "b"}), {&f, &g}));
    CHECK(quotient[0] == 0.25f);
    CHECK(quotient[1] == -std::numeric_limits<float>::infinity());
    // float32 is computed in float: 16777216 + 1 rounds back to 16777216.
    const Tensor big = floats({16777216.0f}), unit = floats({1.0f});
    CHECK(as_floats(fold_one(NodeBuilder("Add", {"a", "b"}), {&big, &unit})) == Floats{16777216.0f});

    const Tensor zero = ints({0});
    CHECK_FALSE(fold_all(NodeBuilder("Div", {"a", "b"}), {&n, &zero}).has_value());
    CHECK_THROWS_WITH_AS(fold_all(NodeBuilder("Add", {"a", "b"}), {&n, &f}),
                         doctest::Contains("input types int64(4,) and float(2,) differ"), onnx_error);
    CHECK_THROWS_WITH_AS(fold_all(NodeBuilder("Add", {"a", "b"}), {&row, &n}),
                         doctest::Contains("cannot broadcast (3,) with (4,)"), onnx_error);
}

TEST_CASE("folding Mod takes the divisor's sign by default and the dividend's with fmod, and declines x mod 0") {
    const Tensor n = ints({7, -7, 7, -7, 6}), d = ints({3, 3, -3, -3, 3});
    CHECK(as_ints(fold_one(NodeBuilder("Mod", {"a", "b"}), {&n, &d})) == Ints{1, 2, -2, -1, 0});
    CHECK(as_ints(fold_one(NodeBuilder("Mod", {"a", "b"}).attr("fmod", std::int64_t{1}), {&n, &d})) == Ints{1, -1, 1, -1, 0});
    // Swin's shifted windows: (window - size mod window) mod window, broadcast against a scalar.
    const Tensor sizes = ints({56, 28, 14, 7}), window = int_scalar(7);
    CHECK(as_ints(fold_one(NodeBuilder("Mod", {"a", "b"}), {&sizes, &window})) == Ints{0, 0, 0, 0});
    const Tensor lowest = ints({std::numeric_limits<std::int64_t>::min()}), minus_one = ints({-1});
    CHECK(as_ints(fold_one(NodeBuilder("Mod", {"a", "b"}), {&lowest, &minus_one})) == Ints{0});
    const Tensor f = floats({5.5f, -5.5f}), g = floats({2.0f});
    CHECK(as_floats(fold_one(NodeBuilder("Mod", {"a", "b"}).attr("fmod", std::int64_t{1}), {&f, &g})) == Floats{1.5f, -1.5f});
    // fmod = 0 on floats is not ONNX: left to the runtime, unfolded.
    CHECK_FALSE(fold_all(NodeBuilder("Mod", {"a", "b"}), {&f, &g}).has_value());
    const Tensor zero = ints({0});
    CHECK_FALSE(fold_all(NodeBuilder("Mod", {"a", "b"}), {&n, &zero}).has_value());
}

TEST_CASE("folding ScatterND replaces the addressed elements or slices, in order, and leaves reductions unfolded") {
    const Tensor data = ints({0, 0, 0, 0, 0, 0}, Shape{2, 3});
    const Tensor at = ints({1, -1, 0, 0}, Shape{2, 2}), values = ints({5, 7});
    CHECK(as_ints(fold_one(NodeBuilder("ScatterND", {"d", "i", "u"}), {&data, &at, &values})) == Ints{7, 0, 0, 0, 0, 5});
    // A whole row, as swin's attention mask is built (mask[rows, cols] = count).
    const Tensor row = ints({1}, Shape{1, 1}), three = ints({4, 5, 6}, Shape{1, 3});
    CHECK(as_ints(fold_one(NodeBuilder("ScatterND", {"d", "i", "u"}), {&data, &row, &three})) == Ints{0, 0, 0, 4, 5, 6});
    // The same index twice: the later update stands.
    const Tensor twice = ints({0, 1, 0, 1}, Shape{2, 2}), both = ints({8, 9});
    CHECK(as_ints(fold_one(NodeBuilder("ScatterND", {"d", "i", "u"}), {&data, &twice, &both}))[1] == 9);
    NodeBuilder add("ScatterND", {"d", "i", "u"});
    auto* reduction = add.proto.add_attribute();
    reduction->set_name("reduction");
    reduction->set_type(pb::AttributeProto::STRING);
    reduction->set_s("add");
    CHECK_FALSE(fold_all(add, {&data, &at, &values}, 16).has_value());
    const Tensor outside = ints({2, 0}, Shape{1, 2}), one = ints({1});
    CHECK_THROWS_WITH_AS(fold_all(NodeBuilder("ScatterND", {"d", "i", "u"}), {&data, &outside, &one}),
                         doctest::Contains("out of range"), onnx_error);
}

TEST_CASE("folding comparisons and logic produces bools, broadcasting") {
    const Tensor x = ints({1, 2, 3}), two = ints({2}, Shape{});
    CHECK(as_bools(fold_one(NodeBuilder("Equal", {"a", "b"}), {&x, &two})) == std::vector<std::uint8_t>{0, 1, 0});
    CHECK(as_bools(fold_one(NodeBuilder("Less", {"a", "b"}), {&x, &two})) == std::vector<std::uint8_t>{1, 0, 0});
    CHECK(as_bools(fold_one(NodeBuilder("Greater", {"a", "b"}), {&x, &two})) == std::vector<std::uint8_t>{0, 0, 1});
    CHECK(as_bools(fold_one(NodeBuilder("GreaterOrEqual", {"a", "b"}), {&x, &two})) == std::vector<std::uint8_t>{0, 1, 1});
    const Tensor p = bools({1, 0}, Shape{2, 1}), q = bools({1, 0});
    CHECK(as_bools(fold_one(NodeBuilder("And", {"a", "b"}), {&p, &q})) == std::vector<std::uint8_t>{1, 0, 0, 0});
    CHECK(as_bools(fold_one(NodeBuilder("Or", {"a", "b"}), {&p, &q})) == std::vector<std::uint8_t>{1, 1, 1, 0});
    CHECK(as_bools(fold_one(NodeBuilder("Equal", {"a", "b"}), {&p, &q})) == std::vector<std::uint8_t>{1, 0, 0, 1});
    CHECK(as_bools(fold_one(NodeBuilder("Not", {"a"}), {&q})) == std::vector<std::uint8_t>{0, 1});
    CHECK_FALSE(fold_all(NodeBuilder("And", {"a", "b"}), {&x, &x}).has_value());
}

TEST_CASE("folding Where picks between broadcast branches") {
    const Tensor condition = bools({1, 0}, Shape{2, 1});
    const Tensor x = ints({1, 2, 3}), y = int_scalar(-1);
    const Tensor out = fold_one(NodeBuilder("Where", {"c", "x", "y"}), {&condition, &x, &y});
    CHECK(out.shape() == Shape{2, 3});
    CHECK(as_ints(out) == Ints{1, 2, 3, -1, -1, -1});
    const Tensor mask = bools({0, 1, 1}), a = floats({1, 2, 3}), b = floats({-1}, Shape{1});
    CHECK(as_floats(fold_one(NodeBuilder("Where", {"c", "x", "y"}), {&mask, &a, &b})) == Floats{-1, 2, 3});
    CHECK_THROWS_WITH_AS(fold_all(NodeBuilder("Where", {"c", "x", "y"}), {&x, &x, &y}),
                         doctest::Contains("condition must be bool"), onnx_error);
}

TEST_CASE("folding Min, Max and Sum take any number of broadcast inputs") {
    const Tensor a = ints({1, 5}), b = ints({3, 2}), c = ints({4}, Shape{});
    CHECK(as_ints(fold_one(NodeBuilder("Max", {"a", "b", "c"}), {&a, &b, &c})) == Ints{4, 5});
    CHECK(as_ints(fold_one(NodeBuilder("Min", {"a", "b", "c"}), {&a, &b, &c})) == Ints{1, 2});
    CHECK(as_ints(fold_one(NodeBuilder("Sum", {"a", "b", "c"}), {&a, &b, &c})) == Ints{8, 11});
    CHECK(as_ints(fold_one(NodeBuilder("Min", {"a"}), {&a})) == Ints{1, 5});
}

TEST_CASE("folding unary ops: Neg, Abs, Sign, Sqrt, Floor, Ceil, Reciprocal") {
    const Tensor i = ints({-3, 0, 4});
    CHECK(as_ints(fold_one(NodeBuilder("Neg", {"x"}), {&i})) == Ints{3, 0, -4});
    CHECK(as_ints(fold_one(NodeBuilder("Abs", {"x"}), {&i})) == Ints{3, 0, 4});
    CHECK(as_ints(fold_one(NodeBuilder("Sign", {"x"}), {&i})) == Ints{-1, 0, 1});
    const Tensor f = floats({2.0f, 6.25f, -1.5f});
    const Floats roots = as_floats(fold_one(NodeBuilder("Sqrt", {"x"}), {&f}));
    CHECK(std::bit_cast<std::uint32_t>(roots[0]) == std::bit_cast<std::uint32_t>(std::sqrt(2.0f)));
    CHECK(roots[1] == 2.5f);
    CHECK(std::isnan(roots[2]));
    CHECK(as_floats(fold_one(NodeBuilder("Floor", {"x"}), {&f})) == Floats{2, 6, -2});
    CHECK(as_floats(fold_one(NodeBuilder("Ceil", {"x"}), {&f})) == Floats{2, 7, -1});
    CHECK(as_floats(fold_one(NodeBuilder("Reciprocal", {"x"}), {&f})) == Floats{0.5f, 0.16f, -1.0f / 1.5f});
    // Sqrt is not defined on integers in ONNX: left unfolded.
    CHECK_FALSE(fold_all(NodeBuilder("Sqrt", {"x"}), {&i}).has_value());
}

TEST_CASE("folding Pow keeps the base type and multiplies for a scalar exponent of 2 or 3") {
    const Tensor base = floats({2, 3, 0.5f}), two = floats({2}, Shape{});
    CHECK(as_floats(fold_one(NodeBuilder("Pow", {"a", "b"}), {&base, &two})) == Floats{4, 9, 0.25f});
    const Tensor whole = ints({2, 3}), cube = ints({3});
    CHECK(as_ints(fold_one(NodeBuilder("Pow", {"a", "b"}), {&whole, &cube})) == Ints{8, 27});
    const Tensor half = floats({0.5f}, Shape{}), squares = floats({4, 9});
    CHECK(as_floats(fold_one(NodeBuilder("Pow", {"a", "b"}), {&squares, &half})) == Floats{2, 3});
    const Tensor int_exponent = ints({2, 3});
    CHECK(as_floats(fold_one(NodeBuilder("Pow", {"a", "b"}), {&squares, &int_exponent})) == Floats{16, 729});
}

TEST_CASE("folding reductions reads axes from attributes, and ReduceSum's from the input since opset 13") {
    const Tensor m = ints({1, 2, 3, 4, 5, 6}, Shape{2, 3});
    const Tensor axis1 = ints({1});
    const Tensor rows = fold_one(NodeBuilder("ReduceSum", {"x", "a"}).attr("keepdims", 0), {&m, &axis1}, 13);
    CHECK(rows.shape() == Shape{2});
    CHECK(as_ints(rows) == Ints{6, 15});
    const Tensor cols = fold_one(NodeBuilder("ReduceSum", {"x"}).attr("axes", Ints{0}), {&m}, 11);
    CHECK(cols.shape() == Shape{1, 3});
    CHECK(as_ints(cols) == Ints{5, 7, 9});
    const Tensor all = fold_one(NodeBuilder("ReduceSum", {"x"}), {&m}, 13);
    CHECK(all.shape() == Shape{1, 1});
    CHECK(as_ints(all) == Ints{21});
    CHECK(fold_one(NodeBuilder("ReduceSum", {"x"}).attr("noop_with_empty_axes", 1), {&m}, 13) == m);
    const Tensor product = fold_one(NodeBuilder("ReduceProd", {"x"}).attr("keepdims", 0), {&m}, 13);
    CHECK(product.shape() == Shape{});
    CHECK(as_ints(product) == Ints{720});
    const Tensor f = floats({1, 2, 6, -4, 5, 0}, Shape{2, 3});
    CHECK(as_floats(fold_one(NodeBuilder("ReduceMean", {"x"}).attr("axes", Ints{-1}), {&f}, 13)) == Floats{3, 1.0f / 3});
    CHECK(as_floats(fold_one(NodeBuilder("ReduceMax", {"x"}).attr("axes", Ints{0}), {&f}, 13)) == Floats{1, 5, 6});
    CHECK(as_floats(fold_one(NodeBuilder("ReduceMin", {"x"}).attr("axes", Ints{1}).attr("keepdims", 0), {&f}, 13))
          == Floats{1, -4});
}

TEST_CASE("folding Split cuts equal parts or given sizes, from the attribute before opset 13 and the input since") {
    const Tensor data = ints({1, 2, 3, 4, 5, 6});
    const auto equal = fold_all(NodeBuilder("Split", {"x"}, {"a", "b", "c"}), {&data}, 13);
    REQUIRE(equal.has_value());
    REQUIRE(equal->size() == 3);
    CHECK(as_ints((*equal)[0]) == Ints{1, 2});
    CHECK(as_ints((*equal)[2]) == Ints{5, 6});
    const auto old_form = fold_all(NodeBuilder("Split", {"x"}, {"a", "b"}).attr("split", Ints{2, 4}), {&data}, 11);
    REQUIRE(old_form.has_value());
    CHECK(as_ints((*old_form)[0]) == Ints{1, 2});
    CHECK(as_ints((*old_form)[1]) == Ints{3, 4, 5, 6});
    const Tensor sizes = ints({1, 0, 5});
    const auto new_form = fold_all(NodeBuilder("Split", {"x", "s"}, {"a", "b", "c"}), {&data, &sizes}, 13);
    REQUIRE(new_form.has_value());
    CHECK(as_ints((*new_form)[0]) == Ints{1});
    CHECK((*new_form)[1].shape() == Shape{0});
    CHECK(as_ints((*new_form)[2]) == Ints{2, 3, 4, 5, 6});

    const Tensor matrix = floats({1, 2, 3, 4, 5, 6}, Shape{2, 3});
    const auto columns = fold_all(NodeBuilder("Split", {"x"}, {"a", "b"}).attr("axis", -1).attr("split", Ints{1, 2}), {&matrix}, 12);
    REQUIRE(columns.has_value());
    CHECK((*columns)[1].shape() == Shape{2, 2});
    CHECK(as_floats((*columns)[1]) == Floats{2, 3, 5, 6});
    const Tensor short_sizes = ints({1, 2});
    CHECK_THROWS_WITH_AS(fold_all(NodeBuilder("Split", {"x", "s"}, {"a", "b"}), {&data, &short_sizes}, 13),
                         doctest::Contains("does not cut an axis of size 6 into 2 outputs"), onnx_error);
    CHECK_THROWS_WITH_AS(fold_all(NodeBuilder("Split", {"x"}, {"a", "b", "c", "d"}), {&data}, 13),
                         doctest::Contains("does not split into 4 equal parts"), onnx_error);
}

TEST_CASE("folding Identity copies its input and Constant materialises its value") {
    const Tensor x = ints({4, 5});
    CHECK(fold_one(NodeBuilder("Identity", {"x"}), {&x}) == x);
    CHECK(fold_one(NodeBuilder("Constant", {}).attr("value", x), {}) == x);
    CHECK(as_ints(fold_one(NodeBuilder("Constant", {}).attr("value_ints", Ints{1, 2}), {})) == Ints{1, 2});
}

TEST_CASE("folding declines non-constant inputs, unknown ops, other domains and oversized outputs") {
    const Tensor x = ints({1, 2});
    CHECK_FALSE(fold_all(NodeBuilder("Add", {"a", "b"}), {&x, nullptr}).has_value());
    CHECK_FALSE(fold_all(NodeBuilder("Add", {"a", "b"}), {&x}).has_value());
    CHECK_FALSE(fold::is_foldable("Conv"));
    CHECK(fold::is_foldable("Gather"));
    CHECK_FALSE(fold_all(NodeBuilder("Conv", {"a", "b"}), {&x, &x}).has_value());
    NodeBuilder custom("Add", {"a", "b"});
    custom.proto.set_domain("com.microsoft");
    CHECK_FALSE(fold_all(custom, {&x, &x}).has_value());
    // Shape without value or type.
    CHECK_FALSE(fold_all(NodeBuilder("Shape", {"a"}), {nullptr}).has_value());

    const Tensor huge = ints({1 << 14, 1 << 14});  // 2^28 elements > max_fold_elements
    CHECK_FALSE(fold_all(NodeBuilder("ConstantOfShape", {"s"}), {&huge}).has_value());
    const Tensor one = floats({1});
    CHECK_FALSE(fold_all(NodeBuilder("Expand", {"x", "s"}), {&one, &huge}).has_value());
    const Tensor start = int_scalar(0), limit = int_scalar(std::int64_t{1} << 40), step = int_scalar(1);
    CHECK_FALSE(fold_all(NodeBuilder("Range", {"a", "b", "c"}), {&start, &limit, &step}).has_value());
    const Tensor rank6 = floats({1}, Shape{1, 1, 1, 1, 1, 1});
    const Tensor axis0 = ints({0});
    CHECK_FALSE(fold_all(NodeBuilder("Unsqueeze", {"x", "a"}), {&rank6, &axis0}, 13).has_value());
    const Tensor rank7 = ints({1, 1, 1, 1, 1, 1, 1});
    CHECK_FALSE(fold_all(NodeBuilder("Reshape", {"x", "s"}), {&one, &rank7}).has_value());
}

TEST_CASE("folding raises onnx_error naming the file, node and op for invalid nodes") {
    const Tensor data = ints({1, 2, 3, 4});
    const Tensor seven = int_scalar(7);
    CHECK_THROWS_WITH_AS(fold_all(NodeBuilder("Gather", {"d", "i"}, {"y"}, "Gather_3"), {&data, &seven}),
                         "[rlflow.onnx_error] model.onnx: node 'Gather_3' (Gather): index 7 out of range for axis of size 4",
                         onnx_error);
    CHECK_THROWS_WITH_AS(fold_all(NodeBuilder("Gather", {"d", "i"}).attr("axis", 1), {&data, &seven}),
                         doctest::Contains("axis 1 out of range for rank 1"), onnx_error);
    const Tensor zero_step = ints({0});
    CHECK_THROWS_WITH_AS(fold_all(NodeBuilder("Slice", {"x", "s", "e", "a", "p"}), {&data, &zero_step, &zero_step, &zero_step, &zero_step}),
                         doctest::Contains("step for axis 0 is 0"), onnx_error);
    // An unnamed node is named by its first output.
    CHECK_THROWS_WITH_AS(fold_all(NodeBuilder("Identity", {"a", "b"}, {"out"}, ""), {&data, &data}),
                         doctest::Contains("model.onnx: node 'out' (Identity): expects 1 inputs, got 2"), onnx_error);
    const Tensor f = floats({1});
    CHECK_THROWS_WITH_AS(fold_all(NodeBuilder("Gather", {"d", "i"}), {&data, &f}),
                         doctest::Contains("input 1 must be int32 or int64, got float"), onnx_error);
}

namespace {

namespace fs = std::filesystem;

const fs::path node_tests = "/usr/share/libonnx-testdata/data/node";
/// Relative tolerance for float results: the reference outputs come from numpy's libm.
constexpr double float_tolerance = 1e-6;

/// Bitwise equality, except that float32/float64 may differ by a few units in the last place
/// (the reference used numpy's libm) and NaN matches NaN.
bool matches(const Tensor& actual, const Tensor& expected) {
    if (actual.type() != expected.type()) return false;
    if (actual.dtype() != DType::Float32 && actual.dtype() != DType::Float64) return actual == expected;
    const auto compare = [](auto a, auto e) {
        for (std::size_t i = 0; i < a.size(); ++i) {
            if (std::isnan(a[i]) && std::isnan(e[i])) continue;
            if (!(std::abs(a[i] - e[i]) <= float_tolerance * std::max(1.0, std::abs(static_cast<double>(e[i]))))) return false;
        }
        return true;
    };
    if (actual.dtype() == DType::Float32) return compare(actual.to_vector<float>(), expected.to_vector<float>());
    return compare(actual.to_vector<double>(), expected.to_vector<double>());
}

/// "" when the case folds bit for bit to its reference outputs, "close" when within
/// float_tolerance, "declined" when the folder leaves it,
/// "skipped" when its data cannot be held by a Tensor, else what went wrong.
std::string check_node_case(const fs::path& dir) {
    pb::ModelProto model;
    if (!model.ParseFromString(onnx_io::read_file(dir / "model.onnx"))) return "unreadable model";
    const pb::GraphProto& graph = model.graph();
    if (graph.node_size() != 1 || !fold::is_foldable(graph.node(0).op_type())) return "skipped";
    std::int64_t opset = 0;
    for (const auto& o : model.opset_import())
        if (o.domain().empty() || o.domain() == "ai.onnx") opset = o.version();
    std::vector<Tensor> inputs, expected;
    try {
        inputs = onnx_io::load_tensor_files(dir / "test_data_set_0", "input");
        expected = onnx_io::load_tensor_files(dir / "test_data_set_0", "output");
    } catch (const onnx_error&) {
        return "skipped";  // string or external data
    }
    std::map<std::string, const Tensor*> by_name;
    for (std::size_t i = 0; i < inputs.size() && i < static_cast<std::size_t>(graph.input_size()); ++i) {
        const auto& declared = graph.input(static_cast<int>(i));
        // A few bfloat16 cases store their input data as uint16.
        if (static_cast<int>(inputs[i].dtype()) != declared.type().tensor_type().elem_type()) return "skipped";
        by_name[declared.name()] = &inputs[i];
    }
    std::vector<fold::FoldInput> fold_inputs;
    for (const auto& name : graph.node(0).input()) fold_inputs.push_back({by_name.count(name) ? by_name[name] : nullptr, {}});
    std::optional<std::vector<Tensor>> outputs;
    try {
        outputs = fold::fold_node(graph.node(0), fold_inputs, opset, dir.filename().string());
    } catch (const onnx_error& e) {
        return std::string("threw ") + e.what();
    }
    if (!outputs) return "declined";
    if (outputs->size() < expected.size()) return "output count";
    bool exact = true;
    for (std::size_t i = 0; i < expected.size(); ++i) {
        if (!matches((*outputs)[i], expected[i]))
            return "output " + std::to_string(i) + " " + (*outputs)[i].type().to_string() + " differs from reference "
                   + expected[i].type().to_string();
        exact = exact && (*outputs)[i] == expected[i];
    }
    return exact ? "" : "close";
}

}  // namespace

TEST_CASE("folding reproduces the ONNX backend node tests of every foldable op") {
    if (!fs::exists(node_tests)) {
        MESSAGE("skipped: " << node_tests << " is missing (install libonnx-testdata)");
        return;
    }
    std::vector<fs::path> cases;
    for (const auto& e : fs::directory_iterator(node_tests)) cases.push_back(e.path());
    std::sort(cases.begin(), cases.end());
    int folded = 0;
    std::vector<std::string> declined, failed, close;
    for (const auto& dir : cases) {
        const std::string result = check_node_case(dir);
        if (result.empty()) ++folded;
        else if (result == "close") close.push_back(dir.filename().string());
        else if (result == "declined") declined.push_back(dir.filename().string());
        else if (result != "skipped") failed.push_back(dir.filename().string() + ": " + result);
    }
    std::string declined_list, close_list;
    for (const auto& d : declined) declined_list += d + " ";
    for (const auto& d : close) close_list += d + " ";
    MESSAGE(folded << " node tests folded bit for bit to their reference outputs; within tolerance: " << close_list
                   << "; declined: " << declined_list);
    for (const auto& f : failed) FAIL_CHECK(f);
    CHECK(failed.empty());
    CHECK(folded + static_cast<int>(close.size()) >= 250);
}
