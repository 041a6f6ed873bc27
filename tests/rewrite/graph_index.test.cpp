#include "support.hpp"

#include <rlflow/core/random.hpp>
#include <rlflow/rewrite/graph_index.hpp>

#include <algorithm>
#include <vector>

using namespace rewrite_test;

namespace {

/// Every edge's consumer is levelled above its producer, and each op kind's list holds
/// exactly its live nodes.
void check_index(const rewrite::GraphIndex& index, const Graph& g) {
    std::size_t listed = 0;
    for (std::size_t k = 0; k < op_kind_count; ++k) listed += index.nodes_of(static_cast<OpKind>(k)).size();
    CHECK(listed == g.num_nodes());
    for (const Node& n : g.nodes()) {
        const auto same = index.nodes_of(n.op);
        CHECK(std::binary_search(same.begin(), same.end(), n.id));
        for (const TensorRef& in : n.inputs)
            if (in.present()) REQUIRE(index.level(n.id) > index.level(in.node));
    }
}

}  // namespace

TEST_CASE("graph index levels stay ordered along every edge through rewrites and undos") {
    const Graph original = models::build_zoo_model("inception_v3");
    rewrite::Rewriter rw(original, builtin());
    Rng rng(5);
    std::vector<EditJournal> history;
    for (int step = 0; step < 60; ++step) {
        if (!history.empty() && rng.below(4) == 0) {
            rw.undo(std::move(history.back()));
            history.pop_back();
        } else {
            std::vector<std::size_t> offered;
            for (std::size_t r = 0; r < rw.index().num_rules(); ++r)
                if (rw.index().num_choices(r) > 0) offered.push_back(r);
            if (offered.empty()) break;
            const std::size_t rule = offered[rng.below(offered.size())];
            history.push_back(rw.apply(rule, rng.below(rw.index().num_choices(rule))));
        }
        check_index(rw.index().graph_index(), rw.graph());
    }
}

TEST_CASE("nodes inserted at one edge past its gap push their consumers up, in order") {
    // 40 nodes inserted one by one just above the input halve the room under the Relu
    // each time: more than the 32 halvings the gap allows, so the labelling must move
    // the chain above them.
    Graph g;
    const NodeId x = g.add_input("x", f32({2, 3}));
    const NodeId relu = g.add_node(OpKind::Relu, {{x, 0}}, {});
    const NodeId tanh = g.add_node(OpKind::Tanh, {{relu, 0}}, {});
    g.add_output({tanh, 0}, "y");
    rewrite::GraphIndex index(g);
    NodeId head = relu;  // the node that reads x along the chain
    for (int i = 0; i < 40; ++i) {
        g.begin_recording();
        const NodeId made = g.add_node(OpKind::Identity, {{x, 0}}, {});
        g.set_input(head, 0, {made, 0});
        const EditJournal j = g.end_recording();
        index.update(g, j.touched_nodes());
        check_index(index, g);
        head = made;
    }
    CHECK(index.level(tanh) > index.level(relu));
}
