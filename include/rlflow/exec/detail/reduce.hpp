#pragma once
/// \file
/// ReduceMean over any set of axes.

#include <rlflow/exec/detail/view.hpp>

#include <algorithm>
#include <vector>

namespace rlflow::detail {

/// ReduceMean: sums in double into the keepdims-shaped output (reduced dimensions get
/// stride 0), then divides by the number of elements per output. keepdims only changes
/// the output shape, not its layout.
inline void reduce_mean_kernel(const KernelArgs& args) {
    const ConstView& x = args.inputs[0];
    const auto& axes = args.node.attributes.get_ints("axes");
    Shape kept;
    for (int i = 0; i < x.shape.rank(); ++i) {
        const bool reduced = axes.empty() || std::find(axes.begin(), axes.end(), i) != axes.end();
        kept.push_back(reduced ? 1 : x.shape[i]);
    }
    std::vector<double> sums(static_cast<std::size_t>(kept.numel()), 0.0);
    const std::array<Strides, 2> strides{contiguous_strides(x.shape), broadcast_strides(kept, x.shape)};
    const std::int64_t step = inner_stride(x.shape, strides[1]);
    for_each_row(x.shape, strides, [&](const std::array<std::int64_t, 2>& at, std::int64_t length) {
        for (std::int64_t i = 0; i < length; ++i)
            sums[static_cast<std::size_t>(at[1] + i * step)] += x.data[static_cast<std::size_t>(at[0] + i)];
    });
    const double count = static_cast<double>(x.shape.numel()) / static_cast<double>(std::max<std::int64_t>(kept.numel(), 1));
    for (std::size_t i = 0; i < sums.size(); ++i) args.outputs[0].data[i] = static_cast<float>(sums[i] / count);
}

}  // namespace rlflow::detail
