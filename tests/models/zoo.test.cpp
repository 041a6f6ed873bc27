#include "model_facts.hpp"

#include <rlflow/core/canonical.hpp>
#include <rlflow/core/memory.hpp>
#include <rlflow/core/statistics.hpp>
#include <rlflow/exec/executor.hpp>
#include <rlflow/exec/random.hpp>
#include <rlflow/models/zoo.hpp>

#include <doctest/doctest.h>

#include <cmath>
#include <map>
#include <set>
#include <string>

using namespace rlflow;
using namespace model_facts;

namespace {

const std::string all_names
    = "resnet18, resnet50, inception_v3, squeezenet1_1, bert, resnext50, nasnet_a, nasrnn, vit_base, encoder_small";

/// Op kind -> count over the whole graph.
std::map<std::string, std::size_t> histogram(const Graph& g) { return graph_statistics(g).op_histogram; }

}  // namespace

TEST_CASE("the zoo lists the thesis's five graphs, TASO's and X-RLflow's four, and the small encoder") {
    std::string names;
    for (const auto& entry : models::zoo_entries()) {
        names += (names.empty() ? "" : ", ") + std::string(entry.name);
        CHECK_FALSE(entry.description.empty());
    }
    CHECK(names == all_names);
}

TEST_CASE("every zoo model validates, marks its outputs and names every tensor uniquely") {
    for (const auto& entry : models::zoo_entries()) {
        CAPTURE(entry.name);
        const Graph g = models::build_zoo_model(entry.name);
        CHECK_NOTHROW(g.validate());
        CHECK_FALSE(g.outputs().empty());
        CHECK(graph_statistics(g).opaque_nodes == 0);
        std::set<std::string> names;
        std::size_t tensors = 0;
        for (const Node& n : g.nodes())
            for (const auto& out : n.outputs) {
                names.insert(out.name);
                ++tensors;
            }
        CHECK(names.size() == tensors);
        for (const NodeId id : g.weights()) CHECK(g.node(id).data == nullptr);  // declared, not filled
    }
}

TEST_CASE("zoo models produce their documented output shapes") {
    const std::pair<const char*, Shape> expected[]
        = {{"resnet18", {1, 1000}},       {"resnet50", {1, 1000}}, {"inception_v3", {1, 1000}},
           {"squeezenet1_1", {1, 1000}},  {"bert", {1, 128, 768}}, {"resnext50", {1, 1000}},
           {"nasnet_a", {1, 5120, 7, 7}}, {"nasrnn", {1, 512}},    {"vit_base", {1, 1000}},
           {"encoder_small", {1, 32, 64}}};
    for (const auto& [name, shape] : expected) {
        CAPTURE(name);
        const Graph g = models::build_zoo_model(name);
        REQUIRE(g.outputs().size() == 1);
        CHECK(output_shape(g) == shape);
    }
}

TEST_CASE("the batch option changes only the batch dimension") {
    constexpr std::int64_t batch = 3;
    for (const auto& entry : models::zoo_entries()) {
        CAPTURE(entry.name);
        const Graph one = models::build_zoo_model(entry.name);
        const Graph three = models::build_zoo_model(entry.name, {.batch = batch});
        CHECK_NOTHROW(three.validate());
        CHECK(histogram(one) == histogram(three));
        CHECK(trainable_parameters(one) == trainable_parameters(three));
        REQUIRE(one.inputs().size() == three.inputs().size());
        for (std::size_t i = 0; i < one.inputs().size(); ++i) {
            Shape scaled = one.type({one.inputs()[i], 0}).shape;
            scaled[0] *= batch;
            CHECK(three.type({three.inputs()[i], 0}).shape == scaled);
        }
        Shape scaled = output_shape(one);
        scaled[0] *= batch;
        CHECK(output_shape(three) == scaled);
    }
}

TEST_CASE("an unknown zoo name is a precondition error listing the valid names") {
    CHECK_THROWS_WITH_AS(
        (void)models::build_zoo_model("resnet51"),
        ("[rlflow.precondition_error] unknown zoo model 'resnet51'; valid names: " + all_names).c_str(),
        precondition_error);
    CHECK_THROWS_WITH_AS((void)models::build_zoo_model("bert", {.batch = 0}),
                         "[rlflow.precondition_error] zoo model 'bert': batch must be at least 1, got 0",
                         precondition_error);
}

TEST_CASE("building a zoo model twice gives the same canonical form, and models differ") {
    std::set<std::uint64_t> hashes;
    for (const auto& entry : models::zoo_entries()) {
        CAPTURE(entry.name);
        const CanonicalForm first = canonical_form(models::build_zoo_model(entry.name));
        CHECK(first == canonical_form(models::build_zoo_model(entry.name)));
        CHECK(first.hash != canonical_form(models::build_zoo_model(entry.name, {.batch = 2})).hash);
        hashes.insert(first.hash);
    }
    CHECK(hashes.size() == models::zoo_entries().size());
}

TEST_CASE("every zoo model runs in the reference executor with finite outputs of the declared shapes") {
    for (const auto& entry : models::zoo_entries()) {
        CAPTURE(entry.name);
        Graph g = models::build_zoo_model(entry.name);
        exec::fill_random_weights(g, 1);
        const std::vector<Tensor> inputs = exec::random_inputs(g, 2);
        const exec::RunResult result = exec::Executor{}.run(g, inputs);
        REQUIRE(result.outputs.size() == g.outputs().size());
        for (std::size_t i = 0; i < result.outputs.size(); ++i) {
            const Tensor& out = result.outputs[i];
            CHECK(out.shape() == output_shape(g, i));
            std::size_t finite = 0;
            float lowest = out.floats()[0], highest = lowest;
            for (const float v : out.floats()) {
                finite += std::isfinite(v) ? 1 : 0;
                lowest = std::min(lowest, v);
                highest = std::max(highest, v);
            }
            CHECK(finite == out.floats().size());
            CHECK(highest > lowest);  // not a constant output
        }
        CHECK(result.peak_activation_bytes == memory_profile(g).peak_activation_bytes);
    }
}

TEST_CASE("a depth builds the scale family: nodes grow by a fixed count per unit, and the default depth is the model") {
    for (const auto& entry : models::zoo_entries()) {
        if (entry.depth_unit.empty()) continue;
        CAPTURE(entry.name);
        const std::string name(entry.name);
        const std::size_t one = models::build_zoo_model(name + ":1").num_nodes();
        const std::size_t two = models::build_zoo_model(name + ":2").num_nodes();
        const std::size_t five = models::build_zoo_model(name + ":5").num_nodes();
        CHECK(two > one);
        CHECK(five - one == 4 * (two - one));  // each unit adds the same nodes
        CHECK(canonical_form(models::build_zoo_model(name)) == canonical_form(models::build_zoo_model(name, {.depth = 0})));
        CHECK(models::build_zoo_model(name, {.depth = 2}).num_nodes() == two);
    }
    // 100,000 nodes without a file, in the reference executor's reach (weights of 64 x 64).
    const Graph big = models::build_zoo_model("encoder_small:1900");
    MESSAGE("encoder_small:1900 has ", big.num_nodes(), " nodes and ", trainable_parameters(big), " parameters");
    CHECK(big.num_nodes() >= 100000);
    CHECK_NOTHROW(big.validate());
}

TEST_CASE("a bad depth, or a depth for a model without one, is a precondition error that says what is allowed") {
    for (const char* bad : {"bert:0", "bert:x", "bert:12x", "bert:", "bert:99999"})
        CHECK_THROWS_WITH_AS((void)models::build_zoo_model(bad),
                             doctest::Contains("the depth after ':' must be a whole number from 1 to 4096"),
                             precondition_error);
    CHECK_THROWS_WITH_AS((void)models::build_zoo_model("squeezenet1_1:3"),
                         doctest::Contains("'squeezenet1_1' has no depth setting"), precondition_error);
    CHECK_THROWS_WITH_AS((void)models::build_zoo_model("nope:3"), doctest::Contains("unknown zoo model 'nope'"),
                         precondition_error);
}
