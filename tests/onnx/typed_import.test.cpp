// The typed ops at the ONNX boundary: Where, Equal, Less, Greater, Not, And, Or, Cast,
// Expand and Gather import as core ops over int64 and bool tensors as well as float, run in
// the reference executor, and are written back as the same ONNX ops; forms outside what
// they implement stay opaque, with the reason `rlflow info` gives.
#include <rlflow/core/statistics.hpp>
#include <rlflow/exec/executor.hpp>
#include <rlflow/onnx/export.hpp>
#include <rlflow/onnx/import.hpp>
#include <rlflow/onnx/opaque.hpp>

#include <doctest/doctest.h>

#include "model_builder.hpp"

#include <algorithm>
#include <string>
#include <vector>

using namespace rlflow;
using onnx_test::ModelBuilder;
namespace pb = ::onnx;

namespace {

void int_attribute(pb::NodeProto& n, const std::string& name, std::int64_t value) {
    pb::AttributeProto& a = *n.add_attribute();
    a.set_name(name);
    a.set_type(pb::AttributeProto::INT);
    a.set_i(value);
}

Tensor int64s(const Shape& shape, const std::vector<std::int64_t>& v) { return Tensor::from_values(DType::Int64, shape, v); }

std::vector<std::string> op_types(const pb::ModelProto& m) {
    std::vector<std::string> out;
    for (const auto& n : m.graph().node()) out.push_back(n.op_type());
    return out;
}

bool has(const std::vector<std::string>& ops, const std::string& op) { return std::find(ops.begin(), ops.end(), op) != ops.end(); }

std::size_t count_kind(const Graph& g, OpKind kind) {
    return static_cast<std::size_t>(std::count_if(g.nodes().begin(), g.nodes().end(), [&](const Node& n) { return n.op == kind; }));
}

/// An attention mask as a transformer export computes it from token ids: padding where the
/// id is 0, unsqueezed over the heads, scores replaced there by a large negative value;
/// the ids also leave as floats, and a mask of ids at least 2 as bools.
ModelBuilder masked_scores() {
    ModelBuilder m(13);
    m.input("ids", {2, 4}, DType::Int64).input("scores", {2, 3, 4});
    m.constant("zero", int64s({}, {0})).constant("one", int64s({}, {1})).constant("axes", int64s({1}, {1}));
    m.constant("low", Tensor::from_floats(Shape{}, {-1e9f}));
    m.node("Equal", {"ids", "zero"}, {"pad"});
    m.node("Unsqueeze", {"pad", "axes"}, {"mask"});
    m.node("Where", {"mask", "low", "scores"}, {"masked"});
    int_attribute(m.node("Cast", {"ids"}, {"ids_float"}), "to", static_cast<std::int64_t>(DType::Float32));
    m.node("Greater", {"ids", "one"}, {"large"});
    m.node("Not", {"pad"}, {"kept"});
    m.node("And", {"large", "kept"}, {"both"});
    m.output("masked", {2, 3, 4}).output("ids_float", {2, 4}).output("both", {2, 4}, DType::Bool);
    return m;
}

}  // namespace

TEST_CASE("an attention mask computed from int64 ids imports as typed core ops, runs and round-trips") {
    const Graph g = onnx_io::import_model(masked_scores().model, {}, "mask.onnx");
    CHECK(graph_statistics(g).opaque_nodes == 0);
    for (const OpKind kind : {OpKind::Equal, OpKind::Where, OpKind::Cast, OpKind::Greater, OpKind::Not, OpKind::And})
        CHECK(count_kind(g, kind) == 1);
    const Tensor ids = int64s({2, 4}, {3, 0, 1, 0, 0, 2, 7, 1});
    std::vector<float> score_values(24);
    for (std::size_t i = 0; i < score_values.size(); ++i) score_values[i] = static_cast<float>(i);
    const std::vector<Tensor> inputs{ids, Tensor::from_floats(Shape{2, 3, 4}, score_values)};
    const auto outputs = exec::Executor{}.run(g, inputs).outputs;
    REQUIRE(outputs.size() == 3);
    const auto id = ids.to_vector<std::int64_t>();
    for (std::size_t i = 0; i < 24; ++i) {
        const std::size_t batch = i / 12, column = i % 4;
        CHECK(outputs[0].floats()[i] == (id[batch * 4 + column] == 0 ? -1e9f : score_values[i]));
    }
    CHECK(outputs[1].floats()[6] == 7.0f);
    CHECK(outputs[2].to_vector<std::uint8_t>() == std::vector<std::uint8_t>{1, 0, 0, 0, 0, 1, 1, 0});

    const pb::ModelProto written = onnx_io::export_model(g);
    const auto ops = op_types(written);
    for (const char* op : {"Equal", "Where", "Cast", "Greater", "Not", "And"}) CHECK(has(ops, op));
    const Graph again = onnx_io::import_model(written, {}, "written.onnx");
    const auto replayed = exec::Executor{}.run(again, inputs).outputs;
    REQUIRE(replayed.size() == 3);
    for (std::size_t i = 0; i < 3; ++i) CHECK(std::ranges::equal(replayed[i].raw(), outputs[i].raw()));
}

TEST_CASE("a Gather of token ids into an embedding table is a core Gather; constant indices out of range stay opaque") {
    ModelBuilder m(13);
    m.input("ids", {2, 3}, DType::Int64).input("x", {5, 4});
    std::vector<float> table(5 * 4);
    for (std::size_t i = 0; i < table.size(); ++i) table[i] = static_cast<float>(i);
    m.constant("table", Tensor::from_floats(Shape{5, 4}, table)).constant("bad", int64s({1}, {5}));
    m.node("Gather", {"table", "ids"}, {"embedded"});
    m.node("Gather", {"x", "bad"}, {"broken"});
    m.output("embedded").output("broken");
    const Graph g = onnx_io::import_model(m.model, {}, "embed.onnx");
    CHECK(count_kind(g, OpKind::Gather) == 1);
    const auto groups = onnx_io::opaque_groups(g);
    REQUIRE(groups.size() == 1);
    CHECK(groups[0].op_type == "Gather");
    CHECK(groups[0].reason.find("outside what rlflow implements") != std::string::npos);

    ModelBuilder just(13);
    just.input("ids", {2, 3}, DType::Int64);
    just.constant("table", Tensor::from_floats(Shape{5, 4}, table));
    just.node("Gather", {"table", "ids"}, {"embedded"});
    just.output("embedded", {2, 3, 4});
    const Graph embed = onnx_io::import_model(just.model, {}, "embed.onnx");
    const auto out = exec::Executor{}.run(embed, std::vector<Tensor>{int64s({2, 3}, {4, 0, -1, 1, 1, 2})}).outputs.at(0);
    REQUIRE(out.shape() == Shape{2, 3, 4});
    const std::vector<std::int64_t> rows{4, 0, 4, 1, 1, 2};
    for (std::int64_t i = 0; i < out.numel(); ++i)
        CHECK(out.floats()[static_cast<std::size_t>(i)] == table[static_cast<std::size_t>(rows[static_cast<std::size_t>(i / 4)] * 4 + i % 4)]);
    CHECK(has(op_types(onnx_io::export_model(embed)), "Gather"));
}

TEST_CASE("Expand with a constant shape is a core op written back with its shape input; a computed shape stays opaque") {
    ModelBuilder m(13);
    m.input("x", {3, 1}).input("s", {2}, DType::Int64);
    m.constant("shape", int64s({3}, {2, 1, 4}));
    m.node("Expand", {"x", "shape"}, {"y"});
    m.node("Expand", {"x", "s"}, {"z"});
    m.output("y", {2, 3, 4}).output("z");
    const Graph g = onnx_io::import_model(m.model, {}, "expand.onnx");
    CHECK(count_kind(g, OpKind::Expand) == 1);
    CHECK(graph_statistics(g).opaque_nodes == 1);
    const auto expand = std::find_if(g.nodes().begin(), g.nodes().end(), [](const Node& n) { return n.op == OpKind::Expand; });
    REQUIRE(expand != g.nodes().end());
    CHECK((*expand).outputs[0].type == TensorType{DType::Float32, {2, 3, 4}});

    ModelBuilder only(13);
    only.input("x", {3, 1}).constant("shape", int64s({3}, {2, 1, 4}));
    only.node("Expand", {"x", "shape"}, {"y"});
    only.output("y", {2, 3, 4});
    const Graph expanded = onnx_io::import_model(only.model, {}, "expand.onnx");
    const pb::ModelProto written = onnx_io::export_model(expanded);
    CHECK(has(op_types(written), "Expand"));
    const std::vector<Tensor> x{Tensor::from_floats(Shape{3, 1}, {1, 2, 3})};
    const auto before = exec::Executor{}.run(expanded, x).outputs.at(0);
    const auto after = exec::Executor{}.run(onnx_io::import_model(written, {}, "written.onnx"), x).outputs.at(0);
    CHECK(before.floats()[5] == 2.0f);
    CHECK(std::ranges::equal(before.floats(), after.floats()));
}

TEST_CASE("typed ops over element types they do not compute on stay opaque, and info says why") {
    ModelBuilder m(13);
    m.input("p", {3}, DType::Bool).input("h", {3}, DType::Float16).input("x", {3});
    m.node("Less", {"p", "p"}, {"ordered"});          // bools are not ordered
    m.node("Equal", {"h", "h"}, {"half"});            // float16 is carried, never computed
    int_attribute(m.node("Cast", {"x"}, {"narrow"}), "to", static_cast<std::int64_t>(DType::Float16));
    m.output("ordered").output("half").output("narrow");
    const Graph g = onnx_io::import_model(m.model, {}, "refused.onnx");
    CHECK(graph_statistics(g).opaque_nodes == 3);
    for (const auto& group : onnx_io::opaque_groups(g)) {
        CAPTURE(group.op_type);
        CAPTURE(group.reason);
        if (group.op_type == "Equal") CHECK(group.reason.find("is float16") != std::string::npos);
        else CHECK(group.reason.find("outside what rlflow implements") != std::string::npos);
    }
}
