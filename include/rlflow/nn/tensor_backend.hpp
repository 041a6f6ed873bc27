#pragma once
/// \file
/// `TensorBackend`: what a tensor backend must provide. Every nn op is written once over
/// these primitives (gemm, element-wise maps over broadcast operands, reductions into
/// broadcast shapes, row gather and scatter-add, block copies), and each backend
/// specialises them (`nn/backend/eigen.hpp` on the CPU, `nn/backend/cublas.hpp` on a GPU).
/// A backend that lacks one fails this concept, so it fails to compile, with the missing
/// requirement named; nothing is found missing at run time.
///
/// Memory: a backend owns buffers of scalars and of row indices in its own memory space
/// (`Buffer`, `IndexBuffer`); primitives take raw pointers into them. Tensors are row-major
/// and contiguous.

#include <rlflow/nn/functions.hpp>

#include <array>
#include <concepts>
#include <cstdint>
#include <span>
#include <string_view>
#include <vector>

namespace rlflow::nn {

/// Whether a gemm operand is used as stored or transposed.
enum class Transpose : std::uint8_t { no, yes };

/// An element-wise loop over a 3-D output (dims, row-major, contiguous) whose operands are
/// read through their own strides; a stride of 0 repeats the operand along that axis
/// (broadcasting). Lower-rank tensors are padded with leading 1s.
struct Strided3 {
    std::array<std::int64_t, 3> dims{1, 1, 1};
    std::array<std::int64_t, 3> a{0, 0, 0};
    std::array<std::int64_t, 3> b{0, 0, 0};
    [[nodiscard]] std::int64_t size() const noexcept { return dims[0] * dims[1] * dims[2]; }
};

/// The requirements; `Fn` stand-ins check that the element-wise templates accept functors.
template <class B>
concept TensorBackend =
    std::floating_point<typename B::Scalar>
    && requires(std::size_t n, typename B::Buffer& buffer, const typename B::Buffer& cbuffer,
                typename B::IndexBuffer& indices, const typename B::IndexBuffer& cindices,
                std::span<const typename B::Scalar> host, std::span<const std::int32_t> host_indices,
                typename B::Scalar* out, const typename B::Scalar* in, const std::int32_t* index, typename B::Scalar value,
                Transpose t, std::int64_t m, const Strided3& plan) {
        { B::name } -> std::convertible_to<std::string_view>;
        // Rows per tile of an MLP's inference pass (layers.hpp, Mlp::infer), sized so that a
        // tile's activations stay in cache; 0 runs all rows as one tile (a GPU's kernels
        // want every row at once).
        { B::row_tile } -> std::convertible_to<std::int64_t>;
        // Memory.
        { B::allocate(n) } -> std::same_as<typename B::Buffer>;  // n zeros
        { B::allocate_uninitialized(n) } -> std::same_as<typename B::Buffer>;  // n values to be overwritten
        { B::upload(host) } -> std::same_as<typename B::Buffer>;
        { B::download(cbuffer) } -> std::same_as<std::vector<typename B::Scalar>>;
        { B::data(buffer) } -> std::same_as<typename B::Scalar*>;
        { B::data(cbuffer) } -> std::same_as<const typename B::Scalar*>;
        { B::upload_indices(host_indices) } -> std::same_as<typename B::IndexBuffer>;
        { B::data(cindices) } -> std::same_as<const std::int32_t*>;
        B::fill(out, m, value);
        // A hint that m values from `in` will be read soon (a tile ahead of the one being
        // computed); it may do nothing.
        B::prefetch(in, m);
        B::copy(out, in, m);
        // C = alpha op(A) op(B) + beta C, row-major, `count` matrices at the given strides.
        B::gemm(t, t, m, m, m, value, in, m, in, m, value, out, m, m, m, m, m);
        // Element-wise over broadcast operands.
        B::template map<fn::Tanh>(plan, out, in);
        B::template zip<fn::Add>(plan, out, in, in);
        // out[broadcast index] += in[i]: sums a gradient back into a broadcast operand's shape
        // (plan.a holds out's strides, 0 along summed axes).
        B::accumulate(plan, out, in);
        // Per row of a (rows, cols) matrix: the maximum and the sum (with a NaN in the row,
        // the maximum is not defined; callers that must see NaN check for it themselves).
        B::row_max(out, in, m, m);
        B::row_sum(out, in, m, m);
        // Rows: out[r] = in[index[r]]; out[index[r]] += in[r]; out[r] += in[index[r]].
        B::gather_rows(out, in, index, m, m);
        B::scatter_add_rows(out, in, index, m, m);
        B::gather_add_rows(out, in, index, m, m);
        // A block of rows x cols between matrices of different row lengths (ld).
        B::copy_block(out, m, in, m, m, m);
        // Layer normalisation of each row of a (rows, cols) matrix, in one pass over it:
        // out = (x - mean) / sqrt(var + eps) * gamma + beta, also writing the normalised
        // rows and 1 / sqrt(var + eps) per row where those pointers are not null; and its
        // input gradient, dx = inv_std (g gamma - mean(g gamma) - xhat mean(g gamma xhat)).
        B::layer_norm(out, out, out, in, in, in, m, m, value);
        B::layer_norm_backward(out, in, in, in, in, m, m);
    };

template <class B>
inline constexpr bool is_tensor_backend_v = TensorBackend<B>;

}  // namespace rlflow::nn
