// The exact evaluator of the substitution generator: the arithmetic of Exact (ring laws,
// unique representation, residues, overflow) and every supported op against the float
// reference executor on small random integers.

#include "../rewrite/support.hpp"  // synth builds on rewrite: its test helpers serve here too

#include <rlflow/synth/exact.hpp>

#include <algorithm>
#include <array>
#include <cmath>
#include <compare>
#include <cstdint>
#include <limits>
#include <map>
#include <memory>
#include <string>
#include <vector>

namespace {

using namespace rlflow;
using synth::Exact;
using synth::exact_error;
using synth::ExactTensor;
using synth::fingerprint_prime;
using rewrite_test::f32;
using Ints = std::vector<std::int64_t>;

Exact integer(std::int64_t v) { return Exact::integer(v); }
/// numerator / count.
Exact fraction(std::int64_t numerator, std::int64_t count) { return integer(numerator).divided_by(count); }

/// A random value: an integer in [-1000, 1000] over a random 7-smooth count (1 often).
Exact random_value(Rng& rng) {
    constexpr std::array<std::int64_t, 24> counts{1,  1,  1,  2,  3,  4,  5,  6,  7,  8,  9,   10,
                                                  12, 14, 15, 16, 21, 25, 27, 35, 49, 60, 210, 420};
    constexpr std::int64_t range = 1000;
    const auto numerator = static_cast<std::int64_t>(rng.below(2 * range + 1)) - range;
    return fraction(numerator, counts[rng.below(counts.size())]);
}

std::uint64_t add_mod(std::uint64_t a, std::uint64_t b) { return (a + b) % fingerprint_prime; }
std::uint64_t mul_mod(std::uint64_t a, std::uint64_t b) {
    __extension__ typedef unsigned __int128 Wide;
    return static_cast<std::uint64_t>(static_cast<Wide>(a) * b % fingerprint_prime);
}

// ---- running graphs both ways ------------------------------------------------------------

/// How the float result must match: exactly (integer results below 2^24), or within
/// 1e-5 relative (results of a division, rounded in float).
enum class Match { exact, close };

/// How the random integers are drawn.
struct Fill {
    std::uint64_t seed = 1;
    std::int64_t bound = 3;
    /// Graph inputs all negative (so a padded 0 would win a max).
    bool negative_inputs = false;
    /// Graph inputs multiplied by this (a power of 2, so still exact in float): 0.25 gives
    /// fractions, 2^32 numerators too large for Conv2D's and MatMul's int64 path.
    double input_scale = 1.0;
    /// Weights also given in the value map (besides their float data).
    bool weights_in_map = false;
};

struct BothRuns {
    std::vector<ExactTensor> exact;
    std::vector<Tensor> floats;
};

ExactTensor random_input(const Shape& shape, Rng& rng, const Fill& fill) {
    ExactTensor t = synth::random_exact_tensor(shape, rng, fill.bound);
    for (Exact& v : t.values) {
        if (fill.negative_inputs)
            v = integer(-1 - static_cast<std::int64_t>(rng.below(static_cast<std::uint64_t>(fill.bound))));
        v = v * Exact::from_double(fill.input_scale);
    }
    return t;
}

/// Fills every input and weight of `g` with random integers, then runs it exactly and in
/// the float executor.
BothRuns run_both(Graph g, const Fill& fill) {
    Rng rng(fill.seed);
    std::map<std::string, ExactTensor> values;
    std::map<std::string, Tensor> float_inputs;
    for (const NodeId id : g.inputs()) {
        const Node& n = g.node(id);
        values[n.name] = random_input(n.outputs[0].type.shape, rng, fill);
        float_inputs[n.name] = synth::to_float_tensor(values[n.name]);
    }
    for (const NodeId id : g.weights()) {
        const Node& n = g.node(id);
        ExactTensor w = synth::random_exact_tensor(n.outputs[0].type.shape, rng, fill.bound);
        g.set_weight_data(id, std::make_shared<const Tensor>(synth::to_float_tensor(w)));
        if (fill.weights_in_map) values[n.name] = std::move(w);
    }
    return {synth::exact_run(g, values), exec::Executor{}.run(g, float_inputs).outputs};
}

/// Checks every element of every output; returns how many exact elements are non-zero
/// (so that a case cannot pass by computing nothing).
std::size_t check_outputs(const BothRuns& runs, Match match) {
    REQUIRE(runs.exact.size() == runs.floats.size());
    std::size_t nonzero = 0;
    for (std::size_t o = 0; o < runs.exact.size(); ++o) {
        const ExactTensor& exact = runs.exact[o];
        const std::span<const float> floats = runs.floats[o].floats();
        REQUIRE(exact.shape == runs.floats[o].shape());
        REQUIRE(exact.values.size() == floats.size());
        std::size_t mismatches = 0, first = 0;
        for (std::size_t i = 0; i < floats.size(); ++i) {
            const double e = exact.values[i].to_double(), f = floats[i];
            const bool same = match == Match::exact ? e == f : std::abs(e - f) <= 1e-5 * std::max(1.0, std::abs(f));
            if (!same && mismatches++ == 0) first = i;
            nonzero += exact.values[i].is_zero() ? 0 : 1;
        }
        INFO("output " << o << ", first mismatch at " << first << ": exact "
                       << (mismatches ? exact.values[first].to_string() : "-") << " vs float "
                       << (mismatches ? floats[first] : 0.0f));
        CHECK(mismatches == 0);
    }
    return nonzero;
}

/// A graph of one `op` node over graph inputs of `inputs` shapes then weights of `weights`
/// shapes, every output a graph output.
Graph single_op(OpKind op, const std::vector<Shape>& inputs, const std::vector<Shape>& weights, Attributes attributes) {
    Graph g;
    std::vector<TensorRef> refs;
    for (std::size_t i = 0; i < inputs.size(); ++i)
        refs.push_back({g.add_input("x" + std::to_string(i), f32(inputs[i])), 0});
    for (std::size_t i = 0; i < weights.size(); ++i)
        refs.push_back({g.add_weight("w" + std::to_string(i), f32(weights[i])), 0});
    const NodeId node = g.add_node(op, refs, std::move(attributes), "op");
    for (std::uint32_t i = 0; i < g.node(node).outputs.size(); ++i) g.add_output({node, i});
    return g;
}

/// One op configuration checked against the float executor.
struct OpCase {
    OpKind op;
    std::vector<Shape> inputs;
    std::vector<Shape> weights;
    Attributes attributes;
    Match match = Match::exact;
    Fill fill{};
};

void check_case(const OpCase& c, std::size_t index) {
    CAPTURE(index);
    INFO(op_name(c.op) << " case " << index);
    const std::size_t nonzero =
        check_outputs(run_both(single_op(c.op, c.inputs, c.weights, c.attributes), c.fill), c.match);
    CHECK(nonzero > 0);
}

void check_cases(const std::vector<OpCase>& cases) {
    for (std::size_t i = 0; i < cases.size(); ++i) check_case(cases[i], i);
}

std::int64_t int_attr(std::int64_t v) { return v; }

}  // namespace

// ---- arithmetic ------------------------------------------------------------------------

TEST_CASE("exact arithmetic satisfies the ring laws on random integers and fractions") {
    Rng rng(2024);
    constexpr int trials = 300;
    for (int trial = 0; trial < trials; ++trial) {
        const Exact a = random_value(rng), b = random_value(rng), c = random_value(rng);
        CAPTURE(a.to_string());
        CAPTURE(b.to_string());
        CAPTURE(c.to_string());
        CHECK(a + b == b + a);
        CHECK((a + b) + c == a + (b + c));
        CHECK(a * b == b * a);
        CHECK((a * b) * c == a * (b * c));
        CHECK(a * (b + c) == a * b + a * c);
        CHECK(a - b == a + (-b));
        CHECK(a - a == Exact{});
        CHECK(a + Exact{} == a);
        CHECK(a * integer(1) == a);
        CHECK(-(-a) == a);
    }
}

TEST_CASE("exact division by a 7-smooth count is undone by multiplying by it") {
    CHECK(fraction(1, 4) + fraction(1, 4) == fraction(1, 2));
    CHECK(fraction(1, 3) + fraction(1, 6) == fraction(1, 2));
    CHECK(fraction(7, 9) * integer(9) == integer(7));
    CHECK(fraction(1, 2) * integer(2) == integer(1));
    CHECK(fraction(-6, 4) == fraction(-3, 2));
    Rng rng(5);
    for (const std::int64_t count :
         {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 12, 14, 16, 18, 20, 21, 25, 27, 32, 35, 36, 49, 64, 343}) {
        const Exact x = random_value(rng);
        CAPTURE(count);
        CAPTURE(x.to_string());
        CHECK(x.divided_by(count) * integer(count) == x);
        CHECK(x.divided_by(count).divided_by(count) == x.divided_by(count * count));
    }
}

TEST_CASE("exact values have one representation, so equal values have equal residues") {
    const std::vector<Exact> halves{fraction(1, 2),
                                    fraction(3, 6),
                                    fraction(105, 210),
                                    fraction(1, 4) + fraction(1, 4),
                                    fraction(1, 420) * integer(210),
                                    integer(1) - fraction(1, 2),
                                    Exact::from_double(0.5)};
    for (const Exact& h : halves) {
        CAPTURE(h.to_string());
        CHECK(h == halves.front());
        CHECK(h.to_string() == "105/210^1");
        CHECK(h.exponent() == 1);
        CHECK(h.residue() == halves.front().residue());
        CHECK(h.to_double() == 0.5);
    }
    // A value that is an integer again drops its exponent.
    CHECK(fraction(210, 210).exponent() == 0);
    CHECK(fraction(210, 210) == integer(1));
    CHECK((fraction(1, 2) * integer(2)).exponent() == 0);
    CHECK((fraction(1, 2) - fraction(1, 2)).exponent() == 0);
    CHECK((fraction(1, 2) - fraction(1, 2)) == Exact{});
    CHECK(fraction(1, 2) != fraction(1, 3));
    CHECK(fraction(1, 2).residue() != fraction(1, 3).residue());
}

TEST_CASE("exact residue is a ring homomorphism onto the integers mod 2^61 - 1") {
    CHECK(integer(0).residue() == 0);
    CHECK(integer(1).residue() == 1);
    CHECK(integer(-1).residue() == fingerprint_prime - 1);
    CHECK(mul_mod(fraction(1, 210).residue(), 210) == 1);
    CHECK(mul_mod(fraction(-1, 2).residue(), 2) == fingerprint_prime - 1);
    Rng rng(99);
    constexpr int trials = 300;
    for (int trial = 0; trial < trials; ++trial) {
        const Exact a = random_value(rng), b = random_value(rng);
        CAPTURE(a.to_string());
        CAPTURE(b.to_string());
        CHECK(a.residue() < fingerprint_prime);
        CHECK((a * b).residue() == mul_mod(a.residue(), b.residue()));
        CHECK((a + b).residue() == add_mod(a.residue(), b.residue()));
        CHECK(add_mod((a - b).residue(), b.residue()) == a.residue());
        CHECK(add_mod((-a).residue(), a.residue()) == 0);
    }
    // Numerators past 2^64 reduce correctly: 2^100 = 2^(100 mod 61) = 2^39 (mod 2^61 - 1).
    CHECK(Exact::from_double(0x1p100).residue() == (std::uint64_t{1} << 39));
    CHECK(Exact::from_double(-0x1p100).residue() == fingerprint_prime - (std::uint64_t{1} << 39));
}

TEST_CASE("exact arithmetic throws exact_error on overflow and on counts with a prime factor above 7") {
    Exact x = integer(3), expected = integer(1);
    for (int i = 0; i < 64; ++i) expected = expected * integer(3);
    for (int i = 0; i < 6; ++i) x = x * x;  // 3^64 < 2^102 fits
    CHECK(x == expected);
    CHECK_THROWS_WITH_AS(x * x, doctest::Contains("128-bit overflow"), exact_error);  // 3^128 > 2^202
    const Exact big = Exact::from_double(0x1p126);
    CHECK_THROWS_WITH_AS(big + big, doctest::Contains("overflow"), exact_error);
    CHECK_THROWS_AS(-big - big - big, exact_error);
    CHECK_THROWS_AS(-Exact::from_double(-0x1p127), exact_error);
    CHECK_THROWS_AS((void)fraction(1, 2).divided_by(std::int64_t{1} << 40).divided_by(std::int64_t{1} << 40),
                    exact_error);
    // Tiny fractions overflow too: 1 / 2^19 needs 105^19 > 2^127.
    Exact tiny = integer(1);
    CHECK_THROWS_AS(
        [&] {
            for (int i = 0; i < 19; ++i) tiny = tiny.divided_by(2);
        }(),
        exact_error);
    CHECK_THROWS_WITH_AS((void)integer(22).divided_by(11), doctest::Contains("prime factor above 7"), exact_error);
    CHECK_THROWS_WITH_AS((void)integer(22).divided_by(22), doctest::Contains("prime factor above 7"), exact_error);
    CHECK_THROWS_AS((void)integer(1).divided_by(13 * 8), exact_error);
    CHECK_THROWS_WITH_AS((void)integer(1).divided_by(0), doctest::Contains("positive"), exact_error);
    CHECK_THROWS_AS((void)integer(1).divided_by(-4), exact_error);
}

TEST_CASE("exact comparison orders integers, fractions and negatives") {
    CHECK(fraction(-1, 2) < fraction(-1, 3));
    CHECK(fraction(-1, 3) < Exact{});
    CHECK(Exact{} < fraction(1, 7));
    CHECK(fraction(1, 7) < fraction(1, 6));
    CHECK(fraction(1, 6) < integer(1));
    CHECK(fraction(5, 4) > integer(1));
    CHECK(fraction(2, 4) <= fraction(1, 2));
    CHECK((fraction(4, 8) <=> fraction(1, 2)) == std::strong_ordering::equal);
    CHECK((integer(-3) <=> fraction(-5, 2)) == std::strong_ordering::less);
    // Exponents too far apart to align still compare: 1/210^17 against integers.
    Exact tiny = integer(1);
    for (int i = 0; i < 17; ++i) tiny = tiny * fraction(1, 210);
    REQUIRE(tiny.exponent() == 17);
    const Exact huge = Exact::from_double(0x1p100);
    CHECK(tiny > Exact{});
    CHECK(tiny < huge);
    CHECK(-huge < tiny);
    CHECK(-tiny < Exact{});
    CHECK(-tiny > -huge);
    CHECK(tiny < fraction(1, 210));
    // Sorting random values by <=> sorts them by their doubles.
    Rng rng(11);
    std::vector<Exact> values;
    for (int i = 0; i < 200; ++i) values.push_back(random_value(rng));
    std::sort(values.begin(), values.end());
    for (std::size_t i = 1; i < values.size(); ++i) CHECK(values[i - 1].to_double() <= values[i].to_double());
}

TEST_CASE("exact conversion from doubles takes integers and short binary fractions only") {
    CHECK(Exact::from_double(3.0) == integer(3));
    CHECK(Exact::from_double(-1.25) == fraction(-5, 4));
    CHECK(Exact::from_double(0x1p-18) == integer(1).divided_by(std::int64_t{1} << 18));
    CHECK(Exact::from_double(0x1p80).to_double() == 0x1p80);
    CHECK_FALSE(Exact::try_from_double(0.1).has_value());
    CHECK_FALSE(Exact::try_from_double(0x1p-19).has_value());
    CHECK_FALSE(Exact::try_from_double(0x1p127).has_value());
    CHECK_FALSE(Exact::try_from_double(std::numeric_limits<double>::infinity()).has_value());
    CHECK_THROWS_WITH_AS((void)Exact::from_double(0.1), doctest::Contains("210^e"), exact_error);
}

TEST_CASE("random_exact_tensor is deterministic under a seed and stays within its bound") {
    const Shape shape{4, 8, 16};
    Rng first(42), second(42), other(43);
    const ExactTensor a = synth::random_exact_tensor(shape, first, 3);
    CHECK(a == synth::random_exact_tensor(shape, second, 3));
    CHECK_FALSE(a == synth::random_exact_tensor(shape, other, 3));
    CHECK(a.shape == shape);
    REQUIRE(a.values.size() == 512);
    std::array<int, 7> seen{};
    for (const Exact& v : a.values) {
        REQUIRE(v.is_integer());
        REQUIRE(v >= integer(-3));
        REQUIRE(v <= integer(3));
        ++seen[static_cast<std::size_t>(v.numerator() + 3)];
    }
    CHECK(std::all_of(seen.begin(), seen.end(), [](int count) { return count > 0; }));
    Rng zero_rng(1);
    const ExactTensor zeros = synth::random_exact_tensor(shape, zero_rng, 0);
    CHECK(std::all_of(zeros.values.begin(), zeros.values.end(), [](const Exact& v) { return v.is_zero(); }));
    CHECK_THROWS_AS((void)synth::random_exact_tensor(shape, zero_rng, -1), precondition_error);
}

TEST_CASE("exact_from_tensor takes integer-valued floats and refuses fractions") {
    const Tensor t = Tensor::from_floats({2, 2}, {-3.0f, 0.0f, 7.0f, 16777216.0f});
    const ExactTensor e = synth::exact_from_tensor(t);
    CHECK(e.shape == t.shape());
    CHECK(e.values == std::vector<Exact>{integer(-3), integer(0), integer(7), integer(16777216)});
    CHECK(synth::to_float_tensor(e) == t);
    CHECK_THROWS_WITH_AS((void)synth::exact_from_tensor(Tensor::from_floats({2}, {1.0f, 0.5f})),
                         doctest::Contains("element 1"), exact_error);
    CHECK_THROWS_AS(
        (void)synth::exact_from_tensor(Tensor::from_values(DType::Int64, {1}, std::vector<std::int64_t>{1})),
        exact_error);
}

// ---- ops against the float executor --------------------------------------------------------

TEST_CASE("exact Conv2D equals the float executor over strides, pads, groups, dilations, bias and relu") {
    const Attributes relu{{"activation", int_attr(1)}};
    check_cases({
        {OpKind::Conv2D, {{2, 4, 5, 5}}, {{4, 4, 3, 3}}, {}},
        {OpKind::Conv2D, {{2, 4, 5, 5}}, {{4, 4, 3, 3}, {4}}, {{"pads", Ints{1, 1, 1, 1}}}},
        {OpKind::Conv2D,
         {{1, 4, 7, 6}},
         {{6, 2, 3, 3}, {6}},
         {{"group", int_attr(2)}, {"strides", Ints{2, 2}}, {"pads", Ints{0, 1, 1, 2}}, {"activation", int_attr(1)}}},
        {OpKind::Conv2D,
         {{1, 3, 6, 6}},
         {{3, 1, 3, 3}},
         {{"group", int_attr(3)}, {"dilations", Ints{2, 2}}, {"pads", Ints{2, 2, 2, 2}}}},
        {OpKind::Conv2D, {{2, 2, 5, 7}}, {{3, 2, 1, 1}}, relu},
        {OpKind::Conv2D,
         {{1, 2, 8, 5}},
         {{2, 2, 3, 1}},
         {{"strides", Ints{2, 1}}, {"dilations", Ints{1, 2}}, {"pads", Ints{1, 0, 2, 0}}}},
        {OpKind::Conv2D,
         {{1, 2, 6, 6}},
         {{4, 2, 3, 3}, {4}},
         {{"pads", Ints{1, 1, 1, 1}}},
         Match::exact,
         {.seed = 3, .input_scale = 0.25}},
        {OpKind::Conv2D,
         {{1, 4, 5, 5}},
         {{4, 2, 3, 3}},
         {{"group", int_attr(2)}, {"activation", int_attr(1)}},
         Match::exact,
         {.seed = 4, .input_scale = 0.25, .weights_in_map = true}},
        {OpKind::Conv2D,
         {{1, 4, 5, 5}},
         {{4, 4, 3, 3}},
         {{"pads", Ints{1, 1, 1, 1}}, {"activation", int_attr(1)}},
         Match::exact,
         {.seed = 9, .input_scale = 0x1p32}},
    });
}

TEST_CASE("exact MatMul and Gemm equal the float executor, with 1-D operands and batch broadcasting") {
    const Fill quarters{.seed = 8, .input_scale = 0.25};
    check_cases({
        {OpKind::MatMul, {{2, 3}, {3, 4}}, {}, {}},
        {OpKind::MatMul, {{3}, {3, 4}}, {}, {}},
        {OpKind::MatMul, {{2, 3}, {3}}, {}, {}},
        {OpKind::MatMul, {{4}, {4}}, {}, {}},
        {OpKind::MatMul, {{2, 1, 3, 4}, {5, 4, 2}}, {}, {}},
        {OpKind::MatMul, {{3, 2, 4}, {4, 5}}, {}, {}},
        {OpKind::MatMul, {{2, 3, 4}, {1, 4, 2}}, {}, {}, Match::exact, quarters},
        {OpKind::MatMul, {{2, 3, 4}, {4, 2}}, {}, {}, Match::exact, {.seed = 9, .input_scale = 0x1p32}},
        {OpKind::Gemm, {{3, 4}}, {{4, 5}, {5}}, {{"alpha", 2.0}}},
        {OpKind::Gemm, {{4, 3}}, {{5, 4}, {3, 5}}, {{"transA", int_attr(1)}, {"transB", int_attr(1)}, {"beta", 0.5}}},
        {OpKind::Gemm, {{3, 4}}, {{5, 4}, {1, 1}}, {{"transB", int_attr(1)}, {"beta", 0.0}}, Match::exact, quarters},
    });
}

TEST_CASE("exact Add, Sub, Mul and Relu broadcast like the float executor") {
    check_cases({
        {OpKind::Add, {{2, 3, 4}, {2, 3, 4}}, {}, {}},
        {OpKind::Sub, {{2, 3, 4}, {3, 1}}, {}, {}},
        {OpKind::Mul, {{2, 1, 4}, {1, 3, 1}}, {}, {}},
        {OpKind::Add, {Shape{}, {2, 3}}, {}, {}},
        {OpKind::Mul, {{2, 3}, {1}}, {}, {}, Match::exact, {.seed = 5}},
        {OpKind::Sub, {{1}, {4, 2}}, {}, {}},
        {OpKind::Mul, {{2, 3}, {3}}, {}, {}, Match::exact, {.seed = 6, .input_scale = 0.25}},
        {OpKind::Relu, {{2, 3, 4}}, {}, {}},
        {OpKind::Relu, {{2, 5}}, {}, {}, Match::exact, {.seed = 2, .input_scale = 0.25}},
    });
}

TEST_CASE("exact views, Concat, Split and Transpose equal the float executor") {
    check_cases({
        {OpKind::Identity, {{2, 3}}, {}, {}},
        {OpKind::Reshape, {{2, 3, 4}}, {}, {{"shape", Ints{6, -1}}}},
        {OpKind::Flatten, {{2, 3, 4, 5}}, {}, {{"axis", int_attr(2)}}},
        {OpKind::Flatten, {{2, 3}}, {}, {{"axis", int_attr(0)}}},
        {OpKind::Concat, {{2, 1, 3}, {2, 2, 3}, {2, 3, 3}}, {}, {{"axis", int_attr(1)}}},
        {OpKind::Concat, {{2, 3, 1}, {2, 3, 2}}, {}, {{"axis", int_attr(-1)}}},
        {OpKind::Concat, {{1, 2, 3}, {2, 2, 3}}, {}, {{"axis", int_attr(-3)}}},
        {OpKind::Split, {{3, 4}}, {}, {{"axis", int_attr(0)}, {"split", Ints{1, 2}}}},
        {OpKind::Split, {{2, 5}}, {}, {{"axis", int_attr(-1)}, {"split", Ints{2, 0, 3}}}},
        {OpKind::Split, {{2, 6, 2}}, {}, {{"axis", int_attr(1)}, {"split", Ints{1, 3, 2}}}},
        {OpKind::Transpose, {{2, 3, 4}}, {}, {}},
        {OpKind::Transpose, {{2, 3, 4, 5}}, {}, {{"perm", Ints{0, 2, 3, 1}}}},
    });
}

TEST_CASE("exact pools equal the float executor, count_include_pad and ceil_mode included") {
    const Fill negative{.seed = 12, .negative_inputs = true};
    const auto average = [](Ints kernel, Ints strides, Ints pads, std::int64_t include_pad) {
        return Attributes{{"kernel_shape", std::move(kernel)},
                          {"strides", std::move(strides)},
                          {"pads", std::move(pads)},
                          {"count_include_pad", include_pad}};
    };
    Attributes ceil_average = average({3, 3}, {2, 2}, {1, 1, 1, 1}, 1);
    ceil_average.set("ceil_mode", int_attr(1));
    Attributes dilated = average({2, 2}, {1, 1}, {0, 0, 0, 0}, 0);
    dilated.set("dilations", Ints{2, 2});
    check_cases({
        {OpKind::AveragePool, {{2, 3, 5, 5}}, {}, average({3, 3}, {1, 1}, {1, 1, 1, 1}, 0), Match::close},
        {OpKind::AveragePool, {{2, 3, 5, 5}}, {}, average({3, 3}, {1, 1}, {1, 1, 1, 1}, 1), Match::close},
        {OpKind::AveragePool, {{1, 2, 6, 7}}, {}, average({2, 2}, {2, 2}, {0, 1, 1, 0}, 0), Match::close},
        {OpKind::AveragePool, {{1, 2, 6, 7}}, {}, average({2, 2}, {2, 2}, {0, 1, 1, 0}, 1), Match::close},
        {OpKind::AveragePool, {{1, 2, 6, 6}}, {}, ceil_average, Match::close},
        {OpKind::AveragePool, {{1, 2, 6, 6}}, {}, dilated, Match::close, {.seed = 5, .input_scale = 0.25}},
        {OpKind::MaxPool,
         {{2, 3, 5, 5}},
         {},
         {{"kernel_shape", Ints{3, 3}}, {"strides", Ints{2, 2}}, {"pads", Ints{1, 1, 1, 1}}},
         Match::exact,
         negative},
        {OpKind::MaxPool,
         {{1, 2, 4, 5}},
         {},
         {{"kernel_shape", Ints{2, 2}}, {"pads", Ints{1, 0, 0, 1}}},
         Match::exact,
         negative},
        {OpKind::MaxPool,
         {{1, 2, 6, 6}},
         {},
         {{"kernel_shape", Ints{3, 3}},
          {"strides", Ints{2, 2}},
          {"pads", Ints{1, 1, 1, 1}},
          {"ceil_mode", int_attr(1)}}},
        {OpKind::GlobalAveragePool, {{2, 3, 5, 5}}, {}, {}, Match::close},
        {OpKind::GlobalAveragePool, {{1, 2, 3, 4}}, {}, {}, Match::close},
        {OpKind::GlobalAveragePool, {{1, 2, 2, 7}}, {}, {}, Match::close},
    });
}

TEST_CASE("exact Pad, ReduceMean, Clip, Enlarge and MergeGConv equal the float executor") {
    check_cases({
        {OpKind::Pad, {{2, 3, 4}}, {}, {{"pads", Ints{1, 0, 2, 0, 1, 1}}}},
        {OpKind::Pad, {{2, 3, 4}}, {}, {{"pads", Ints{0, -1, 1, 1, 2, -1}}, {"value", 2.0}}},
        {OpKind::Pad, {{5}}, {}, {{"pads", Ints{2, 1}}, {"value", -0.5}}},
        {OpKind::ReduceMean, {{2, 3, 4}}, {}, {{"axes", Ints{1}}}, Match::close},
        {OpKind::ReduceMean, {{2, 3, 4}}, {}, {}, Match::close, {.seed = 7}},
        {OpKind::ReduceMean, {{2, 3, 4}}, {}, {{"axes", Ints{0, -1}}, {"keepdims", int_attr(0)}}, Match::close},
        {OpKind::Clip, {{3, 4}}, {}, {{"min", 0.0}, {"max", 6.0}}, Match::exact, {.seed = 3, .bound = 8}},
        {OpKind::Clip, {{3, 4}}, {}, {{"min", -1.5}}, Match::exact, {.seed = 4, .input_scale = 0.25}},
        {OpKind::Enlarge, {{2, 3, 1, 1}}, {}, {{"kernel_shape", Ints{3, 3}}}},
        {OpKind::Enlarge, {{2, 2, 3, 1}}, {}, {{"kernel_shape", Ints{5, 3}}}},
        {OpKind::MergeGConv, {{8, 2, 3, 3}}, {}, {{"count", int_attr(2)}, {"group", int_attr(4)}}},
        {OpKind::MergeGConv, {{6, 1, 1, 1}}, {}, {{"count", int_attr(3)}, {"group", int_attr(3)}}},
    });
}

TEST_CASE("exact Slice, Expand, ReduceSum, ReduceMax, nearest Resize and LeakyRelu equal the float executor") {
    const auto resize = [](std::string coordinates, std::string rounding, std::vector<double> scales) {
        return Attributes{{"mode", std::string("nearest")},
                          {"coordinate_transformation_mode", std::move(coordinates)},
                          {"nearest_mode", std::move(rounding)},
                          {"scales", std::move(scales)}};
    };
    check_cases({
        {OpKind::Slice, {{2, 3, 5, 5}}, {}, {{"starts", Ints{0, 0, 0, 1}}, {"ends", Ints{2, 3, 5, 5}}, {"steps", Ints{1, 1, 2, 2}}}},
        {OpKind::Slice, {{4, 6}}, {}, {{"starts", Ints{-1, 5}}, {"ends", Ints{-5, 0}}, {"steps", Ints{-2, -3}}}},
        {OpKind::Slice, {{3, 4, 2}}, {}, {{"starts", Ints{1, 0, 0}}, {"ends", Ints{3, 100, 1}}}},
        {OpKind::Expand, {{4}}, {}, {{"shape", Ints{2, 4}}}},
        {OpKind::Expand, {{3, 1}}, {}, {{"shape", Ints{2, 1, 5}}}},
        {OpKind::Expand, {{2, 3}}, {}, {{"shape", Ints{1}}}},
        {OpKind::ReduceSum, {{2, 3, 4}}, {}, {{"axes", Ints{1}}}},
        {OpKind::ReduceSum, {{2, 3, 4}}, {}, {{"axes", Ints{0, -1}}, {"keepdims", int_attr(0)}}, Match::exact, {.seed = 4}},
        {OpKind::ReduceMax, {{2, 3, 4}}, {}, {{"axes", Ints{1}}}},
        {OpKind::ReduceMax, {{2, 3, 4}}, {}, {}, Match::exact, {.seed = 9, .negative_inputs = true}},
        {OpKind::ReduceMax, {{3, 5}}, {}, {{"axes", Ints{-1}}, {"keepdims", int_attr(0)}}, Match::exact, {.seed = 2, .input_scale = 0.25}},
        {OpKind::Resize, {{1, 2, 3, 3}}, {}, resize("asymmetric", "floor", {1.0, 1.0, 2.0, 2.0})},
        {OpKind::Resize, {{2, 1, 4, 6}}, {}, resize("half_pixel", "round_prefer_ceil", {1.0, 1.0, 0.5, 1.5})},
        {OpKind::Resize, {{1, 1, 3, 5}}, {}, resize("align_corners", "round_prefer_floor", {1.0, 1.0, 3.0, 0.6})},
        {OpKind::LeakyRelu, {{3, 4}}, {}, {{"alpha", 0.25}}, Match::exact, {.seed = 6, .input_scale = 0.5}},
        {OpKind::LeakyRelu, {{2, 5}}, {}, {{"alpha", -1.5}}},
    });
}

TEST_CASE("exact ReduceMax over an empty axis throws exact_error, as a float -infinity has no exact form") {
    const Graph g = single_op(OpKind::ReduceMax, {{2, 0}}, {}, {{"axes", Ints{1}}});
    std::map<std::string, ExactTensor> values{{"x0", ExactTensor::zeros(Shape{2, 0})}};
    CHECK_THROWS_AS(synth::exact_run(g, values), exact_error);
}

TEST_CASE("exact_run runs a multi-op graph with weights from data or values and constants") {
    Graph g;
    const TensorRef x{g.add_input("x", f32({1, 4, 6, 6})), 0};
    const TensorRef w{g.add_weight("conv.w", f32({4, 4, 3, 3})), 0};
    const TensorRef b{g.add_weight("conv.b", f32({4})), 0};
    const TensorRef conv{
        g.add_node(OpKind::Conv2D, {x, w, b}, {{"pads", Ints{1, 1, 1, 1}}, {"activation", int_attr(1)}}, "conv"), 0};
    const TensorRef pooled{
        g.add_node(OpKind::AveragePool, {conv}, {{"kernel_shape", Ints{2, 2}}, {"strides", Ints{2, 2}}}, "pool"), 0};
    const NodeId split = g.add_node(OpKind::Split, {pooled}, {{"axis", int_attr(1)}, {"split", Ints{1, 3}}}, "split");
    const TensorRef swapped{g.add_node(OpKind::Concat, {{split, 1}, {split, 0}}, {{"axis", int_attr(-3)}}, "concat"),
                            0};
    const TensorRef shift{g.add_constant("shift", Tensor::from_floats({4, 1, 1}, {1, -2, 3, 0})), 0};
    const TensorRef shifted{g.add_node(OpKind::Sub, {swapped, shift}, {}, "sub"), 0};
    const TensorRef rows{g.add_node(OpKind::Reshape, {shifted}, {{"shape", Ints{4, 9}}}, "rows"), 0};
    const TensorRef head{g.add_weight("head", f32({9, 2})), 0};
    const TensorRef product{g.add_node(OpKind::MatMul, {rows, head}, {}, "head_matmul"), 0};
    g.add_output(product);
    g.add_output({g.add_node(OpKind::Flatten, {shifted}, {}, "flat"), 0});
    for (const bool in_map : {false, true}) {
        CAPTURE(in_map);
        const BothRuns runs = run_both(g, {.seed = 21, .weights_in_map = in_map});
        CHECK(check_outputs(runs, Match::close) > 0);
    }
    // A weight's value in the map wins over its data.
    Graph zeroed = g;
    for (const NodeId id : zeroed.weights())
        zeroed.set_weight_data(id, std::make_shared<const Tensor>(Tensor(zeroed.node(id).outputs[0].type)));
    Rng rng(3);
    std::map<std::string, ExactTensor> values{{"x", synth::random_exact_tensor({1, 4, 6, 6}, rng)}};
    const auto zero_run = synth::exact_run(zeroed, values);
    for (const char* name : {"conv.w", "conv.b", "head"}) {
        const NodeId id = rewrite_test::node_named(zeroed, name);
        values[name] = synth::random_exact_tensor(zeroed.node(id).outputs[0].type.shape, rng);
    }
    const auto mapped_run = synth::exact_run(zeroed, values);
    CHECK_FALSE(mapped_run[0] == zero_run[0]);
    for (const char* name : {"conv.w", "conv.b", "head"})
        zeroed.set_weight_data(rewrite_test::node_named(zeroed, name),
                               std::make_shared<const Tensor>(synth::to_float_tensor(values[name])));
    values.erase("conv.w");
    values.erase("conv.b");
    values.erase("head");
    CHECK(synth::exact_run(zeroed, values) == mapped_run);
}

// ---- refusals ----------------------------------------------------------------------------------

TEST_CASE("exact_run refuses opaque nodes, sigmoids and missing or misshapen values, naming the node") {
    Rng rng(1);
    const std::map<std::string, ExactTensor> values{{"x", synth::random_exact_tensor({1, 2, 4, 4}, rng)}};
    {
        Graph g;
        const TensorRef x{g.add_input("x", f32({1, 2, 4, 4})), 0};
        g.add_output({g.add_opaque("Mystery", "", {x}, {f32({1, 2, 4, 4})}, {}, "oracle"), 0});
        CHECK_THROWS_WITH_AS((void)synth::exact_run(g, values), doctest::Contains("Mystery node 'oracle'"),
                             graph_error);
    }
    {
        Graph g;
        const TensorRef x{g.add_input("x", f32({1, 2, 4, 4})), 0};
        g.add_output({g.add_node(OpKind::Sigmoid, {x}, {}, "squash"), 0});
        CHECK_THROWS_WITH_AS((void)synth::exact_run(g, values), doctest::Contains("Sigmoid node 'squash'"),
                             exact_error);
        CHECK_THROWS_WITH_AS((void)synth::exact_run(g, values), doctest::Contains("no exact form"), exact_error);
        Rng other(2);
        const std::map<std::string, ExactTensor> wrong{{"x", synth::random_exact_tensor({1, 2, 4, 5}, other)}};
        CHECK_THROWS_AS((void)synth::exact_run(g, wrong), exact_error);  // the refusal comes before any value
    }
    {
        Graph g;
        const TensorRef x{g.add_input("x", f32({1, 2, 4, 4})), 0};
        const TensorRef w{g.add_weight("w", f32({2, 2, 3, 3})), 0};
        g.add_output({g.add_node(OpKind::Conv2D, {x, w}, {{"activation", int_attr(2)}}, "gate"), 0});
        CHECK_THROWS_WITH_AS((void)synth::exact_run(g, values), doctest::Contains("Conv2D node 'gate'"), exact_error);
        CHECK_THROWS_WITH_AS((void)synth::exact_run(g, values), doctest::Contains("sigmoid"), exact_error);
    }
    {
        Graph g;
        const TensorRef x{g.add_input("x", f32({1, 2, 4, 4})), 0};
        const TensorRef w{g.add_weight("w", f32({2, 2, 1, 1})), 0};
        g.add_output({g.add_node(OpKind::Conv2D, {x, w}, {}, "conv"), 0});
        CHECK_THROWS_WITH_AS((void)synth::exact_run(g, values), doctest::Contains("neither a value nor data"),
                             precondition_error);
        CHECK_THROWS_WITH_AS((void)synth::exact_run(g, {}), doctest::Contains("no value for graph input 'x'"),
                             precondition_error);
        g.set_weight_data(w.node, std::make_shared<const Tensor>(Tensor::from_floats({2, 2, 1, 1}, {1, 2, 0.5f, 3})));
        CHECK_THROWS_WITH_AS((void)synth::exact_run(g, values), doctest::Contains("Weight node 'w'"), exact_error);
        Rng other(2);
        const std::map<std::string, ExactTensor> wrong{{"x", synth::random_exact_tensor({1, 2, 4, 5}, other)}};
        CHECK_THROWS_WITH_AS((void)synth::exact_run(g, wrong), doctest::Contains("(1,2,4,5)"), shape_error);
    }
}

TEST_CASE("exact MaxPool over padding only and averages over 11 elements throw exact_error") {
    Graph g;
    const TensorRef x{g.add_input("x", f32({1, 1, 1, 11})), 0};
    g.add_output(
        {g.add_node(OpKind::MaxPool, {x}, {{"kernel_shape", Ints{1, 1}}, {"pads", Ints{1, 0, 0, 0}}}, "pool"), 0});
    Rng rng(4);
    const std::map<std::string, ExactTensor> values{{"x", synth::random_exact_tensor({1, 1, 1, 11}, rng)}};
    // The float kernel's answer for that window: the lowest float, which no Exact holds.
    const std::vector<Tensor> float_inputs{synth::to_float_tensor(values.at("x"))};
    const auto floats = exec::Executor{}.run(g, float_inputs).outputs;
    CHECK(floats[0].floats()[0] == std::numeric_limits<float>::lowest());
    CHECK_THROWS_WITH_AS((void)synth::exact_run(g, values), doctest::Contains("MaxPool node 'pool'"), exact_error);
    CHECK_THROWS_WITH_AS((void)synth::exact_run(g, values), doctest::Contains("only padding"), exact_error);

    Graph average;
    const TensorRef y{average.add_input("x", f32({1, 1, 1, 11})), 0};
    average.add_output({average.add_node(OpKind::AveragePool, {y}, {{"kernel_shape", Ints{1, 11}}}, "mean11"), 0});
    CHECK_THROWS_WITH_AS((void)synth::exact_run(average, values), doctest::Contains("AveragePool node 'mean11'"),
                         exact_error);
    CHECK_THROWS_WITH_AS((void)synth::exact_run(average, values), doctest::Contains("divide by 11"), exact_error);
}

TEST_CASE("exact_op runs one op and checks its operands") {
    Rng rng(8);
    const ExactTensor a = synth::random_exact_tensor({2, 3}, rng);
    const ExactTensor b = synth::random_exact_tensor({3}, rng);
    const std::vector<const ExactTensor*> inputs{&a, &b};
    const std::vector<TensorType> out{f32({2, 3})};
    const auto sum = synth::exact_op(OpKind::Add, {}, inputs, out);
    REQUIRE(sum.size() == 1);
    CHECK(sum[0].shape == Shape{2, 3});
    for (std::size_t i = 0; i < 6; ++i) CHECK(sum[0].values[i] == a.values[i] + b.values[i % 3]);
    CHECK_THROWS_AS((void)synth::exact_op(OpKind::Add, {}, std::vector<const ExactTensor*>{&a}, out),
                    precondition_error);
    CHECK_THROWS_AS((void)synth::exact_op(OpKind::Add, {}, inputs, std::vector<TensorType>{f32({3, 2})}),
                    shape_error);
    CHECK_THROWS_WITH_AS((void)synth::exact_op(OpKind::Sigmoid, {}, std::vector<const ExactTensor*>{&a}, out),
                         doctest::Contains("Sigmoid"), exact_error);
    CHECK_THROWS_AS((void)synth::exact_op(OpKind::Opaque, {}, inputs, out), graph_error);
    CHECK_THROWS_AS((void)synth::exact_op(OpKind::Input, {}, {}, out), precondition_error);
    // exact_op and exact_run agree on a conv.
    const ExactTensor x = synth::random_exact_tensor({1, 2, 5, 5}, rng),
                      w = synth::random_exact_tensor({3, 2, 3, 3}, rng);
    Graph g = single_op(OpKind::Conv2D, {{1, 2, 5, 5}}, {{3, 2, 3, 3}}, {{"strides", Ints{2, 2}}});
    const Node& conv = g.node(rewrite_test::node_named(g, "op"));
    const auto direct = synth::exact_op(OpKind::Conv2D, conv.attributes, std::vector<const ExactTensor*>{&x, &w},
                                          std::vector<TensorType>{conv.outputs[0].type});
    CHECK(direct == synth::exact_run(g, {{"x0", x}, {"w0", w}}));
}

TEST_CASE("exact Conv2D and MatMul agree on integers, fractions and numerators too large for int64 sums") {
    Rng rng(17);
    const ExactTensor x = synth::random_exact_tensor({2, 4, 5, 5}, rng),
                      w = synth::random_exact_tensor({4, 2, 3, 3}, rng);
    ExactTensor half_x = x;
    for (Exact& v : half_x.values) v = v.divided_by(2);
    Graph g = single_op(OpKind::Conv2D, {{2, 4, 5, 5}}, {{4, 2, 3, 3}},
                        {{"group", int_attr(2)}, {"pads", Ints{1, 0, 1, 2}}, {"activation", int_attr(1)}});
    const auto whole = synth::exact_run(g, {{"x0", x}, {"w0", w}});
    const auto halved = synth::exact_run(g, {{"x0", half_x}, {"w0", w}});
    ExactTensor doubled = halved[0];
    for (Exact& v : doubled.values) v = v * integer(2);
    CHECK(doubled == whole[0]);
    CHECK(
        std::any_of(halved[0].values.begin(), halved[0].values.end(), [](const Exact& v) { return !v.is_integer(); }));
    // Numerators too large for int64 sums take the checked multiply-adds and stay exact.
    ExactTensor big_x = x;
    for (Exact& v : big_x.values) v = v * Exact::from_double(0x1p40);
    const auto big = synth::exact_run(g, {{"x0", big_x}, {"w0", w}});
    ExactTensor scaled = whole[0];
    for (Exact& v : scaled.values) v = v * Exact::from_double(0x1p40);
    CHECK(big[0] == scaled);

    // A fractional bias over integer operands: the sums move to the bias's denominator.
    ExactTensor bias = synth::random_exact_tensor({4}, rng);
    for (Exact& v : bias.values) v = v.divided_by(6);
    Graph biased = single_op(OpKind::Conv2D, {{2, 4, 5, 5}}, {{4, 2, 3, 3}, {4}}, {{"group", int_attr(2)}});
    Graph unbiased = single_op(OpKind::Conv2D, {{2, 4, 5, 5}}, {{4, 2, 3, 3}}, {{"group", int_attr(2)}});
    const ExactTensor with_bias = synth::exact_run(biased, {{"x0", x}, {"w0", w}, {"w1", bias}})[0];
    const ExactTensor without = synth::exact_run(unbiased, {{"x0", x}, {"w0", w}})[0];
    REQUIRE(with_bias.values.size() == without.values.size());
    constexpr std::size_t pixels = 3 * 3;  // a 3x3 kernel over a 5x5 plane leaves 3x3
    for (std::size_t i = 0; i < with_bias.values.size(); ++i)
        CHECK(with_bias.values[i] == without.values[i] + bias.values[(i / pixels) % 4]);

    const ExactTensor a = synth::random_exact_tensor({3, 2, 4}, rng), b = synth::random_exact_tensor({4, 5}, rng);
    ExactTensor third_a = a;
    for (Exact& v : third_a.values) v = v.divided_by(3);
    Graph mm = single_op(OpKind::MatMul, {{3, 2, 4}, {4, 5}}, {}, {});
    ExactTensor tripled = synth::exact_run(mm, {{"x0", third_a}, {"x1", b}})[0];
    for (Exact& v : tripled.values) v = v * integer(3);
    CHECK(tripled == synth::exact_run(mm, {{"x0", a}, {"x1", b}})[0]);
}

TEST_CASE("has_exact_form tells which ops and attributes have an exact form") {
    CHECK(synth::has_exact_form(OpKind::Conv2D, {{"activation", int_attr(1)}}));
    CHECK_FALSE(synth::has_exact_form(OpKind::Conv2D, {{"activation", int_attr(2)}}));
    CHECK_FALSE(synth::has_exact_form(OpKind::Conv2D, {{"activation", int_attr(3)}}));
    CHECK(synth::has_exact_form(OpKind::MatMul, {}));
    CHECK(synth::has_exact_form(OpKind::AveragePool, {}));
    CHECK_FALSE(synth::has_exact_form(OpKind::Sigmoid, {}));
    CHECK_FALSE(synth::has_exact_form(OpKind::Div, {}));
    CHECK_FALSE(synth::has_exact_form(OpKind::BatchNormalization, {{"epsilon", 1e-5}}));
    CHECK(synth::has_exact_form(OpKind::Gemm, {{"alpha", 0.5}, {"beta", 1.0}}));
    CHECK_FALSE(synth::has_exact_form(OpKind::Gemm, {{"alpha", 0.1}, {"beta", 1.0}}));
    CHECK(synth::has_exact_form(OpKind::Clip, {{"min", 0.0}, {"max", 6.0}}));
    CHECK_FALSE(synth::has_exact_form(OpKind::Clip, {{"min", 0.1}}));
    CHECK(synth::has_exact_form(OpKind::Pad, {{"pads", Ints{1, 1}}, {"mode", std::string("constant")}}));
    CHECK_FALSE(synth::has_exact_form(OpKind::Pad, {{"pads", Ints{1, 1}}, {"mode", std::string("reflect")}}));
    CHECK(synth::has_exact_form(OpKind::LeakyRelu, {{"alpha", 0.25}}));
    CHECK_FALSE(synth::has_exact_form(OpKind::LeakyRelu, {{"alpha", 0.01}}));
    CHECK_FALSE(synth::has_exact_form(OpKind::LeakyRelu, {}));  // ONNX's default alpha, 0.01
    CHECK(synth::has_exact_form(OpKind::Resize, {{"mode", std::string("nearest")}}));
    CHECK_FALSE(synth::has_exact_form(OpKind::Resize, {{"mode", std::string("linear")}}));
    CHECK(synth::has_exact_form(OpKind::Slice, {}));
    CHECK(synth::has_exact_form(OpKind::ReduceMax, {}));
    CHECK(synth::has_exact_form(OpKind::Expand, {}));
    CHECK_FALSE(synth::has_exact_form(OpKind::HardSwish, {}));
    CHECK_FALSE(synth::has_exact_form(OpKind::Gather, {}));
    CHECK_FALSE(synth::has_exact_form(OpKind::Input, {}));
    CHECK_FALSE(synth::has_exact_form(OpKind::Opaque, {}));
}
