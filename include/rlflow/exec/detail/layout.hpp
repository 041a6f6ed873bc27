#pragma once
/// \file
/// Data-movement kernels: Concat, Split, Transpose and Pad.

#include <rlflow/exec/detail/view.hpp>

#include <algorithm>
#include <string>
#include <vector>

namespace rlflow::detail {

/// Concat: every input contributes a contiguous chunk of (its axis extent x inner)
/// elements to each of the `outer` output blocks.
inline void concat_kernel(const KernelArgs& args) {
    const Shape& y = args.outputs[0].shape;
    const int axis = y.normalize_axis(args.node.attributes.get_int("axis", 0));
    const std::int64_t outer = y.product(0, axis), inner = y.product(axis + 1, y.rank());
    const std::int64_t block = y[axis] * inner;
    std::int64_t offset = 0;
    for (const ConstView& in : args.inputs) {
        const std::int64_t chunk = in.shape[axis] * inner;
        for (std::int64_t o = 0; o < outer; ++o)
            std::copy_n(in.data.data() + o * chunk, chunk, args.outputs[0].data.data() + o * block + offset);
        offset += chunk;
    }
}

/// Split: the inverse of Concat, one output per entry of "split".
inline void split_kernel(const KernelArgs& args) {
    const Shape& x = args.inputs[0].shape;
    const int axis = x.normalize_axis(args.node.attributes.get_int("axis", 0));
    const std::int64_t outer = x.product(0, axis), inner = x.product(axis + 1, x.rank());
    const std::int64_t block = x[axis] * inner;
    std::int64_t offset = 0;
    for (const MutableView& out : args.outputs) {
        const std::int64_t chunk = out.shape[axis] * inner;
        for (std::int64_t o = 0; o < outer; ++o)
            std::copy_n(args.inputs[0].data.data() + o * block + offset, chunk, out.data.data() + o * chunk);
        offset += chunk;
    }
}

/// Transpose: walks the output in order, reading the input through permuted strides.
inline void transpose_kernel(const KernelArgs& args) {
    const ConstView& x = args.inputs[0];
    const MutableView& y = args.outputs[0];
    const auto& perm = args.node.attributes.get_ints("perm");
    const Strides source = contiguous_strides(x.shape);
    std::array<Strides, 2> strides{contiguous_strides(y.shape), {}};
    for (std::size_t i = 0; i < perm.size(); ++i) strides[1][i] = source[static_cast<std::size_t>(perm[i])];
    const std::int64_t step = inner_stride(y.shape, strides[1]);
    for_each_row(y.shape, strides, [&](const std::array<std::int64_t, 2>& at, std::int64_t length) {
        float* out = y.data.data() + at[0];
        const float* in = x.data.data() + at[1];
        for (std::int64_t i = 0; i < length; ++i) out[i] = in[i * step];
    });
}

/// Marks an output position that takes Pad's constant value.
inline constexpr std::int64_t pad_constant = -1;

/// For every output position along one axis of Pad, the input index it reads, or
/// pad_constant. Negative pads crop first; reflect and edge then pad the cropped extent
/// (onnxruntime's order). Reflect mirrors without repeating the edge and folds back as
/// often as the pad needs.
[[nodiscard]] inline std::vector<std::int64_t> pad_source_indices(std::int64_t input, std::int64_t begin,
                                                                 std::int64_t end, std::int64_t output,
                                                                 const std::string& mode, const Node& node) {
    const std::int64_t first = std::max<std::int64_t>(0, -begin);
    const std::int64_t kept = input - first - std::max<std::int64_t>(0, -end);
    const std::int64_t lead = std::max<std::int64_t>(0, begin);
    if (mode != "constant" && kept <= 0 && output > 0)
        throw shape_error(node.describe() + ": mode '" + mode + "' cannot pad an axis cropped to nothing");
    std::vector<std::int64_t> source(static_cast<std::size_t>(output));
    for (std::int64_t o = 0; o < output; ++o) {
        std::int64_t j = o - lead;
        if (j < 0 || j >= kept) {
            if (mode == "constant") {
                source[static_cast<std::size_t>(o)] = pad_constant;
                continue;
            }
            if (mode == "edge" || kept == 1) {
                j = std::clamp<std::int64_t>(j, 0, kept - 1);
            } else {
                const std::int64_t period = 2 * (kept - 1);
                j = ((j % period) + period) % period;
                if (j >= kept) j = period - j;
            }
        }
        source[static_cast<std::size_t>(o)] = first + j;
    }
    return source;
}

/// The input offset of the start of output row `row` of Pad (all dimensions but the
/// last), or pad_constant when some outer index falls into constant padding.
[[nodiscard]] inline std::int64_t pad_row_source(std::int64_t row, const std::vector<std::vector<std::int64_t>>& tables,
                                                 const Shape& out, const Strides& in_strides) {
    std::int64_t base = 0;
    for (int d = out.rank() - 2; d >= 0; --d) {
        const std::int64_t index = tables[static_cast<std::size_t>(d)][static_cast<std::size_t>(row % out[d])];
        row /= out[d];
        if (index == pad_constant) return pad_constant;
        base += index * in_strides[static_cast<std::size_t>(d)];
    }
    return base;
}

/// Pad (constant, reflect, edge; negative pads crop): per-axis source index tables, then
/// one gather per output row.
inline void pad_kernel(const KernelArgs& args) {
    const ConstView& x = args.inputs[0];
    const MutableView& y = args.outputs[0];
    const Attributes& attributes = args.node.attributes;
    const int rank = x.shape.rank();
    if (rank == 0) {
        y.data[0] = x.data[0];
        return;
    }
    const auto& pads = attributes.get_ints("pads");
    const auto& mode = attributes.get<std::string>("mode");
    const auto value = static_cast<float>(attributes.get_float("value", 0.0));
    std::vector<std::vector<std::int64_t>> tables;
    for (int d = 0; d < rank; ++d)
        tables.push_back(pad_source_indices(x.shape[d], pads[static_cast<std::size_t>(d)],
                                            pads[static_cast<std::size_t>(d + rank)], y.shape[d], mode, args.node));
    const Strides in_strides = contiguous_strides(x.shape);
    const std::int64_t length = y.shape[rank - 1];
    if (y.shape.numel() == 0) return;
    const std::vector<std::int64_t>& last = tables.back();
    for (std::int64_t row = 0; row < y.shape.numel() / length; ++row) {
        float* out = y.data.data() + row * length;
        const std::int64_t base = pad_row_source(row, tables, y.shape, in_strides);
        for (std::int64_t i = 0; i < length; ++i) {
            const std::int64_t index = last[static_cast<std::size_t>(i)];
            out[i] = base == pad_constant || index == pad_constant ? value : x.data[static_cast<std::size_t>(base + index)];
        }
    }
}

}  // namespace rlflow::detail
