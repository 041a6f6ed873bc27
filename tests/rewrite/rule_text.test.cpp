#include "rule_samples.hpp"

#include <rlflow/rewrite/rule_text.hpp>

#include <doctest/doctest.h>

#include <random>
#include <string>
#include <variant>

using namespace rlflow;
using namespace rlflow::rewrite;
using rule_samples::sample_rules;
using rule_samples::sample_rules_text;

namespace {

/// `body` (the lines of one rule) as a whole text with a header, read as "rules.txt".
std::vector<Rule> read(const std::string& body) { return parse_rules_text("rlflow-rules 1\n" + body, "rules.txt"); }

/// The one rule of `body`.
Rule read_one(const std::string& body) {
    const std::vector<Rule> rules = read(body);
    REQUIRE(rules.size() == 1);
    return rules.front();
}

/// The value expression of attribute `name` of source or target node `index`.
const AttrExpr& attribute(const std::vector<PatternNode>& side, std::size_t index, std::string_view name) {
    REQUIRE(index < side.size());
    for (const PatternAttribute& a : side[index].attributes)
        if (a.name == name) return a.value;
    FAIL("no attribute ", name);
    throw std::logic_error("unreachable");
}

}  // namespace

TEST_CASE("the sample rules are written as the expected text") { CHECK(to_text(sample_rules()) == sample_rules_text); }

TEST_CASE("the sample text reads back as the hand-built rules, ids in order") {
    const std::vector<Rule> expected = sample_rules();
    const std::vector<Rule> read_back = parse_rules_text(sample_rules_text, "samples.txt");
    REQUIRE(read_back.size() == expected.size());
    for (std::size_t i = 0; i < expected.size(); ++i) {
        CAPTURE(expected[i].name);
        CHECK(read_back[i].id == i);
        CHECK(read_back[i] == expected[i]);
    }
}

TEST_CASE("text written by to_text is written again byte for byte") {
    const std::string text = to_text(sample_rules());
    CHECK(to_text(parse_rules_text(text)) == text);
}

TEST_CASE("an empty rule set is just the header") {
    CHECK(to_text({}) == "rlflow-rules 1\n");
    CHECK(parse_rules_text("# nothing yet\nrlflow-rules 1\n").empty());
}

TEST_CASE("comments, blank lines, indentation and CRLF line ends do not change what is read") {
    const std::string text
        = "# a leading comment\r\n\r\n   rlflow-rules 1   # the header\r\n"
          "rule fuse_conv_relu\r\n"
          "  var x w # variables\r\n"
          "\t sym k s p d g\r\n"
          "  # a comment inside the rule\r\n"
          "  src conv = Conv2D( x , w ) kernel_shape=$k strides=$s pads=$p dilations=$d group=$g activation=0\r\n"
          "  src r = Relu(conv)\r\n"
          "  dst f = Conv2D(x, w) kernel_shape=$k strides=$s pads=$p dilations=$d group=$g activation=1\r\n"
          "  out r->f\r\n"
          "end # done\r\n";
    const std::vector<Rule> rules = parse_rules_text(text);
    REQUIRE(rules.size() == 1);
    CHECK(rules.front() == rule_samples::fuse_conv_relu());
}

TEST_CASE("undeclared symbols follow the declared ones in order of first use") {
    const Rule rule = read_one(R"(rule cancel
  var x
  sym q
  src t1 = Transpose(x) perm=$p
  src t2 = Transpose(t1) perm=$q
  out t2 -> x
  require permutation_is_identity($p, $q)
end
)");
    CHECK(rule.symbols == std::vector<std::string>{"q", "p"});
    CHECK(rule.variables == std::vector<std::string>{"x"});
    CHECK(attribute(rule.source, 0, "perm") == AttrExpr::of_symbol(1));
    CHECK(to_text(std::vector<Rule>{rule}).find("  sym q p\n") != std::string::npos);
}

TEST_CASE("declarations may separate names with commas, give symbols a $, and come after their use") {
    const Rule rule = read_one(R"(rule merge
  src m1 = MatMul(x, w1)
  src m2 = MatMul(x, w2)
  dst w = Concat(w1, w2) axis=1
  out m1 -> w
  var x, w1,w2
end
)");
    CHECK(rule.variables == std::vector<std::string>{"x", "w1", "w2"});
    CHECK(rule.source[1].inputs == std::vector<PatternRef>{PatternRef::variable(0), PatternRef::variable(2)});
    const Rule with_symbols = read_one(
        "rule t\n  var x\n  sym $p, q\n  src a = Transpose(x) perm=$q\n"
        "  src b = Transpose(a) perm=$p\n  out b -> x\nend\n");
    CHECK(with_symbols.symbols == std::vector<std::string>{"p", "q"});
}

TEST_CASE("the attribute schema types literals: an integer for a float attribute is a double") {
    const Rule rule = read_one(R"(rule gemm
  var a b c
  src g = Gemm(a, b, c) alpha=1 beta=0.5 transA=0 transB=1
  dst m = MatMul(a, b)
  out g -> m
end
)");
    CHECK(std::get<double>(attribute(rule.source, 0, "alpha").literal) == 1.0);
    CHECK(std::get<double>(attribute(rule.source, 0, "beta").literal) == 0.5);
    CHECK(std::get<std::int64_t>(attribute(rule.source, 0, "transB").literal) == 1);
}

TEST_CASE("each expression form reads as its kind") {
    const Rule rule = read_one(R"(rule forms
  var x y
  sym a p q g
  src c = Concat(x, y) axis=$a
  src t = Transpose(c) perm=$p
  src u = Transpose(t) perm=$q
  src m = MergeGConv(u) count=2 group=$g
  dst s = Split(x) axis=rank(x)-1 split=[dim(x, $a), dim(y, $a)] outputs=2
  dst r = Reshape(s:1) shape=[-1, dim(c, 2)]
  dst k = Reshape(r) shape=[-1, 1]
  dst v = Transpose(k) perm=compose($p, $q)
  dst w = MergeGConv(v) count=2 group=$g/2
  out m -> w
end
)");
    CHECK(attribute(rule.target, 0, "axis") == AttrExpr::of_integer(IntTerm::rank(PatternRef::variable(0), -1)));
    CHECK(attribute(rule.target, 0, "split")
          == AttrExpr::of_ints({IntTerm::dim_at_symbol(PatternRef::variable(0), 0),
                                IntTerm::dim_at_symbol(PatternRef::variable(1), 0)}));
    CHECK(rule.target[1].inputs.front() == PatternRef::node(0, 1));
    CHECK(attribute(rule.target, 1, "shape")
          == AttrExpr::of_ints({IntTerm::literal(-1), IntTerm::dim(PatternRef::node(0), 2)}));
    CHECK(attribute(rule.target, 2, "shape") == AttrExpr::of(std::vector<std::int64_t>{-1, 1}));
    CHECK(attribute(rule.target, 3, "perm") == AttrExpr::composed(1, 2));
    IntTerm half = IntTerm::of_symbol(3);
    half.divisor = 2;
    CHECK(attribute(rule.target, 4, "group") == AttrExpr::of_integer(half));
}

TEST_CASE("a +0 keeps integer expressions that look like literals or symbols apart from them") {
    const Rule rule = read_one(R"(rule markers
  var x
  sym g
  src m = MergeGConv(x) count=2 group=$g
  dst a = MergeGConv(x) count=2+0 group=$g+0
  dst p = Pad(a) pads=[0+0, 1]
  dst q = Pad(p) pads=[0, 1]
  out m -> q
end
)");
    CHECK(attribute(rule.target, 0, "count") == AttrExpr::of_integer(IntTerm::literal(2)));
    CHECK(attribute(rule.target, 0, "group") == AttrExpr::of_integer(IntTerm::of_symbol(0)));
    CHECK(attribute(rule.target, 1, "pads") == AttrExpr::of_ints({IntTerm::literal(0), IntTerm::literal(1)}));
    CHECK(attribute(rule.target, 2, "pads") == AttrExpr::of(std::vector<std::int64_t>{0, 1}));
    const std::string text = to_text(std::vector<Rule>{rule});
    CHECK(text.find("count=2+0 group=$g+0") != std::string::npos);
    CHECK(text.find("pads=[0+0, 1]") != std::string::npos);
    CHECK(parse_rules_text(text).front() == rule);
}

TEST_CASE("quoted strings keep quotes, backslashes, control characters and '#'") {
    const std::string mode = "a\"b\\c\n\t\x01#d";
    const Rule rule = read_one(R"(rule pad
  var x
  src p = Pad(x) pads=[1, 1] mode="a\"b\\c\n\t\x01#d" # a comment
  dst q = Pad(x) pads=[1, 1] mode="constant"
  out p -> q
end
)");
    CHECK(std::get<std::string>(attribute(rule.source, 0, "mode").literal) == mode);
    CHECK(parse_rules_text(to_text(std::vector<Rule>{rule})).front() == rule);
}

TEST_CASE("to_text refuses names the text form cannot hold") {
    Rule unlabelled = rule_samples::fuse_conv_relu();
    unlabelled.source[1].label.clear();
    CHECK_THROWS_WITH_AS(to_text(std::vector<Rule>{unlabelled}),
                         doctest::Contains("rule #0 'fuse_conv_relu': cannot be written as text: source label 1 ''"),
                         rule_error);
    Rule spaced = rule_samples::fuse_conv_relu();
    spaced.variables[1] = "a weight";
    CHECK_THROWS_WITH_AS(to_text(std::vector<Rule>{spaced}), doctest::Contains("variable 1 'a weight' is not a name"),
                         rule_error);
    Rule ambiguous = rule_samples::fuse_conv_relu();
    ambiguous.target[0].label = "x";
    CHECK_THROWS_WITH_AS(to_text(std::vector<Rule>{ambiguous}), doctest::Contains("target label 0 'x' is not unique"),
                         rule_error);
    Rule renamed = rule_samples::fuse_conv_relu();
    renamed.name = "fuse conv";
    CHECK_THROWS_WITH_AS(to_text(std::vector<Rule>{renamed}), doctest::Contains("the rule name may only hold"),
                         rule_error);
}

TEST_CASE("to_text refuses a rule that would not load again") {
    Rule invalid = rule_samples::fuse_conv_relu();
    invalid.outputs.clear();
    CHECK_THROWS_WITH_AS(to_text(std::vector<Rule>{rule_samples::fuse_conv_relu(), invalid}),
                         doctest::Contains("rule #1 'fuse_conv_relu': maps no outputs"), rule_error);
}

TEST_CASE("a text without the header, or of another version, is refused") {
    CHECK_THROWS_WITH_AS(parse_rules_text("", "rules.txt"),
                         doctest::Contains("rules.txt: missing header 'rlflow-rules 1'"), rule_error);
    CHECK_THROWS_WITH_AS(parse_rules_text("# only a comment\n\nrule r\nend\n", "rules.txt"),
                         doctest::Contains("rules.txt:3: missing header"), rule_error);
    CHECK_THROWS_WITH_AS(parse_rules_text("rlflow-rules 2\n", "rules.txt"),
                         doctest::Contains("rules.txt:1: version 2 is not supported (this build reads version 1)"),
                         rule_error);
    CHECK_THROWS_WITH_AS(parse_rules_text("rlflow-rules one\n", "rules.txt"), doctest::Contains("bad number 'one'"),
                         rule_error);
}

TEST_CASE("errors in a rule name the file, line, rule index and rule name") {
    const std::string first = "rule first\n  var x\n  src i = Identity(x)\n  out i -> x\nend\n";
    const auto error_in_second
        = [&](const std::string& lines) { return read(first + "rule second\n  var x y\n" + lines + "end\n"); };
    // Line numbers: 1 header, 2-6 the first rule, 7 `rule second`, 8 `var`, 9 the line.
    CHECK_THROWS_WITH_AS(error_in_second("  src c = Conv3D(x, y)\n"),
                         doctest::Contains("rules.txt:9: rule #1 'second': unknown op 'Conv3D'"), rule_error);
    CHECK_THROWS_WITH_AS(error_in_second("  src c = Conv2D(x, y) kernel=[1, 1]\n"),
                         doctest::Contains("rules.txt:9: rule #1 'second': unknown attribute 'kernel' for Conv2D"),
                         rule_error);
    CHECK_THROWS_WITH_AS(error_in_second("  src a = Add(x, z)\n"),
                         doctest::Contains("rules.txt:9: rule #1 'second': unknown label 'z'"), rule_error);
    CHECK_THROWS_WITH_AS(error_in_second("  src a = Add(x, y)\n  src a = Relu(a)\n"),
                         doctest::Contains("rules.txt:10: rule #1 'second': duplicate label 'a'"), rule_error);
    CHECK_THROWS_WITH_AS(error_in_second("  src y = Relu(x)\n"),
                         doctest::Contains("rules.txt:9: rule #1 'second': duplicate label 'y'"), rule_error);
    CHECK_THROWS_WITH_AS(error_in_second("  src s = Softmax(x) axis=1.5\n"),
                         doctest::Contains("rules.txt:9: rule #1 'second': bad number '1.5'"), rule_error);
    CHECK_THROWS_WITH_AS(error_in_second("  src s = Softmax(x) axis=2x\n"), doctest::Contains("bad number '2x'"),
                         rule_error);
}

TEST_CASE("malformed lines are refused with what was expected") {
    const auto in_rule = [](const std::string& line) {
        return read("rule r\n  var x y\n  src a = Add(x, y)\n" + line + "\n  out a -> x\nend\n");
    };
    CHECK_THROWS_WITH_AS(in_rule("  src s = Softmax(x) axis=0, garbage"),
                         doctest::Contains("rules.txt:5: rule #0 'r': unexpected ', garbage'"), rule_error);
    CHECK_THROWS_WITH_AS(in_rule("  order a < b"), doctest::Contains("rules.txt:5: rule #0 'r': unknown label 'b'"),
                         rule_error);
    CHECK_THROWS_WITH_AS(in_rule("  require rank_is(x, 2)"), doctest::Contains("unknown constraint 'rank_is'"),
                         rule_error);
    CHECK_THROWS_WITH_AS(in_rule("  require rank_equals(x, y)"),
                         doctest::Contains("rank_equals takes 1 tensor(s), 0 symbol(s) and a value"), rule_error);
    CHECK_THROWS_WITH_AS(in_rule("  source s = Relu(x)"), doctest::Contains("unknown keyword 'source'"), rule_error);
    CHECK_THROWS_WITH_AS(
        in_rule("  src p = Pad(x) pads=[1, 1] mode=1"),
        doctest::Contains("rules.txt:2: rule #0 'r': source node 1 'p' (Pad): attribute 'mode' must be of "
                          "type string"),
        rule_error);
    CHECK_THROWS_WITH_AS(in_rule("  src s = Softmax(x) axis=[1]"),
                         doctest::Contains("a list, but attribute 'axis' has type int"), rule_error);
    CHECK_THROWS_WITH_AS(in_rule("  src s = Softmax(x) axis=$a/0"), doctest::Contains("a divisor must be positive"),
                         rule_error);
    CHECK_THROWS_WITH_AS(in_rule("  src s = Softmax(x) axis=4/2"), doctest::Contains("a literal cannot be divided"),
                         rule_error);
    CHECK_THROWS_WITH_AS(in_rule("  src p = Pad(x) pads=[1] mode=\"open"), doctest::Contains("unterminated string"),
                         rule_error);
    CHECK_THROWS_WITH_AS(in_rule("  out a -> x:1"), doctest::Contains("variable 'x' has no output 1"), rule_error);
}

TEST_CASE("a rule without 'end', or text outside a rule, is refused") {
    CHECK_THROWS_WITH_AS(read("rule r\n  var x\n  src i = Identity(x)\n  out i -> x\n"),
                         doctest::Contains("rules.txt:2: rule #0 'r': unterminated rule: no 'end'"), rule_error);
    CHECK_THROWS_WITH_AS(read("rule r\n  var x\n  src i = Identity(x)\nrule s\nend\n"),
                         doctest::Contains("rules.txt:5: rule #0 'r': unterminated rule: 'rule' before 'end'"),
                         rule_error);
    CHECK_THROWS_WITH_AS(read("rule r\n  var x\n  src i = Identity(x)\n  out i -> x\nend now\n"),
                         doctest::Contains("rules.txt:6: rule #0 'r': unexpected 'now' at the end of the line"),
                         rule_error);
    CHECK_THROWS_WITH_AS(read("rule r\n  var x\n  src i = Identity(x)\n  out i -> x\nend\nstray words\n"),
                         doctest::Contains("rules.txt:7: expected 'rule', found 'stray'"), rule_error);
}

TEST_CASE("rules read from text are validated, naming the rule's line, index and name") {
    CHECK_THROWS_WITH_AS(
        read("rule ok\n  var x\n  src i = Identity(x)\n  out i -> x\nend\n"
             "rule unused_y\n  var x y\n  src i = Identity(x)\n  out i -> x\nend\n"),
        doctest::Contains("[rlflow.rule_error] rules.txt:7: rule #1 'unused_y': variable 'y' is not an "
                          "input of any source node"),
        rule_error);
    CHECK_THROWS_WITH_AS(read("rule twice\n  var x\n  src i = Identity(x)\n  out i -> x\nend\n"
                              "rule twice\n  var x\n  src i = Identity(x)\n  out i -> x\nend\n"),
                         doctest::Contains("rules.txt:7: rule #1 'twice': the name is already used by rule #0"),
                         rule_error);
    CHECK_THROWS_WITH_AS(read("rule split\n  var x\n  src s = Split(x) axis=0 split=[1, 1]\n  out s:1 -> x\nend\n"),
                         doctest::Contains("rule #0 'split': output mapping 0: node 0 has no output 1"), rule_error);
}

TEST_CASE("mutated texts either read or throw rule_error, and what reads writes back") {
    const std::string original(sample_rules_text);
    std::mt19937 random(20240521);
    constexpr int mutants = 400;
    constexpr std::string_view alphabet = " \n#$:=,()[]-+/\"\\0123456789abcdexyzAR";
    int read_count = 0;
    int refused = 0;
    for (int i = 0; i < mutants; ++i) {
        std::string text = original;
        const std::size_t at = std::uniform_int_distribution<std::size_t>(0, text.size() - 1)(random);
        const char c = alphabet[std::uniform_int_distribution<std::size_t>(0, alphabet.size() - 1)(random)];
        switch (i % 3) {
            case 0: text[at] = c; break;
            case 1: text.erase(at, 1); break;
            default: text.insert(at, 1, c); break;
        }
        try {
            const std::vector<Rule> rules = parse_rules_text(text, "mutant.txt");
            CHECK(parse_rules_text(to_text(rules)) == rules);
            ++read_count;
        } catch (const rule_error& e) {
            CHECK(std::string(e.what()).find("mutant.txt") != std::string::npos);
            ++refused;
        }
    }
    CHECK(read_count + refused == mutants);
    CHECK(refused > 0);
    CHECK(read_count > 0);
}
