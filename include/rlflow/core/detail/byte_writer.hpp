#pragma once
/// \file
/// An append-only byte encoder with unambiguous (length-prefixed) fields, its reader, and
/// a 64-bit hash over bytes. Used for canonical forms and cache keys.

#include <bit>
#include <cstdint>
#include <cstring>
#include <span>
#include <string>
#include <string_view>

namespace rlflow::detail {

class ByteWriter {
public:
    void u64(std::uint64_t v) {
        char buf[8];
        std::memcpy(buf, &v, 8);
        m_out.append(buf, 8);
    }
    void i64(std::int64_t v) { u64(static_cast<std::uint64_t>(v)); }
    void f64(double v) { u64(std::bit_cast<std::uint64_t>(v)); }
    void str(std::string_view s) {
        u64(s.size());
        m_out.append(s);
    }
    void bytes(std::span<const std::byte> b) {
        u64(b.size());
        m_out.append(reinterpret_cast<const char*>(b.data()), b.size());
    }
    [[nodiscard]] const std::string& data() const noexcept { return m_out; }
    [[nodiscard]] std::string take() noexcept { return std::move(m_out); }
    void clear() noexcept { m_out.clear(); }

private:
    std::string m_out;
};

/// Reads what ByteWriter wrote. A read past the end yields zeros and clears ok(), so a
/// truncated or corrupt buffer is detected after the fact, never read out of bounds.
class ByteReader {
public:
    explicit ByteReader(std::string_view in) noexcept : m_in(in) {}
    std::uint64_t u64() noexcept {
        std::uint64_t v = 0;
        if (m_in.size() - m_at < sizeof v) {
            m_ok = false;
            m_at = m_in.size();
            return 0;
        }
        std::memcpy(&v, m_in.data() + m_at, sizeof v);
        m_at += sizeof v;
        return v;
    }
    double f64() noexcept { return std::bit_cast<double>(u64()); }
    std::string_view str() noexcept {
        const std::uint64_t size = u64();
        if (!m_ok || size > m_in.size() - m_at) {
            m_ok = false;
            m_at = m_in.size();
            return {};
        }
        const std::string_view s = m_in.substr(m_at, size);
        m_at += size;
        return s;
    }
    [[nodiscard]] bool ok() const noexcept { return m_ok; }
    [[nodiscard]] bool at_end() const noexcept { return m_at == m_in.size(); }

private:
    std::string_view m_in;
    std::size_t m_at = 0;
    bool m_ok = true;
};

/// splitmix64 finaliser: a fast, well-mixed 64-bit permutation.
[[nodiscard]] constexpr std::uint64_t mix64(std::uint64_t x) noexcept {
    x += 0x9e3779b97f4a7c15ULL;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
    return x ^ (x >> 31);
}

/// 64-bit hash of a byte string (8-byte blocks folded through mix64).
[[nodiscard]] inline std::uint64_t hash_bytes(std::string_view s) noexcept {
    std::uint64_t h = mix64(s.size());
    std::size_t i = 0;
    for (; i + 8 <= s.size(); i += 8) {
        std::uint64_t block;
        std::memcpy(&block, s.data() + i, 8);
        h = mix64(h ^ block);
    }
    std::uint64_t tail = 0;
    std::memcpy(&tail, s.data() + i, s.size() - i);
    return mix64(h ^ tail ^ 0xa5a5a5a5a5a5a5a5ULL);
}

/// 64-bit hash of a byte string for in-memory tables: 16-byte blocks folded by one
/// 64x64->128-bit multiply each (the "mum" step of wyhash), fewer steps per byte than
/// hash_bytes. Not for anything written to a file: files use hash_bytes.
[[nodiscard]] inline std::uint64_t table_hash(std::string_view s) noexcept {
    constexpr std::uint64_t k0 = 0xa0761d6478bd642fULL, k1 = 0xe7037ed1a0b428dbULL, k2 = 0x8ebc6af09c88c6e3ULL;
    const auto mum = [](std::uint64_t a, std::uint64_t b) noexcept {
        __extension__ using u128 = unsigned __int128;
        const u128 product = static_cast<u128>(a) * b;
        return static_cast<std::uint64_t>(product) ^ static_cast<std::uint64_t>(product >> 64);
    };
    std::uint64_t h = k0 ^ s.size();
    std::size_t i = 0;
    for (; i + 16 <= s.size(); i += 16) {
        std::uint64_t a, b;
        std::memcpy(&a, s.data() + i, 8);
        std::memcpy(&b, s.data() + i + 8, 8);
        h = mum(a ^ k1, b ^ h);
    }
    std::uint64_t a = 0, b = 0;
    const std::size_t rest = s.size() - i;
    std::memcpy(&a, s.data() + i, rest < 8 ? rest : 8);
    if (rest > 8) std::memcpy(&b, s.data() + i + 8, rest - 8);
    return mum(mum(a ^ k1, b ^ h) ^ k2, s.size() ^ k0);
}

}  // namespace rlflow::detail
