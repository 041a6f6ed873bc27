#pragma once
/// \file
/// Checkpoints: named parameters, and optionally Adam's state, in a versioned binary file
/// that does not depend on the backend (values are float32 whatever B's scalar is, so a
/// float64 model is rounded on save).
///
/// Format (every integer little-endian):
///
///     header   "RLFLOWCK" | u32 format version | u64 payload length
///     payload  u32 n | n x (name, tensor)
///              u8 0 (no optimiser state) or 1 (Adam) | if 1: u64 step count | u32 m |
///              m x (name, first moment tensor, second moment tensor)
///     trailer  u64 FNV-1a 64 of header and payload
///
///     name     u32 length | UTF-8 bytes
///     tensor   u32 rank (1 to 3) | rank x u64 dims | product of dims x f32 (IEEE 754, row-major)
///
/// `load_checkpoint` checks the whole file (header, length, checksum, records) and matches
/// it against the model (every name exactly once, every shape equal) before assigning
/// anything, so a failed load leaves the model and the optimiser as they were. Every
/// failure is a checkpoint_error naming the file and what is wrong with it.

#include <rlflow/core/atomic_file.hpp>
#include <rlflow/core/error.hpp>
#include <rlflow/core/shape.hpp>
#include <rlflow/nn/optim.hpp>
#include <rlflow/nn/tape.hpp>
#include <rlflow/nn/tensor.hpp>

#include <algorithm>
#include <bit>
#include <climits>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <limits>
#include <string>
#include <string_view>
#include <type_traits>
#include <unordered_map>
#include <unordered_set>
#include <utility>
#include <vector>

namespace rlflow::nn {

/// The first bytes of every checkpoint.
inline constexpr std::string_view checkpoint_magic = "RLFLOWCK";
/// The format version this code writes, and the only one it reads.
inline constexpr std::uint32_t checkpoint_format_version = 1;

namespace detail {

/// Magic, version, payload length.
inline constexpr std::size_t checkpoint_header_size = checkpoint_magic.size() + sizeof(std::uint32_t) + sizeof(std::uint64_t);
inline constexpr std::size_t checkpoint_length_offset = checkpoint_magic.size() + sizeof(std::uint32_t);
inline constexpr std::size_t checkpoint_checksum_size = sizeof(std::uint64_t);
inline constexpr std::size_t float32_size = 4;

/// What follows the parameters.
enum class OptimiserSection : std::uint8_t { none = 0, adam = 1 };

/// FNV-1a, 64-bit (Fowler, Noll, Vo).
[[nodiscard]] inline std::uint64_t fnv1a64(std::string_view bytes) noexcept {
    constexpr std::uint64_t offset_basis = 0xcbf29ce484222325ULL;
    constexpr std::uint64_t prime = 0x100000001b3ULL;
    std::uint64_t hash = offset_basis;
    for (const char c : bytes) {
        hash ^= static_cast<unsigned char>(c);
        hash *= prime;
    }
    return hash;
}

/// The unsigned integer whose little-endian bytes are `bytes` (at most 8).
[[nodiscard]] inline std::uint64_t little_endian(std::string_view bytes) noexcept {
    std::uint64_t v = 0;
    for (std::size_t i = 0; i < bytes.size(); ++i) v |= std::uint64_t{static_cast<unsigned char>(bytes[i])} << (CHAR_BIT * i);
    return v;
}

[[noreturn]] inline void checkpoint_failure(const std::filesystem::path& path, const std::string& what) {
    throw checkpoint_error(path.string() + ": " + what);
}

/// A tensor of a checkpoint, in host memory.
struct HostTensor {
    std::string name;
    Shape shape;
    std::vector<float> values;
};

/// A decoded checkpoint.
struct CheckpointContents {
    std::vector<HostTensor> parameters;
    bool has_adam_state = false;
    std::int64_t steps = 0;
    /// One pair per parameter the optimiser steps, named after it.
    std::vector<HostTensor> first_moments;
    std::vector<HostTensor> second_moments;
};

/// Appends little-endian fields.
class CheckpointWriter {
public:
    void raw(std::string_view bytes) { m_out.append(bytes); }
    void u8(std::uint8_t v) { put(v, sizeof v); }
    void u32(std::uint32_t v) { put(v, sizeof v); }
    void u64(std::uint64_t v) { put(v, sizeof v); }
    void name(std::string_view s) {
        u32(static_cast<std::uint32_t>(s.size()));
        m_out.append(s);
    }
    template <TensorBackend B>
    void tensor(const Tensor<B>& t) {
        u32(static_cast<std::uint32_t>(t.rank()));
        for (const std::int64_t d : t.shape().dims()) u64(static_cast<std::uint64_t>(d));
        for (const auto v : t.to_host()) u32(std::bit_cast<std::uint32_t>(static_cast<float>(v)));
    }
    /// Overwrites 8 bytes at `offset` (a length known only at the end).
    void patch_u64(std::size_t offset, std::uint64_t v) {
        for (std::size_t i = 0; i < sizeof v; ++i) m_out[offset + i] = static_cast<char>(static_cast<unsigned char>(v >> (CHAR_BIT * i)));
    }
    [[nodiscard]] const std::string& bytes() const noexcept { return m_out; }
    [[nodiscard]] std::string take() noexcept { return std::move(m_out); }

private:
    void put(std::uint64_t v, std::size_t size) {
        for (std::size_t i = 0; i < size; ++i) m_out.push_back(static_cast<char>(static_cast<unsigned char>(v >> (CHAR_BIT * i))));
    }
    std::string m_out;
};

/// Reads little-endian fields of a checkpoint's payload; a read past its end, or a
/// tensor that cannot be one, is a checkpoint_error naming the file.
class CheckpointReader {
public:
    CheckpointReader(std::filesystem::path path, std::string_view payload) : m_path(std::move(path)), m_in(payload) {}

    std::uint8_t u8() { return static_cast<std::uint8_t>(get(sizeof(std::uint8_t))); }
    std::uint32_t u32() { return static_cast<std::uint32_t>(get(sizeof(std::uint32_t))); }
    std::uint64_t u64() { return get(sizeof(std::uint64_t)); }
    std::string name() {
        const std::uint32_t size = u32();
        return std::string(take(size));
    }
    HostTensor tensor(std::string name) {
        HostTensor t{std::move(name), Shape{}, {}};
        const std::uint32_t rank = u32();
        if (rank < 1 || rank > static_cast<std::uint32_t>(max_tensor_rank))
            checkpoint_failure(m_path, "malformed: tensor '" + t.name + "' has rank " + std::to_string(rank));
        std::uint64_t count = 1;
        for (std::uint32_t i = 0; i < rank; ++i) {
            const std::uint64_t d = u64();
            // Bounded by the bytes left, so neither the product nor the allocation can blow up.
            if (d > remaining() / float32_size || (d != 0 && count > remaining() / float32_size / d))
                checkpoint_failure(m_path, "malformed: tensor '" + t.name + "' is larger than the file");
            count *= d;
            t.shape.push_back(static_cast<std::int64_t>(d));
        }
        const std::string_view data = take(count * float32_size);
        t.values.resize(count);
        for (std::size_t i = 0; i < count; ++i)
            t.values[i] = std::bit_cast<float>(static_cast<std::uint32_t>(little_endian(data.substr(i * float32_size, float32_size))));
        return t;
    }
    [[nodiscard]] std::size_t remaining() const noexcept { return m_in.size() - m_at; }

private:
    std::uint64_t get(std::size_t size) { return little_endian(take(size)); }
    std::string_view take(std::size_t size) {
        if (size > remaining()) checkpoint_failure(m_path, "malformed: a record runs past the end of the payload");
        const std::string_view out = m_in.substr(m_at, size);
        m_at += size;
        return out;
    }

    std::filesystem::path m_path;
    std::string_view m_in;
    std::size_t m_at = 0;
};

/// Checks magic, version, length and checksum; returns the payload.
[[nodiscard]] inline std::string_view checked_payload(const std::filesystem::path& path, std::string_view bytes) {
    const std::size_t size = bytes.size();
    if (bytes.substr(0, checkpoint_magic.size()) != checkpoint_magic.substr(0, std::min(size, checkpoint_magic.size())))
        checkpoint_failure(path, "bad magic (not an rlflow checkpoint)");
    const std::size_t smallest = checkpoint_header_size + checkpoint_checksum_size;
    if (size < smallest)
        checkpoint_failure(path, "truncated (" + std::to_string(size) + " bytes, a checkpoint has at least " + std::to_string(smallest) + ")");
    const std::uint64_t version = little_endian(bytes.substr(checkpoint_magic.size(), sizeof(std::uint32_t)));
    if (version != checkpoint_format_version)
        checkpoint_failure(path, "version " + std::to_string(version) + " not supported (this build reads version "
                                     + std::to_string(checkpoint_format_version) + ")");
    const std::uint64_t payload = little_endian(bytes.substr(checkpoint_length_offset, sizeof(std::uint64_t)));
    if (payload != size - smallest) {
        const bool shorter = payload > size - smallest;
        checkpoint_failure(path, std::string(shorter ? "truncated" : "trailing bytes") + " (" + std::to_string(size)
                                     + " bytes, the header announces " + std::to_string(payload) + " bytes of payload)");
    }
    const std::size_t checked = size - checkpoint_checksum_size;
    if (little_endian(bytes.substr(checked)) != fnv1a64(bytes.substr(0, checked)))
        checkpoint_failure(path, "checksum mismatch (the file is corrupt)");
    return bytes.substr(checkpoint_header_size, payload);
}

/// Decodes a whole checkpoint file's bytes.
[[nodiscard]] inline CheckpointContents decode_checkpoint(const std::filesystem::path& path, std::string_view bytes) {
    CheckpointReader in(path, checked_payload(path, bytes));
    CheckpointContents out;
    for (std::uint32_t i = 0, n = in.u32(); i < n; ++i) out.parameters.push_back(in.tensor(in.name()));
    const std::uint8_t section = in.u8();
    if (section == static_cast<std::uint8_t>(OptimiserSection::adam)) {
        out.has_adam_state = true;
        const std::uint64_t steps = in.u64();
        if (steps > static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max()))
            checkpoint_failure(path, "malformed: step count " + std::to_string(steps));
        out.steps = static_cast<std::int64_t>(steps);
        for (std::uint32_t i = 0, n = in.u32(); i < n; ++i) {
            std::string name = in.name();
            out.first_moments.push_back(in.tensor(name));
            out.second_moments.push_back(in.tensor(std::move(name)));
        }
    } else if (section != static_cast<std::uint8_t>(OptimiserSection::none)) {
        checkpoint_failure(path, "malformed: unknown optimiser section " + std::to_string(section));
    }
    if (in.remaining() != 0) checkpoint_failure(path, "malformed: " + std::to_string(in.remaining()) + " unread bytes");
    return out;
}

template <TensorBackend B>
void check_model_parameters(const std::vector<Parameter<B>*>& params, const char* caller) {
    std::unordered_set<std::string_view> names;
    for (const Parameter<B>* p : params) {
        RLFLOW_EXPECTS(p != nullptr && p->value.defined(), precondition_error, std::string(caller) + ": a missing or empty parameter");
        RLFLOW_EXPECTS(names.insert(p->name).second, precondition_error,
                       std::string(caller) + ": two parameters are named '" + p->name + "'");
    }
}

/// For each of `params`, the stored tensor of its name and shape; `what` prefixes the
/// messages ("" for parameters, "Adam state: " for moments).
template <TensorBackend B>
[[nodiscard]] std::vector<const HostTensor*> match_by_name(const std::filesystem::path& path, const std::string& what,
                                                           const std::vector<HostTensor>& stored,
                                                           const std::vector<Parameter<B>*>& params) {
    std::unordered_map<std::string_view, const HostTensor*> by_name;
    for (const HostTensor& t : stored)
        if (!by_name.emplace(t.name, &t).second) checkpoint_failure(path, what + "parameter '" + t.name + "' appears twice in the file");
    std::vector<const HostTensor*> out;
    for (const Parameter<B>* p : params) {
        const auto found = by_name.find(p->name);
        if (found == by_name.end()) checkpoint_failure(path, what + "missing parameter '" + p->name + "' (in the model, not in the file)");
        const HostTensor& t = *found->second;
        if (t.shape != p->value.shape())
            checkpoint_failure(path, what + "parameter '" + p->name + "' has shape " + t.shape.to_string() + " in the file, "
                                         + p->value.shape().to_string() + " in the model");
        out.push_back(&t);
        by_name.erase(found);
    }
    if (!by_name.empty()) {
        // Name the first unexpected one in file order, so the message is deterministic.
        for (const HostTensor& t : stored)
            if (by_name.contains(t.name))
                checkpoint_failure(path, what + "unexpected parameter '" + t.name + "' (in the file, not in the model)");
    }
    return out;
}

template <TensorBackend B>
[[nodiscard]] Tensor<B> to_tensor(const HostTensor& t) {
    using Scalar = typename B::Scalar;
    const std::vector<Scalar> values(t.values.begin(), t.values.end());
    return Tensor<B>::from_host(t.shape, values);
}

template <TensorBackend B>
[[nodiscard]] std::string encode_checkpoint(const std::vector<Parameter<B>*>& params, const Adam<B>* optimiser) {
    CheckpointWriter out;
    out.raw(checkpoint_magic);
    out.u32(checkpoint_format_version);
    out.u64(0);  // the payload length, patched below
    out.u32(static_cast<std::uint32_t>(params.size()));
    for (const Parameter<B>* p : params) {
        out.name(p->name);
        out.tensor(p->value);
    }
    out.u8(static_cast<std::uint8_t>(optimiser != nullptr ? OptimiserSection::adam : OptimiserSection::none));
    if (optimiser != nullptr) {
        out.u64(static_cast<std::uint64_t>(optimiser->steps()));
        out.u32(static_cast<std::uint32_t>(optimiser->parameters().size()));
        for (std::size_t i = 0; i < optimiser->parameters().size(); ++i) {
            out.name(optimiser->parameters()[i]->name);
            out.tensor(optimiser->first_moment(i));
            out.tensor(optimiser->second_moment(i));
        }
    }
    out.patch_u64(checkpoint_length_offset, out.bytes().size() - checkpoint_header_size);
    out.u64(fnv1a64(out.bytes()));
    return out.take();
}

[[nodiscard]] inline std::string read_checkpoint_file(const std::filesystem::path& path) {
    std::ifstream in(path, std::ios::binary);
    if (!in) throw io_error(path.string() + ": cannot open the checkpoint for reading");
    std::string bytes{std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
    if (in.bad()) throw io_error(path.string() + ": reading the checkpoint failed");
    return bytes;
}

}  // namespace detail

/// Writes `params` (and `optimiser`'s state, if given) to `path` atomically: a reader sees
/// the old file or the new one, never a partial one. Throws io_error if it cannot write,
/// precondition_error if two parameters share a name.
template <TensorBackend B>
void save_checkpoint(const std::filesystem::path& path, const std::vector<Parameter<B>*>& params,
                     const std::type_identity_t<Adam<B>>* optimiser = nullptr) {
    detail::check_model_parameters(params, "save_checkpoint");
    write_file_atomically(path, detail::encode_checkpoint(params, optimiser));
}

/// Loads `path` into `params` (and `optimiser`'s state, if given, which the file must
/// then hold). Validates everything first: throws checkpoint_error naming the file and the
/// fault (truncated, bad magic, unsupported version, checksum mismatch, a missing,
/// unexpected or reshaped parameter) and changes nothing; io_error if it cannot be read.
template <TensorBackend B>
void load_checkpoint(const std::filesystem::path& path, const std::vector<Parameter<B>*>& params,
                     std::type_identity_t<Adam<B>>* optimiser = nullptr) {
    detail::check_model_parameters(params, "load_checkpoint");
    const detail::CheckpointContents file = detail::decode_checkpoint(path, detail::read_checkpoint_file(path));
    const std::vector<const detail::HostTensor*> stored = detail::match_by_name(path, "", file.parameters, params);
    std::vector<Tensor<B>> values;
    for (const detail::HostTensor* t : stored) values.push_back(detail::to_tensor<B>(*t));
    if (optimiser != nullptr) {
        if (!file.has_adam_state) detail::checkpoint_failure(path, "has no optimiser state");
        const std::string what = "Adam state: ";
        const auto first = detail::match_by_name(path, what, file.first_moments, optimiser->parameters());
        const auto second = detail::match_by_name(path, what, file.second_moments, optimiser->parameters());
        std::vector<Tensor<B>> first_moments, second_moments;
        for (std::size_t i = 0; i < first.size(); ++i) {
            first_moments.push_back(detail::to_tensor<B>(*first[i]));
            second_moments.push_back(detail::to_tensor<B>(*second[i]));
        }
        // Validated against the optimiser's parameters above, so this cannot throw.
        optimiser->restore(file.steps, std::move(first_moments), std::move(second_moments));
    }
    for (std::size_t i = 0; i < params.size(); ++i) params[i]->value = std::move(values[i]);
}

}  // namespace rlflow::nn
