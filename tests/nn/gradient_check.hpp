#pragma once
// Finite-difference gradient checks in float64: the analytic gradient of every parameter
// (Tape::backward) against central differences of the same loss, element by element.

#include <rlflow/core/random.hpp>
#include <rlflow/nn.hpp>

#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <string>
#include <vector>

namespace nn_test {

using namespace rlflow;
using Double = nn::backend::EigenDouble;
using T = nn::Tensor<Double>;
using V = nn::Var<Double>;
using P = nn::Parameter<Double>;

/// Uniform values in [lo, hi), as a tensor.
inline T random_tensor(const Shape& shape, Rng& rng, double lo = -1, double hi = 1) {
    std::vector<double> v(static_cast<std::size_t>(shape.numel()));
    for (double& x : v) x = rng.uniform(lo, hi);
    return T::from_host(shape, v);
}

/// Parameters of the given shapes, uniform in [lo, hi).
inline std::vector<P> random_parameters(const std::vector<Shape>& shapes, Rng& rng, double lo = -1, double hi = 1) {
    std::vector<P> out;
    for (std::size_t i = 0; i < shapes.size(); ++i) out.emplace_back("p" + std::to_string(i), random_tensor(shapes[i], rng, lo, hi));
    return out;
}

/// Compares the gradients that `backward` adds to the grads of `params` (zeroed first)
/// with central differences of `value`, element by element; check_parameter_gradients
/// says how.
inline double compare_with_central_differences(const std::vector<P*>& params, const std::function<void()>& backward,
                                               const std::function<double()>& value, double tolerance) {
    for (P* p : params) p->grad = T(p->value.shape());
    backward();
    // Every gradient is read before any parameter moves: a loss that runs its own backward
    // pass (LossWithBackward) adds to the grads again each time it is evaluated.
    std::vector<std::vector<double>> analytic;
    for (P* p : params) analytic.push_back(p->grad.to_host());
    constexpr double step = 1e-6;
    double worst = 0;
    for (std::size_t k = 0; k < params.size(); ++k) {
        P* p = params[k];
        std::vector<double> values = p->value.to_host();
        for (std::size_t i = 0; i < values.size(); ++i) {
            const double original = values[i];
            const auto at = [&](double x) {
                values[i] = x;
                p->value = T::from_host(p->value.shape(), values);
                return value();
            };
            const double numeric = (at(original + step) - at(original - step)) / (2 * step);
            values[i] = original;
            p->value = T::from_host(p->value.shape(), values);
            const double error = std::abs(analytic[k][i] - numeric) / std::max(1.0, std::abs(numeric));
            worst = std::max(worst, error);
            if (error > tolerance) {
                FAIL_CHECK("parameter '" << p->name << "' element " << i << ": analytic " << analytic[k][i] << " vs numeric " << numeric);
                return worst;
            }
        }
    }
    return worst;
}

/// Checks d loss / d p for every element of every parameter in `params` (perturbed in
/// place, so a module's own parameters can be listed): the analytic gradient of
/// `loss(tape)` (Tape::backward) against central differences. Returns the largest relative
/// error |analytic - numeric| / max(1, |numeric|), failing the check at the first element
/// above `tolerance`.
using Loss = std::function<V(nn::Tape<Double>&)>;
inline double check_parameter_gradients(const std::vector<P*>& params, const Loss& loss, double tolerance = 1e-6) {
    return compare_with_central_differences(
        params,
        [&] {
            nn::Tape<Double> tape;
            tape.backward(loss(tape));
        },
        [&] {
            nn::Tape<Double> tape;
            return loss(tape).value().item();
        },
        tolerance);
}

/// A loss that runs its own backward pass, as the trainers' losses do (rl::add_ppo_gradient,
/// rl::WorldModel::add_gradient): each call adds d loss / d p to every parameter's grad and
/// returns the loss's value.
using LossWithBackward = std::function<double()>;
/// check_parameter_gradients for such a loss.
inline double check_loss_with_backward(const std::vector<P*>& params, const LossWithBackward& loss, double tolerance = 1e-6) {
    return compare_with_central_differences(params, [&] { (void)loss(); }, loss, tolerance);
}

/// sum(out * R) for fixed random weights R of out's shape, so every output element reaches
/// the gradient with its own weight.
inline V weighted_sum(nn::Tape<Double>& tape, const V& out, std::uint64_t seed) {
    Rng rng(seed);
    return nn::sum(nn::mul(out, tape.constant(random_tensor(out.shape(), rng))));
}

/// A function of parameters, checked through check_parameter_gradients on weighted_sum of
/// its output (which must have `output_shape`).
using Function = std::function<V(nn::Tape<Double>&, const std::vector<V>&)>;
inline double check_gradients(const Function& f, std::vector<P> params, const Shape& output_shape, std::uint64_t seed = 1,
                              double tolerance = 1e-6) {
    std::vector<P*> pointers;
    for (P& p : params) pointers.push_back(&p);
    return check_parameter_gradients(
        pointers,
        [&](nn::Tape<Double>& tape) {
            std::vector<V> vars;
            for (P& p : params) vars.push_back(tape.parameter(p));
            const V out = f(tape, vars);
            REQUIRE(out.shape() == output_shape);
            return weighted_sum(tape, out, seed);
        },
        tolerance);
}

}  // namespace nn_test
