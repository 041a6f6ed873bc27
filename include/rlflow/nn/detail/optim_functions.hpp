#pragma once
/// \file
/// Element-wise functors the optimisers need beyond nn/functions.hpp: the magnitude
/// (for a gradient norm that does not overflow) and a non-finite indicator (for the
/// NaN/Inf guard), usable with any backend's `map<Fn>`.

#include <rlflow/nn/functions.hpp>

#include <cmath>

namespace rlflow::nn::detail {

/// |x|.
struct Absolute {
    template <class T> RLFLOW_HOST_DEVICE static T apply(T x) { return std::abs(x); }
};

/// 1 where x is NaN or infinite, 0 elsewhere: the row maximum of it says whether a
/// tensor holds any non-finite value (a maximum over x itself would skip NaNs).
struct NonFinite {
    template <class T> RLFLOW_HOST_DEVICE static T apply(T x) { return std::isfinite(x) ? T(0) : T(1); }
};

}  // namespace rlflow::nn::detail
