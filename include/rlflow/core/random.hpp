#pragma once
/// \file
/// A small, fast, portable random number generator (xoshiro256**, seeded by splitmix64).
/// Unlike the standard distributions, its outputs are the same on every platform and
/// standard library, which determinism under a seed requires.

#include <rlflow/core/detail/byte_writer.hpp>

#include <array>
#include <cmath>
#include <cstdint>
#include <numbers>
#include <string_view>

namespace rlflow {

/// Deterministic random numbers.
class Rng {
public:
    explicit Rng(std::uint64_t seed = 0) noexcept {
        std::uint64_t s = seed;
        for (auto& word : m_state) {
            s += 0x9e3779b97f4a7c15ULL;
            word = detail::mix64(s);
        }
    }
    /// 64 uniformly random bits.
    std::uint64_t next() noexcept {
        const std::uint64_t result = rotl(m_state[1] * 5, 7) * 9;
        const std::uint64_t t = m_state[1] << 17;
        m_state[2] ^= m_state[0];
        m_state[3] ^= m_state[1];
        m_state[1] ^= m_state[2];
        m_state[0] ^= m_state[3];
        m_state[2] ^= t;
        m_state[3] = rotl(m_state[3], 45);
        return result;
    }
    /// Uniform in [0, 1) with 53 random bits.
    double uniform() noexcept { return static_cast<double>(next() >> 11) * 0x1.0p-53; }
    /// Uniform in [lo, hi).
    double uniform(double lo, double hi) noexcept { return lo + (hi - lo) * uniform(); }
    /// Uniform integer in [0, n), n > 0 (Lemire's multiply-shift, negligible bias for small n).
    std::uint64_t below(std::uint64_t n) noexcept {
        __extension__ typedef unsigned __int128 Wide;  // __extension__: no -Wpedantic warning
        return static_cast<std::uint64_t>((static_cast<Wide>(next()) * n) >> 64);
    }
    /// Standard normal (Box-Muller).
    double normal() noexcept {
        const double u1 = 1.0 - uniform();  // (0, 1]
        const double u2 = uniform();
        return std::sqrt(-2.0 * std::log(u1)) * std::cos(2.0 * std::numbers::pi * u2);
    }
    /// The whole state, to save and restore a generator exactly (training checkpoints).
    [[nodiscard]] std::array<std::uint64_t, 4> state() const noexcept { return m_state; }
    [[nodiscard]] static Rng from_state(const std::array<std::uint64_t, 4>& state) noexcept {
        Rng r;
        r.m_state = state;
        return r;
    }
    /// An independent generator derived from this one's seed stream and `stream`.
    [[nodiscard]] Rng fork(std::uint64_t stream) const noexcept {
        return Rng(detail::mix64(m_state[0] ^ detail::mix64(stream)));
    }

private:
    static constexpr std::uint64_t rotl(std::uint64_t x, int k) noexcept { return (x << k) | (x >> (64 - k)); }
    std::array<std::uint64_t, 4> m_state{};
};

/// A seed derived from a name (`Rng(seed_from_name("resnet18"))`): the name's bytes hashed
/// by detail::hash_bytes, so the seed, and every number drawn from it, is the same with
/// every compiler and standard library (on little-endian machines: x86-64, AArch64).
/// std::hash is not: libstdc++ and libc++ hash strings differently, and the standard
/// leaves its values unspecified.
[[nodiscard]] inline std::uint64_t seed_from_name(std::string_view name) noexcept { return detail::hash_bytes(name); }

}  // namespace rlflow
