// CostTracker (cost/cost_tracker.hpp): a probe's update and its revert.
#include <rlflow/cost/analytic.hpp>
#include <rlflow/cost/cost_tracker.hpp>
#include <rlflow/models/zoo.hpp>

#include <doctest/doctest.h>

#include <vector>

using namespace rlflow;

TEST_CASE("reverting an update after its edits are undone restores every price and the total, bit for bit") {
    Graph g = models::build_zoo_model("resnet18");
    cost::CostModel<cost::AnalyticBackend> model(cost::AnalyticBackend::preset("cpu"));
    cost::CostTracker<cost::AnalyticBackend> tracker(model, g);
    const double total = tracker.total();
    std::vector<double> before;
    for (std::uint32_t i = 0; i < g.id_bound(); ++i) before.push_back(tracker.node_cost(NodeId{i}));

    // An edit that changes prices: a ReLU becomes a Sigmoid before its consumer.
    NodeId relu;
    for (const Node& n : g.nodes())
        if (n.op == OpKind::Relu) relu = n.id;
    REQUIRE(relu.valid());
    g.begin_recording();
    const NodeId sigmoid = g.add_node(OpKind::Sigmoid, {g.node(relu).inputs[0]});
    g.set_input(relu, 0, {sigmoid, 0});
    EditJournal journal = g.end_recording();
    const std::vector<NodeId> touched = journal.touched_nodes();
    tracker.update(g, touched);
    CHECK(tracker.last_change() > 0);
    CHECK(tracker.node_cost(sigmoid) > 0);
    CHECK(tracker.total() != total);

    g.undo(std::move(journal));
    tracker.revert_update();
    CHECK(tracker.total() == total);  // restored, not recomputed: the same bits
    CHECK(tracker.last_change() == 0);
    CHECK(tracker.last_repriced().empty());
    for (std::uint32_t i = 0; i < before.size(); ++i) CHECK(tracker.node_cost(NodeId{i}) == before[i]);
    CHECK(tracker.node_cost(sigmoid) == 0);
    // A tracker built afresh on the restored graph agrees (within rounding: it sums in its own order).
    cost::CostTracker<cost::AnalyticBackend> fresh(model, g);
    CHECK(fresh.total() == doctest::Approx(total).epsilon(1e-12));
}
