#pragma once
// The baseline every gemm benchmark compares with: C = A B as a plain Eigen expression on
// row-major float32 matrices, timed over the benchmark's iterations.

#include <Eigen/Core>
#include <benchmark/benchmark.h>

#include <cstdint>

namespace bench_support {

using RowMajorMatrix = Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;

inline void time_eigen_product(benchmark::State& state, std::int64_t m, std::int64_t k, std::int64_t n) {
    const RowMajorMatrix a = RowMajorMatrix::Random(m, k), b = RowMajorMatrix::Random(k, n);
    RowMajorMatrix c(m, n);
    for (auto _ : state) {
        c.noalias() = a * b;
        benchmark::DoNotOptimize(c.data());
        benchmark::ClobberMemory();
    }
}

}  // namespace bench_support
