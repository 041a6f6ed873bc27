// The substitution generator: enumeration, exact fingerprints, pairing, pruning and
// verification, on small spaces that run in seconds.
#include "../rewrite/support.hpp"  // synth builds on rewrite: its test helpers serve here too

#include <rlflow/exec/executor.hpp>
#include <rlflow/rewrite/rule_file.hpp>
#include <rlflow/rewrite/rule_text.hpp>
#include <rlflow/synth/generator.hpp>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

using namespace rewrite_test;
using synth::GeneratedRules;
using synth::GeneratorOptions;
using synth::GeneratorSpace;

namespace {

/// Matrices and square weights with matmul, add, transpose, concat and split along axis 1.
GeneratorSpace matrix_space() {
    const std::vector<std::string> ops = {"matmul", "add", "transpose", "concat1", "split1"};
    GeneratorSpace space = synth::restrict_ops(synth::default_generator_space(), ops);
    std::erase_if(space.variables, [](const synth::GeneratorVariable& v) { return v.type.shape.rank() != 2; });
    return space;
}

GeneratorOptions quick(std::size_t max_ops, unsigned jobs = 1) {
    GeneratorOptions o;
    o.max_ops = max_ops;
    o.jobs = jobs;
    o.float_trials = 2;
    o.proof_timeout_ms = 500;
    return o;
}

/// A generator variable's shape with every dim but the kernel sizes 1 and 3 times `factor`.
/// At factor 3 (2 -> 6, 4 -> 12, 5 -> 15) these are sizes the generator never checked at
/// (it used the enumeration shapes and the variant 2 -> 3, 4 -> 6, 5 -> 7). One common
/// factor keeps equal dims equal, sums sums and halves halves, though not every quotient
/// (see check_in_float_executor).
Shape scaled_shape(const Shape& shape, std::int64_t factor) {
    std::vector<std::int64_t> dims(shape.dims().begin(), shape.dims().end());
    for (std::int64_t& d : dims)
        if (d != 1 && d != 3) d *= factor;
    return Shape(std::span<const std::int64_t>(dims));
}

/// `rule`'s variables at the scaled shapes of the generator variables they are named after.
synth::RuleInstance scaled_instance(const rewrite::Rule& rule, const GeneratorSpace& space, std::int64_t factor) {
    synth::RuleInstance instance;
    for (const std::string& name : rule.variables) {
        const auto it = std::find_if(space.variables.begin(), space.variables.end(),
                                     [&](const synth::GeneratorVariable& v) { return v.name == name; });
        REQUIRE(it != space.variables.end());
        instance.variable_types.push_back({DType::Float32, scaled_shape(it->type.shape, factor)});
    }
    return instance;
}

/// Values uniform in [-1, 1) for every graph input of `g`, drawn by the test itself.
std::map<std::string, Tensor> uniform_inputs(const Graph& g, Rng& rng) {
    std::map<std::string, Tensor> inputs;
    for (const NodeId id : g.inputs()) {
        const Node& n = g.node(id);
        std::vector<float> values(static_cast<std::size_t>(n.outputs[0].type.shape.numel()));
        for (float& v : values) v = static_cast<float>(rng.uniform(-1.0, 1.0));
        inputs.emplace(n.name, Tensor::from_floats(n.outputs[0].type.shape, std::move(values)));
    }
    return inputs;
}

/// How far two float32 results of one function may differ: a rewrite reassociates chains
/// of at most three ops over values in [-1, 1), each output a sum of at most 108 products
/// (a 3x3 convolution over 12 channels), each rounding moving a sum by 2^-24 of its
/// magnitude, so the sides differ by well under 1e-5 relative; 1e-4 absolute plus 1e-4
/// relative is ample.
constexpr double float_atol = 1e-4;
constexpr double float_rtol = 1e-4;

/// What compare_in_float_executor found: whether the rule had a location, and how many
/// output elements, of how many compared, differed by more than the tolerance.
struct FloatComparison {
    bool applied = false;
    std::size_t compared = 0;
    std::size_t outside = 0;
};

/// Applies `rule` at each of its locations in `source` and runs both graphs in the float
/// reference executor on inputs drawn here, comparing every output element within
/// float_atol + float_rtol * |source value|.
FloatComparison compare_in_float_executor(const rewrite::Rule& rule, const Graph& source, Rng& rng) {
    const RuleSet one(std::vector<rewrite::Rule>{rule});
    const std::vector<Location> locations = rewrite::find_locations(one, 0, source);
    const std::map<std::string, Tensor> inputs = uniform_inputs(source, rng);
    const std::vector<Tensor> expected = exec::Executor{}.run(source, inputs).outputs;
    FloatComparison result{!locations.empty(), 0, 0};
    for (const Location& location : locations) {
        const std::vector<Tensor> actual = exec::Executor{}.run(rewrite::apply_copy(source, one, 0, location), inputs).outputs;
        REQUIRE(actual.size() == expected.size());
        for (std::size_t o = 0; o < expected.size(); ++o) {
            REQUIRE(actual[o].shape() == expected[o].shape());
            const auto a = expected[o].floats();
            const auto b = actual[o].floats();
            for (std::size_t i = 0; i < a.size(); ++i, ++result.compared)
                if (!(std::abs(a[i] - b[i]) <= float_atol + float_rtol * std::abs(a[i]))) ++result.outside;
        }
    }
    return result;
}

/// Checks every rule as rewriting uses it, independently of the generator's own checks
/// (exact evaluation, then check_rule_numerically on its seeds): both sides run in the
/// float executor on inputs drawn here (compare_in_float_executor), at the enumeration
/// shapes, where every rule must apply, and at shapes scaled by three. There most rules
/// apply; the others do not fit such shapes at all (their source does not instantiate, or
/// their target does not): a target Split that keeps its enumerated sizes, a group count
/// whose term only fits the enumerated channel counts. Returns how many applied there.
std::size_t check_in_float_executor(const std::vector<rewrite::Rule>& rules, const GeneratorSpace& space) {
    constexpr std::int64_t unseen_factor = 3;
    Rng rng(20190927);
    std::size_t applied_at_unseen_shapes = 0;
    for (const rewrite::Rule& rule : rules) {
        CAPTURE(rule.name);
        const std::optional<Graph> source = synth::instantiate_source(rule, scaled_instance(rule, space, 1));
        REQUIRE(source.has_value());
        const FloatComparison at_enumeration = compare_in_float_executor(rule, *source, rng);
        CHECK(at_enumeration.applied);
        CHECK_MESSAGE(at_enumeration.outside == 0, at_enumeration.outside << " of " << at_enumeration.compared << " elements differ");
        const std::optional<Graph> unseen = synth::instantiate_source(rule, scaled_instance(rule, space, unseen_factor));
        if (!unseen) continue;
        const FloatComparison at_unseen = compare_in_float_executor(rule, *unseen, rng);
        CHECK_MESSAGE(at_unseen.outside == 0, at_unseen.outside << " of " << at_unseen.compared << " elements differ at unseen shapes");
        applied_at_unseen_shapes += at_unseen.applied ? 1 : 0;
    }
    return applied_at_unseen_shapes;
}

/// The rule whose text (without its name line) contains every piece of `pieces`.
const rewrite::Rule* find_rule(const GeneratedRules& g, std::initializer_list<std::string_view> pieces) {
    for (const rewrite::Rule& r : g.rules) {
        const std::string text = rewrite::to_text(std::span(&r, 1));
        if (std::all_of(pieces.begin(), pieces.end(), [&](std::string_view p) { return text.find(p) != std::string::npos; }))
            return &r;
    }
    return nullptr;
}

}  // namespace

TEST_CASE("generator finds transpose involution and split-concat cancellation, each rule verified") {
    const GeneratedRules g = synth::generate_rules(matrix_space(), quick(2));
    CHECK(g.report.graphs > 50);
    CHECK(g.report.classes > 0);
    CHECK(g.report.rejected == 0);
    CHECK(g.rules.size() == g.report.proved + g.report.tested);
    // Transpose(Transpose(x)) -> x.
    CHECK(find_rule(g, {"src src0 = Transpose(", "src src1 = Transpose(src0)", "out src1 -> "}) != nullptr);
    // Split(Concat(a, b)) -> a, b: two outputs mapped to variables.
    const rewrite::Rule* cancel = find_rule(g, {"= Concat(", "= Split(src0) ", "out src1 -> ", "out src1:1 -> "});
    REQUIRE(cancel != nullptr);
    CHECK(cancel->target.empty());
    for (const rewrite::Rule& r : g.rules) {
        CAPTURE(r.name);
        CHECK(r.verification != rewrite::Verification::rejected);
        CHECK(r.verification != rewrite::Verification::none);
        CHECK_NOTHROW(rewrite::validate_rule(r));
        // Every target reads only variables of the source, and sides differ.
        CHECK_FALSE(r.source == r.target);
    }
}

TEST_CASE("generator results do not depend on the number of workers") {
    const GeneratedRules one = synth::generate_rules(matrix_space(), quick(2, 1));
    const GeneratedRules two = synth::generate_rules(matrix_space(), quick(2, 2));
    CHECK(rewrite::to_text(one.rules) == rewrite::to_text(two.rules));
    CHECK(one.report.graphs == two.report.graphs);
    CHECK(one.report.candidates == two.report.candidates);
}

TEST_CASE("generator pruning removes disconnected sources, renamings and common sub- and supergraphs") {
    const GeneratedRules g = synth::generate_rules(matrix_space(), quick(3, 2));
    const auto& r = g.report;
    CHECK(r.pruned_renaming > 0);
    CHECK(r.pruned_common_subgraph > 0);
    CHECK(r.pruned_common_supergraph > 0);
    CHECK(r.pruned_subsumed > 0);
    CHECK(r.candidates == r.pruned_disconnected + r.pruned_common_subgraph + r.pruned_common_supergraph
                              + r.pruned_renaming + r.pruned_subsumed + r.pruned_redundant + r.pruned_constant_shape
                              + r.pruned_constant_as_variable
                              + r.proved + r.tested + r.rejected);
    // matmul distributes over add: x (w1 + w2) = x w1 + x w2, three ops on one side.
    CHECK(find_rule(g, {"= Add(", "= MatMul(", "dst dst0 = MatMul("}) != nullptr);
    // No two kept rules are renamings of each other: their texts differ once names are dropped.
    std::set<std::string> shapes;
    for (const rewrite::Rule& rule : g.rules) {
        rewrite::Rule anonymous = rule;
        anonymous.name = "r";
        for (std::size_t i = 0; i < anonymous.variables.size(); ++i) anonymous.variables[i] = "v" + std::to_string(i);
        CHECK_MESSAGE(shapes.insert(rewrite::to_text(std::span(&anonymous, 1))).second, rule.name);
    }
}

TEST_CASE("every generated rule rewrites a real instance of its source to an equal graph") {
    const GeneratorSpace space = matrix_space();
    const GeneratedRules g = synth::generate_rules(space, quick(2));
    GeneratorOptions o = quick(2);
    for (const rewrite::Rule& rule : g.rules) {
        CAPTURE(rule.name);
        const auto instances = synth::detail::rule_instances(rule, space, o);
        const auto report = synth::check_rule_numerically(rule, instances);
        CHECK(report.equal);
        CHECK(report.instances_checked >= 1);
    }
}

TEST_CASE("the generator regenerates the committed small rule library exactly") {
    // A change to the generator that changes this library must be deliberate: the test
    // writes what it generated next to the build, to be copied over the committed file.
    GeneratorOptions o = quick(2, 2);
    o.prove = false;  // statuses would depend on Z3's timing
    const std::string generated = rewrite::to_text(synth::generate_rules(matrix_space(), o).rules);
    const std::filesystem::path committed = std::filesystem::path(RLFLOW_SOURCE_DIR) / "tests/data/rules/matrix_k2.rules";
    const std::filesystem::path fresh = std::filesystem::path(RLFLOW_BINARY_DIR) / "matrix_k2.rules";
    std::ofstream(fresh) << generated;
    std::ifstream in(committed);
    REQUIRE_MESSAGE(in.good(), committed.string());
    std::stringstream expected;
    expected << in.rdbuf();
    CHECK_MESSAGE(generated == expected.str(), "generated rules differ from " << committed << "; see " << fresh);
}

TEST_CASE("generator constants: TASO's constant laws are found, sized by the rule's variables, and check at every shape") {
    const std::vector<std::string> ops = {"conv_s1", "add", "avgpool", "matmul", "mul"};
    GeneratorOptions o = quick(2, 2);
    const GeneratedRules g = synth::generate_rules(synth::restrict_ops(synth::default_generator_space(), ops), o);
    // avgpool(x) = conv(x, 1/9 depthwise kernel), the kernel and the group sized by x's channels.
    const rewrite::Rule* pool = find_rule(g, {"src src0 = AveragePool(i1)", "shape=[dim(i1, 1), 1, 3, 3] fill=\"uniform\"",
                                              "group=dim(i1, 1)", "out src0 -> dst1"});
    REQUIRE(pool != nullptr);
    // conv(x, k) + x = conv(x, k + I): the residual folded into the kernel.
    const rewrite::Rule* fold = find_rule(g, {"src src0 = Conv2D(i1, k1)", "= Add(src0, i1)", "fill=\"identity\"",
                                              "= Add(k1, dst0)", "= Conv2D(i1, dst1)"});
    REQUIRE(fold != nullptr);
    // matmul(x, I) = x and x * ones = x, each constant square where it is an identity.
    REQUIRE(find_rule(g, {"shape=[dim(x1, 1), dim(x1, 1)] fill=\"identity\"", "= MatMul(x1, src0)", "out src1 -> x1"}) != nullptr);
    REQUIRE(find_rule(g, {"fill=\"uniform\"", "= Mul(x1, src0)", "out src1 -> x1"}) != nullptr);
    // No kept rule has a constant that could be any tensor, and every rule with a constant is
    // checked at the enumeration shapes and at the larger variant, where its constant grows.
    for (const rewrite::Rule& r : g.rules) {
        const bool constant = std::any_of(r.source.begin(), r.source.end(), [](const auto& n) { return n.op == OpKind::Constant; })
                              || std::any_of(r.target.begin(), r.target.end(), [](const auto& n) { return n.op == OpKind::Constant; });
        if (!constant) continue;
        CAPTURE(r.name);
        const auto report = synth::check_rule_numerically(r, synth::detail::rule_instances(r, synth::default_generator_space(), o));
        CHECK(report.equal);
        CHECK(report.instances_checked == 2);
    }
    // Rewriting with the pool rule builds a kernel of the graph's channel count.
    const Graph graph = average_pool_graph(Shape{1, 10, 6, 6});
    const RuleSet one(std::vector<rewrite::Rule>{*pool});
    const auto found = rewrite::find_locations(one, 0, graph);
    REQUIRE(found.size() == 1);
    const Graph rewritten = rewrite::apply_copy(graph, one, 0, found[0]);
    const Node& conv = rewritten.node(rewritten.outputs()[0].value.node);
    CHECK(conv.attributes.get_int("group", 0) == 10);
    CHECK(rewritten.node(conv.inputs[1].node).data->shape() == Shape{10, 1, 3, 3});
}

TEST_CASE("generator: biased convolutions give rules about biases, and what a built-in rule does is pruned") {
    const std::vector<std::string> ops = {"conv_s1_bias", "conv_s1_relu_bias", "relu", "concat0", "concat1"};
    GeneratorSpace space = synth::restrict_ops(synth::default_generator_space(), ops);
    // Images, 3x3 and 1x1 kernels and biases.
    std::erase_if(space.variables, [](const synth::GeneratorVariable& v) {
        return v.is_constant() || std::string_view("ikpb").find(v.name[0]) == std::string_view::npos;
    });
    GeneratorOptions o = quick(3, 2);
    const GeneratedRules all = synth::generate_rules(space, o);
    CHECK(all.report.pruned_known == 0);
    // Relu after a biased convolution is the convolution with relu fused.
    const std::initializer_list<std::string_view> fusion = {"src src1 = Relu(src0)\n  dst dst0 = Conv2D(", "b1) activation=1",
                                                            "out src1 -> dst0\n  status"};
    REQUIRE(find_rule(all, fusion) != nullptr);
    // Two biased convolutions of one image, concatenated by channel, are one convolution of
    // the concatenated kernels and biases.
    const std::initializer_list<std::string_view> merge = {"src src2 = Concat(src0, src1) axis=1", "dst dst1 = Concat(b",
                                                           "= Conv2D(i1, dst0, dst1)", "out src2 -> dst2"};
    CHECK(find_rule(all, merge) != nullptr);
    o.known_rules = builtin();
    const GeneratedRules pruned = synth::generate_rules(space, o);
    CHECK(pruned.report.pruned_known > 0);
    CHECK(pruned.rules.size() + pruned.report.pruned_known == all.rules.size());
    CHECK(find_rule(pruned, fusion) == nullptr);
    // Names stay consecutive after pruning.
    for (std::size_t i = 0; i < pruned.rules.size(); ++i) CHECK(pruned.rules[i].name == synth::detail::generated_rule_name(i));
    // What is left, no built-in rule does.
    for (const rewrite::Rule& r : pruned.rules)
        CHECK_FALSE(synth::known_rule_doing(r, synth::detail::rule_instances(r, space, o).front(), *builtin()));
}

TEST_CASE("generator: rules accepted by exact evaluation hold in the float executor, at shapes it never checked too") {
    GeneratorOptions o = quick(3, 2);
    o.prove = false;  // which rules are accepted does not depend on Z3
    // Nine in ten rules, at least, must fit the unseen shapes (see check_in_float_executor).
    const auto most = [](std::size_t rules) { return rules - rules / 10; };
    const GeneratorSpace matrices = matrix_space();
    const GeneratedRules m = synth::generate_rules(matrices, o);
    REQUIRE(m.rules.size() >= 100);
    CHECK(check_in_float_executor(m.rules, matrices) >= most(m.rules.size()));
    // Convolutions (strided, grouped, with a fused relu), pools, Enlarge and scalar products.
    const std::vector<std::string> image_ops = {"conv_s1", "conv_s2_relu", "relu",    "maxpool",
                                                "avgpool", "concat1",      "split1", "enlarge", "scale"};
    const GeneratorSpace images = synth::restrict_ops(synth::default_generator_space(), image_ops);
    const GeneratedRules i = synth::generate_rules(images, o);
    REQUIRE(i.rules.size() >= 100);
    CHECK(check_in_float_executor(i.rules, images) >= most(i.rules.size()));
    // TASO's constants (identity and pooling kernels, identity matrix, ones), whose shapes
    // rules give in terms of their variables.
    o.max_ops = 2;
    const std::vector<std::string> constant_ops = {"conv_s1", "add", "avgpool", "matmul", "mul"};
    const GeneratorSpace constants = synth::restrict_ops(synth::default_generator_space(), constant_ops);
    const GeneratedRules c = synth::generate_rules(constants, o);
    REQUIRE(c.rules.size() >= 10);
    CHECK(check_in_float_executor(c.rules, constants) >= most(c.rules.size()));
    // The comparison tells a false rule apart: MatMul does not commute on square matrices.
    const std::vector<rewrite::Rule> wrong = rewrite::parse_rules_text(R"(rlflow-rules 1
rule matmul_commutes
  var w1 w2
  src a = MatMul(w1, w2)
  dst b = MatMul(w2, w1)
  out a -> b
end
)", "<test>");
    Rng rng(1);
    const std::optional<Graph> source = synth::instantiate_source(wrong[0], scaled_instance(wrong[0], matrices, 1));
    REQUIRE(source.has_value());
    const FloatComparison caught = compare_in_float_executor(wrong[0], *source, rng);
    CHECK(caught.applied);
    CHECK(caught.outside > caught.compared / 2);
}

/// Saves `rules` (what the generator gave, in its order) to a rule file in binary and in
/// text form, loads each back, and proves every loaded rule again with a fresh prover, in
/// the generator's order: the prover's state (the op symbols met so far) then grows as
/// the generator's single prover's did. Every rule proved before must be proved again.
void check_proofs_survive_round_trip(const std::vector<rewrite::Rule>& rules, const GeneratorOptions& o) {
    const auto proved = static_cast<std::size_t>(std::count_if(rules.begin(), rules.end(), [](const rewrite::Rule& r) {
        return r.verification == rewrite::Verification::proved;
    }));
    REQUIRE(proved >= 5);
    constexpr unsigned generous_timeout_ms = 5000;  // a longer limit only lets a search go on
    for (const char* name : {"synth_round_trip.pb", "synth_round_trip.rules"}) {
        CAPTURE(name);
        const std::filesystem::path path = std::filesystem::path(RLFLOW_BINARY_DIR) / name;
        rewrite::save_rules(path, rules);
        const std::vector<rewrite::Rule> loaded = rewrite::load_rules(path);
        std::filesystem::remove(path);
        REQUIRE(loaded == rules);
        synth::Prover prover(synth::ProverOptions{generous_timeout_ms, o.seed});
        std::size_t proved_again = 0;
        for (const rewrite::Rule& rule : loaded) {
            const synth::ProofResult result = prover.prove(rule);
            if (rule.verification != rewrite::Verification::proved) continue;
            CHECK_MESSAGE(result.status == synth::ProofStatus::proved, rule.name << ": " << result.detail);
            proved_again += result.status == synth::ProofStatus::proved ? 1 : 0;
        }
        CHECK(proved_again == proved);
    }
}

TEST_CASE("generator: proved rules are proved again after a round trip through a rule file, in either form") {
    if (!synth::Prover::available()) {
        MESSAGE("skipped: rlflow was built without Z3");
        return;
    }
    const GeneratorOptions o = quick(2, 1);  // one worker: one prover met every rule, in order
    check_proofs_survive_round_trip(synth::generate_rules(matrix_space(), o).rules, o);
    // Rules holding constants: the 1/9 of a pooling kernel must read back as the same float.
    const std::vector<std::string> ops = {"conv_s1", "add", "avgpool", "matmul", "mul"};
    const GeneratedRules c = synth::generate_rules(synth::restrict_ops(synth::default_generator_space(), ops), o);
    REQUIRE(std::any_of(c.rules.begin(), c.rules.end(), [](const rewrite::Rule& r) {
        return r.verification == rewrite::Verification::proved
               && std::any_of(r.source.begin(), r.source.end(), [](const auto& n) { return n.op == OpKind::Constant; });
    }));
    check_proofs_survive_round_trip(c.rules, o);
}

TEST_CASE("shares of the enumeration on 3 ranks, merged by key, are the single process's graphs and counts") {
    const GeneratorSpace space = matrix_space();
    const GeneratorOptions o = quick(3);
    synth::GeneratorReport single;
    const std::vector<synth::detail::GenGraph> one = synth::detail::enumerate_graphs(space, o, single);
    constexpr std::size_t ranks = 3;
    std::vector<std::string> parts;
    std::size_t share_states = 0;
    for (std::size_t r = 0; r < ranks; ++r) {
        const synth::detail::EnumerationShare share = synth::detail::enumerate_share(space, o, r, ranks);
        share_states += share.counts.states;
        CHECK(share.states.size() == share.counts.states);
        parts.push_back(synth::detail::pack_enumeration(share));
    }
    synth::detail::MergedEnumeration merged = synth::detail::merge_enumerations(parts);
    MESSAGE("states on 3 ranks ", share_states, " against ", single.states, " on one process");
    CHECK(share_states > single.states);  // some graphs are reachable from first nodes of two ranks
    CHECK(merged.counts.states == single.states);
    CHECK(merged.counts.recorded == single.graphs);
    CHECK(merged.counts.redundant == single.redundant_states);
    CHECK(merged.counts.inexact == single.inexact);
    synth::detail::add_variable_graphs(space, o, merged.graphs);
    REQUIRE(merged.graphs.size() == one.size());
    std::size_t different = 0;
    for (std::size_t i = 0; i < one.size(); ++i) {
        const auto& a = one[i];
        const auto& b = merged.graphs[i];
        different += a.key == b.key && a.nodes == b.nodes && a.outputs == b.outputs && a.fingerprint == b.fingerprint
                             && a.redundant == b.redundant
                         ? 0
                         : 1;
    }
    CHECK(different == 0);
    parts[1].resize(parts[1].size() / 2);
    CHECK_THROWS_AS((void)synth::detail::merge_enumerations(parts), precondition_error);
}

TEST_CASE("generator: the extended ops give the laws of row reductions and nearest upsampling, provable, at any image size") {
    // TASO's space stays the default: the extended ops are enumerated only when named.
    const GeneratorSpace taso = synth::default_generator_space();
    CHECK(std::none_of(taso.ops.begin(), taso.ops.end(), [](const synth::GeneratorOp& op) { return op.extended; }));
    const std::vector<std::string> extended = {"reducesum1"};
    CHECK_THROWS_AS(synth::restrict_ops(taso, extended), precondition_error);

    const std::vector<std::string> ops = {"matmul", "add", "relu", "conv_s1", "reducesum1", "reducemax1", "upsample2"};
    const GeneratorSpace space = synth::restrict_ops(synth::generator_space(), ops);
    const GeneratedRules g = synth::generate_rules(space, quick(2, 2));
    CHECK(g.report.rejected == 0);
    CHECK(g.report.inexact == 0);
    // The sum of a product's columns: the weight's row sums, a matrix-vector product.
    const rewrite::Rule* columns = find_rule(g, {"src src0 = MatMul(x1, w1)", "src src1 = ReduceSum(src0) axes=[1] keepdims=1",
                                                 "dst dst0 = ReduceSum(w1) axes=[1] keepdims=1", "dst dst1 = MatMul(x1, dst0)"});
    REQUIRE(columns != nullptr);
    // Proofs in the generator run on provers whose state grows with the rules they saw, and
    // E-matching is incomplete: a rule it left tested, a fresh prover proves from the axioms.
    synth::Prover prover;
    CHECK(columns->verification != rewrite::Verification::rejected);
    if (synth::Prover::available()) CHECK(prover.prove(*columns).status == synth::ProofStatus::proved);
    // A 1x1 convolution before the upsampling instead of after it: 4x fewer products.
    const rewrite::Rule* pointwise = find_rule(g, {"= Resize(i1) coordinate_transformation_mode=\"asymmetric\"",
                                                   "= Conv2D(src0, p1)", "dst dst0 = Conv2D(i1, p1)",
                                                   "dst dst1 = Resize(dst0)", "sizes=[dim(src1, 0), dim(src1, 1), dim(src1, 2), dim(src1, 3)]"});
    REQUIRE(pointwise != nullptr);
    CHECK(pointwise->verification != rewrite::Verification::rejected);
    if (synth::Prover::available()) CHECK(prover.prove(*pointwise).status == synth::ProofStatus::proved);
    // Every rule proved or tested, never rejected.
    std::size_t with_extended_ops = 0;
    for (const rewrite::Rule& r : g.rules) {
        CAPTURE(rewrite::to_text(std::span(&r, 1)));
        CHECK(r.verification != rewrite::Verification::rejected);
        const auto extended_node = [](const rewrite::PatternNode& n) {
            return n.op == OpKind::ReduceSum || n.op == OpKind::ReduceMax || n.op == OpKind::Resize;
        };
        if (std::any_of(r.source.begin(), r.source.end(), extended_node)) ++with_extended_ops;
        // A source Resize leaves its sizes to its scales; a target one takes them from the
        // output it replaces.
        for (const rewrite::PatternNode& n : r.source)
            if (n.op == OpKind::Resize) CHECK_FALSE(synth::detail::mentions(n, "sizes"));
    }
    CHECK(with_extended_ops >= 4);
    // Each rule holds in the float executor as rewriting applies it, at the enumeration's
    // shapes and on images three times as large, where the literal sizes of the
    // enumeration would not have matched.
    CHECK(check_in_float_executor(g.rules, space) >= with_extended_ops);
}
