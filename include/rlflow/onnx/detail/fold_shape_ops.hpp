#pragma once
/// \file
/// Constant-folding evaluators of the ONNX ops that move data without computing on it:
/// Shape, Size, Identity, Gather, Slice, (Un)Squeeze, Concat, Reshape, Transpose, Flatten,
/// Expand, Tile, Split, ConstantOfShape and Constant. They copy raw bytes, so they work on
/// every fixed-size dtype.

#include <rlflow/core/detail/typed_ops.hpp>
#include <rlflow/onnx/detail/fold_context.hpp>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <limits>
#include <numeric>
#include <optional>
#include <string>
#include <vector>

namespace rlflow::onnx_io::detail::folding {

// The element machinery and tensor-level evaluators the executor shares.
using namespace rlflow::detail::typed;

/// A 1-D int64 tensor.
[[nodiscard]] inline Tensor int64_vector(const std::vector<std::int64_t>& values) {
    return Tensor::from_values(DType::Int64, Shape{static_cast<std::int64_t>(values.size())}, values);
}

/// Shape (opset 15 adds `start`/`end`, clamped like Python slices): needs only a static type.
inline FoldResult fold_shape_of(const FoldContext& c) {
    c.expect_inputs(1, 1);
    const Shape shape = c.type(0)->shape;
    const std::int64_t rank = shape.rank();
    const auto clamp = [rank](std::int64_t i) { return std::clamp<std::int64_t>(i < 0 ? i + rank : i, 0, rank); };
    const std::int64_t start = clamp(c.int_attribute("start", 0));
    const std::int64_t end = clamp(c.int_attribute("end", rank));
    std::vector<std::int64_t> dims;
    for (std::int64_t i = start; i < end; ++i) {
        if (shape[static_cast<int>(i)] < 0) return std::nullopt;
        dims.push_back(shape[static_cast<int>(i)]);
    }
    return single(int64_vector(dims));
}

/// Size: the element count as an int64 scalar; needs only a static type.
inline FoldResult fold_size(const FoldContext& c) {
    c.expect_inputs(1, 1);
    const Shape shape = c.type(0)->shape;
    if (!shape.is_static()) return std::nullopt;
    return single(Tensor::from_values(DType::Int64, Shape{}, std::vector<std::int64_t>{shape.numel()}));
}

inline FoldResult fold_identity(const FoldContext& c) {
    c.expect_inputs(1, 1);
    return single(c.value(0));
}

/// Gather: out = data[:axis] + indices.shape + data[axis+1:]; negative indices count from the end.
inline FoldResult fold_gather(const FoldContext& c) {
    c.expect_inputs(2, 2);
    const Tensor& data = c.value(0);
    const Shape& shape = data.shape();
    if (shape.rank() == 0) c.fail("data must have rank >= 1");
    const int axis = c.axis(c.int_attribute("axis", 0), shape.rank());
    const std::int64_t size = shape[axis];
    const auto indices = c.integers(1);
    if (const auto bad = index_out_of_range(indices, size))
        c.fail("index " + std::to_string(*bad) + " out of range for axis of size " + std::to_string(size));
    const auto output = bounded_shape(gather_dims(shape, c.value(1).shape(), axis));
    if (!output) return std::nullopt;
    return single(gather_tensor(data, indices, axis, *output));
}

/// GatherElements: out[i] = data[i with its `axis` coordinate replaced by indices[i]];
/// indices has data's rank, and no dimension larger than data's except along the axis.
inline FoldResult fold_gather_elements(const FoldContext& c) {
    c.expect_inputs(2, 2);
    const Tensor& data = c.value(0);
    const Shape& shape = data.shape();
    const Shape& index_shape = c.value(1).shape();
    if (shape.rank() == 0) c.fail("data must have rank >= 1");
    if (index_shape.rank() != shape.rank())
        c.fail("indices have rank " + std::to_string(index_shape.rank()) + ", data " + std::to_string(shape.rank()));
    const int axis = c.axis(c.int_attribute("axis", 0), shape.rank());
    for (int d = 0; d < shape.rank(); ++d)
        if (d != axis && index_shape[d] > shape[d])
            c.fail("indices shape " + index_shape.to_string() + " exceeds data shape " + shape.to_string());
    const auto indices = c.integers(1);
    const auto strides = row_major_strides(shape);
    const auto index_strides = row_major_strides(index_shape);
    const std::size_t element_size = dtype_size(data.dtype());
    const auto input = data.raw();
    std::vector<std::byte> bytes(indices.size() * element_size);
    for (std::size_t i = 0; i < indices.size(); ++i) {
        std::int64_t offset = 0, rest = static_cast<std::int64_t>(i);
        for (int d = 0; d < shape.rank(); ++d) {
            const std::int64_t coordinate = rest / index_strides[static_cast<std::size_t>(d)];
            rest %= index_strides[static_cast<std::size_t>(d)];
            std::int64_t at = coordinate;
            if (d == axis) {
                at = indices[i];
                if (at < -shape[d] || at >= shape[d])
                    c.fail("index " + std::to_string(at) + " out of range for axis of size " + std::to_string(shape[d]));
                at = at < 0 ? at + shape[d] : at;
            }
            offset += at * strides[static_cast<std::size_t>(d)];
        }
        std::memcpy(bytes.data() + i * element_size, input.data() + static_cast<std::size_t>(offset) * element_size,
                    element_size);
    }
    return single(Tensor::from_raw(data.dtype(), index_shape, bytes));
}

/// The first index and element count of a Slice along one axis of size `size`, after ONNX's
/// clamping: start and end are clamped to [0, size] for positive steps, and to [0, size-1]
/// and [-1, size-1] for negative ones.
struct SliceRange {
    std::int64_t start = 0;
    std::int64_t count = 0;
};

[[nodiscard]] inline SliceRange slice_range(std::int64_t start, std::int64_t end, std::int64_t step, std::int64_t size) {
    if (size == 0) return {};
    if (start < 0) start += size;
    if (end < 0) end += size;
    if (step > 0) {
        start = std::clamp<std::int64_t>(start, 0, size);
        end = std::clamp<std::int64_t>(end, 0, size);
    } else {
        start = std::clamp<std::int64_t>(start, 0, size - 1);
        end = std::clamp<std::int64_t>(end, -1, size - 1);
    }
    const std::int64_t distance = step > 0 ? end - start : start - end;
    if (distance <= 0) return {start, 0};
    // |step| in unsigned arithmetic, so that step == INT64_MIN does not overflow.
    const std::uint64_t magnitude = step > 0 ? static_cast<std::uint64_t>(step) : 0 - static_cast<std::uint64_t>(step);
    return {start, static_cast<std::int64_t>((static_cast<std::uint64_t>(distance) - 1) / magnitude + 1)};
}

/// Slice's starts, ends, axes and steps: inputs since opset 10, attributes before.
struct SliceParameters {
    std::vector<std::int64_t> starts, ends, axes, steps;
};

[[nodiscard]] inline SliceParameters slice_parameters(const FoldContext& c) {
    constexpr std::int64_t inputs_since = 10;
    SliceParameters p;
    if (c.opset() < inputs_since) {
        c.expect_inputs(1, 1);
        p.starts = c.ints_attribute("starts").value_or(std::vector<std::int64_t>{});
        p.ends = c.ints_attribute("ends").value_or(std::vector<std::int64_t>{});
        p.axes = c.ints_attribute("axes").value_or(std::vector<std::int64_t>{});
    } else {
        c.expect_inputs(3, 5);
        p.starts = c.integer_list(1);
        p.ends = c.integer_list(2);
        if (c.has_input(3)) p.axes = c.integer_list(3);
        if (c.has_input(4)) p.steps = c.integer_list(4);
    }
    const std::size_t n = p.starts.size();
    if (p.axes.empty() && !c.has_input(3)) {
        p.axes.resize(n);
        std::iota(p.axes.begin(), p.axes.end(), 0);
    }
    if (p.steps.empty() && !c.has_input(4)) p.steps.assign(n, 1);
    if (p.ends.size() != n || p.axes.size() != n || p.steps.size() != n)
        c.fail("starts, ends, axes and steps have different lengths");
    return p;
}

/// Slice (opset 10+ form, and the opset 1 attribute form).
inline FoldResult fold_slice(const FoldContext& c) {
    const SliceParameters p = slice_parameters(c);
    const Tensor& data = c.value(0);
    const Shape& shape = data.shape();
    const std::vector<int> axes = unique_axes(c, p.axes, shape.rank());
    const auto strides = row_major_strides(shape);
    OffsetTable table;
    std::vector<std::int64_t> dims;
    for (int d = 0; d < shape.rank(); ++d) {
        const auto stride = strides[static_cast<std::size_t>(d)];
        const auto found = std::find(axes.begin(), axes.end(), d);
        if (found == axes.end()) {
            table.push_back(identity_offsets(shape[d], stride));
            dims.push_back(shape[d]);
            continue;
        }
        const auto i = static_cast<std::size_t>(found - axes.begin());
        if (p.steps[i] == 0) c.fail("step for axis " + std::to_string(d) + " is 0");
        const SliceRange range = slice_range(p.starts[i], p.ends[i], p.steps[i], shape[d]);
        auto& offsets = table.emplace_back();
        for (std::int64_t k = 0; k < range.count; ++k) offsets.push_back((range.start + k * p.steps[i]) * stride);
        dims.push_back(range.count);
    }
    return single(remap(data, table, Shape(dims)));
}

/// Unsqueeze: axes are an attribute before opset 13, an input since.
inline FoldResult fold_unsqueeze(const FoldContext& c) {
    c.expect_inputs(c.opset() < inputs_replace_attributes_opset ? 1 : 2, c.opset() < inputs_replace_attributes_opset ? 1 : 2);
    const auto axes = c.axes("axes", inputs_replace_attributes_opset, 1);
    if (!axes) c.fail("missing axes");
    const Tensor& data = c.value(0);
    const auto rank = static_cast<std::size_t>(data.shape().rank()) + axes->size();
    if (rank > static_cast<std::size_t>(Shape::max_rank)) return std::nullopt;
    const std::vector<int> inserted = unique_axes(c, *axes, static_cast<int>(rank));
    std::vector<std::int64_t> dims;
    int next = 0;
    for (int d = 0; d < static_cast<int>(rank); ++d)
        dims.push_back(std::find(inserted.begin(), inserted.end(), d) != inserted.end() ? 1 : data.shape()[next++]);
    return single(with_shape(data, Shape(dims)));
}

/// Squeeze: without axes removes every size-1 dimension; axes move to an input in opset 13.
inline FoldResult fold_squeeze(const FoldContext& c) {
    c.expect_inputs(1, c.opset() < inputs_replace_attributes_opset ? 1 : 2);
    const Tensor& data = c.value(0);
    const Shape& shape = data.shape();
    auto axes = c.axes("axes", inputs_replace_attributes_opset, 1);
    if (axes && axes->empty()) axes.reset();  // an empty list squeezes every size-1 dim, as in ONNX Runtime
    const std::vector<int> removed = axes ? unique_axes(c, *axes, shape.rank()) : std::vector<int>{};
    for (const int a : removed)
        if (shape[a] != 1) c.fail("cannot squeeze axis " + std::to_string(a) + " of size " + std::to_string(shape[a]));
    std::vector<std::int64_t> dims;
    for (int d = 0; d < shape.rank(); ++d) {
        const bool drop = axes ? std::find(removed.begin(), removed.end(), d) != removed.end() : shape[d] == 1;
        if (!drop) dims.push_back(shape[d]);
    }
    return single(with_shape(data, Shape(dims)));
}

/// Checks that Concat's inputs agree on dtype, rank and every dimension but `axis`.
inline void check_concat_inputs(const FoldContext& c, int axis) {
    const Tensor& first = c.value(0);
    for (std::size_t i = 1; i < c.input_count(); ++i) {
        const Tensor& t = c.value(i);
        bool same = t.dtype() == first.dtype() && t.shape().rank() == first.shape().rank();
        for (int d = 0; same && d < t.shape().rank(); ++d) same = d == axis || t.shape()[d] == first.shape()[d];
        if (!same)
            c.fail("input " + std::to_string(i) + " " + t.type().to_string() + " does not match input 0 "
                   + first.type().to_string() + " outside axis " + std::to_string(axis));
    }
}

inline FoldResult fold_concat(const FoldContext& c) {
    c.expect_inputs(1, std::numeric_limits<int>::max());
    const Tensor& first = c.value(0);
    const int rank = first.shape().rank();
    if (rank == 0) c.fail("cannot concatenate scalars");
    const int axis = c.axis(c.required_int("axis"), rank);
    check_concat_inputs(c, axis);
    std::vector<std::int64_t> dims(first.shape().dims().begin(), first.shape().dims().end());
    dims[static_cast<std::size_t>(axis)] = 0;
    for (std::size_t i = 0; i < c.input_count(); ++i) dims[static_cast<std::size_t>(axis)] += c.value(i).shape()[axis];
    const auto output = bounded_shape(dims);
    if (!output) return std::nullopt;
    const std::size_t element_size = dtype_size(first.dtype());
    const auto inner = static_cast<std::size_t>(first.shape().product(axis + 1, rank)) * element_size;
    const std::int64_t outer = first.shape().product(0, axis);
    std::vector<std::byte> bytes;
    bytes.reserve(static_cast<std::size_t>(output->numel()) * element_size);
    for (std::int64_t o = 0; o < outer; ++o) {
        for (std::size_t i = 0; i < c.input_count(); ++i) {
            const auto chunk = static_cast<std::size_t>(c.value(i).shape()[axis]) * inner;
            const auto raw = c.value(i).raw().subspan(static_cast<std::size_t>(o) * chunk, chunk);
            bytes.insert(bytes.end(), raw.begin(), raw.end());
        }
    }
    return single(Tensor::from_raw(first.dtype(), *output, bytes));
}

/// Reshape's target dims: 0 copies the input dim (unless allowzero), -1 is inferred.
[[nodiscard]] inline std::vector<std::int64_t> reshape_dims(const FoldContext& c, const Shape& input,
                                                            std::vector<std::int64_t> dims) {
    const bool allow_zero = c.int_attribute("allowzero", 0) != 0;
    std::optional<std::size_t> inferred;
    for (std::size_t i = 0; i < dims.size(); ++i) {
        if (dims[i] == -1) {
            if (inferred) c.fail("shape " + list_to_string(dims) + " has more than one -1");
            inferred = i;
        } else if (dims[i] < -1) {
            c.fail("shape " + list_to_string(dims) + " has a negative dimension");
        } else if (dims[i] == 0 && !allow_zero) {
            if (i >= static_cast<std::size_t>(input.rank()))
                c.fail("shape " + list_to_string(dims) + " copies dimension " + std::to_string(i) + " of a rank-"
                       + std::to_string(input.rank()) + " input");
            dims[i] = input[static_cast<int>(i)];
        }
    }
    if (!inferred) return dims;
    if (allow_zero && std::find(dims.begin(), dims.end(), 0) != dims.end())
        c.fail("shape " + list_to_string(dims) + " has both 0 and -1 with allowzero");
    dims[*inferred] = 1;
    const auto known = checked_product(dims);
    if (!known || *known == 0 || input.numel() % *known != 0)
        c.fail("cannot infer the -1 in " + list_to_string(dims) + " for input shape " + input.to_string());
    dims[*inferred] = input.numel() / *known;
    return dims;
}

/// Reshape (shape as an input, opset 5+; allowzero since 14).
inline FoldResult fold_reshape(const FoldContext& c) {
    c.expect_inputs(2, 2);
    const Tensor& data = c.value(0);
    const auto requested = c.integer_list(1);
    if (requested.size() > static_cast<std::size_t>(Shape::max_rank)) return std::nullopt;
    const auto dims = reshape_dims(c, data.shape(), requested);
    const auto count = checked_product(dims);
    if (!count || *count != data.numel())
        c.fail("cannot reshape " + data.shape().to_string() + " to " + list_to_string(requested));
    return single(with_shape(data, Shape(dims)));
}

/// Transpose; `perm` defaults to reversing the dimensions.
inline FoldResult fold_transpose(const FoldContext& c) {
    c.expect_inputs(1, 1);
    const Tensor& data = c.value(0);
    const Shape& shape = data.shape();
    std::vector<std::int64_t> perm(static_cast<std::size_t>(shape.rank()));
    std::iota(perm.rbegin(), perm.rend(), 0);
    perm = c.ints_attribute("perm").value_or(perm);
    std::vector<std::int64_t> sorted = perm;
    std::sort(sorted.begin(), sorted.end());
    for (std::size_t i = 0; i < sorted.size(); ++i)
        if (sorted.size() != static_cast<std::size_t>(shape.rank()) || sorted[i] != static_cast<std::int64_t>(i))
            c.fail("perm " + list_to_string(perm) + " is not a permutation of the " + std::to_string(shape.rank())
                   + " input dimensions");
    const auto strides = row_major_strides(shape);
    OffsetTable table;
    std::vector<std::int64_t> dims;
    for (const auto p : perm) {
        table.push_back(identity_offsets(shape[static_cast<int>(p)], strides[static_cast<std::size_t>(p)]));
        dims.push_back(shape[static_cast<int>(p)]);
    }
    return single(remap(data, table, Shape(dims)));
}

/// Flatten to 2-D at `axis` (in [-rank, rank]).
inline FoldResult fold_flatten(const FoldContext& c) {
    c.expect_inputs(1, 1);
    const Tensor& data = c.value(0);
    const int rank = data.shape().rank();
    const std::int64_t axis = c.int_attribute("axis", 1);
    if (axis < -rank || axis > rank)
        c.fail("axis " + std::to_string(axis) + " out of range for rank " + std::to_string(rank));
    const int split = static_cast<int>(axis < 0 ? axis + rank : axis);
    return single(with_shape(data, Shape{data.shape().product(0, split), data.shape().product(split, rank)}));
}

/// A 1-D shape input with non-negative dims, or nullopt if its rank exceeds Shape::max_rank.
[[nodiscard]] inline std::optional<std::vector<std::int64_t>> shape_input(const FoldContext& c, std::size_t i) {
    const auto dims = c.integer_list(i);
    for (const auto d : dims)
        if (d < 0) c.fail("shape " + list_to_string(dims) + " has a negative dimension");
    if (dims.size() > static_cast<std::size_t>(Shape::max_rank)) return std::nullopt;
    return dims;
}

/// Expand: numpy broadcast of the input against the shape input.
inline FoldResult fold_expand(const FoldContext& c) {
    c.expect_inputs(2, 2);
    const Tensor& data = c.value(0);
    const auto requested = shape_input(c, 1);
    if (!requested) return std::nullopt;
    const auto broadcast = broadcast_shapes(data.shape(), Shape(*requested));
    if (!broadcast)
        c.fail("cannot broadcast " + data.shape().to_string() + " to " + list_to_string(*requested));
    const auto output = bounded_shape(broadcast->dims());
    if (!output) return std::nullopt;
    return single(expand_tensor(data, *output));
}

/// ScatterND without a reduction: a copy of data whose slices named by the last axis of
/// indices are replaced by updates, in index order (a repeated index: the last write
/// wins, as ONNX Runtime writes them in order). Negative indices count from the end. The
/// reductions (add, mul, max, min) are left unfolded.
inline FoldResult fold_scatter_nd(const FoldContext& c) {
    c.expect_inputs(3, 3);
    if (const auto* reduction = c.attribute("reduction"); reduction != nullptr && reduction->s() != "none") return std::nullopt;
    const Tensor& data = c.value(0);
    const Tensor& updates = c.value(2);
    const Shape& shape = data.shape();
    const Shape& index_shape = c.value(1).shape();
    if (updates.dtype() != data.dtype())
        c.fail("updates " + updates.type().to_string() + " and data " + data.type().to_string() + " differ in type");
    if (index_shape.rank() < 1) c.fail("indices must have rank >= 1");
    const std::int64_t k = index_shape[index_shape.rank() - 1];
    if (k > shape.rank()) c.fail("indices address " + std::to_string(k) + " dimensions of data " + shape.to_string());
    Shape expected(index_shape.dims().first(static_cast<std::size_t>(index_shape.rank() - 1)));
    for (int d = static_cast<int>(k); d < shape.rank(); ++d) expected.push_back(shape[d]);
    if (updates.shape() != expected)
        c.fail("updates have shape " + updates.shape().to_string() + ", expected " + expected.to_string());
    const std::vector<std::int64_t> indices = c.integers(1);
    const auto strides = row_major_strides(shape);
    const std::int64_t slice = shape.product(static_cast<int>(k), shape.rank());
    const std::int64_t rows = index_shape.product(0, index_shape.rank() - 1);
    const std::size_t element = dtype_size(data.dtype());
    std::vector<std::byte> bytes(data.raw().begin(), data.raw().end());
    const std::span<const std::byte> source = updates.raw();
    for (std::int64_t r = 0; r < rows; ++r) {
        std::int64_t offset = 0;
        for (std::int64_t j = 0; j < k; ++j) {
            std::int64_t index = indices[static_cast<std::size_t>(r * k + j)];
            const std::int64_t size = shape[static_cast<int>(j)];
            if (index < -size || index >= size)
                c.fail("index " + std::to_string(index) + " out of range for dimension " + std::to_string(j) + " of size "
                       + std::to_string(size));
            if (index < 0) index += size;
            offset += index * strides[static_cast<std::size_t>(j)];
        }
        const auto count = static_cast<std::size_t>(slice) * element;
        if (count > 0) std::memcpy(bytes.data() + static_cast<std::size_t>(offset) * element, source.data() + static_cast<std::size_t>(r) * count, count);
    }
    return single(Tensor::from_raw(data.dtype(), shape, bytes));
}

/// Tile: dimension d is repeated repeats[d] times.
inline FoldResult fold_tile(const FoldContext& c) {
    c.expect_inputs(2, 2);
    const Tensor& data = c.value(0);
    const Shape& shape = data.shape();
    const auto repeats = c.integer_list(1);
    if (repeats.size() != static_cast<std::size_t>(shape.rank()))
        c.fail("repeats " + list_to_string(repeats) + " do not match input rank " + std::to_string(shape.rank()));
    std::vector<std::int64_t> dims;
    for (int d = 0; d < shape.rank(); ++d) {
        const auto r = repeats[static_cast<std::size_t>(d)];
        if (r < 0) c.fail("repeats " + list_to_string(repeats) + " has a negative count");
        if (shape[d] != 0 && r > max_fold_elements / shape[d]) return std::nullopt;
        dims.push_back(shape[d] * r);
    }
    const auto output = bounded_shape(dims);
    if (!output) return std::nullopt;
    const auto strides = row_major_strides(shape);
    OffsetTable table;
    for (int d = 0; d < shape.rank(); ++d) {
        auto& offsets = table.emplace_back();
        for (std::int64_t i = 0; i < dims[static_cast<std::size_t>(d)]; ++i)
            offsets.push_back(i % shape[d] * strides[static_cast<std::size_t>(d)]);
    }
    return single(remap(data, table, *output));
}

/// Split's part sizes: attribute before opset 13, optional input since; equal parts without.
[[nodiscard]] inline std::vector<std::int64_t> split_sizes(const FoldContext& c, std::int64_t size) {
    const auto parts = static_cast<std::int64_t>(c.output_count());
    if (parts == 0) c.fail("has no outputs");
    auto sizes = c.axes("split", inputs_replace_attributes_opset, 1);
    if (!sizes) {
        if (size % parts != 0)
            c.fail("axis of size " + std::to_string(size) + " does not split into " + std::to_string(parts) + " equal parts");
        return std::vector<std::int64_t>(static_cast<std::size_t>(parts), size / parts);
    }
    std::int64_t total = 0;
    for (const auto s : *sizes) {
        if (s < 0) c.fail("split " + list_to_string(*sizes) + " has a negative size");
        total += s;
    }
    if (static_cast<std::int64_t>(sizes->size()) != parts || total != size)
        c.fail("split " + list_to_string(*sizes) + " does not cut an axis of size " + std::to_string(size) + " into "
               + std::to_string(parts) + " outputs");
    return *sizes;
}

/// Split into one output per part along `axis`.
inline FoldResult fold_split(const FoldContext& c) {
    c.expect_inputs(1, c.opset() < inputs_replace_attributes_opset ? 1 : 2);
    const Tensor& data = c.value(0);
    const Shape& shape = data.shape();
    if (shape.rank() == 0) c.fail("cannot split a scalar");
    const int axis = c.axis(c.int_attribute("axis", 0), shape.rank());
    const auto strides = row_major_strides(shape);
    std::vector<Tensor> outputs;
    std::int64_t start = 0;
    for (const auto size : split_sizes(c, shape[axis])) {
        OffsetTable table;
        Shape part = shape;
        for (int d = 0; d < shape.rank(); ++d)
            table.push_back(identity_offsets(d == axis ? size : shape[d], strides[static_cast<std::size_t>(d)]));
        for (auto& offset : table[static_cast<std::size_t>(axis)]) offset += start * strides[static_cast<std::size_t>(axis)];
        part[axis] = size;
        outputs.push_back(remap(data, table, part));
        start += size;
    }
    return outputs;
}

/// ConstantOfShape: `value` (a one-element tensor, default float 0) repeated over the shape input.
inline FoldResult fold_constant_of_shape(const FoldContext& c) {
    c.expect_inputs(1, 1);
    const auto dims = shape_input(c, 0);
    if (!dims) return std::nullopt;
    const auto output = bounded_shape(*dims);
    if (!output) return std::nullopt;
    Tensor fill = Tensor::from_floats(Shape{1}, {0.0f});
    if (const auto* a = c.attribute("value")) {
        if (!a->has_t()) c.fail("attribute 'value' must be a tensor");
        fill = tensor_from_proto(a->t(), c.describe() + " attribute 'value'");
        if (fill.numel() != 1) c.fail("attribute 'value' must hold one element, has " + std::to_string(fill.numel()));
    }
    OffsetTable table;
    for (const auto d : output->dims()) table.push_back(std::vector<std::int64_t>(static_cast<std::size_t>(d), 0));
    return single(remap(fill, table, *output));
}

/// Constant: a `value` tensor, or value_float(s)/value_int(s). Sparse and string values are
/// left to the importer.
inline FoldResult fold_constant(const FoldContext& c) {
    c.expect_inputs(0, 0);
    if (c.node().attribute_size() != 1) c.fail("must have exactly one value attribute");
    const auto& a = c.node().attribute(0);
    if (a.name() == "value" && a.has_t()) return single(tensor_from_proto(a.t(), c.describe() + " attribute 'value'"));
    if (a.name() == "value_float") return single(Tensor::from_floats(Shape{}, {a.f()}));
    if (a.name() == "value_int") return single(Tensor::from_values(DType::Int64, Shape{}, std::vector<std::int64_t>{a.i()}));
    if (a.name() == "value_ints") return single(int64_vector({a.ints().begin(), a.ints().end()}));
    if (a.name() == "value_floats")
        return single(Tensor::from_floats(Shape{a.floats_size()}, {a.floats().begin(), a.floats().end()}));
    return std::nullopt;
}

}  // namespace rlflow::onnx_io::detail::folding
