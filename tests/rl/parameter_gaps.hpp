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

}  // namespace rlflow::test
