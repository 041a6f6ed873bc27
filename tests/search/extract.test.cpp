// Extraction (search/extract.hpp, search/extract_ilp.hpp, search/extract_local.hpp):
// greedy's choice is acyclic and optimal for tree costs; the ILP finds the optimum of
// shared (DAG) costs where greedy does not, checked by brute force; the local search
// finds sharing between classes and never makes a choice costlier or cyclic; cycles in
// the e-graph never reach a graph.

#include "../tensor_types.hpp"
#include <rlflow/cost.hpp>
#include <rlflow/exec.hpp>
#include <rlflow/rewrite.hpp>
#include <rlflow/search/egraph_convert.hpp>
#include <rlflow/search/erewrite.hpp>
#include <rlflow/search/extract.hpp>
#include <rlflow/search/extract_ilp.hpp>
#include <rlflow/search/extract_local.hpp>

#include "../rewrite/rule_samples.hpp"

#include <doctest/doctest.h>

#include <functional>
#include <limits>
#include <set>

using namespace rlflow;
using search::ClassId;
using search::EGraph;
using search::ENode;
using search::ENodeId;

namespace {


/// The sum of the prices of the e-nodes `choice` reaches from `roots` (each once), or
/// infinity when the choice has a cycle.
double dag_cost(const EGraph& eg, const std::vector<ClassId>& roots, const std::vector<ENodeId>& choice,
                const std::vector<double>& cost) {
    try {
        double total = 0;
        for (const ClassId c : search::detail::post_order(eg, roots, choice)) total += cost[choice[c]];
        return total;
    } catch (const graph_error&) {
        return std::numeric_limits<double>::infinity();
    }
}

/// The least DAG cost over every choice of one e-node per class, by enumeration.
double brute_force(const EGraph& eg, const std::vector<ClassId>& roots, const std::vector<double>& cost) {
    std::vector<ClassId> classes;
    for (ClassId c = 0; c < eg.class_bound(); ++c)
        if (eg.find(c) == c) classes.push_back(c);
    std::vector<ENodeId> choice(eg.class_bound(), search::no_choice);
    double best = std::numeric_limits<double>::infinity();
    std::function<void(std::size_t)> walk = [&](std::size_t i) {
        if (i == classes.size()) {
            best = std::min(best, dag_cost(eg, roots, choice, cost));
            return;
        }
        for (const ENodeId e : eg.members(classes[i])) {
            choice[classes[i]] = e;
            walk(i + 1);
        }
    };
    walk(0);
    return best;
}

ENode input_leaf(std::uint32_t id) {
    ENode e;
    e.kind = ENode::Kind::fixed;
    e.payload.op = OpKind::Input;
    e.origin = NodeId{id};
    return e;
}

ENode unary(OpKind op, ClassId child) {
    ENode e;
    e.payload.op = op;
    e.children = {child};
    return e;
}

}  // namespace

TEST_CASE("greedy extraction counts a shared subgraph once per use and ILP finds the optimum, checked by brute force") {
    // Two outputs, each either cheap alone (Tanh, Sigmoid of x: 7 each) or 1 on top of a
    // shared Relu(x) that costs 10. Greedy, pricing trees, takes the two 7s (14); the best
    // graph shares the Relu (10 + 1 + 1 = 12).
    EGraph eg;
    const TensorType t = f32({4});
    const ClassId x = eg.add(input_leaf(0), {t});
    const ClassId shared = eg.add(unary(OpKind::Relu, x), {t});
    const ClassId first = eg.add(unary(OpKind::Tanh, x), {t});
    const ClassId second = eg.add(unary(OpKind::Sigmoid, x), {t});
    eg.merge(first, eg.add(unary(OpKind::Erf, shared), {t}));
    eg.merge(second, eg.add(unary(OpKind::Sqrt, shared), {t}));
    eg.rebuild();
    std::vector<double> cost(eg.node_bound(), 0.0);
    for (ENodeId e = 0; e < eg.node_bound(); ++e) {
        const OpKind op = eg.node(e).payload.op;
        cost[e] = op == OpKind::Relu ? 10.0 : op == OpKind::Tanh || op == OpKind::Sigmoid ? 7.0 : op == OpKind::Input ? 0.0 : 1.0;
    }
    const std::vector<ClassId> roots{first, second};
    const double optimum = brute_force(eg, roots, cost);
    CHECK(optimum == doctest::Approx(12.0));
    const std::vector<ENodeId> greedy = search::greedy_choice(eg, cost);
    CHECK(dag_cost(eg, roots, greedy, cost) == doctest::Approx(14.0));
    // The local search: switching one output to its Relu-based form alone costs more
    // (18); the second output then adopting the Relu it paid for makes 12.
    const search::LocalSearchOutcome local = search::improve_choice(eg, roots, cost, greedy);
    CHECK(local.start_cost_ms == doctest::Approx(14.0));
    CHECK(local.cost_ms == doctest::Approx(optimum));
    CHECK(dag_cost(eg, roots, local.choice, cost) == doctest::Approx(optimum));
    CHECK(local.moves == 1);
    if (!search::ilp_available) {
        MESSAGE("skipped: the ILP needs CBC (coinor-libcbc-dev)");
        return;
    }
    const search::IlpOutcome ilp = search::ilp_choice(eg, roots, cost, greedy, 10.0);
    CHECK(ilp.status == "optimal");
    CHECK(ilp.objective == doctest::Approx(optimum));
    CHECK(dag_cost(eg, roots, ilp.choice, cost) == doctest::Approx(optimum));
    CHECK(ilp.gap == doctest::Approx(0.0));
}

namespace {

/// A small random e-graph of unary ops over one input, with unions that may close
/// cycles, random prices, and two roots (a trial of the random extraction tests).
struct RandomEGraph {
    EGraph eg;
    std::vector<double> cost;
    std::vector<ClassId> roots;
};

RandomEGraph random_egraph(Rng& rng) {
    const OpKind ops[] = {OpKind::Relu, OpKind::Tanh, OpKind::Sigmoid, OpKind::Erf, OpKind::Sqrt, OpKind::Identity};
    constexpr int op_nodes = 7;
    constexpr double union_probability = 0.5;
    RandomEGraph r;
    const TensorType t = f32({4});
    std::vector<ClassId> classes{r.eg.add(input_leaf(0), {t})};
    for (int i = 0; i < op_nodes; ++i) {
        const ClassId child = classes[rng.below(classes.size())];
        const ClassId c = r.eg.add(unary(ops[rng.below(std::size(ops))], child), {t});
        classes.push_back(c);
        if (i >= 2 && rng.uniform() < union_probability) r.eg.merge(c, classes[1 + rng.below(classes.size() - 2)]);
    }
    r.eg.rebuild();
    r.cost.assign(r.eg.node_bound(), 0.0);
    for (ENodeId e = 1; e < r.eg.node_bound(); ++e) r.cost[e] = 1.0 + 9.0 * rng.uniform();
    r.roots = {r.eg.find(classes.back()), r.eg.find(classes[classes.size() - 2])};
    return r;
}

}  // namespace

TEST_CASE("the local search lies between brute force and greedy on random e-graphs, acyclic and deterministic") {
    Rng rng(7);
    std::size_t moved = 0, greedy_short = 0;
    constexpr int trials = 40;
    for (int trial = 0; trial < trials; ++trial) {
        CAPTURE(trial);
        const RandomEGraph r = random_egraph(rng);
        const double optimum = brute_force(r.eg, r.roots, r.cost);
        const std::vector<ENodeId> greedy = search::greedy_choice(r.eg, r.cost);
        const double greedy_cost = dag_cost(r.eg, r.roots, greedy, r.cost);
        const search::LocalSearchOutcome local = search::improve_choice(r.eg, r.roots, r.cost, greedy);
        const double local_cost = dag_cost(r.eg, r.roots, local.choice, r.cost);  // infinite if cyclic
        CHECK(local_cost == doctest::Approx(local.cost_ms));
        CHECK(local_cost >= optimum - 1e-9);
        CHECK(local_cost <= greedy_cost + 1e-9);
        CHECK((local.moves > 0) == (local_cost < greedy_cost - 1e-9));
        CHECK(search::improve_choice(r.eg, r.roots, r.cost, greedy).choice == local.choice);
        moved += local.moves > 0 ? 1 : 0;
        greedy_short += greedy_cost > optimum + 1e-9 ? 1 : 0;
    }
    CHECK(greedy_short > 0);  // some trials had sharing that greedy missed,
    CHECK(moved > 0);         // and the local search found some of it
}

TEST_CASE("the local search takes a merged op whose two outputs stand in two classes") {
    // a = Relu(x) and b = Tanh(x) cost 7 each; m = a two-output op of x costing 10,
    // whose outputs are united with a and b. For either class alone m costs more (10
    // against 7); for both it saves 4. The roots read a and b through Sqrt (1 each).
    EGraph eg;
    const TensorType t = f32({4});
    const ClassId x = eg.add(input_leaf(0), {t});
    const ClassId a = eg.add(unary(OpKind::Relu, x), {t});
    const ClassId b = eg.add(unary(OpKind::Tanh, x), {t});
    ENode merged = unary(OpKind::Split, x);
    merged.num_outputs = 2;
    const ClassId m = eg.add(merged, {t, t});
    for (std::uint32_t k = 0; k < 2; ++k) {
        ENode out;
        out.kind = ENode::Kind::output;
        out.children = {m};
        out.output = k;
        eg.merge(k == 0 ? a : b, eg.add(out, {t}));
    }
    const std::vector<ClassId> roots{eg.add(unary(OpKind::Sqrt, a), {t}), eg.add(unary(OpKind::Sqrt, b), {t})};
    eg.rebuild();
    std::vector<double> cost(eg.node_bound(), 0.0);
    for (ENodeId e = 0; e < eg.node_bound(); ++e) {
        const ENode& n = eg.node(e);
        if (n.kind != ENode::Kind::op) continue;
        cost[e] = n.payload.op == OpKind::Split ? 10.0 : n.payload.op == OpKind::Sqrt ? 1.0 : 7.0;
    }
    const std::vector<ENodeId> greedy = search::greedy_choice(eg, cost);
    CHECK(dag_cost(eg, roots, greedy, cost) == doctest::Approx(16.0));
    const search::LocalSearchOutcome local = search::improve_choice(eg, roots, cost, greedy);
    CHECK(local.cost_ms == doctest::Approx(brute_force(eg, roots, cost)));
    CHECK(local.cost_ms == doctest::Approx(12.0));
    CHECK(eg.node(local.choice[eg.find(a)]).kind == ENode::Kind::output);
    CHECK(eg.node(local.choice[eg.find(b)]).kind == ENode::Kind::output);
    search::LocalSearchOptions none;
    none.seconds = 0;
    CHECK(search::improve_choice(eg, roots, cost, greedy, none).choice == greedy);  // 0 s: off
}

TEST_CASE("ILP matches brute force on small random e-graphs, and with cycles filtered lies between it and greedy") {
    if (!search::ilp_available) {
        MESSAGE("skipped: the ILP needs CBC (coinor-libcbc-dev)");
        return;
    }
    Rng rng(7);
    bool filtered_some = false;
    for (int trial = 0; trial < 20; ++trial) {
        CAPTURE(trial);
        const RandomEGraph r = random_egraph(rng);
        const EGraph& eg = r.eg;
        const std::vector<double>& cost = r.cost;
        const std::vector<ClassId>& roots = r.roots;
        const double optimum = brute_force(eg, roots, cost);
        const std::vector<ENodeId> greedy = search::greedy_choice(eg, cost);
        CHECK(dag_cost(eg, roots, greedy, cost) >= optimum - 1e-9);  // acyclic, so finite and no better
        const search::IlpOutcome ilp = search::ilp_choice(eg, roots, cost, greedy, 10.0);
        CHECK(ilp.status == "optimal");
        CHECK(dag_cost(eg, roots, ilp.choice, cost) == doctest::Approx(optimum));
        // Filtering cycles instead: acyclic with no order rows, between the optimum and
        // greedy, and the optimum itself where the e-graph has no cycle to filter.
        const search::IlpOutcome filtered = search::ilp_choice(eg, roots, cost, greedy, 10.0, search::IlpCycles::filter);
        CHECK(filtered.status == "optimal");
        const double filtered_cost = dag_cost(eg, roots, filtered.choice, cost);
        CHECK(filtered_cost >= optimum - 1e-9);
        CHECK(filtered_cost <= dag_cost(eg, roots, greedy, cost) + 1e-9);
        if (filtered.filtered == 0) CHECK(filtered_cost == doctest::Approx(optimum));
        filtered_some = filtered_some || filtered.filtered > 0;
    }
    CHECK(filtered_some);  // the random e-graphs have cycles, so the filter was exercised
}

TEST_CASE("the ILP by windows keeps the choice acyclic and never costlier than its start, on random e-graphs") {
    if (!search::ilp_available) {
        MESSAGE("skipped: the ILP needs CBC (coinor-libcbc-dev)");
        return;
    }
    Rng rng(7);
    std::size_t improved = 0;
    for (int trial = 0; trial < 40; ++trial) {
        CAPTURE(trial);
        const RandomEGraph r = random_egraph(rng);
        const std::vector<ENodeId> greedy = search::greedy_choice(r.eg, r.cost);
        const double greedy_cost = dag_cost(r.eg, r.roots, greedy, r.cost);
        // Windows of three classes over e-graphs of about eight: many windows and borders.
        const search::IlpOutcome w =
            search::ilp_choice(r.eg, r.roots, r.cost, greedy, 10.0, search::IlpCycles::filter, {.above = 1, .classes = 3});
        CHECK(w.windows > 0);
        CHECK(w.status.starts_with("windows_"));
        const double cost = dag_cost(r.eg, r.roots, w.choice, r.cost);  // infinite if cyclic
        CHECK(cost <= greedy_cost + 1e-9);
        CHECK(cost >= brute_force(r.eg, r.roots, r.cost) - 1e-9);
        CHECK(w.objective == doctest::Approx(cost));
        improved += cost < greedy_cost - 1e-9 ? 1 : 0;
    }
    CHECK(improved > 0);  // where greedy missed a sharing (3 of the 40 trials), windows found some
}

TEST_CASE("a rewrite that makes a class reach itself never puts a cycle in the extracted graph") {
    // y = Relu(Transpose(Transpose(x))) with permutations that cancel: the rule unites
    // Transpose(Transpose(x)) with x, so x's class holds an e-node that consumes, through
    // the inner Transpose's class, x's class itself.
    Graph g;
    const TensorRef x{g.add_input("x", f32({2, 3})), 0};
    Attributes perm;
    perm.set("perm", std::vector<std::int64_t>{1, 0});
    const TensorRef inner{g.add_node(OpKind::Transpose, {x}, perm), 0};
    const TensorRef outer{g.add_node(OpKind::Transpose, {inner}, perm), 0};
    g.add_output({g.add_node(OpKind::Relu, {outer}), 0}, "y");
    const rewrite::RuleSet rules({rule_samples::cancel_transpose_pair()});
    search::SeededEGraph seeded = search::seed_egraph(g);
    std::vector<search::EMatch> matches;
    search::EMatcher(seeded.egraph, rules).find_all(0, matches, 100);
    REQUIRE(matches.size() == 1);
    CHECK(search::apply_ematch(seeded.egraph, rules, matches[0]));
    seeded.egraph.rebuild();
    // The cycle is there: x's class consumes the inner Transpose's class, which consumes x's.
    REQUIRE(seeded.egraph.node(0).payload.op == OpKind::Input);  // sources enter first
    const ClassId x_class = seeded.egraph.class_of(0);
    bool cyclic = false;
    for (const ENodeId e : seeded.egraph.members(x_class))
        for (const ClassId k : seeded.egraph.node(e).children)
            for (const ENodeId f : seeded.egraph.members(seeded.egraph.find(k)))
                for (const ClassId j : seeded.egraph.node(f).children) cyclic = cyclic || seeded.egraph.find(j) == x_class;
    CHECK(cyclic);
    cost::CostModel<cost::AnalyticBackend> model;
    const std::vector<double> cost = search::enode_costs(seeded.egraph, model);
    std::vector<std::vector<ENodeId>> choices{search::greedy_choice(seeded.egraph, cost)};
    if (search::ilp_available) choices.push_back(search::ilp_choice(seeded.egraph, seeded.roots, cost, choices[0], 10.0).choice);
    for (const auto& choice : choices) {
        const Graph out = search::extract_graph(g, seeded, choice);
        CHECK(out.num_nodes() == 2);  // x and the Relu
        const auto report = rewrite::check_equivalence(g, out, {.trials = 2, .seed = 3, .rtol = 1e-6, .atol = 0});
        CHECK_MESSAGE(report.equal, report.detail);
    }
}

TEST_CASE("a cyclic choice has its cycles broken with the fallback's choices, and keeps its other choices") {
    // A = {Relu(x), Sigmoid(B)}, B = {Tanh(A)}, C = {Erf(A), Sqrt(A)}: choosing Sigmoid(B)
    // for A closes the cycle A -> B -> A; C's choice lies on no cycle.
    EGraph eg;
    const TensorType t = f32({4});
    const ClassId x = eg.add(input_leaf(0), {t});
    const ClassId a = eg.add(unary(OpKind::Relu, x), {t});
    const ClassId b = eg.add(unary(OpKind::Tanh, a), {t});
    eg.merge(a, eg.add(unary(OpKind::Sigmoid, b), {t}));
    const ClassId c = eg.add(unary(OpKind::Erf, a), {t});
    eg.merge(c, eg.add(unary(OpKind::Sqrt, a), {t}));
    eg.rebuild();
    const auto member = [&](ClassId cls, OpKind op) {
        for (const ENodeId e : eg.members(eg.find(cls)))
            if (eg.node(e).payload.op == op) return e;
        FAIL("no such e-node");
        return search::no_choice;
    };
    std::vector<ENodeId> fallback(eg.class_bound(), search::no_choice);
    fallback[eg.find(x)] = member(x, OpKind::Input);
    fallback[eg.find(a)] = member(a, OpKind::Relu);
    fallback[eg.find(b)] = member(b, OpKind::Tanh);
    fallback[eg.find(c)] = member(c, OpKind::Erf);
    std::vector<ENodeId> cyclic = fallback;
    cyclic[eg.find(a)] = member(a, OpKind::Sigmoid);
    cyclic[eg.find(c)] = member(c, OpKind::Sqrt);
    const std::vector<ClassId> roots{eg.find(c)};
    const search::detail::ChoiceWalk walk = search::detail::walk_choice(eg, roots, cyclic);
    CHECK(std::set<ClassId>(walk.cycle.begin(), walk.cycle.end()) == std::set<ClassId>{eg.find(a), eg.find(b)});
    const std::vector<ENodeId> broken = search::detail::break_cycles(eg, roots, cyclic, fallback);
    CHECK(search::detail::walk_choice(eg, roots, broken).cycle.empty());
    CHECK(broken[eg.find(a)] == fallback[eg.find(a)]);
    CHECK(broken[eg.find(c)] == cyclic[eg.find(c)]);  // off the cycle: kept
    CHECK(search::detail::post_order(eg, roots, broken).size() == 3);  // x, A, C: B is off the path now
}

TEST_CASE("a window's ILP that newly reaches a class outside it keeps the start's choices below that class") {
    if (!search::ilp_available) {
        MESSAGE("skipped: the ILP needs CBC (coinor-libcbc-dev)");
        return;
    }
    // R = {Tanh(x) 5, Erf(K) 1}, K = {Sigmoid(J) 3}, J = {Relu(x) 3}, S = {Sqrt(x) 1, HardSigmoid(J) 9}.
    // Greedy takes Tanh for R (5 against 7) and Sqrt for S, so K and J lie off its walk.
    // In a window of R, S and J, with K outside (taken at the start's choice, free), the
    // ILP takes Erf(K), and nothing it models needs J. NasNet-A's saturated e-graph gave
    // such a window: the walk of the solution met J without a choice.
    EGraph eg;
    const TensorType t = f32({4});
    const ClassId x = eg.add(input_leaf(0), {t});
    const ClassId j = eg.add(unary(OpKind::Relu, x), {t});
    const ClassId k = eg.add(unary(OpKind::Sigmoid, j), {t});
    const ClassId r = eg.add(unary(OpKind::Tanh, x), {t});
    eg.merge(r, eg.add(unary(OpKind::Erf, k), {t}));
    const ClassId s = eg.add(unary(OpKind::Sqrt, x), {t});
    eg.merge(s, eg.add(unary(OpKind::HardSigmoid, j), {t}));
    eg.rebuild();
    std::vector<double> cost(eg.node_bound(), 0.0);
    for (ENodeId e = 0; e < eg.node_bound(); ++e) {
        switch (eg.node(e).payload.op) {
            case OpKind::Tanh: cost[e] = 5; break;
            case OpKind::Erf:
            case OpKind::Sqrt: cost[e] = 1; break;
            case OpKind::Sigmoid:
            case OpKind::Relu: cost[e] = 3; break;
            case OpKind::HardSigmoid: cost[e] = 9; break;
            default: break;
        }
    }
    const std::vector<ClassId> roots{eg.find(r), eg.find(s)};
    const std::vector<ENodeId> greedy = search::greedy_choice(eg, cost);
    REQUIRE(eg.node(greedy[eg.find(r)]).payload.op == OpKind::Tanh);
    std::vector<char> inside(eg.class_bound(), 0);
    for (const ClassId c : {x, j, r, s}) inside[eg.find(c)] = 1;
    search::detail::ExtractionIlp ilp(eg, roots, cost, greedy, search::IlpCycles::filter, &inside);
    const search::IlpOutcome out = ilp.solve(greedy, 10.0);
    CHECK(out.status == "optimal");
    CHECK(eg.node(out.choice[eg.find(r)]).payload.op == OpKind::Erf);
    CHECK(out.choice[eg.find(j)] == greedy[eg.find(j)]);
    // The whole choice walks, and costs 1 + 3 + 3 + 1 = 8 against greedy's 6: the window
    // priced K at nothing, and ilp_by_windows keeps a window's choice only when it is cheaper.
    CHECK(dag_cost(eg, roots, out.choice, cost) == doctest::Approx(8.0));
    const search::IlpOutcome w = search::ilp_choice(eg, roots, cost, greedy, 10.0, search::IlpCycles::filter, {.above = 1, .classes = 2});
    CHECK(dag_cost(eg, roots, w.choice, cost) == doctest::Approx(6.0));
}
