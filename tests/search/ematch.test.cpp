// E-matching and applying rules in the e-graph (search/ematch.hpp, search/erewrite.hpp):
// on a graph seeded into an e-graph, every location the rewriter finds is an e-match the
// e-graph accepts, with the same nodes and variables; every e-match whose nodes the
// rewriter accepts as a location is accepted; and a rule whose symbols, attribute
// expressions or shape constraints do not hold is refused in both.

#include <rlflow/exec.hpp>
#include <rlflow/models/zoo.hpp>
#include <rlflow/rewrite.hpp>
#include <rlflow/search/erewrite.hpp>

#include "../rewrite/rule_samples.hpp"

#include <doctest/doctest.h>

#include <map>
#include <set>

using namespace rlflow;
using search::ClassId;
using search::ENodeId;

namespace {

/// A seeded e-graph with the way back from its e-nodes and classes to the graph.
struct Seeded {
    search::SeededEGraph seeded;
    std::map<ClassId, TensorRef> tensor_of;
};

Seeded seed(const Graph& g) {
    Seeded s{search::seed_egraph(g), {}};
    for (const Node& n : g.nodes())
        for (std::uint32_t k = 0; k < n.outputs.size(); ++k)
            s.tensor_of.emplace(s.seeded.egraph.find(s.seeded.tensor_class[n.id.value][k]), TensorRef{n.id, k});
    return s;
}

/// A match as classes: each pattern node's e-node's class, then each variable's class.
using Signature = std::vector<ClassId>;

Signature signature_of(const search::EGraph& eg, const rewrite::Rule& rule, const search::EMatch& m) {
    Signature s;
    for (std::size_t q = 0; q < rule.source.size(); ++q) s.push_back(eg.class_of(m.nodes[q]));
    for (std::size_t v = 0; v < rule.variables.size(); ++v) s.push_back(eg.find(m.variables[v]));
    return s;
}

/// The same for a graph location (a node's class: its output's, or its tuple class).
Signature signature_of(const Seeded& s, const Graph& g, const rewrite::Rule& rule, const rewrite::Location& l) {
    const search::EGraph& eg = s.seeded.egraph;
    Signature sig;
    for (std::size_t q = 0; q < rule.source.size(); ++q) {
        const ClassId out = eg.find(s.seeded.tensor_class[l.nodes[q].value][0]);
        if (g.node(l.nodes[q]).outputs.size() == 1) sig.push_back(out);
        else sig.push_back(eg.find(eg.node(eg.members(out).at(0)).children.at(0)));  // the output e-node's tuple
    }
    for (std::size_t v = 0; v < rule.variables.size(); ++v)
        sig.push_back(eg.find(s.seeded.tensor_class[l.variables[v].node.value][l.variables[v].index]));
    return sig;
}

/// The graph location an e-match stands for: its e-nodes' origins, and for each variable
/// a graph tensor of its class.
rewrite::Location location_of(const Seeded& s, const rewrite::Rule& rule, const search::EMatch& m) {
    rewrite::Location l;
    for (std::size_t q = 0; q < rule.source.size(); ++q) l.nodes[q] = s.seeded.egraph.node(m.nodes[q]).origin;
    for (std::size_t v = 0; v < rule.variables.size(); ++v) l.variables[v] = s.tensor_of.at(s.seeded.egraph.find(m.variables[v]));
    return l;
}

/// Compares the e-graph's matches of every rule of `rules` with the rewriter's in `g`.
void compare_matches(const Graph& g, const rewrite::RuleSet& rules) {
    const Seeded s = seed(g);
    const search::EGraph& eg = s.seeded.egraph;
    const rewrite::GraphIndex index(g);
    rewrite::Matcher matcher(rules, g, index);
    for (std::uint32_t r = 0; r < rules.size(); ++r) {
        CAPTURE(rules[r].name);
        std::vector<search::EMatch> matches;
        search::EMatcher(eg, rules).find_all(r, matches, 1'000'000);
        std::set<Signature> accepted;
        for (const search::EMatch& m : matches) {
            const bool in_egraph = search::accept_ematch(eg, rules, m).has_value();
            // The e-graph keeps the graph's nodes, so it skips only the rewriter's checks
            // that a replaced node has no other consumer and that no cycle closes.
            if (matcher.is_location(r, location_of(s, rules[r], m))) CHECK(in_egraph);
            if (in_egraph) accepted.insert(signature_of(eg, rules[r], m));
        }
        for (const rewrite::Location& l : rewrite::find_locations(rules, r, g)) CHECK(accepted.contains(signature_of(s, g, rules[r], l)));
    }
}

}  // namespace

TEST_CASE("the e-graph finds and accepts every location the rewriter finds, with the built-in rules on zoo graphs") {
    for (const char* name : {"squeezenet1_1", "resnext50", "bert", "inception_v3"}) {
        CAPTURE(name);
        Graph g = models::build_zoo_model(name);
        exec::fill_random_weights(g, 1);
        compare_matches(g, rewrite::RuleSet(rewrite::builtin_rules()));
    }
}

TEST_CASE("multi-output rules, attribute expressions and shape constraints match in the e-graph as in the rewriter") {
    const rewrite::RuleSet rules(rule_samples::sample_rules());
    Graph g;
    const auto f32 = [](const Shape& s) { return TensorType{DType::Float32, s}; };
    const TensorRef x{g.add_input("x", f32({1, 4, 8, 8})), 0};
    Attributes conv;
    conv.set("kernel_shape", std::vector<std::int64_t>{3, 3});
    conv.set("pads", std::vector<std::int64_t>{1, 1, 1, 1});
    // Two convolutions of x that merge, a third whose kernel differs, and a relu.
    const auto add_conv = [&](const char* name, std::int64_t out, std::int64_t k) {
        Attributes a = conv;
        a.set("kernel_shape", std::vector<std::int64_t>{k, k});
        const std::int64_t pad = k / 2;
        a.set("pads", std::vector<std::int64_t>{pad, pad, pad, pad});
        return TensorRef{g.add_node(OpKind::Conv2D, {x, {g.add_weight(name, f32({out, 4, k, k})), 0}}, a), 0};
    };
    const TensorRef a = add_conv("wa", 6, 3), b = add_conv("wb", 5, 3), c = add_conv("wc", 6, 1);
    Attributes perm;
    perm.set("perm", std::vector<std::int64_t>{0, 2, 3, 1});
    const TensorRef t1{g.add_node(OpKind::Transpose, {a}, perm), 0};
    Attributes back;
    back.set("perm", std::vector<std::int64_t>{0, 3, 1, 2});
    const TensorRef t2{g.add_node(OpKind::Transpose, {t1}, back), 0};
    const TensorRef t3{g.add_node(OpKind::Transpose, {t1}, perm), 0};  // does not cancel
    g.add_output({g.add_node(OpKind::Relu, {b}), 0}, "rb");
    g.add_output(c, "c");
    g.add_output(t2, "t2");
    g.add_output(t3, "t3");
    exec::fill_random_weights(g, 2);
    compare_matches(g, rules);
    // And the cancelling pair is refused where the permutations do not cancel.
    const Seeded s = seed(g);
    std::vector<search::EMatch> matches;
    const std::uint32_t cancel = rules.at("cancel_transpose_pair").id;
    search::EMatcher(s.seeded.egraph, rules).find_all(cancel, matches, 100);
    std::size_t accepted = 0;
    for (const search::EMatch& m : matches) accepted += search::accept_ematch(s.seeded.egraph, rules, m) ? 1 : 0;
    CHECK(matches.size() == 2);
    CHECK(accepted == 1);
}
