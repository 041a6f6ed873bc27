// The modules: Linear, LayerNorm inside an Mlp. Values against hand computations,
// gradients of every parameter and of the input against finite differences in float64,
// orthogonal initialisation, parameter names and order, and shape errors.
#include "gradient_check.hpp"

#include <rlflow/nn/backend/eigen.hpp>
#include <rlflow/nn/layers.hpp>

#include <Eigen/Core>

#include <array>
#include <cmath>
#include <functional>
#include <string>
#include <utility>
#include <vector>

using namespace nn_test;
namespace nn = rlflow::nn;

namespace {

using Forward = std::function<V(nn::Tape<Double>&, V)>;

/// The gradient check of a module on one input: every module parameter and the input,
/// through weighted_sum of forward(input), which must have `output_shape`.
double check_module_gradients(std::vector<P*> params, const Forward& forward, const T& input_value, const Shape& output_shape) {
    P input("input", input_value);
    params.push_back(&input);
    return check_parameter_gradients(params, [&](nn::Tape<Double>& tape) {
        const V out = forward(tape, tape.parameter(input));
        REQUIRE(out.shape() == output_shape);
        return weighted_sum(tape, out, 7);
    });
}

/// W^T W for a (rows, cols) row-major matrix.
Eigen::MatrixXd gram_of_columns(const std::vector<double>& w, std::int64_t rows, std::int64_t cols) {
    const Eigen::Map<const Eigen::Matrix<double, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>> m(w.data(), rows, cols);
    return m.transpose() * m;
}

}  // namespace

TEST_CASE("linear computes x W + b, and its gradients match finite differences for matrix and batched input") {
    Rng rng(3);
    nn::Linear<Double> linear("fc", 4, 3, rng);
    linear.weight().value = random_tensor(Shape{4, 3}, rng);
    linear.bias().value = random_tensor(Shape{3}, rng);

    nn::Tape<Double> tape;
    const auto w = linear.weight().value.to_host();
    const auto b = linear.bias().value.to_host();
    const std::vector<double> x{1, -2, 0.5, 3};
    const auto y = linear(tape, tape.constant(T::from_host(Shape{1, 4}, x))).value().to_host();
    for (std::size_t j = 0; j < 3; ++j) {
        double expected = b[j];
        for (std::size_t i = 0; i < 4; ++i) expected += x[i] * w[i * 3 + j];
        CHECK(y[j] == doctest::Approx(expected).epsilon(1e-12));
    }

    const Forward forward = [&](nn::Tape<Double>& t, V input) { return linear(t, input); };
    CHECK(check_module_gradients(linear.parameters(), forward, random_tensor(Shape{5, 4}, rng), Shape{5, 3}) < 1e-6);
    // Rank 3: a batch of matrices against one weight matrix.
    CHECK(check_module_gradients(linear.parameters(), forward, random_tensor(Shape{2, 5, 4}, rng), Shape{2, 5, 3}) < 1e-6);
}

TEST_CASE("linear on input blocks equals linear on their concatenation, gathered blocks included, with exact gradients") {
    Rng rng(4);
    nn::Linear<Double> linear("fc", 7, 3, rng);
    linear.bias().value = random_tensor(Shape{3}, rng);
    P edges("edges", random_tensor(Shape{5, 2}, rng));
    P nodes("nodes", random_tensor(Shape{4, 3}, rng));
    P globals("globals", random_tensor(Shape{1, 2}, rng));
    const nn::Indices<Double> receivers({3, 0, 0, 2, 1}, 4);
    const nn::Indices<Double> graph_of_edge({0, 0, 0, 0, 0}, 1);

    const auto blocks = [&](nn::Tape<Double>& tape) {
        const std::array in{nn::InputBlock<Double>{tape.parameter(edges)}, nn::InputBlock<Double>{tape.parameter(nodes), &receivers},
                            nn::InputBlock<Double>{tape.parameter(globals), &graph_of_edge}};
        return linear(tape, in);
    };
    const auto concatenated = [&](nn::Tape<Double>& tape) {
        return linear(tape, nn::concat<Double>({tape.parameter(edges), nn::gather(tape.parameter(nodes), receivers),
                                                nn::gather(tape.parameter(globals), graph_of_edge)},
                                               1));
    };
    nn::Tape<Double> tape;
    const auto by_blocks = blocks(tape).value().to_host();
    const auto by_concat = concatenated(tape).value().to_host();
    REQUIRE(by_blocks.size() == 15);
    for (std::size_t i = 0; i < by_blocks.size(); ++i) CHECK(by_blocks[i] == doctest::Approx(by_concat[i]).epsilon(1e-12));

    std::vector<P*> params = linear.parameters();
    for (P* p : {&edges, &nodes, &globals}) params.push_back(p);
    CHECK(check_parameter_gradients(params, [&](nn::Tape<Double>& t) { return weighted_sum(t, blocks(t), 3); }) < 1e-6);

    // An Mlp reads blocks through its first layer: the same as on the concatenation.
    nn::Mlp<Double> mlp("mlp", {.sizes = {7, 5, 2}, .layer_norm_output = true}, rng);
    const std::array in{nn::InputBlock<Double>{tape.parameter(edges)}, nn::InputBlock<Double>{tape.parameter(nodes), &receivers},
                        nn::InputBlock<Double>{tape.parameter(globals), &graph_of_edge}};
    const auto mlp_blocks = mlp(tape, in).value().to_host();
    const auto mlp_concat = mlp(tape, nn::concat<Double>({tape.parameter(edges), nn::gather(tape.parameter(nodes), receivers),
                                                         nn::gather(tape.parameter(globals), graph_of_edge)},
                                                        1))
                                .value()
                                .to_host();
    REQUIRE(mlp_blocks.size() == 10);
    for (std::size_t i = 0; i < mlp_blocks.size(); ++i) CHECK(mlp_blocks[i] == doctest::Approx(mlp_concat[i]).epsilon(1e-12));
}

TEST_CASE("linear on input blocks rejects blocks that do not fill its input or disagree on rows, naming the layer") {
    Rng rng(2);
    nn::Linear<Double> linear("fc", 4, 3, rng);
    nn::Tape<Double> tape;
    using Block = nn::InputBlock<Double>;
    const V a = tape.constant(T(Shape{2, 3})), b = tape.constant(T(Shape{2, 1})), c = tape.constant(T(Shape{3, 1}));
    CHECK_THROWS_WITH_AS((void)linear(tape, std::array{Block{a}}),
                         "[rlflow.shape_error] linear 'fc' takes 4 features, its input blocks have 3", shape_error);
    CHECK_THROWS_WITH_AS((void)linear(tape, std::array{Block{a}, Block{a}}),
                         "[rlflow.shape_error] linear 'fc' takes 4 features in all; block (2,3) at feature 3 does not fit", shape_error);
    CHECK_THROWS_WITH_AS((void)linear(tape, std::array{Block{a}, Block{c}}),
                         "[rlflow.shape_error] linear 'fc': input blocks of 2 and 3 rows", shape_error);
    const nn::Indices<Double> three_rows({0, 1, 1}, 2);
    CHECK_THROWS_AS((void)linear(tape, std::array{Block{a, &three_rows}, Block{b}}), shape_error);
    CHECK(linear(tape, std::array{Block{a, &three_rows}, Block{c}}).shape() == Shape{3, 3});
    CHECK_THROWS_AS((void)linear(tape, std::span<const Block>{}), precondition_error);
}

TEST_CASE("an mlp with tanh and a layer-normalised output has exact gradients") {
    Rng rng(5);
    nn::MlpOptions options;
    options.sizes = {3, 6, 4};
    options.activation = nn::Activation::tanh;
    options.layer_norm_output = true;
    nn::Mlp<Double> mlp("mlp", options, rng);
    // Non-trivial scale and shift, so their gradients are not the ones at the initial values.
    for (P* p : mlp.parameters())
        if (p->name.ends_with(".gamma") || p->name.ends_with(".beta")) p->value = random_tensor(p->value.shape(), rng, 0.5, 1.5);
    const Forward forward = [&](nn::Tape<Double>& t, V input) { return mlp(t, input); };
    CHECK(check_module_gradients(mlp.parameters(), forward, random_tensor(Shape{5, 3}, rng), Shape{5, 4}) < 1e-6);

    // The output is normalised per row before the scale and shift: with gamma 1 and beta 0
    // every row has mean 0 and variance 1 (up to the epsilon).
    nn::Mlp<Double> fresh("fresh", options, rng);
    nn::Tape<Double> tape;
    const auto out = fresh(tape, tape.constant(random_tensor(Shape{2, 3}, rng))).value().to_host();
    for (std::size_t r = 0; r < 2; ++r) {
        double mean = 0, square = 0;
        for (std::size_t c = 0; c < 4; ++c) mean += out[r * 4 + c] / 4;
        for (std::size_t c = 0; c < 4; ++c) square += (out[r * 4 + c] - mean) * (out[r * 4 + c] - mean) / 4;
        CHECK(mean == doctest::Approx(0).epsilon(1e-9).scale(1));
        CHECK(square == doctest::Approx(1).epsilon(1e-3));
    }
}

namespace {

/// An Mlp's value on `blocks` op by op (gradients on) and by its inference pass (NoGrad),
/// both as host values; the inference pass's output must not require a gradient.
template <class B>
std::pair<std::vector<typename B::Scalar>, std::vector<typename B::Scalar>> both_passes(
    nn::Mlp<B>& mlp, const std::function<std::vector<nn::InputBlock<B>>(nn::Tape<B>&)>& blocks) {
    nn::Tape<B> tape;
    const auto op_by_op = mlp(tape, blocks(tape)).value().to_host();
    nn::NoGrad<B> no_grad(tape);
    const nn::Var<B> inferred = mlp(tape, blocks(tape));
    CHECK_FALSE(inferred.requires_grad());
    return {op_by_op, inferred.value().to_host()};
}

}  // namespace

TEST_CASE("an mlp's inference pass over row tiles equals its op-by-op pass, gathered blocks sharing an index included") {
    // 600 rows: two full tiles of the CPU backend's 256 and a partial one. Blocks: one read
    // whole, two gathered by the same index (summed before their one gather), one gathered
    // by another index.
    const std::int64_t rows = 600, from = 90;
    REQUIRE(rows > 2 * Double::row_tile);
    Rng rng(11);
    std::vector<std::int32_t> to_node, to_graph;
    for (std::int64_t r = 0; r < rows; ++r) {
        to_node.push_back(static_cast<std::int32_t>(rng.below(from)));
        to_graph.push_back(static_cast<std::int32_t>(r % 3));
    }
    const T whole = random_tensor(Shape{rows, 4}, rng), first = random_tensor(Shape{from, 3}, rng),
            second = random_tensor(Shape{from, 2}, rng), graphs = random_tensor(Shape{3, 2}, rng);
    const nn::Indices<Double> node_rows(to_node, from), graph_rows(to_graph, 3);
    const auto blocks = [&](nn::Tape<Double>& tape) {
        return std::vector<nn::InputBlock<Double>>{{tape.constant(whole)},
                                                   {tape.constant(first), &node_rows},
                                                   {tape.constant(graphs), &graph_rows},
                                                   {tape.constant(second), &node_rows}};
    };
    const auto same = [](const std::vector<double>& a, const std::vector<double>& b, std::size_t size) {
        REQUIRE(a.size() == size);
        REQUIRE(b.size() == size);
        for (std::size_t i = 0; i < size; ++i) CHECK(a[i] == doctest::Approx(b[i]).epsilon(1e-12));
    };
    SUBCASE("relu hidden layers, activated and layer-normalised output (graph-nets MLPs)") {
        nn::Mlp<Double> mlp("mlp", {.sizes = {11, 8, 6}, .activate_output = true, .layer_norm_output = true}, rng);
        for (P* p : mlp.parameters()) p->value = random_tensor(p->value.shape(), rng);
        const auto [op_by_op, inferred] = both_passes<Double>(mlp, blocks);
        same(op_by_op, inferred, static_cast<std::size_t>(rows * 6));
    }
    SUBCASE("tanh, three layers, plain output") {
        nn::Mlp<Double> mlp("mlp", {.sizes = {11, 7, 5, 4}, .activation = nn::Activation::tanh}, rng);
        for (P* p : mlp.parameters()) p->value = random_tensor(p->value.shape(), rng);
        const auto [op_by_op, inferred] = both_passes<Double>(mlp, blocks);
        same(op_by_op, inferred, static_cast<std::size_t>(rows * 4));
    }
    SUBCASE("one whole input (an encoder), and no rows") {
        nn::Mlp<Double> mlp("mlp", {.sizes = {4, 8, 6}, .activate_output = true, .layer_norm_output = true}, rng);
        for (P* p : mlp.parameters()) p->value = random_tensor(p->value.shape(), rng);
        const auto one = [&](nn::Tape<Double>& tape) { return std::vector<nn::InputBlock<Double>>{{tape.constant(whole)}}; };
        const auto [op_by_op, inferred] = both_passes<Double>(mlp, one);
        same(op_by_op, inferred, static_cast<std::size_t>(rows * 6));
        nn::Tape<Double> tape;
        nn::NoGrad<Double> no_grad(tape);
        CHECK(mlp(tape, tape.constant(T(Shape{0, 4}))).shape() == Shape{0, 6});
        // The inference pass checks its input as the first layer does.
        CHECK_THROWS_WITH_AS((void)mlp(tape, tape.constant(T(Shape{2, 5}))),
                             "[rlflow.shape_error] linear 'mlp.0' takes 4 features in all; block (2,5) at feature 0 does not fit",
                             shape_error);
    }
    SUBCASE("float32 (what agents run): within float rounding") {
        using F = rlflow::nn::backend::Eigen;
        nn::Mlp<F> mlp("mlp", {.sizes = {11, 8, 6}, .activate_output = true, .layer_norm_output = true}, rng);
        const auto to_float = [](const T& t) {
            const auto v = t.to_host();
            return nn::Tensor<F>::from_host(t.shape(), std::vector<float>(v.begin(), v.end()));
        };
        const nn::Indices<F> node_f(to_node, from), graph_f(to_graph, 3);
        const nn::Tensor<F> whole_f = to_float(whole), first_f = to_float(first), second_f = to_float(second), graphs_f = to_float(graphs);
        const auto float_blocks = [&](nn::Tape<F>& tape) {
            return std::vector<nn::InputBlock<F>>{
                {tape.constant(whole_f)}, {tape.constant(first_f), &node_f}, {tape.constant(graphs_f), &graph_f}, {tape.constant(second_f), &node_f}};
        };
        const auto [op_by_op, inferred] = both_passes<F>(mlp, float_blocks);
        REQUIRE(op_by_op.size() == inferred.size());
        // Layer-normalised outputs are of order 1; the sums differ in order only.
        for (std::size_t i = 0; i < op_by_op.size(); ++i) CHECK(std::abs(op_by_op[i] - inferred[i]) < 1e-4F);
    }
}

TEST_CASE("orthogonal initialisation gives orthonormal columns of a tall and rows of a wide matrix, times the gain") {
    constexpr double gain = 1.7;
    Rng rng(11);
    const std::vector<double> tall = nn::orthogonal_values(6, 3, gain, rng);
    CHECK(gram_of_columns(tall, 6, 3).isApprox(gain * gain * Eigen::MatrixXd::Identity(3, 3), 1e-12));
    const std::vector<double> wide = nn::orthogonal_values(3, 6, gain, rng);
    // W W^T is the Gram matrix of the columns of W^T.
    Eigen::Map<const Eigen::Matrix<double, 3, 6, Eigen::RowMajor>> w(wide.data());
    CHECK((w * w.transpose()).isApprox(gain * gain * Eigen::Matrix3d::Identity(), 1e-12));
    // A square one is orthogonal both ways.
    const std::vector<double> square = nn::orthogonal_values(4, 4, 1.0, rng);
    CHECK(gram_of_columns(square, 4, 4).isApprox(Eigen::MatrixXd::Identity(4, 4), 1e-12));

    // It is a random draw, determined by the seed (bit for bit: the same code on the same draws).
    Rng same(11), other(12);
    CHECK(nn::orthogonal_values(6, 3, gain, same) == tall);
    CHECK(nn::orthogonal_values(6, 3, gain, other) != tall);

    // Linear's weights are drawn the same way, with gain sqrt 2, and its bias is zero.
    Rng layer_rng(2);
    nn::Linear<Double> linear("fc", 8, 5, layer_rng);
    CHECK(gram_of_columns(linear.weight().value.to_host(), 8, 5).isApprox(2.0 * Eigen::MatrixXd::Identity(5, 5), 1e-12));
    CHECK(linear.bias().value.to_host() == std::vector<double>(5, 0.0));
}

TEST_CASE("module parameters are named hierarchically and listed in layer order, layer norm last") {
    Rng rng(1);
    nn::MlpOptions options;
    options.sizes = {3, 8, 8, 2};
    options.layer_norm_output = true;
    nn::Mlp<nn::backend::Eigen> mlp("encoder.edge", options, rng);
    std::vector<std::string> names;
    std::vector<Shape> shapes;
    for (const auto* p : mlp.parameters()) {
        names.push_back(p->name);
        shapes.push_back(p->value.shape());
    }
    CHECK(names == std::vector<std::string>{"encoder.edge.0.weight", "encoder.edge.0.bias", "encoder.edge.1.weight", "encoder.edge.1.bias",
                                            "encoder.edge.2.weight", "encoder.edge.2.bias", "encoder.edge.norm.gamma",
                                            "encoder.edge.norm.beta"});
    CHECK(shapes == std::vector<Shape>{{3, 8}, {8}, {8, 8}, {8}, {8, 2}, {2}, {2}, {2}});
    CHECK(mlp.parameters().back()->value.to_host() == std::vector<float>{0, 0});
    CHECK(mlp.parameters()[6]->value.to_host() == std::vector<float>{1, 1});

    nn::MlpOptions plain;
    plain.sizes = {3, 2};
    CHECK(nn::Mlp<nn::backend::Eigen>("head", plain, rng).parameters().size() == 2);
}

TEST_CASE("linear rejects input of the wrong width, naming the layer and both sizes") {
    Rng rng(1);
    nn::Linear<Double> linear("fc", 4, 3, rng);
    nn::Tape<Double> tape;
    const V x = tape.constant(T(Shape{2, 5}));
    CHECK_THROWS_WITH_AS((void)linear(tape, x), "[rlflow.shape_error] linear 'fc' takes 4 features, got (2,5)", shape_error);
    CHECK_THROWS_WITH_AS((void)nn::Mlp<Double>("mlp", nn::MlpOptions{.sizes = {3}}, rng), "[rlflow.precondition_error] mlp 'mlp' needs an input and an output size",
                         precondition_error);
}
