#pragma once
/// \file
/// The generator's small graphs: op applications over the space's variables, the cache
/// that decides which op applies to which input types, exact evaluation, and
/// fingerprints of exact values modulo a large prime.

#include <rlflow/core/detail/byte_writer.hpp>
#include <rlflow/core/op_traits.hpp>
#include <rlflow/core/random.hpp>
#include <rlflow/synth/exact.hpp>
#include <rlflow/synth/generator_config.hpp>

#include <array>
#include <cstdint>
#include <limits>
#include <memory>
#include <optional>
#include <span>
#include <unordered_map>
#include <vector>

namespace rlflow::synth::detail {

using rlflow::detail::hash_bytes;
using rlflow::detail::mix64;

/// The most inputs of a generator op.
inline constexpr std::size_t max_generator_arity = 3;
/// An unused input slot.
inline constexpr std::uint16_t no_tensor = std::numeric_limits<std::uint16_t>::max();

/// One op application. Tensors of a graph are numbered: the space's variables first, then
/// each node's outputs in node order.
struct GenNode {
    std::uint16_t op = 0;
    std::uint8_t num_outputs = 1;
    std::array<std::uint16_t, max_generator_arity> inputs{no_tensor, no_tensor, no_tensor};
    friend bool operator==(const GenNode&, const GenNode&) = default;
};

/// A 128-bit structural key: equal for equal DAGs whatever order their nodes were added in.
struct GraphKey {
    std::uint64_t high = 0;
    std::uint64_t low = 0;
    friend auto operator<=>(const GraphKey&, const GraphKey&) = default;
};

/// An enumerated graph. Its outputs are the node outputs no node consumes, ordered by
/// fingerprint; a graph with no nodes has one output, a variable.
struct GenGraph {
    std::vector<GenNode> nodes;
    std::vector<std::uint16_t> outputs;
    GraphKey key;
    /// The fingerprint of the outputs on the first exact input set (the bucket key).
    std::uint64_t fingerprint = 0;
    /// It holds two tensors equal on the first exact input set (a no-op inside).
    bool redundant = false;
};

/// Attributes and output types of an op on given input types.
struct Applied {
    Attributes attributes;
    std::vector<TensorType> outputs;
};

/// Interns tensor types as small integers, so (op, input types) packs into one word.
class TypeTable {
public:
    std::uint32_t intern(const TensorType& type) {
        for (std::uint32_t i = 0; i < m_types.size(); ++i)
            if (m_types[i] == type) return i;
        m_types.push_back(type);
        return static_cast<std::uint32_t>(m_types.size() - 1);
    }
    [[nodiscard]] const TensorType& type(std::uint32_t id) const { return m_types[id]; }

private:
    std::vector<TensorType> m_types;
};

/// Which op applies to which input types, with what attributes and output types; computed
/// once per (op, input types). One per worker: not thread-safe.
class OpApplier {
public:
    explicit OpApplier(const GeneratorSpace& space) : m_space(space) {}

    /// nullptr if `op` does not apply to inputs of the interned types `type_ids`.
    [[nodiscard]] const Applied* apply(std::uint16_t op, std::span<const std::uint32_t> type_ids) {
        // Digits base 2^16, all nonzero: keys of different arities have different lengths.
        std::uint64_t key = op + 1u;
        for (const std::uint32_t t : type_ids) key = key * type_key_base + t + 1;
        const auto [it, fresh] = m_cache.try_emplace(key);
        if (fresh) it->second = compute(op, type_ids);
        return it->second ? &*it->second : nullptr;
    }
    [[nodiscard]] TypeTable& types() noexcept { return m_types; }
    [[nodiscard]] const GeneratorSpace& space() const noexcept { return m_space; }

private:
    /// Type ids stay far below this in any space the generator can enumerate.
    static constexpr std::uint64_t type_key_base = 1u << 16;

    [[nodiscard]] std::optional<Applied> compute(std::uint16_t op, std::span<const std::uint32_t> type_ids) const {
        const GeneratorOp& g = m_space.ops[op];
        const OpTraits& traits = op_traits(g.op);
        std::vector<TensorType> in;
        for (const std::uint32_t t : type_ids) in.push_back(m_types.type(t));
        auto attributes = g.attributes ? g.attributes(in) : std::optional<Attributes>(Attributes{});
        if (!attributes) return std::nullopt;
        try {
            traits.normalize(*attributes, in, g.name);
            std::vector<TensorType> out = traits.infer(OpContext{*attributes, in, {}, g.name});
            return Applied{std::move(*attributes), std::move(out)};
        } catch (const shape_error&) {
            return std::nullopt;  // the op does not fit these inputs
        }
    }

    const GeneratorSpace& m_space;
    TypeTable m_types;
    std::unordered_map<std::uint64_t, std::optional<Applied>> m_cache;
};

/// a + b mod fingerprint_prime, for a, b below it.
[[nodiscard]] inline std::uint64_t mod_add(std::uint64_t a, std::uint64_t b) noexcept {
    const std::uint64_t r = a + b;
    return r >= fingerprint_prime ? r - fingerprint_prime : r;
}

/// Fingerprints of exact tensors: a random linear form over Z_p of the values' residues,
/// mixed with the shape. Equal tensors have equal fingerprints; different ones collide
/// with probability about 1/p, which is why equal fingerprints are only ever a reason
/// to compare values, never a verdict.
class Fingerprinter {
public:
    explicit Fingerprinter(std::uint64_t seed) : m_rng(Rng(seed).fork(fingerprint_salt)) {}

    [[nodiscard]] std::uint64_t operator()(const ExactTensor& t) {
        while (m_weights.size() < t.values.size()) m_weights.push_back(m_rng.next() % fingerprint_prime);
        std::uint64_t sum = 0;
        for (std::size_t i = 0; i < t.values.size(); ++i) sum = mod_add(sum, mul_mod(m_weights[i], t.values[i].residue()));
        std::uint64_t shape = mix64(t.shape.rank());
        for (const std::int64_t d : t.shape.dims()) shape = mix64(shape ^ static_cast<std::uint64_t>(d));
        return mix64(sum ^ shape);
    }

private:
    static constexpr std::uint64_t fingerprint_salt = 0x66696e6765727072;  // "fingerpr"
    Rng m_rng;
    std::vector<std::uint64_t> m_weights;
};

/// The fingerprint of a graph from its outputs' fingerprints in output (fingerprint)
/// order: the bucket key, shared by enumerated graphs and graphs of variables alone.
[[nodiscard]] inline std::uint64_t graph_fingerprint(std::span<const std::uint64_t> outputs) noexcept {
    std::uint64_t h = mix64(outputs.size());
    for (const std::uint64_t fp : outputs) h = mix64(h ^ fp);
    return h;
}

/// Salt for the random values a constant takes when testing whether a law needs it.
inline constexpr std::uint64_t constant_salt = 0x636f6e7374616e74;  // "constant"

/// The exact value of a generator constant.
[[nodiscard]] inline ExactTensor constant_value(const GeneratorVariable& v) {
    const GeneratorConstant& c = *v.constant;
    return {v.type.shape, constant_fill_values(v.type.shape, c.fill, Exact::from_parts(c.numerator, c.exponent), Exact{})};
}

/// The exact values of the space's leaves for one input set: for a variable, integers in
/// [-bound, bound], a pure function of (seed, set, variable name); a constant's own value.
[[nodiscard]] inline std::vector<ExactTensor> variable_values(const GeneratorSpace& space, std::uint64_t seed,
                                                              std::size_t set, std::int64_t bound) {
    std::vector<ExactTensor> values;
    for (const GeneratorVariable& v : space.variables) {
        if (v.is_constant()) {
            values.push_back(constant_value(v));
            continue;
        }
        Rng rng = Rng(seed).fork(mix64(set + 1) ^ hash_bytes(v.name));
        values.push_back(random_exact_tensor(v.type.shape, rng, bound));
    }
    return values;
}

/// The tensor types of `g` (variables, then node outputs), or nullopt if a node does not
/// apply to its inputs.
[[nodiscard]] inline std::vector<std::uint32_t> tensor_type_ids(const GenGraph& g, OpApplier& applier,
                                                                std::vector<const Applied*>* applied = nullptr) {
    std::vector<std::uint32_t> ids;
    for (const GeneratorVariable& v : applier.space().variables) ids.push_back(applier.types().intern(v.type));
    for (const GenNode& n : g.nodes) {
        std::vector<std::uint32_t> in;
        for (const std::uint16_t t : n.inputs)
            if (t != no_tensor) in.push_back(ids[t]);
        const Applied* a = applier.apply(n.op, in);
        RLFLOW_ASSERT(a != nullptr);
        if (applied) applied->push_back(a);
        for (const TensorType& t : a->outputs) ids.push_back(applier.types().intern(t));
    }
    return ids;
}

/// Runs `g` exactly on `variables`; returns every tensor's value (variables first).
[[nodiscard]] inline std::vector<ExactTensor> evaluate(const GenGraph& g, OpApplier& applier,
                                                      const std::vector<ExactTensor>& variables) {
    std::vector<const Applied*> applied;
    (void)tensor_type_ids(g, applier, &applied);
    std::vector<ExactTensor> values = variables;
    for (std::size_t i = 0; i < g.nodes.size(); ++i) {
        std::vector<const ExactTensor*> in;
        for (const std::uint16_t t : g.nodes[i].inputs)
            if (t != no_tensor) in.push_back(&values[t]);
        const OpKind op = applier.space().ops[g.nodes[i].op].op;
        for (ExactTensor& out : exact_op(op, applied[i]->attributes, in, applied[i]->outputs)) values.push_back(std::move(out));
    }
    return values;
}

}  // namespace rlflow::synth::detail
