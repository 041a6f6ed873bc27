#pragma once
// Helpers shared by the executor tests: random tensors, one-node graphs, index
// arithmetic for the naive references, and tolerant comparison.

#include "../tensor_types.hpp"
#include <rlflow/core/graph.hpp>
#include <rlflow/core/random.hpp>
#include <rlflow/exec.hpp>

#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

namespace exec_test {

using rlflow::Attributes;
using rlflow::DType;
using rlflow::Graph;
using rlflow::NodeId;
using rlflow::OpKind;
using rlflow::Shape;
using rlflow::Tensor;
using rlflow::TensorType;
using Ints = std::vector<std::int64_t>;
using Index = std::vector<std::int64_t>;

/// Default comparison tolerance: float kernels against double references.
inline constexpr double tolerance = 1e-4;

using ::f32;

/// U(low, high) float tensor.
inline Tensor random_tensor(const Shape& shape, std::uint64_t seed, double low = -1.0, double high = 1.0) {
    rlflow::Rng rng(seed);
    std::vector<float> values(static_cast<std::size_t>(shape.numel()));
    for (float& v : values) v = static_cast<float>(rng.uniform(low, high));
    return Tensor::from_floats(shape, std::move(values));
}

/// Builds a graph with every tensor of `inputs` as a graph input, one `op` node over
/// them and every output of it a graph output; runs it and returns the outputs.
inline std::vector<Tensor> run_op(OpKind op, const std::vector<Tensor>& inputs, Attributes attributes = {}) {
    Graph g;
    std::vector<rlflow::TensorRef> refs;
    for (std::size_t i = 0; i < inputs.size(); ++i)
        refs.push_back({g.add_input("in" + std::to_string(i), inputs[i].type()), 0});
    const NodeId node = g.add_node(op, refs, std::move(attributes), "op");
    for (std::uint32_t i = 0; i < g.node(node).outputs.size(); ++i) g.add_output({node, i});
    return rlflow::exec::Executor{}.run(g, inputs).outputs;
}

/// Row-major multi-index of flat position `flat` in `shape`.
inline Index unravel(std::int64_t flat, const Shape& shape) {
    Index index(static_cast<std::size_t>(shape.rank()));
    for (int d = shape.rank() - 1; d >= 0; --d) {
        index[static_cast<std::size_t>(d)] = flat % shape[d];
        flat /= shape[d];
    }
    return index;
}

/// Flat position of `index` in `shape`.
inline std::int64_t ravel(const Index& index, const Shape& shape) {
    std::int64_t flat = 0;
    for (int d = 0; d < shape.rank(); ++d) flat = flat * shape[d] + index[static_cast<std::size_t>(d)];
    return flat;
}

/// Flat position in `operand` read by output multi-index `out` under numpy broadcasting.
inline std::int64_t broadcast_source(const Index& out, const Shape& operand) {
    const std::size_t offset = out.size() - static_cast<std::size_t>(operand.rank());
    Index index(static_cast<std::size_t>(operand.rank()));
    for (int d = 0; d < operand.rank(); ++d)
        index[static_cast<std::size_t>(d)] = operand[d] == 1 ? 0 : out[offset + static_cast<std::size_t>(d)];
    return ravel(index, operand);
}

/// Element of a float tensor at a flat position.
inline double at(const Tensor& t, std::int64_t flat) { return t.floats()[static_cast<std::size_t>(flat)]; }

/// Checks shape and every element against `expected` with a mixed absolute/relative
/// tolerance, reporting the worst element.
inline void check_close(const Tensor& actual, const Shape& shape, const std::vector<double>& expected,
                        double tol = tolerance) {
    REQUIRE(actual.shape() == shape);
    REQUIRE(actual.floats().size() == expected.size());
    if (expected.empty()) return;
    double worst = 0;
    std::size_t worst_at = 0;
    for (std::size_t i = 0; i < expected.size(); ++i) {
        double error = std::abs(actual.floats()[i] - expected[i]) / (1.0 + std::abs(expected[i]));
        if (std::isnan(error)) error = INFINITY;  // a NaN is the worst error there is
        if (error > worst) {
            worst = error;
            worst_at = i;
        }
    }
    INFO("worst element " << worst_at << ": " << actual.floats()[worst_at] << " vs " << expected[worst_at]);
    CHECK(worst <= tol);
}

}  // namespace exec_test
