#include "support.hpp"

#include <optional>

using namespace exec_test;

namespace {

/// numpy.matmul in double: 1-D operands promoted and the inserted dims dropped, batch
/// dims broadcast.
std::vector<double> matmul_reference(const Tensor& a, const Tensor& b, Shape& out) {
    const Shape as = a.shape().rank() == 1 ? Shape{1, a.shape()[0]} : a.shape();
    const Shape bs = b.shape().rank() == 1 ? Shape{b.shape()[0], 1} : b.shape();
    const std::int64_t m = as.dim(-2), k = as.dim(-1), n = bs.dim(-1);
    const Shape a_batch(as.dims().first(static_cast<std::size_t>(as.rank() - 2)));
    const Shape b_batch(bs.dims().first(static_cast<std::size_t>(bs.rank() - 2)));
    const Shape batch = *rlflow::broadcast_shapes(a_batch, b_batch);
    out = batch;
    if (a.shape().rank() > 1) out.push_back(m);
    if (b.shape().rank() > 1) out.push_back(n);
    std::vector<double> y;
    for (std::int64_t bi = 0; bi < batch.numel(); ++bi) {
        const Index index = unravel(bi, batch);
        const std::int64_t a_base = broadcast_source(index, a_batch) * m * k;
        const std::int64_t b_base = broadcast_source(index, b_batch) * k * n;
        for (std::int64_t i = 0; i < m; ++i)
            for (std::int64_t j = 0; j < n; ++j) {
                double acc = 0;
                for (std::int64_t p = 0; p < k; ++p) acc += at(a, a_base + i * k + p) * at(b, b_base + p * n + j);
                y.push_back(acc);
            }
    }
    return y;
}

void check_matmul(const Shape& a_shape, const Shape& b_shape) {
    CAPTURE(a_shape.to_string());
    CAPTURE(b_shape.to_string());
    const Tensor a = random_tensor(a_shape, 60);
    const Tensor b = random_tensor(b_shape, 61);
    Shape out;
    const auto expected = matmul_reference(a, b, out);
    check_close(run_op(OpKind::MatMul, {a, b}).at(0), out, expected);
}

struct GemmCase {
    bool transpose_a = false, transpose_b = false;
    std::optional<Shape> c;
    double alpha = 1.0, beta = 1.0;
};

void check_gemm(const GemmCase& gc) {
    const std::int64_t m = 5, k = 7, n = 3;
    const Tensor a = random_tensor(gc.transpose_a ? Shape{k, m} : Shape{m, k}, 70);
    const Tensor b = random_tensor(gc.transpose_b ? Shape{n, k} : Shape{k, n}, 71);
    std::vector<Tensor> inputs{a, b};
    if (gc.c) inputs.push_back(random_tensor(*gc.c, 72));
    std::vector<double> expected;
    for (std::int64_t i = 0; i < m; ++i)
        for (std::int64_t j = 0; j < n; ++j) {
            double acc = 0;
            for (std::int64_t p = 0; p < k; ++p)
                acc += at(a, gc.transpose_a ? p * m + i : i * k + p) * at(b, gc.transpose_b ? j * k + p : p * n + j);
            const double c = gc.c ? at(inputs[2], broadcast_source({i, j}, *gc.c)) : 0.0;
            expected.push_back(gc.alpha * acc + gc.beta * c);
        }
    const Attributes attributes{{"transA", std::int64_t{gc.transpose_a}}, {"transB", std::int64_t{gc.transpose_b}},
                                {"alpha", gc.alpha}, {"beta", gc.beta}};
    check_close(run_op(OpKind::Gemm, inputs, attributes).at(0), Shape{m, n}, expected);
}

}  // namespace

TEST_CASE("matmul broadcasts batch dimensions and 1-D operands like numpy") {
    check_matmul({5, 3}, {3, 7});
    check_matmul({4, 5, 3}, {3, 6});      // stacked into one tall GEMM
    check_matmul({2, 1, 5, 3}, {4, 3, 7});  // both batches broadcast
    check_matmul({1, 5, 3}, {2, 3, 6});
    check_matmul({3, 2, 5, 3}, {3, 1, 3, 4});
    check_matmul({3}, {4, 3, 7});  // vector lhs
    check_matmul({2, 5, 3}, {3});  // vector rhs
    check_matmul({3}, {3});        // dot product: a scalar
    check_matmul({1, 3}, {3, 1});
}

TEST_CASE("matmul of the benchmark size matches the reference") {
    check_matmul({17, 96}, {96, 33});
}

TEST_CASE("gemm applies alpha, beta, both transposes and a broadcast C") {
    for (const bool ta : {false, true})
        for (const bool tb : {false, true}) {
            CAPTURE(ta);
            CAPTURE(tb);
            check_gemm({.transpose_a = ta, .transpose_b = tb, .c = Shape{5, 3}, .alpha = 0.5, .beta = 2.0});
        }
    check_gemm({.c = Shape{3}, .alpha = 1.5, .beta = -1.0});
    check_gemm({.c = Shape{1, 3}});
    check_gemm({.c = Shape{5, 1}, .beta = 0.25});
    check_gemm({.c = Shape{}, .alpha = -2.0});
    check_gemm({.transpose_a = true, .c = std::nullopt, .alpha = 3.0});
}

TEST_CASE("gemm with beta 0 ignores C, even where it holds infinities") {
    const Tensor a = random_tensor({2, 3}, 80);
    const Tensor b = random_tensor({3, 4}, 81);
    const Tensor c = Tensor::from_floats({4}, {INFINITY, -INFINITY, NAN, 1.0f});
    const auto y = run_op(OpKind::Gemm, {a, b, c}, {{"beta", 0.0}}).at(0);
    const auto expected = run_op(OpKind::MatMul, {a, b}).at(0);
    // Gemm and MatMul are different code paths, vectorised differently under -march=native:
    // equal within float rounding (and finite: none of C's infinities or NaN leaked in).
    const auto& want = expected.floats();
    check_close(y, expected.shape(), std::vector<double>(want.begin(), want.end()));
}
