#pragma once
// Comparisons of two networks' parameters, entry by entry, shared by the rl and mpi tests.
#include <rlflow/nn/tape.hpp>

#include <algorithm>
#include <cmath>
#include <vector>

namespace rlflow::test {

/// Which tensor of a parameter to compare.
enum class Field { value, grad };

template <nn::TensorBackend B>
std::vector<float> host(const nn::Parameter<B>& p, Field f) {
    return (f == Field::value ? p.value : p.grad).to_host();
}

/// The largest |entry| over every parameter's `f`.
template <nn::TensorBackend B>
double largest_entry(const std::vector<nn::Parameter<B>*>& ps, Field f) {
    double largest = 0;
    for (const nn::Parameter<B>* p : ps)
        for (const float x : host(*p, f)) largest = std::max(largest, static_cast<double>(std::abs(x)));
    return largest;
}

/// The largest |a - b| over the entries of parameter `a`'s and `b`'s `f`.
template <nn::TensorBackend B>
double largest_gap(const nn::Parameter<B>& a, const nn::Parameter<B>& b, Field f) {
    const std::vector<float> x = host(a, f), y = host(b, f);
    double gap = 0;
    for (std::size_t i = 0; i < x.size(); ++i) gap = std::max(gap, static_cast<double>(std::abs(x[i] - y[i])));
    return gap;
}

/// The largest gap over every pair of parameters (same networks' parameters in order).
template <nn::TensorBackend B>
double largest_gap(const std::vector<nn::Parameter<B>*>& a, const std::vector<nn::Parameter<B>*>& b, Field f) {
    double gap = 0;
    for (std::size_t p = 0; p < a.size(); ++p) gap = std::max(gap, largest_gap(*a[p], *b[p], f));
    return gap;
}

/// Euclidean norm of (a - b) over every entry of every parameter's value, divided by that
/// of (a - before): how far apart two updates from `before` ended, against how far one
/// went. Adam moves a weight with a near-zero gradient by about its learning rate either
/// way, so single entries of two updates that round differently may differ by that much;
/// the update as a whole is what must agree.
template <nn::TensorBackend B>
double relative_update_gap(const std::vector<nn::Parameter<B>*>& a, const std::vector<nn::Parameter<B>*>& b,
                           const std::vector<std::vector<float>>& before) {
    double apart = 0, moved = 0;
    for (std::size_t p = 0; p < a.size(); ++p) {
        const std::vector<float> x = host(*a[p], Field::value), y = host(*b[p], Field::value);
        for (std::size_t i = 0; i < x.size(); ++i) {
            apart += (static_cast<double>(x[i]) - y[i]) * (static_cast<double>(x[i]) - y[i]);
            moved += (static_cast<double>(x[i]) - before[p][i]) * (static_cast<double>(x[i]) - before[p][i]);
        }
    }
    return moved > 0 ? std::sqrt(apart / moved) : (apart > 0 ? 1.0 : 0.0);
}

/// Every parameter's values, to compare with later (relative_update_gap).
template <nn::TensorBackend B>
std::vector<std::vector<float>> values_of(const std::vector<nn::Parameter<B>*>& ps) {
    std::vector<std::vector<float>> out;
    for (const nn::Parameter<B>* p : ps) out.push_back(host(*p, Field::value));
    return out;
}

}  // namespace rlflow::test
