// The e-graph (search/egraph.hpp) and its conversions (search/egraph_convert.hpp):
// hash-consing, unions, congruence after rebuilding, the constant analysis, and a round
// trip from a graph to an e-graph and back.

#include "../tensor_types.hpp"
#include <rlflow/core/canonical.hpp>
#include <rlflow/exec.hpp>
#include <rlflow/models/zoo.hpp>
#include <rlflow/rewrite.hpp>
#include <rlflow/search/egraph_convert.hpp>
#include <rlflow/search/erewrite.hpp>
#include <rlflow/search/extract.hpp>

#include <doctest/doctest.h>

#include <set>

using namespace rlflow;
using search::ClassId;
using search::EGraph;
using search::ENode;

namespace {


/// A fixed e-node standing for input graph node `id`.
ENode leaf(std::uint32_t id, OpKind op = OpKind::Input) {
    ENode e;
    e.kind = ENode::Kind::fixed;
    e.payload.op = op;
    e.origin = NodeId{id};
    return e;
}

/// An op e-node `op` over `children`.
ENode op_node(OpKind op, std::vector<ClassId> children) {
    ENode e;
    e.payload.op = op;
    e.children = std::move(children);
    return e;
}

/// Whether every edge, from a class to a child class of one of its e-nodes, goes to a
/// level no higher (strictly lower with `strict`, for an acyclic e-graph).
bool levels_hold(const EGraph& eg, bool strict) {
    for (ClassId c = 0; c < eg.class_bound(); ++c) {
        if (eg.find(c) != c) continue;
        for (const search::ENodeId e : eg.members(c))
            for (const ClassId k : search::detail::child_classes(eg, e))
                if (strict ? eg.level(k) >= eg.level(c) : eg.level(k) > eg.level(c)) return false;
    }
    return true;
}

/// Whether a class of `targets` is reachable from `from` along e-node children, by a
/// search over every class (the levels' pruning left out).
bool reaches_plainly(const EGraph& eg, const std::vector<ClassId>& from, const std::set<ClassId>& targets) {
    std::set<ClassId> seen;
    std::vector<ClassId> stack;
    for (const ClassId c : from) stack.push_back(eg.find(c));
    while (!stack.empty()) {
        const ClassId c = stack.back();
        stack.pop_back();
        if (targets.contains(c)) return true;
        if (!seen.insert(c).second) continue;
        for (const search::ENodeId e : eg.members(c))
            for (const ClassId k : search::detail::child_classes(eg, e)) stack.push_back(k);
    }
    return false;
}

}  // namespace

TEST_CASE("an e-node is added once and a union of two classes merges their parents by congruence") {
    EGraph eg;
    const TensorType t = f32({2, 3});
    const ClassId x = eg.add(leaf(0), {t});
    const ClassId y = eg.add(leaf(1), {t});
    const ClassId rx = eg.add(op_node(OpKind::Relu, {x}), {t});
    const ClassId ry = eg.add(op_node(OpKind::Relu, {y}), {t});
    CHECK(eg.add(op_node(OpKind::Relu, {x}), {t}) == rx);  // hash-consed
    const ClassId sx = eg.add(op_node(OpKind::Sigmoid, {rx}), {t});
    const ClassId sy = eg.add(op_node(OpKind::Sigmoid, {ry}), {t});
    CHECK(eg.num_classes() == 6);
    CHECK(rx != ry);
    CHECK(eg.merge(x, y));
    CHECK_FALSE(eg.merge(x, y));
    eg.rebuild();
    // Relu(x) and Relu(y) are now the same e-node, so their classes are one, and so on up.
    CHECK(eg.find(rx) == eg.find(ry));
    CHECK(eg.find(sx) == eg.find(sy));
    CHECK(eg.num_classes() == 3);
    CHECK(eg.num_nodes() == 4);  // x, y, one Relu, one Sigmoid
    CHECK(eg.members(eg.find(rx)).size() == 1);
    // The merged class's parents are the one Relu left.
    CHECK(eg.parents(eg.find(x)).size() == 1);
    CHECK(eg.node(eg.parents(eg.find(x))[0]).payload.op == OpKind::Relu);
}

TEST_CASE("classes of different types never merge") {
    EGraph eg;
    const ClassId a = eg.add(leaf(0), {f32({2, 3})});
    const ClassId b = eg.add(leaf(1), {f32({3, 2})});
    CHECK_THROWS_AS(eg.merge(a, b), graph_error);
}

TEST_CASE("the constant analysis follows weights with data and spreads through unions") {
    EGraph eg;
    const TensorType t = f32({4});
    ENode weight = leaf(0, OpKind::Weight);
    weight.payload.data = std::make_shared<const Tensor>(Tensor(t));
    const ClassId w = eg.add(weight, {t});
    const ClassId x = eg.add(leaf(1), {t});
    const ClassId w_relu = eg.add(op_node(OpKind::Relu, {w}), {t});
    const ClassId x_relu = eg.add(op_node(OpKind::Relu, {x}), {t});
    const ClassId sum = eg.add(op_node(OpKind::Add, {x_relu, w_relu}), {t});
    CHECK(eg.data(w).constant);
    CHECK(eg.data(w_relu).constant);
    CHECK_FALSE(eg.data(x).constant);
    CHECK_FALSE(eg.data(sum).constant);
    // Say x's relu equals a weight: then the sum is computed from known values alone.
    eg.merge(x_relu, w_relu);
    eg.rebuild();
    CHECK(eg.data(sum).constant);
}

TEST_CASE("a graph goes into an e-graph and back unchanged, with equal nodes made one") {
    for (const char* name : {"squeezenet1_1", "bert"}) {
        CAPTURE(name);
        Graph g = models::build_zoo_model(name);
        exec::fill_random_weights(g, 1);
        const search::SeededEGraph seeded = search::seed_egraph(g);
        const std::vector<double> no_cost(seeded.egraph.node_bound(), 0.0);
        const Graph back = search::extract_graph(g, seeded, search::greedy_choice(seeded.egraph, no_cost));
        CHECK(back.outputs().size() == g.outputs().size());
        CHECK(back.inputs().size() == g.inputs().size());
        CHECK(back.num_nodes() <= g.num_nodes());
        const auto report = rewrite::check_equivalence(g, back, {.trials = 1, .seed = 2, .rtol = 1e-5, .atol = 1e-6});
        CHECK_MESSAGE(report.equal, report.detail);
    }
    // Two identical branches become one node.
    Graph g;
    const TensorRef x{g.add_input("x", f32({2, 2})), 0};
    const TensorRef a{g.add_node(OpKind::Relu, {x}), 0};
    const TensorRef b{g.add_node(OpKind::Relu, {x}), 0};
    g.add_output({g.add_node(OpKind::Add, {a, b}), 0}, "y");
    const search::SeededEGraph seeded = search::seed_egraph(g);
    CHECK(seeded.egraph.num_classes() == 3);
    const std::vector<double> no_cost(seeded.egraph.node_bound(), 0.0);
    const Graph back = search::extract_graph(g, seeded, search::greedy_choice(seeded.egraph, no_cost));
    CHECK(back.num_nodes() == 3);
    CHECK(back.outputs()[0].name == "y");
}

TEST_CASE("a class's level bounds what it reaches through adds, unions and rebuilding, and spacing keeps that") {
    const OpKind ops[] = {OpKind::Relu, OpKind::Tanh, OpKind::Sigmoid, OpKind::Add, OpKind::Mul};
    Rng rng(11);
    std::size_t cyclic = 0;
    for (int trial = 0; trial < 30; ++trial) {
        CAPTURE(trial);
        EGraph eg;
        const TensorType t = f32({4});
        std::vector<ClassId> classes{eg.add(leaf(0), {t}), eg.add(leaf(1), {t})};
        for (int i = 0; i < 25; ++i) {
            const OpKind op = ops[rng.below(std::size(ops))];
            std::vector<ClassId> kids{classes[rng.below(classes.size())]};
            if (op == OpKind::Add || op == OpKind::Mul) kids.push_back(classes[rng.below(classes.size())]);
            classes.push_back(eg.add(op_node(op, kids), {t}));
        }
        // Spaced while still acyclic, every edge goes strictly down.
        eg.space_levels();
        CHECK(levels_hold(eg, true));
        // Unions (some close cycles) raise consumers; rebuilding unites more.
        for (int u = 0; u < 4; ++u) {
            eg.merge(classes[2 + rng.below(classes.size() - 2)], classes[2 + rng.below(classes.size() - 2)]);
            CHECK(levels_hold(eg, false));
        }
        eg.rebuild();
        CHECK(levels_hold(eg, false));
        eg.space_levels();
        CHECK(levels_hold(eg, false));
        // The cycle check's pruned search answers as a search over every class does.
        for (ClassId c = 0; c < eg.class_bound(); ++c) {
            if (eg.find(c) != c) continue;
            std::vector<ClassId> children;
            for (const search::ENodeId e : eg.members(c))
                for (const ClassId k : search::detail::child_classes(eg, e)) children.push_back(k);
            const bool plain = reaches_plainly(eg, children, {c});
            CHECK(search::detail::reaches(eg, children, {c}) == plain);
            cyclic += plain ? 1 : 0;
        }
    }
    CHECK(cyclic > 0);  // some unions closed cycles, so the pruning met classes on them
}
