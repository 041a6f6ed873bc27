#pragma once
/// \file
/// The two collectives of data-parallel training (docs/scale-out.md), over any
/// Communicator: gradients averaged over the ranks, each rank weighted by the samples its
/// gradient is the mean of, and parameters broadcast from one rank. Ranks that start from
/// the root's parameters and step an optimiser on the averaged gradient stay equal, and
/// the update is the one a single process makes from all the ranks' samples.
///
/// The values travel as doubles: float gradients convert exactly, and the sums over ranks
/// round once, at the end.

#include <rlflow/core/communicator.hpp>
#include <rlflow/core/error.hpp>
#include <rlflow/nn/optim.hpp>
#include <rlflow/nn/tape.hpp>

#include <cstdint>
#include <span>
#include <string>
#include <vector>

namespace rlflow::nn {

namespace detail {

/// The tensors' values, end to end, as doubles.
template <TensorBackend B>
void append_host(std::vector<double>& out, const Tensor<B>& t, double scale) {
    for (const auto x : t.to_host()) out.push_back(static_cast<double>(x) * scale);
}

/// `values[offset, offset + t.numel())` back into `t`, times `scale`.
template <TensorBackend B>
std::size_t assign_host(Tensor<B>& t, const std::vector<double>& values, std::size_t offset, double scale) {
    using Scalar = typename B::Scalar;
    const auto n = static_cast<std::size_t>(t.numel());
    std::vector<Scalar> host(n);
    for (std::size_t i = 0; i < n; ++i) host[i] = static_cast<Scalar>(values[offset + i] * scale);
    t = Tensor<B>::from_host(t.shape(), host);
    return offset + n;
}

}  // namespace detail

/// Replaces every rank's gradients with sum_r samples_r g_r / sum_r samples_r, where g_r
/// is rank r's gradient, the mean over its `samples` samples. A rank with no samples
/// passes 0 (its gradient does not count); all ranks with none is a precondition error.
template <TensorBackend B, Communicator C>
void all_reduce_mean_gradients(C& comm, std::span<Parameter<B>* const> params, double samples) {
    RLFLOW_EXPECTS(samples >= 0, precondition_error, "all_reduce_mean_gradients: negative sample count");
    std::vector<double> packed;
    for (const Parameter<B>* p : params) detail::append_host(packed, p->grad, samples);
    packed.push_back(samples);
    comm.all_reduce_sum(std::span<double>(packed));
    const double total = packed.back();
    RLFLOW_EXPECTS(total > 0, precondition_error, "all_reduce_mean_gradients: no rank has samples");
    std::size_t offset = 0;
    for (Parameter<B>* p : params) offset = detail::assign_host(p->grad, packed, offset, 1 / total);
}

/// Gives every rank the parameter values of rank `root`.
template <TensorBackend B, Communicator C>
void broadcast_parameters(C& comm, std::span<Parameter<B>* const> params, int root) {
    std::vector<double> packed;
    for (const Parameter<B>* p : params) detail::append_host(packed, p->value, 1);
    comm.broadcast(std::span<double>(packed), root);
    std::size_t offset = 0;
    for (Parameter<B>* p : params) offset = detail::assign_host(p->value, packed, offset, 1);
}

/// Gives every rank the optimiser state of rank `root`: its step count and moment
/// estimates (a resumed run's, read from the checkpoint there).
template <TensorBackend B, Communicator C>
void broadcast_adam(C& comm, Adam<B>& adam, int root) {
    const std::size_t count = adam.parameters().size();
    std::vector<double> packed{static_cast<double>(adam.steps())};
    for (std::size_t i = 0; i < count; ++i) {
        detail::append_host(packed, adam.first_moment(i), 1);
        detail::append_host(packed, adam.second_moment(i), 1);
    }
    comm.broadcast(std::span<double>(packed), root);
    std::vector<Tensor<B>> first, second;
    std::size_t offset = 1;
    for (std::size_t i = 0; i < count; ++i) {
        first.push_back(adam.first_moment(i));
        second.push_back(adam.second_moment(i));
        offset = detail::assign_host(first.back(), packed, offset, 1);
        offset = detail::assign_host(second.back(), packed, offset, 1);
    }
    adam.restore(static_cast<std::int64_t>(packed[0]), std::move(first), std::move(second));
}

}  // namespace rlflow::nn
