#pragma once
/// \file
/// ReduceMean, ReduceSum and ReduceMax over any set of axes.

#include <rlflow/exec/detail/view.hpp>

#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

namespace rlflow::detail {

/// The reductions: an accumulator in double (sums of float32 round once, at the end),
/// its start, how one element joins it, and the value it leaves for `count` elements.
struct MeanReduction {
    static constexpr double start = 0.0;
    static double add(double acc, float x) noexcept { return acc + x; }
    static double finish(double acc, double count) noexcept { return acc / count; }
};
struct SumReduction {
    static constexpr double start = 0.0;
    static double add(double acc, float x) noexcept { return acc + x; }
    static double finish(double acc, double) noexcept { return acc; }
};
/// Max propagates NaN, as numpy's maximum (the ONNX reference) does.
struct MaxReduction {
    static constexpr double start = -std::numeric_limits<double>::infinity();
    static double add(double acc, float x) noexcept {
        if (std::isnan(acc)) return acc;
        return std::isnan(x) ? x : std::max(acc, static_cast<double>(x));
    }
    static double finish(double acc, double) noexcept { return acc; }
};

/// ReduceMean, ReduceSum, ReduceMax: reduce into the keepdims-shaped output (reduced
/// dimensions get stride 0). keepdims only changes the output shape, not its layout.
template <class Reduction>
void reduce_kernel(const KernelArgs& args) {
    const ConstView& x = args.inputs[0];
    const auto& axes = args.node.attributes.get_ints("axes");
    Shape kept;
    for (int i = 0; i < x.shape.rank(); ++i) {
        const bool reduced = axes.empty() || std::find(axes.begin(), axes.end(), i) != axes.end();
        kept.push_back(reduced ? 1 : x.shape[i]);
    }
    std::vector<double> acc(static_cast<std::size_t>(kept.numel()), Reduction::start);
    const std::array<Strides, 2> strides{contiguous_strides(x.shape), broadcast_strides(kept, x.shape)};
    const std::int64_t step = inner_stride(x.shape, strides[1]);
    for_each_row(x.shape, strides, [&](const std::array<std::int64_t, 2>& at, std::int64_t length) {
        for (std::int64_t i = 0; i < length; ++i) {
            double& a = acc[static_cast<std::size_t>(at[1] + i * step)];
            a = Reduction::add(a, x.data[static_cast<std::size_t>(at[0] + i)]);
        }
    });
    const double count = static_cast<double>(x.shape.numel()) / static_cast<double>(std::max<std::int64_t>(kept.numel(), 1));
    for (std::size_t i = 0; i < acc.size(); ++i) args.outputs[0].data[i] = static_cast<float>(Reduction::finish(acc[i], count));
}

}  // namespace rlflow::detail
