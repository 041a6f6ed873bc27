// Graph networks: finite-difference gradients of a GN block and of the whole network,
// batching invariance, node-permutation equivariance, empty neighbourhoods, index
// validation, and the graph features of a zoo model.
#include "gradient_check.hpp"

#include <rlflow/models/zoo.hpp>
#include <rlflow/nn/graph_features.hpp>
#include <rlflow/nn/graph_net.hpp>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <numeric>
#include <span>
#include <string>
#include <set>
#include <utility>
#include <vector>

using namespace nn_test;
namespace nn = rlflow::nn;

namespace {

using Batch = nn::GraphBatch<Double>;
using Vars = nn::GraphVars<Double>;

constexpr nn::FeatureSizes small_sizes{.edge = 2, .node = 3, .global = 2};
/// Outputs agree this closely when only the summation order (or nothing) differs.
constexpr double same_tolerance = 1e-12;

/// A graph with random features in [-1, 1) and the given edges (sender, receiver).
nn::HostGraph random_graph(std::int64_t nodes, const std::vector<std::pair<int, int>>& edges, Rng& rng,
                           nn::FeatureSizes sizes = small_sizes) {
    nn::HostGraph g;
    g.sizes = sizes;
    g.num_nodes = nodes;
    const auto fill = [&](std::vector<double>& v, std::int64_t n) {
        for (std::int64_t i = 0; i < n; ++i) v.push_back(rng.uniform(-1, 1));
    };
    fill(g.nodes, nodes * sizes.node);
    fill(g.edges, static_cast<std::int64_t>(edges.size()) * sizes.edge);
    fill(g.globals, sizes.global);
    for (const auto& [s, r] : edges) {
        g.senders.push_back(s);
        g.receivers.push_back(r);
    }
    return g;
}

/// Two graphs of different sizes: a 4-node one with a cycle, a repeated edge and a
/// self-loop, and a 3-node chain.
std::vector<nn::HostGraph> two_graphs(Rng& rng) {
    return {random_graph(4, {{0, 1}, {1, 2}, {2, 0}, {2, 0}, {3, 3}, {1, 3}}, rng), random_graph(3, {{0, 1}, {1, 2}}, rng)};
}

nn::GnBlockOptions block_options(nn::Aggregation how, nn::Activation activation = nn::Activation::relu) {
    return {.input = small_sizes, .output = {.edge = 4, .node = 3, .global = 2}, .hidden = {5}, .aggregation = how, .activation = activation};
}

/// sum(edges * We) + sum(nodes * Wn) + sum(globals * Wg) with fixed random weights, so
/// every output element reaches the gradient with its own weight.
V weighted_loss(nn::Tape<Double>& tape, const Vars& out, std::uint64_t seed) {
    Rng rng(seed);
    const auto term = [&](const V& v) { return nn::sum(nn::mul(v, tape.constant(random_tensor(v.shape(), rng)))); };
    return nn::add(term(out.edges), nn::add(term(out.nodes), term(out.globals)));
}

std::vector<double> rows(const V& v, std::int64_t begin, std::int64_t end) {
    const std::vector<double> all = v.value().to_host();
    const std::int64_t width = v.dim(1);
    return {all.begin() + begin * width, all.begin() + end * width};
}

void check_close(const std::vector<double>& a, const std::vector<double>& b, double tolerance = same_tolerance) {
    REQUIRE(a.size() == b.size());
    for (std::size_t i = 0; i < a.size(); ++i) {
        CAPTURE(i);
        CHECK(std::abs(a[i] - b[i]) <= tolerance);
    }
}

bool all_finite(const V& v) {
    const std::vector<double> x = v.value().to_host();
    return std::all_of(x.begin(), x.end(), [](double e) { return std::isfinite(e); });
}

}  // namespace

TEST_CASE("gn block: gradients match finite differences for inputs and parameters, sum and mean") {
    for (const nn::Aggregation how : {nn::Aggregation::sum, nn::Aggregation::mean}) {
        CAPTURE(static_cast<int>(how));
        Rng rng(7);
        const std::vector<nn::HostGraph> graphs = two_graphs(rng);
        const Batch batch(graphs);
        // tanh, not relu: central differences are meaningless at relu's kink, where a
        // pre-activation sits exactly when a hidden row is all zero and the bias is 0.
        nn::GnBlock<Double> block("gn", block_options(how, nn::Activation::tanh), rng);
        // Inputs as parameters: edges, nodes, globals.
        std::vector<P> inputs;
        inputs.emplace_back("edges", batch.edges());
        inputs.emplace_back("nodes", batch.nodes());
        inputs.emplace_back("globals", batch.globals());
        const Function through_block = [&](nn::Tape<Double>& tape, const std::vector<V>& p) {
            return weighted_loss(tape, block(tape, batch, Vars{p[0], p[1], p[2]}), 11);
        };
        CHECK(check_gradients(through_block, inputs, Shape{1}) < 1e-6);
        // The block's own parameters.
        const double worst =
            check_parameter_gradients(block.parameters(), [&](nn::Tape<Double>& tape) { return weighted_loss(tape, block(tape, batch, batch.constants(tape)), 11); });
        CHECK(worst < 1e-6);
    }
}

TEST_CASE("graph network: gradients of every parameter match finite differences, shared and per-step cores") {
    for (const bool shared : {true, false}) {
        CAPTURE(shared);
        Rng rng(5);
        const Batch batch(two_graphs(rng));
        // tanh for smoothness, as in the GN block check.
        nn::GraphNetwork<Double> network(
            "gnn", {.input = small_sizes, .latent = 3, .steps = 2, .shared_core = shared, .activation = nn::Activation::tanh}, rng);
        const double worst =
            check_parameter_gradients(network.parameters(), [&](nn::Tape<Double>& tape) { return weighted_loss(tape, network(tape, batch), 3); });
        CHECK(worst < 1e-6);
    }
}

TEST_CASE("graph network: latents have the batch's row counts, parameters have unique hierarchical names") {
    Rng rng(1);
    const Batch batch(two_graphs(rng));
    nn::GraphNetwork<Double> shared("gnn", {.input = small_sizes, .latent = 8, .steps = 3}, rng);
    nn::GraphNetwork<Double> per_step("gnn", {.input = small_sizes, .latent = 8, .steps = 3, .shared_core = false}, rng);
    nn::Tape<Double> tape;
    const Vars out = shared(tape, batch);
    CHECK(out.edges.shape() == Shape{8, 8});
    CHECK(out.nodes.shape() == Shape{7, 8});
    CHECK(out.globals.shape() == Shape{2, 8});
    std::set<std::string> names;
    for (const P* p : per_step.parameters()) names.insert(p->name);
    CHECK(names.size() == per_step.parameters().size());
    CHECK(names.count("gnn.encoder.edge.0.weight") == 1);
    CHECK(names.count("gnn.core.2.global.norm.gamma") == 1);
    CHECK(shared.parameters()[shared.parameters().size() - 1]->name == "gnn.core.global.norm.beta");
    // Encoder: 3 MLPs of 2 linear layers and a norm (6 tensors each); each core: 3 more.
    CHECK(shared.parameters().size() == 3 * 6 + 3 * 6);
    CHECK(per_step.parameters().size() == 3 * 6 + 3 * 3 * 6);
}

TEST_CASE("gn block: a batch of two graphs gives the same outputs as each graph alone") {
    for (const nn::Aggregation how : {nn::Aggregation::sum, nn::Aggregation::mean}) {
        CAPTURE(static_cast<int>(how));
        Rng rng(3);
        const std::vector<nn::HostGraph> graphs = two_graphs(rng);
        nn::GnBlock<Double> block("gn", block_options(how), rng);
        nn::Tape<Double> tape;
        const Batch both(graphs);
        const Vars together = block(tape, both, both.constants(tape));
        for (std::size_t g = 0; g < graphs.size(); ++g) {
            CAPTURE(g);
            const Batch alone_batch(graphs[g]);
            const Vars alone = block(tape, alone_batch, alone_batch.constants(tape));
            const auto node = both.node_offsets(), edge = both.edge_offsets();
            check_close(rows(together.nodes, node[g], node[g + 1]), rows(alone.nodes, 0, alone_batch.num_nodes()));
            check_close(rows(together.edges, edge[g], edge[g + 1]), rows(alone.edges, 0, alone_batch.num_edges()));
            check_close(rows(together.globals, static_cast<std::int64_t>(g), static_cast<std::int64_t>(g) + 1), rows(alone.globals, 0, 1));
        }
    }
}

TEST_CASE("graph network: relabelling the nodes permutes the node latents and leaves edges and globals unchanged") {
    Rng rng(9);
    const nn::HostGraph original = random_graph(5, {{0, 1}, {1, 2}, {2, 3}, {3, 4}, {4, 0}, {0, 2}, {3, 1}}, rng);
    // Node i becomes node relabel[i].
    const std::vector<std::int32_t> relabel{3, 0, 4, 1, 2};
    nn::HostGraph permuted = original;
    for (std::size_t i = 0; i < relabel.size(); ++i)
        std::copy_n(original.nodes.begin() + static_cast<std::ptrdiff_t>(i) * small_sizes.node, small_sizes.node,
                    permuted.nodes.begin() + relabel[i] * small_sizes.node);
    for (auto* ends : {&permuted.senders, &permuted.receivers})
        for (std::int32_t& e : *ends) e = relabel[static_cast<std::size_t>(e)];
    for (const nn::Aggregation how : {nn::Aggregation::sum, nn::Aggregation::mean}) {
        CAPTURE(static_cast<int>(how));
        nn::GraphNetwork<Double> network("gnn", {.input = small_sizes, .latent = 6, .steps = 2, .aggregation = how}, rng);
        nn::Tape<Double> tape;
        const Batch a(original), b(permuted);
        const Vars out_a = network(tape, a), out_b = network(tape, b);
        for (std::size_t i = 0; i < relabel.size(); ++i) {
            const auto node = static_cast<std::int64_t>(i);
            check_close(rows(out_a.nodes, node, node + 1), rows(out_b.nodes, relabel[i], relabel[i] + 1));
        }
        check_close(rows(out_a.edges, 0, a.num_edges()), rows(out_b.edges, 0, b.num_edges()));
        check_close(rows(out_a.globals, 0, 1), rows(out_b.globals, 0, 1));
    }
}

TEST_CASE("gn block: isolated nodes and edgeless graphs aggregate to zero under sum and mean, without NaN") {
    Rng rng(4);
    // Node 2 of graph 0 is isolated and node 0 receives two edges; graph 1 has no edges.
    const std::vector<nn::HostGraph> graphs{random_graph(3, {{0, 1}, {1, 0}, {0, 0}}, rng), random_graph(3, {}, rng)};
    const Batch batch(graphs);
    // Same seed, so the same weights: only the aggregation differs. tanh keeps every
    // output alive (a relu row of 3 can be all zero, which would hide the difference).
    Rng sum_rng(21), mean_rng(21);
    nn::GnBlock<Double> sum_block("gn", block_options(nn::Aggregation::sum, nn::Activation::tanh), sum_rng);
    nn::GnBlock<Double> mean_block("gn", block_options(nn::Aggregation::mean, nn::Activation::tanh), mean_rng);
    nn::Tape<Double> tape;
    const Vars by_sum = sum_block(tape, batch, batch.constants(tape));
    const Vars by_mean = mean_block(tape, batch, batch.constants(tape));
    for (const Vars* out : {&by_sum, &by_mean}) {
        CHECK(all_finite(out->edges));
        CHECK(all_finite(out->nodes));
        CHECK(all_finite(out->globals));
    }
    // A node that receives no edge pools 0 either way, so its update is the same, bit for
    // bit: the same MLP runs on the same input row (the two batches differ elsewhere only).
    CHECK(rows(by_sum.nodes, 2, 3) == rows(by_mean.nodes, 2, 3));
    CHECK(rows(by_sum.nodes, 3, 6) == rows(by_mean.nodes, 3, 6));
    CHECK(rows(by_sum.nodes, 0, 1) != rows(by_mean.nodes, 0, 1));
    // A batch with no edge at all, through the whole network.
    const Batch edgeless(graphs[1]);
    nn::GraphNetwork<Double> network("gnn", {.input = small_sizes, .latent = 4, .steps = 2, .aggregation = nn::Aggregation::mean}, rng);
    const Vars out = network(tape, edgeless);
    CHECK(out.edges.shape() == Shape{0, 4});
    CHECK(all_finite(out.nodes));
    CHECK(all_finite(out.globals));
}

TEST_CASE("graph batch: bad indices and feature counts throw, naming the graph and edge") {
    Rng rng(2);
    std::vector<nn::HostGraph> graphs = two_graphs(rng);
    graphs[1].receivers[1] = 5;
    CHECK_THROWS_WITH_AS((Batch(graphs)), "[rlflow.precondition_error] graph 1, edge 1: receiver 5 outside [0, 3)", precondition_error);
    graphs[1].receivers[1] = 2;
    graphs[0].senders[4] = -1;
    CHECK_THROWS_WITH_AS((Batch(graphs)), "[rlflow.precondition_error] graph 0, edge 4: sender -1 outside [0, 4)", precondition_error);
    graphs[0].senders[4] = 3;
    graphs[1].nodes.pop_back();
    CHECK_THROWS_WITH_AS((Batch(graphs)), "[rlflow.precondition_error] graph 1: 8 node feature values for 3 nodes of 3 features",
                         precondition_error);
    graphs[1] = random_graph(2, {}, rng, {.edge = 2, .node = 4, .global = 2});
    CHECK_THROWS_WITH_AS((Batch(graphs)),
                         "[rlflow.precondition_error] graph 1: feature sizes (edge 2, node 4, global 2) differ from graph 0's (edge 2, node 3, "
                         "global 2)",
                         precondition_error);
    CHECK_THROWS_AS((Batch(std::span<const nn::HostGraph>())), precondition_error);
    // Inputs that do not fit the block are shape errors naming it.
    Rng block_rng(1);
    const Batch batch(two_graphs(block_rng));
    nn::GnBlock<Double> block("core", block_options(nn::Aggregation::sum), block_rng);
    nn::Tape<Double> tape;
    Vars in = batch.constants(tape);
    in.nodes = tape.constant(T(Shape{7, 2}));
    CHECK_THROWS_WITH_AS((void)block(tape, batch, in), "[rlflow.shape_error] gn block 'core': nodes (7,2), expected (7,3)", shape_error);
    // Features in parts: their widths must add up, their rows agree.
    const Vars parts[] = {in, batch.constants(tape)};
    CHECK_THROWS_WITH_AS((void)block(tape, batch, parts), "[rlflow.shape_error] gn block 'core': edges (8,2)+(8,2), expected (8,2)",
                         shape_error);
}

TEST_CASE("a gn block on features in parts equals the block on their concatenation, with and without gradients") {
    Rng rng(21);
    const std::vector<nn::HostGraph> graphs = two_graphs(rng);
    const Batch batch(graphs);
    const nn::FeatureSizes half = small_sizes, whole{.edge = 2 * half.edge, .node = 2 * half.node, .global = 2 * half.global};
    nn::GnBlockOptions options = block_options(nn::Aggregation::sum);
    options.input = whole;
    nn::GnBlock<Double> block("core", options, rng);
    for (P* p : block.parameters()) p->value = random_tensor(p->value.shape(), rng);
    const T second_edges = random_tensor(Shape{batch.num_edges(), half.edge}, rng),
            second_nodes = random_tensor(Shape{batch.num_nodes(), half.node}, rng),
            second_globals = random_tensor(Shape{batch.num_graphs(), half.global}, rng);
    for (const bool grad : {true, false}) {
        CAPTURE(grad);
        nn::Tape<Double> tape;
        tape.set_grad_enabled(grad);
        const Vars first = batch.constants(tape);
        const Vars second{tape.constant(second_edges), tape.constant(second_nodes), tape.constant(second_globals)};
        const Vars parts[] = {first, second};
        const Vars in_parts = block(tape, batch, parts);
        const Vars joined{nn::concat<Double>({first.edges, second.edges}, 1), nn::concat<Double>({first.nodes, second.nodes}, 1),
                          nn::concat<Double>({first.globals, second.globals}, 1)};
        const Vars in_one = block(tape, batch, joined);
        for (const auto& [a, b] : {std::pair{in_parts.edges, in_one.edges}, std::pair{in_parts.nodes, in_one.nodes},
                                   std::pair{in_parts.globals, in_one.globals}}) {
            const auto x = a.value().to_host(), y = b.value().to_host();
            REQUIRE(x.size() == y.size());
            REQUIRE_FALSE(x.empty());
            for (std::size_t i = 0; i < x.size(); ++i) CHECK(x[i] == doctest::Approx(y[i]).epsilon(same_tolerance));
        }
    }
}

TEST_CASE("graph features: zoo resnet50 gives a node per graph node and an edge per tensor use") {
    const Graph g = models::build_zoo_model("resnet50");
    const nn::HostGraph host = nn::graph_features(g);
    std::size_t uses = 0;
    for (const Node& n : g.nodes())
        for (const NodeOutput& o : n.outputs) uses += o.uses.size();
    CHECK(host.num_nodes == static_cast<std::int64_t>(g.num_nodes()));
    CHECK(host.num_edges() == static_cast<std::int64_t>(uses));
    CHECK(host.sizes == nn::graph_feature_sizes);
    const auto node_width = static_cast<std::size_t>(host.sizes.node);
    // Each node's one-hot names its op; every feature is finite and non-negative.
    std::size_t index = 0;
    for (const Node& n : g.nodes()) {
        const auto row = host.nodes.begin() + static_cast<std::ptrdiff_t>(index++ * node_width);
        CHECK(std::accumulate(row, row + static_cast<std::ptrdiff_t>(op_kind_count), 0.0) == 1.0);
        CHECK(row[static_cast<std::ptrdiff_t>(n.op)] == 1.0);
    }
    for (const auto* values : {&host.nodes, &host.edges, &host.globals})
        CHECK(std::all_of(values->begin(), values->end(), [](double x) { return std::isfinite(x) && x >= 0; }));
    // The features batch and encode.
    const nn::GraphBatch<Double> batch(host);
    CHECK(batch.num_edges() == host.num_edges());
    Rng rng(1);
    nn::GraphNetwork<Double> network("gnn", {.input = nn::graph_feature_sizes, .latent = 8, .steps = 1}, rng);
    nn::Tape<Double> tape;
    CHECK(all_finite(network(tape, batch).globals));
}

TEST_CASE("graph features: a hand-made graph's edges run from producer to consumer with the tensor's dims") {
    Graph g;
    const NodeId x = g.add_input("x", {DType::Float32, Shape{2, 8}});
    const NodeId w = g.add_weight("w", {DType::Float32, Shape{8, 4}});
    const NodeId y = g.add_node(OpKind::MatMul, {{x, 0}, {w, 0}});
    const NodeId z = g.add_node(OpKind::Mul, {{y, 0}, {y, 0}});
    g.add_output({z, 0});
    const nn::HostGraph host = nn::graph_features(g);
    CHECK(host.num_nodes == 4);
    CHECK(host.senders == std::vector<std::int32_t>{0, 1, 2, 2});
    CHECK(host.receivers == std::vector<std::int32_t>{2, 2, 3, 3});
    const auto edge_width = static_cast<std::size_t>(host.sizes.edge);
    // Edge 1 carries w (8, 4): dims 8 and 4, none past rank 2.
    const std::vector<double> edge1(host.edges.begin() + static_cast<std::ptrdiff_t>(edge_width),
                                    host.edges.begin() + static_cast<std::ptrdiff_t>(2 * edge_width));
    CHECK(edge1 == std::vector<double>{nn::log_feature(8), nn::log_feature(4), 0, 0, nn::log_feature(32), 2.0 / Shape::max_rank});
    // MatMul (2,8)x(8,4) is 2*2*8*4 = 128 FLOPs by its traits; its output has 8 elements.
    const auto node_width = static_cast<std::size_t>(host.sizes.node);
    CHECK(host.nodes[2 * node_width + op_kind_count] == nn::log_feature(8));
    CHECK(host.nodes[2 * node_width + op_kind_count + 1] > 0);
}

TEST_CASE("graph features: a convolution's group, channels per group and their alignment; zeros for other ops") {
    // 48 input channels: 4 groups of 12 (aligned to 4), 3 groups of 16 (whole 16-blocks),
    // 48 groups of 1 (depthwise).
    Graph g;
    const NodeId x = g.add_input("x", {DType::Float32, Shape{1, 48, 8, 8}});
    const auto conv = [&](std::int64_t group) {
        const NodeId w = g.add_weight("w" + std::to_string(group), {DType::Float32, Shape{48, 48 / group, 3, 3}});
        Attributes a;
        a.set("group", group);
        a.set("kernel_shape", std::vector<std::int64_t>{3, 3});
        a.set("pads", std::vector<std::int64_t>{1, 1, 1, 1});
        return g.add_node(OpKind::Conv2D, {{x, 0}, {w, 0}}, std::move(a));
    };
    const NodeId c4 = conv(4), c3 = conv(3), c48 = conv(48);
    const NodeId relu = g.add_node(OpKind::Relu, {{c4, 0}});
    g.add_output({relu, 0});
    nn::GraphFeatureCache cache;
    const nn::HostGraph host = cache.features(g);
    const auto width = static_cast<std::size_t>(host.sizes.node);
    const auto group_columns = [&](NodeId id) {
        const auto first = static_cast<std::size_t>(cache.row(id)) * width + op_kind_count + 2;
        return std::vector<double>(host.nodes.begin() + static_cast<std::ptrdiff_t>(first),
                                   host.nodes.begin() + static_cast<std::ptrdiff_t>(first + 3));
    };
    CHECK(host.sizes.node == static_cast<std::int64_t>(op_kind_count) + 5);
    CHECK(group_columns(c4) == std::vector<double>{nn::log_feature(4), nn::log_feature(12), 4.0 / 16});
    CHECK(group_columns(c3) == std::vector<double>{nn::log_feature(3), nn::log_feature(16), 1.0});
    CHECK(group_columns(c48) == std::vector<double>{nn::log_feature(48), nn::log_feature(1), 1.0 / 16});
    CHECK(group_columns(relu) == std::vector<double>{0, 0, 0});
    CHECK(group_columns(x) == std::vector<double>{0, 0, 0});
}
