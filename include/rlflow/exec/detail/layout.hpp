#pragma once
/// \file
/// Data-movement kernels: Concat, Split, Transpose, Slice, Resize and Pad.

#include <rlflow/core/detail/op_definitions.hpp>
#include <rlflow/exec/detail/view.hpp>

#include <algorithm>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

namespace rlflow::detail {

/// The layout Concat and Split share. Along `axis` of the whole tensor `whole`, part p
/// (in order) occupies a chunk of (its axis extent x inner) contiguous elements in each
/// of the `outer` blocks of the whole; calls `copy(part, whole_offset, part_offset,
/// chunk)` once per part and block.
template <class Part, class Copy>
void for_each_axis_chunk(const Shape& whole, int axis, std::span<const Part> parts, Copy&& copy) {
    const std::int64_t outer = whole.product(0, axis), inner = whole.product(axis + 1, whole.rank());
    const std::int64_t block = whole[axis] * inner;
    std::int64_t offset = 0;
    for (const Part& part : parts) {
        const std::int64_t chunk = part.shape[axis] * inner;
        for (std::int64_t o = 0; o < outer; ++o) copy(part, o * block + offset, o * chunk, chunk);
        offset += chunk;
    }
}

/// Concat: every input contributes its chunk to each block of the output.
inline void concat_kernel(const KernelArgs& args) {
    const MutableView& y = args.outputs[0];
    const int axis = y.shape.normalize_axis(args.node.attributes.get_int("axis", 0));
    for_each_axis_chunk(y.shape, axis, args.inputs,
                        [&](const ConstView& in, std::int64_t whole_at, std::int64_t part_at, std::int64_t chunk) {
                            std::copy_n(in.data.data() + part_at, chunk, y.data.data() + whole_at);
                        });
}

/// Split: the inverse of Concat, one output per entry of "split".
inline void split_kernel(const KernelArgs& args) {
    const ConstView& x = args.inputs[0];
    const int axis = x.shape.normalize_axis(args.node.attributes.get_int("axis", 0));
    for_each_axis_chunk(x.shape, axis, args.outputs,
                        [&](const MutableView& out, std::int64_t whole_at, std::int64_t part_at, std::int64_t chunk) {
                            std::copy_n(x.data.data() + whole_at, chunk, out.data.data() + part_at);
                        });
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

/// Where a Slice of `x` reads: the offset of its first element, and the input stride of a
/// step along each axis (negative for negative steps). The CPU kernel and the CUDA
/// executor both walk the input this way.
struct SliceSource {
    std::int64_t base = 0;
    Strides strides{};
};

[[nodiscard]] inline SliceSource slice_source(const Attributes& attributes, const Shape& x) {
    const Strides contiguous = contiguous_strides(x);
    SliceSource source;
    const auto axes = SliceOp::axes(attributes, x);
    for (std::size_t d = 0; d < axes.size(); ++d) {
        source.base += axes[d].start * contiguous[d];
        source.strides[d] = axes[d].step * contiguous[d];
    }
    return source;
}

/// Slice with steps: the output walks the input from the first element read, `step`
/// elements of each axis apart.
inline void slice_kernel(const KernelArgs& args) {
    const ConstView& x = args.inputs[0];
    const MutableView& y = args.outputs[0];
    const SliceSource source = slice_source(args.node.attributes, x.shape);
    const std::array<Strides, 2> strides{contiguous_strides(y.shape), source.strides};
    const std::int64_t step = inner_stride(y.shape, strides[1]);
    for_each_row(y.shape, strides, [&](const std::array<std::int64_t, 2>& at, std::int64_t length) {
        float* out = y.data.data() + at[0];
        const float* in = x.data.data() + source.base + at[1];
        for (std::int64_t i = 0; i < length; ++i) out[i] = in[i * step];
    });
}

/// How a Resize reads its input, axis by axis, as the CPU kernel and the CUDA executor both
/// walk it: every axis's taps (ResizeOp::taps) flattened one axis after another, with the
/// indices already multiplied by the input's stride. An axis is `blended` (its bit set)
/// where some output index reads two input indices with nonzero weights; the others read
/// one, with weight 1.
struct ResizePlan {
    int rank = 0;
    Strides out_dims{};
    /// Where each axis's taps start in the tables.
    Strides first_tap{};
    std::uint32_t blended = 0;
    std::vector<std::int64_t> low, high;
    std::vector<float> low_weight, high_weight;
};

[[nodiscard]] inline ResizePlan resize_plan(const Attributes& attributes, const Shape& x, const Shape& y) {
    ResizePlan plan;
    plan.rank = x.rank();
    const Strides strides = contiguous_strides(x);
    for (int d = 0; d < x.rank(); ++d) {
        const auto axis = static_cast<std::size_t>(d);
        plan.out_dims[axis] = y[d];
        plan.first_tap[axis] = static_cast<std::int64_t>(plan.low.size());
        for (const ResizeTap& t : ResizeOp::taps(attributes, x, d)) {
            plan.low.push_back(t.low * strides[axis]);
            plan.high.push_back(t.high * strides[axis]);
            plan.low_weight.push_back(t.low_weight);
            plan.high_weight.push_back(t.high_weight);
            if (t.high_weight != 0.0f) plan.blended |= 1u << axis;
        }
    }
    return plan;
}

/// Resize, nearest or (multi)linear: each output element is the weighted sum of the input
/// elements at the corners of its taps on the blended axes.
inline void resize_kernel(const KernelArgs& args) {
    const ConstView& x = args.inputs[0];
    const MutableView& y = args.outputs[0];
    const ResizePlan plan = resize_plan(args.node.attributes, x.shape, y.shape);
    const auto rank = static_cast<std::size_t>(plan.rank);
    std::array<std::int64_t, Shape::max_rank> at{};
    std::vector<std::size_t> blended;
    for (std::size_t d = 0; d < rank; ++d)
        if ((plan.blended >> d) & 1u) blended.push_back(d);
    const std::size_t corners = std::size_t{1} << blended.size();
    for (std::size_t i = 0; i < y.data.size(); ++i) {
        std::int64_t base = 0;
        for (std::size_t d = 0; d < rank; ++d)
            if (!((plan.blended >> d) & 1u)) base += plan.low[static_cast<std::size_t>(plan.first_tap[d] + at[d])];
        float sum = 0.0f;
        for (std::size_t corner = 0; corner < corners; ++corner) {
            std::int64_t offset = base;
            float weight = 1.0f;
            for (std::size_t k = 0; k < blended.size(); ++k) {
                const std::size_t d = blended[k];
                const auto tap = static_cast<std::size_t>(plan.first_tap[d] + at[d]);
                const bool high = ((corner >> k) & 1u) != 0;
                offset += high ? plan.high[tap] : plan.low[tap];
                weight *= high ? plan.high_weight[tap] : plan.low_weight[tap];
            }
            sum += weight * x.data[static_cast<std::size_t>(offset)];
        }
        y.data[i] = blended.empty() ? x.data[static_cast<std::size_t>(base)] : sum;
        for (std::size_t d = rank; d-- > 0;) {  // the next output coordinate, row-major
            if (++at[d] < plan.out_dims[d]) break;
            at[d] = 0;
        }
    }
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
