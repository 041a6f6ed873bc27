// What stays opaque after import, and why: the importer's repeated fold-and-infer passes,
// the size limit on folded values, and the reasons `rlflow info` gives.
#include "../tensor_types.hpp"
#include <rlflow/core/statistics.hpp>
#include <rlflow/onnx/import.hpp>
#include <rlflow/onnx/opaque.hpp>

#include "model_builder.hpp"

#include <doctest/doctest.h>

#include <algorithm>

using namespace rlflow;
using onnx_test::ModelBuilder;

namespace {

std::size_t count_op(const Graph& g, std::string_view label) {
    return static_cast<std::size_t>(
        std::count_if(g.nodes().begin(), g.nodes().end(), [&](const Node& n) { return n.op_label() == label; }));
}

}  // namespace

TEST_CASE("a shape that only folding reveals types the opaque node after it, and the Shape of that folds") {
    // x[2, 6] reshaped by a target computed with Where (which ONNX inference does not
    // propagate), then Sin (opaque to rlflow: only inference types it), then a Reshape by
    // Sin's own Shape. One pass leaves Sin untyped and its Shape unfolded; the second
    // pass, with the folded target given to inference, folds it.
    ModelBuilder m;
    m.input("x", {2, 6}).constant("zero", ints({0})).constant("one", ints({1})).constant("flip", ints({3, 4}));
    m.node("Shape", {"x"}, {"s"});
    m.node("Equal", {"s", "zero"}, {"is_zero"});
    m.node("Where", {"is_zero", "one", "flip"}, {"target"});  // [3, 4]
    m.node("Reshape", {"x", "target"}, {"r"});
    m.node("Sin", {"r"}, {"h"});
    m.node("Shape", {"h"}, {"hs"});
    m.node("Relu", {"h"}, {"a"});
    m.node("Reshape", {"a", "hs"}, {"y"});
    m.output("y");
    const Graph g = onnx_io::import_model(m.model, {}, "two_passes.onnx");
    CHECK(count_op(g, "Shape") == 0);
    CHECK(count_op(g, "Where") == 0);
    CHECK(graph_statistics(g).opaque_nodes == 1);
    const auto h = std::find_if(g.nodes().begin(), g.nodes().end(), [](const Node& n) { return n.op_type == "Sin"; });
    REQUIRE(h != g.nodes().end());
    CHECK((*h).outputs[0].type == TensorType{DType::Float32, Shape{3, 4}});
    CHECK(g.type(g.outputs().front().value) == TensorType{DType::Float32, Shape{3, 4}});

    // Without folding nothing is learnt, and the import still succeeds.
    onnx_io::ImportOptions unfolded;
    unfolded.fold_constants = false;
    CHECK(count_op(onnx_io::import_model(m.model, unfolded, "two_passes.onnx"), "Shape") == 2);
}

TEST_CASE("a fold that would blow a small value up past 1 MiB is kept as the op, and info says so") {
    ModelBuilder m;
    m.input("x", {512, 1024}).constant("shape", ints({512, 1024})).constant("small", ints({2, 3}));
    m.node("ConstantOfShape", {"shape"}, {"big"});     // 2 MiB of float zeros: kept
    m.node("ConstantOfShape", {"small"}, {"little"});  // 24 bytes: folded
    m.node("Add", {"x", "big"}, {"y"});
    m.output("y").output("little");
    const Graph g = onnx_io::import_model(m.model, {}, "bloat.onnx");
    CHECK(count_op(g, "ConstantOfShape") == 1);
    CHECK(count_op(g, "Add") == 1);
    const auto groups = onnx_io::opaque_groups(g);
    REQUIRE(groups.size() == 1);
    CHECK(groups[0].op_type == "ConstantOfShape");
    CHECK(groups[0].nodes == std::vector<std::string>{"big_node"});
    CHECK(groups[0].reason.find("left unfolded") != std::string::npos);
}

TEST_CASE("opaque nodes are grouped by op and reason, largest group first") {
    ModelBuilder m;
    m.input("x", {1, 4, 6, 6});
    m.node("Sin", {"x"}, {"a"});
    m.node("Sin", {"a"}, {"b"});
    m.node("MyOp", {"b"}, {"c"}, "com.example");
    // A Slice that keeps nothing is left to the runtime.
    m.constant("starts", ints({4})).constant("ends", ints({2})).constant("axes", ints({2})).constant("steps", ints({1}));
    m.node("Slice", {"x", "starts", "ends", "axes", "steps"}, {"d"});
    m.output("c").output("d");
    const Graph g = onnx_io::import_model(m.model, {}, "opaque.onnx");
    const auto groups = onnx_io::opaque_groups(g);
    REQUIRE(groups.size() == 3);
    CHECK(groups[0].op_type == "Sin");
    CHECK(groups[0].nodes == std::vector<std::string>{"a_node", "b_node"});
    CHECK(groups[0].reason == "no core op for Sin");
    const auto find = [&](const std::string& op) {
        const auto it = std::find_if(groups.begin(), groups.end(), [&](const auto& group) { return group.op_type == op; });
        REQUIRE(it != groups.end());
        return *it;
    };
    CHECK(find("MyOp").reason == "custom domain 'com.example'");
    CHECK(find("MyOp").domain == "com.example");
    CHECK(find("Slice").reason.find("outside what rlflow implements for Slice") != std::string::npos);
}

TEST_CASE("an op rlflow maps stays opaque when its input has no float32 static type, and says which input") {
    // Relu of a tensor whose type inference cannot know (the output of a custom op).
    ModelBuilder m;
    m.input("x", {2, 3});
    m.node("MyOp", {"x"}, {"u"}, "com.example");
    m.node("Relu", {"u"}, {"y"});
    m.output("y");
    const Graph g = onnx_io::import_model(m.model, {}, "untyped.onnx");
    const auto groups = onnx_io::opaque_groups(g);
    REQUIRE(groups.size() == 2);
    const auto relu = std::find_if(groups.begin(), groups.end(), [](const auto& group) { return group.op_type == "Relu"; });
    REQUIRE(relu != groups.end());
    CHECK(relu->reason == "input 'u' has no known type");
}
