// Region-by-region verification: graphs with ops rlflow cannot execute are checked by
// comparing each rewritten region with the one it replaced.
#include "support.hpp"

#include <rlflow/core/random.hpp>

using namespace rewrite_test;

namespace {

/// x -> conv 3x3 + relu -> Sin (opaque) -> { conv 1x1 + relu, conv 1x1 + relu } -> concat.
Graph conv_sin_branches(const std::string& opaque_op = "Sin", const std::string& output = "y") {
    Graph g;
    const TensorRef x{g.add_input("x", f32({1, 8, 10, 10})), 0};
    const NodeId stem = conv(g, x, 16, 3, 1, "stem", true);
    const NodeId stem_relu = g.add_node(OpKind::Relu, {{stem, 0}}, {}, "stem_relu");
    const NodeId wave = g.add_opaque(opaque_op, "", {{stem_relu, 0}}, {f32({1, 16, 10, 10})}, {}, "wave");
    const NodeId left = conv(g, {wave, 0}, 16, 1, 0, "left", true);
    const NodeId right = conv(g, {wave, 0}, 16, 1, 0, "right", true);
    const NodeId left_relu = g.add_node(OpKind::Relu, {{left, 0}}, {}, "left_relu");
    const NodeId right_relu = g.add_node(OpKind::Relu, {{right, 0}}, {}, "right_relu");
    g.add_output({g.add_node(OpKind::Concat, {{left_relu, 0}, {right_relu, 0}}, {{"axis", std::int64_t{1}}}, "join"), 0},
                 output);
    exec::fill_random_weights(g, 5);
    return g;
}

/// Applies the first location of built-in rule `name`, which must have one.
void apply_first(Graph& g, std::string_view name) {
    const auto locations = locations_of(name, g);
    REQUIRE_MESSAGE(!locations.empty(), name);
    (void)rewrite::apply(g, *builtin(), rule_id(name), locations.front());
}

/// The conv+relu fusion before Sin and the branch merge after it.
Graph rewritten(const Graph& original) {
    Graph g = original;
    apply_first(g, "fuse_conv_relu_bias");
    apply_first(g, "merge_conv_pair_bias");
    g.remove_dead_nodes();
    return g;
}

bool contains(const std::vector<std::string>& names, const std::string& name) {
    return std::find(names.begin(), names.end(), name) != names.end();
}

}  // namespace

TEST_CASE("rewrites on both sides of an opaque op are verified region by region") {
    const Graph original = conv_sin_branches();
    const Graph result = rewritten(original);
    // The whole graph cannot run, so whole-graph verification is impossible.
    CHECK_THROWS_WITH_AS((void)rewrite::check_equivalence(original, result), doctest::Contains("opaque op 'Sin'"),
                         graph_error);

    const auto regions = rewrite::changed_regions(original, result);
    REQUIRE(regions.size() == 2);
    const auto stem =
        std::find_if(regions.begin(), regions.end(), [](const rewrite::Region& r) { return contains(r.removed, "stem"); });
    REQUIRE(stem != regions.end());
    CHECK(stem->removed == std::vector<std::string>{"stem", "stem_relu"});
    CHECK(stem->added.size() == 1);  // the fused conv
    CHECK(stem->inputs == std::vector<std::string>{"stem.b", "stem.w", "x"});
    CHECK(stem->outputs.size() == 1);  // the tensor Sin reads, under its old name
    CHECK(stem->outputs[0] == original.output({node_named(original, "stem_relu"), 0}).name);
    const auto& branches = regions[stem == regions.begin() ? 1 : 0];
    CHECK(contains(branches.removed, "left"));
    CHECK(contains(branches.removed, "right"));
    CHECK_FALSE(contains(branches.removed, "wave"));
    CHECK_FALSE(contains(branches.added, "wave"));
    CHECK(contains(branches.inputs, "wave"));  // Sin's output gets random values

    const auto report = rewrite::check_regions(original, result);
    CHECK(report.equal);
    CHECK(report.regions.size() == 2);
    CHECK(report.max_abs_diff < 1e-5);
    for (const auto& region : report.regions) CHECK(region.report.equal);
}

TEST_CASE("an unsound change next to an opaque op is caught and its tensor named") {
    const Graph original = conv_sin_branches();
    Graph wrong = rewritten(original);
    // Give the fused stem conv a sigmoid instead of a relu: same shapes, another function.
    const NodeId fused = wrong.node(node_named(wrong, "wave")).inputs[0].node;
    REQUIRE(wrong.node(fused).op == OpKind::Conv2D);
    Attributes attributes = wrong.node(fused).attributes;
    attributes.set("activation", static_cast<std::int64_t>(Activation::Sigmoid));
    wrong.set_attributes(fused, attributes);
    const auto report = rewrite::check_regions(original, wrong);
    CHECK_FALSE(report.equal);
    CHECK(report.max_abs_diff > 1e-3);
    const std::string tensor = wrong.output({fused, 0}).name;
    CHECK_MESSAGE(report.detail.find("'" + tensor + "'") != std::string::npos, report.detail);
    CHECK(report.detail.find("2 nodes replaced by 1") != std::string::npos);
}

TEST_CASE("identical graphs have no regions, and a changed opaque op cannot be verified") {
    const Graph original = conv_sin_branches();
    CHECK(rewrite::changed_regions(original, original).empty());
    const auto same = rewrite::check_regions(original, original);
    CHECK(same.equal);
    CHECK(same.regions.empty());

    const auto swapped = rewrite::check_regions(original, conv_sin_branches("Cos"));
    CHECK_FALSE(swapped.equal);
    CHECK_MESSAGE(swapped.detail.find("cannot execute") != std::string::npos, swapped.detail);
}

TEST_CASE("a graph output moved to another tensor is verified in its region") {
    const Graph original = conv_sin_branches();
    Graph g = original;
    for (int i = 0; i < 3; ++i) apply_first(g, "fuse_conv_relu_bias");
    apply_first(g, "merge_conv_pair_bias");
    apply_first(g, "cancel_split_concat_pair");  // y is now the merged conv's output
    g.remove_dead_nodes();
    CHECK(g.output(g.outputs()[0].value).name != original.output(original.outputs()[0].value).name);
    const auto report = rewrite::check_regions(original, g);
    CHECK_MESSAGE(report.equal, report.detail);
    REQUIRE(report.regions.size() == 2);
    const auto& branches = contains(report.regions[0].region.removed, "join") ? report.regions[0] : report.regions[1];
    CHECK(branches.region.graph_outputs == std::vector<std::size_t>{0});
    CHECK(branches.region.outputs.empty());
    CHECK(branches.region.added.size() == 3);  // the two kernels' and biases' concats and the merged conv
}

TEST_CASE("renaming a tensor changes no function, and renaming a graph output does") {
    const Graph original = conv_sin_branches();
    Graph renamed = original;
    renamed.rename_output(renamed.outputs()[0].value, "other");
    const auto tensor = rewrite::check_regions(original, renamed);
    CHECK(tensor.equal);
    REQUIRE(tensor.regions.size() == 1);
    CHECK(tensor.regions[0].region.removed == std::vector<std::string>{"join"});
    CHECK(tensor.regions[0].region.graph_outputs == std::vector<std::size_t>{0});

    const auto output = rewrite::check_regions(original, conv_sin_branches("Sin", "z"));
    CHECK_FALSE(output.equal);
    CHECK(output.detail == "the graph outputs differ");
}

TEST_CASE("on executable zoo graphs, region checks agree with whole-graph checks after random rewrites") {
    for (const char* name : {"squeezenet1_1", "inception_v3", "bert"}) {
        CAPTURE(name);
        Graph original = models::build_zoo_model(name);
        exec::fill_random_weights(original, 2);
        rewrite::Rewriter rw(original, builtin());
        Rng rng(17);
        int applied = 0;
        for (int step = 0; step < 12; ++step) {
            std::vector<std::pair<std::size_t, std::size_t>> offered;
            for (std::size_t r = 0; r < builtin()->size(); ++r)
                for (std::size_t l = 0; l < rw.index().num_choices(r); ++l) offered.emplace_back(r, l);
            if (offered.empty()) break;
            const auto [r, l] = offered[rng.below(offered.size())];
            (void)rw.apply(static_cast<std::uint32_t>(r), l);
            ++applied;
        }
        REQUIRE(applied > 0);
        Graph result = rw.graph();
        result.remove_dead_nodes();
        const auto whole = rewrite::check_equivalence(original, result);
        const auto regions = rewrite::check_regions(original, result);
        CHECK(whole.equal);
        CHECK(regions.equal);
        CHECK_MESSAGE(!regions.regions.empty(), regions.detail);
        for (const auto& region : regions.regions) {
            CHECK_FALSE(region.region.outputs.empty());
            CHECK(region.report.equal);
        }
    }
}
