// GraphFeatureCache (nn/graph_features.hpp): features kept edit by edit are graph_features'
// own, bit for bit.
#include <rlflow/core/graph.hpp>
#include <rlflow/models/zoo.hpp>
#include <rlflow/nn/graph_features.hpp>

#include <doctest/doctest.h>

#include <vector>

using namespace rlflow;

namespace {

void check_same_features(const nn::HostGraph& kept, const nn::HostGraph& fresh) {
    CHECK(kept.sizes == fresh.sizes);
    CHECK(kept.num_nodes == fresh.num_nodes);
    CHECK(kept.senders == fresh.senders);
    CHECK(kept.receivers == fresh.receivers);
    CHECK(kept.nodes == fresh.nodes);  // the same code computes both: the same bits
    CHECK(kept.edges == fresh.edges);
    CHECK(kept.globals == fresh.globals);
}

}  // namespace

TEST_CASE("graph features kept across edits equal the features computed afresh, bit for bit") {
    Graph g = models::build_zoo_model("squeezenet1_1");
    nn::GraphFeatureCache cache;
    check_same_features(cache.features(g, 1), nn::graph_features(g, 1));
    // Widen every ReLU's input into a Sigmoid-then-ReLU chain, one edit at a time: new nodes,
    // rewired consumers and changed use lists, each forgotten by the journal's touched nodes.
    std::vector<NodeId> relus;
    for (const Node& n : g.nodes())
        if (n.op == OpKind::Relu) relus.push_back(n.id);
    REQUIRE(relus.size() > 4);
    std::vector<EditJournal> done;
    for (std::size_t i = 0; i < 4; ++i) {
        g.begin_recording();
        const TensorRef in = g.node(relus[i]).inputs[0];
        const NodeId sigmoid = g.add_node(OpKind::Sigmoid, {in});
        g.set_input(relus[i], 0, {sigmoid, 0});
        done.push_back(g.end_recording());
        cache.forget(g, done.back().touched_nodes());
        check_same_features(cache.features(g, 1), nn::graph_features(g, 1));
    }
    // And back: undone edits are forgotten the same way.
    while (!done.empty()) {
        const std::vector<NodeId> touched = done.back().touched_nodes();
        g.undo(std::move(done.back()));
        done.pop_back();
        cache.forget(g, touched);
        check_same_features(cache.features(g, 1), nn::graph_features(g, 1));
    }
    // Forgetting a node forgets its consumers: told of the new Sigmoid alone, the cache
    // describes the rewired ReLU after it anew (its FLOPs read its input's type).
    g.begin_recording();
    const NodeId sigmoid = g.add_node(OpKind::Sigmoid, {g.node(relus[0]).inputs[0]});
    g.set_input(relus[0], 0, {sigmoid, 0});
    (void)g.end_recording();
    cache.forget(g, std::vector<NodeId>{sigmoid});
    check_same_features(cache.features(g, 1), nn::graph_features(g, 1));
}
