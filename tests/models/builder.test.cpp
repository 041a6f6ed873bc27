#include "model_facts.hpp"

#include <rlflow/exec/executor.hpp>
#include <rlflow/exec/random.hpp>
#include <rlflow/models/builder.hpp>

#include <doctest/doctest.h>

#include <cmath>
#include <vector>

using namespace rlflow;
using namespace model_facts;
using Ints = std::vector<std::int64_t>;

namespace {

/// The data of the weight named `name`.
std::vector<float> values_of(const Graph& g, std::string_view name) {
    const Node& n = node_named(g, name);
    REQUIRE(n.data);
    const auto v = n.data->floats();
    return {v.begin(), v.end()};
}

/// Fills the weights, runs on random inputs, and returns (inputs, first output).
std::pair<std::vector<Tensor>, Tensor> run_random(Graph& g) {
    exec::fill_random_weights(g, 11);
    std::vector<Tensor> inputs = exec::random_inputs(g, 12);
    Tensor out = exec::Executor{}.run(g, inputs).outputs.at(0);
    return {std::move(inputs), std::move(out)};
}

/// y = x W + b for row-major x (rows, in), W (in, out), b (out).
std::vector<double> dense_reference(std::span<const float> x, const std::vector<float>& w,
                                    const std::vector<float>& bias, std::size_t rows, std::size_t in, std::size_t out) {
    std::vector<double> y(rows * out);
    for (std::size_t r = 0; r < rows; ++r)
        for (std::size_t o = 0; o < out; ++o) {
            double sum = bias[o];
            for (std::size_t i = 0; i < in; ++i) sum += static_cast<double>(x[r * in + i]) * w[i * out + o];
            y[r * out + o] = sum;
        }
    return y;
}

}  // namespace

TEST_CASE("same padding gives ceil(in / stride) outputs with the odd pixel at the bottom right") {
    CHECK(models::Window::same(7, 2, Shape{1, 8, 56, 56}).pads == std::array<std::int64_t, 4>{2, 2, 3, 3});
    CHECK(models::Window::same(3, 1, Shape{1, 8, 56, 56}).pads == std::array<std::int64_t, 4>{1, 1, 1, 1});
    CHECK(models::Window::same(3, 2, Shape{1, 8, 7, 8}).pads == std::array<std::int64_t, 4>{1, 0, 1, 1});
    models::Builder b;
    const TensorRef x = b.input("x", {1, 4, 7, 8});
    const TensorRef y = b.max_pool("pool", x, models::Window::same(3, 2, b.shape(x)));
    CHECK(b.shape(y) == Shape{1, 4, 4, 4});
}

TEST_CASE("builder names weights after their layer like torchvision") {
    models::Builder b;
    const TensorRef x = b.input("x", {2, 4, 8, 8});
    const TensorRef c = b.conv(
        "features.0", x, {.out_channels = 6, .window = models::Window::square(3, 1, 1), .group = 2, .bias = true});
    b.output(b.batch_norm("bn", c), "y");
    const Graph g = std::move(b).finish();
    CHECK_NOTHROW(g.validate());
    CHECK(shape_of(g, "features.0.weight") == Shape{6, 2, 3, 3});
    CHECK(shape_of(g, "features.0.bias") == Shape{6});
    for (const char* suffix : {".weight", ".bias", ".running_mean", ".running_var"})
        CHECK(shape_of(g, std::string("bn") + suffix) == Shape{6});
    CHECK(ints_of(g, "features.0", "pads") == Ints{1, 1, 1, 1});
    CHECK(node_named(g, "features.0").attributes.get_int("group", 0) == 2);
}

TEST_CASE("builder rejects a name used twice") {
    models::Builder b;
    const TensorRef x = b.input("x", {1, 4});
    (void)b.relu("act", x);
    CHECK_THROWS_WITH_AS((void)b.relu("act", x), "[rlflow.graph_error] model builder: name 'act' used twice",
                         graph_error);
}

TEST_CASE("builder GELU computes x * 0.5 * (1 + erf(x / sqrt 2))") {
    models::Builder b;
    b.output(b.gelu("gelu", b.input("x", {2, 5})), "y");
    Graph g = std::move(b).finish();
    const auto [inputs, out] = run_random(g);
    const auto x = inputs[0].floats();
    for (std::size_t i = 0; i < x.size(); ++i) {
        const double expected = x[i] * 0.5 * (1.0 + std::erf(x[i] / std::sqrt(2.0)));
        CHECK(out.floats()[i] == doctest::Approx(expected).epsilon(1e-5));
    }
}

TEST_CASE("builder self-attention computes softmax(Q K^T / sqrt(d)) V per head, then projects") {
    constexpr std::size_t seq = 3, width = 4, heads = 2, d = width / heads;
    models::Builder b;
    const TensorRef x = b.input("x", {1, seq, width});
    b.output(b.self_attention({"attn", "attn.q", "attn.k", "attn.v", "attn.o"}, x, heads), "y");
    Graph g = std::move(b).finish();
    CHECK_NOTHROW(g.validate());
    const auto [inputs, out] = run_random(g);
    const auto project = [&](std::span<const float> in, const std::string& name) {
        return dense_reference(in, values_of(g, name + ".weight"), values_of(g, name + ".bias"), seq, width, width);
    };
    const auto q = project(inputs[0].floats(), "attn.q");
    const auto k = project(inputs[0].floats(), "attn.k");
    const auto v = project(inputs[0].floats(), "attn.v");
    std::vector<float> context(seq * width);
    for (std::size_t h = 0; h < heads; ++h)
        for (std::size_t i = 0; i < seq; ++i) {
            std::vector<double> p(seq);
            double total = 0;
            for (std::size_t j = 0; j < seq; ++j) {
                double dot = 0;
                for (std::size_t e = 0; e < d; ++e) dot += q[i * width + h * d + e] * k[j * width + h * d + e];
                p[j] = std::exp(dot / std::sqrt(static_cast<double>(d)));
                total += p[j];
            }
            for (std::size_t e = 0; e < d; ++e) {
                double sum = 0;
                for (std::size_t j = 0; j < seq; ++j) sum += p[j] / total * v[j * width + h * d + e];
                context[i * width + h * d + e] = static_cast<float>(sum);
            }
        }
    const auto expected
        = dense_reference(context, values_of(g, "attn.o.weight"), values_of(g, "attn.o.bias"), seq, width, width);
    REQUIRE(out.shape() == Shape{1, seq, width});
    for (std::size_t i = 0; i < expected.size(); ++i)
        CHECK(out.floats()[i] == doctest::Approx(expected[i]).epsilon(1e-4));
}

TEST_CASE("builder linear is a Gemm with transB over an (out, in) weight") {
    models::Builder b;
    const TensorRef y = b.linear("fc", b.input("x", {2, 8}), 3);
    CHECK(b.shape(y) == Shape{2, 3});
    const Graph& g = b.graph();
    CHECK(shape_of(g, "fc.weight") == Shape{3, 8});
    CHECK(node_named(g, "fc").attributes.get_int("transB", 0) == 1);
}
