// Applying rules in the e-graph (search/erewrite.hpp): a rule with several outputs is
// refused where it would close a cycle through classes, as the rewriter refuses a
// location whose rewrite would make the graph cyclic, and applied where it would not.

#include <rlflow/exec.hpp>
#include <rlflow/rewrite.hpp>
#include <rlflow/search/egraph_convert.hpp>
#include <rlflow/search/erewrite.hpp>

#include <doctest/doctest.h>

#include <cstdint>
#include <set>
#include <vector>

using namespace rlflow;
using search::ClassId;

namespace {

/// Matrices are side x side.
constexpr std::int64_t side = 4;

/// y1 = x A and y2 = x B, where B = Relu(y1) when `dependent`, else a weight: in the
/// dependent graph, merging the two products would make y1 an input of itself.
Graph two_products(bool dependent) {
    Graph g;
    const TensorType t{DType::Float32, {side, side}};
    const TensorRef x{g.add_input("x", t), 0};
    const TensorRef y1{g.add_node(OpKind::MatMul, {x, {g.add_weight("a", t), 0}}), 0};
    const TensorRef b = dependent ? TensorRef{g.add_node(OpKind::Relu, {y1}), 0} : TensorRef{g.add_weight("b", t), 0};
    g.add_output(y1, "y1");
    g.add_output({g.add_node(OpKind::MatMul, {x, b}), 0}, "y2");
    exec::fill_random_weights(g, 1);
    return g;
}

/// Whether some class of `eg` reaches itself through at least one e-node.
bool has_cycle(const search::EGraph& eg) {
    for (ClassId c = 0; c < eg.class_bound(); ++c) {
        if (eg.find(c) != c) continue;
        std::vector<ClassId> children;
        for (const search::ENodeId n : eg.members(c))
            for (const ClassId child : eg.node(n).children)
                if (child != search::no_class) children.push_back(child);
        if (search::detail::reaches(eg, children, {c})) return true;
    }
    return false;
}

/// Applies every match of `rule` in `g`'s e-graph; returns how many were applied.
std::size_t apply_all(search::EGraph& eg, const rewrite::RuleSet& rules, std::uint32_t rule) {
    std::vector<search::EMatch> matches;
    search::EMatcher(eg, rules).find_all(rule, matches, 100);
    std::size_t applied = 0;
    for (const search::EMatch& m : matches) applied += search::apply_ematch(eg, rules, m) ? 1 : 0;
    eg.rebuild();
    return applied;
}

}  // namespace

TEST_CASE("a rule with several outputs is refused in the e-graph where it would close a cycle, and applied elsewhere") {
    const rewrite::RuleSet rules(rewrite::builtin_rules());
    const std::uint32_t merge = rules.at("merge_matmul_pair").id;
    for (const bool dependent : {false, true}) {
        CAPTURE(dependent);
        const Graph g = two_products(dependent);
        // The rewriter's verdict on the same graph: a location exists only without the cycle.
        const rewrite::GraphIndex index(g);
        std::vector<rewrite::Location> locations;
        rewrite::Matcher(rules, g, index).find_all(merge, locations);
        CHECK(locations.empty() == dependent);
        search::SeededEGraph s = search::seed_egraph(g);
        const std::size_t classes_before = s.egraph.num_classes();
        std::vector<search::EMatch> matches;
        search::EMatcher(s.egraph, rules).find_all(merge, matches, 100);
        CHECK_FALSE(matches.empty());  // the e-graph matches in both: the witness cannot see the path
        const std::size_t applied = apply_all(s.egraph, rules, merge);
        CHECK((applied > 0) == !dependent);
        CHECK((s.egraph.num_classes() > classes_before) == !dependent);
        CHECK_FALSE(has_cycle(s.egraph));
    }
}
