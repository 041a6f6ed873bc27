#include "support.hpp"

using namespace rewrite_test;
using rewrite::AttrExpr;
using rewrite::PatternNode;
using rewrite::PatternRef;
using rewrite::Rule;

namespace {

/// Relu(x) -> x: the smallest valid rule, for breaking one part at a time.
Rule drop_relu() {
    Rule r;
    r.name = "drop_relu";
    r.variables = {"x"};
    r.source.push_back(PatternNode{OpKind::Relu, {PatternRef::variable(0)}, {}, 1, "r"});
    r.outputs.push_back({PatternRef::node(0), PatternRef::variable(0)});
    return r;
}

}  // namespace

TEST_CASE("validate_rule names the rule and the broken part") {
    CHECK_NOTHROW(rewrite::validate_rule(drop_relu()));

    Rule unbound = drop_relu();
    unbound.variables.push_back("y");
    CHECK_THROWS_WITH_AS(rewrite::validate_rule(unbound),
                         "[rlflow.rule_error] rule 'drop_relu': variable 'y' is not an input of any source node", rule_error);

    Rule forward = drop_relu();
    forward.source[0].inputs[0] = PatternRef::node(0);
    CHECK_THROWS_WITH_AS(rewrite::validate_rule(forward), doctest::Contains("which is not earlier"), rule_error);

    Rule attribute = drop_relu();
    attribute.source[0].attributes.push_back({"axis", AttrExpr::of(std::int64_t{1})});
    CHECK_THROWS_WITH_AS(rewrite::validate_rule(attribute), doctest::Contains("unknown attribute 'axis'"), rule_error);

    Rule symbol = drop_relu();
    symbol.symbols = {"k"};
    CHECK_THROWS_WITH_AS(rewrite::validate_rule(symbol), doctest::Contains("symbol '$k' is never bound"), rule_error);

    Rule no_outputs = drop_relu();
    no_outputs.outputs.clear();
    CHECK_THROWS_WITH_AS(rewrite::validate_rule(no_outputs), doctest::Contains("maps no outputs"), rule_error);
}

TEST_CASE("a symbol keeps the type of the attribute that binds it") {
    Rule r = builtin()->at("fuse_conv_relu");
    // Use the Ints kernel symbol where an Int (group) is expected.
    for (auto& a : r.target[0].attributes)
        if (a.name == "group") a.value = r.source[0].attributes[0].value;
    CHECK_THROWS_WITH_AS(rewrite::validate_rule(r), doctest::Contains("is ints, used as int"), rule_error);
}

TEST_CASE("a rule set refuses a second rule of the same name") {
    rewrite::RuleSet set;
    CHECK(set.add(drop_relu()) == 0);
    CHECK_THROWS_WITH_AS(set.add(drop_relu()), "[rlflow.rule_error] rule 'drop_relu' is defined twice", rule_error);
    CHECK(set.size() == 1);
    CHECK(set.find("drop_relu") == 0u);
    CHECK_THROWS_AS((void)set.at("nothing"), rule_error);
}

TEST_CASE("reversing a rule swaps its sides, and reversing twice gives it back") {
    const Rule& fuse = builtin()->at("merge_matmul_pair");
    const Rule back = rewrite::reversed(fuse, "split");
    CHECK(back.source == fuse.target);
    CHECK(back.target == fuse.source);
    Rule again = rewrite::reversed(back, fuse.name);
    again.id = fuse.id;
    again.ordered = fuse.ordered;
    CHECK(again == fuse);
}

TEST_CASE("a rule whose target cannot serve as a source is not reversible") {
    CHECK_THROWS_WITH_AS((void)rewrite::reversed(drop_relu(), "add_relu"), doctest::Contains("an output is a variable"),
                         rule_error);
    CHECK_THROWS_WITH_AS((void)rewrite::reversed(builtin()->at("eliminate_noop_reshape"), "add_reshape"),
                         doctest::Contains("a constraint measures a node"), rule_error);
}

TEST_CASE("a disconnected source pattern is refused when compiled") {
    Rule r = drop_relu();
    r.variables.push_back("y");
    r.source.push_back(PatternNode{OpKind::Relu, {PatternRef::variable(1)}, {}, 1, "s"});
    r.outputs.push_back({PatternRef::node(1), PatternRef::variable(1)});
    rewrite::RuleSet set;
    CHECK_THROWS_WITH_AS(set.add(r), doctest::Contains("not connected"), rule_error);
}

TEST_CASE("a target must give every required attribute and feed a mapped output") {
    Rule lacks = drop_relu();
    lacks.target.push_back(PatternNode{OpKind::Concat, {PatternRef::variable(0)}, {}, 1, "c"});
    lacks.outputs[0].target = PatternRef::node(0);
    CHECK_THROWS_WITH_AS(rewrite::validate_rule(lacks), doctest::Contains("lacks required attribute 'axis'"), rule_error);

    Rule dead = drop_relu();
    dead.target.push_back(PatternNode{OpKind::Sigmoid, {PatternRef::variable(0)}, {}, 1, "unused"});
    CHECK_THROWS_WITH_AS(rewrite::validate_rule(dead), doctest::Contains("'unused' (Sigmoid): feeds no mapped output"),
                         rule_error);
}

TEST_CASE("a rule whose source leaves an attribute open is not reversed into a default") {
    // Softmax(x) on any axis -> Softmax(x) on axis 1 would be unsound read backwards.
    Rule r;
    r.name = "pin_axis";
    r.variables = {"x"};
    r.source.push_back(PatternNode{OpKind::Softmax, {PatternRef::variable(0)}, {}, 1, "s"});
    r.target.push_back(PatternNode{OpKind::Softmax, {PatternRef::variable(0)}, {{"axis", AttrExpr::of(std::int64_t{1})}}, 1, "t"});
    r.outputs.push_back({PatternRef::node(0), PatternRef::node(0)});
    CHECK_NOTHROW(rewrite::validate_rule(r));
    CHECK_THROWS_WITH_AS((void)rewrite::reversed(r, "unpin_axis"), doctest::Contains("leaves attribute 'axis' open"),
                         rule_error);
}

TEST_CASE("a rule's pattern label gives each side's ops in order, for tables where its name says nothing") {
    CHECK(rewrite::pattern_label(drop_relu()) == "Relu \u2192 (inputs)");
    // Relu(Relu(x)) -> Relu(x): two ops become one.
    Rule r = drop_relu();
    r.source.push_back(PatternNode{OpKind::Relu, {PatternRef::node(0)}, {}, 1, "s"});
    r.target.push_back(PatternNode{OpKind::Relu, {PatternRef::variable(0)}, {}, 1, "t"});
    CHECK(rewrite::pattern_label(r) == "Relu+Relu \u2192 Relu");
}
