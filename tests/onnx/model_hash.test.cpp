// model_structure_hash (onnx/model_hash.hpp): ONNX models hashed by what they compute,
// not by the names their tensors got.
#include <rlflow/core/canonical.hpp>
#include <rlflow/exec/random.hpp>
#include <rlflow/models/zoo.hpp>
#include <rlflow/onnx/export.hpp>
#include <rlflow/onnx/model_hash.hpp>

#include <doctest/doctest.h>

#include <cstdint>
#include <string>

using namespace rlflow;

namespace {

/// x -> Conv(w) -> Relu -> y: fused into the convolution (`fused`) or as two nodes; the
/// weight named `weight`, filled from `seed`.
Graph conv_relu(bool fused, const std::string& weight = "w", std::uint64_t seed = 1) {
    Graph g;
    const auto x = g.add_input("x", {DType::Float32, Shape{1, 2, 5, 5}});
    const auto w = g.add_weight(weight, {DType::Float32, Shape{3, 2, 3, 3}});
    NodeId y = g.add_node(OpKind::Conv2D, {{x, 0}, {w, 0}}, fused ? Attributes{{"activation", std::int64_t{1}}} : Attributes{});
    if (!fused) y = g.add_node(OpKind::Relu, {{y, 0}});
    g.add_output({y, 0}, "y");
    exec::fill_random_weights(g, seed);
    return g;
}

std::uint64_t hash_of(const Graph& g) { return onnx_io::model_structure_hash(onnx_io::export_model(g)); }

}  // namespace

TEST_CASE("a model's hash is what it computes: a fused convolution hashes as the Conv + Relu it is written as") {
    // Two IR graphs (two canonical forms) that write one model.
    REQUIRE_FALSE(canonical_form(conv_relu(true)) == canonical_form(conv_relu(false)));
    CHECK(hash_of(conv_relu(true)) == hash_of(conv_relu(false)));
    // The same weights under another initializer name: the same model to a runtime.
    const Graph renamed = conv_relu(false, "w");
    Graph other = conv_relu(false, "kernel");
    other.set_weight_data(other.weights().front(), renamed.node(renamed.weights().front()).data);
    CHECK(hash_of(renamed) == hash_of(other));
}

TEST_CASE("a model's hash tells apart other weights, other attributes, other structure and other interfaces") {
    const std::uint64_t base = hash_of(conv_relu(false));
    CHECK(hash_of(conv_relu(false, "w", 2)) != base);  // other weight values
    Graph padded = conv_relu(false);
    for (const Node& n : padded.nodes())
        if (n.op == OpKind::Conv2D) {
            Attributes a = n.attributes;
            a.set("pads", std::vector<std::int64_t>{1, 1, 1, 1});
            padded.set_attributes(n.id, std::move(a));
            break;
        }
    CHECK(hash_of(padded) != base);
    Graph tanh;
    {
        const auto x = tanh.add_input("x", {DType::Float32, Shape{1, 2, 5, 5}});
        const auto w = tanh.add_weight("w", {DType::Float32, Shape{3, 2, 3, 3}});
        const auto c = tanh.add_node(OpKind::Conv2D, {{x, 0}, {w, 0}});
        tanh.add_output({tanh.add_node(OpKind::Tanh, {{c, 0}}), 0}, "y");
        exec::fill_random_weights(tanh, 1);
    }
    CHECK(hash_of(tanh) != base);
    // Deterministic, and equal for a model exported twice.
    const Graph zoo = models::build_zoo_model("squeezenet1_1");
    CHECK(hash_of(zoo) == hash_of(models::build_zoo_model("squeezenet1_1")));
    CHECK(hash_of(zoo) != hash_of(models::build_zoo_model("resnet18")));
}
