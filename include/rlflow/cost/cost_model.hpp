#pragma once
/// \file
/// CostModel<Backend>: op costs cached by signature, graph cost as their sum, and an
/// optional persistent cache file.
///
/// Graph cost follows TASO: the sum of op costs under sequential execution. Ops computed
/// from weights and constants alone (a folded BatchNorm's new kernel, a concatenation of
/// Q/K/V weights) run once when the model is loaded, not per inference, so they cost 0.

#include <rlflow/core/atomic_file.hpp>
#include <rlflow/core/graph.hpp>
#include <rlflow/core/memory.hpp>
#include <rlflow/cost/cost_backend.hpp>

#include <algorithm>
#include <deque>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iterator>
#include <optional>
#include <span>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <utility>
#include <vector>

namespace rlflow::cost {

/// A backend with a cache of op costs keyed by signature.
template <CostBackend Backend>
class CostModel {
public:
    /// The version of the cache file format.
    static constexpr std::uint64_t cache_version = 4;

    explicit CostModel(Backend backend = Backend{}) : m_backend(std::move(backend)) {}

    [[nodiscard]] Backend& backend() noexcept { return m_backend; }
    [[nodiscard]] const Backend& backend() const noexcept { return m_backend; }
    [[nodiscard]] std::string name() const { return m_backend.name(); }

    /// The cost of one op, from the cache or the backend.
    [[nodiscard]] double op_cost(const OpSignature& op) { return priced(op).ms; }
    /// The cost of node `n` of `g` (ignoring whether it is weight-only). `constant`, when
    /// given, marks by node id the nodes known before the model runs (weight_only_nodes):
    /// inputs they produce are initializers in the written model, which some backends
    /// price differently.
    [[nodiscard]] double node_cost(const Graph& g, const Node& n, std::span<const char> constant = {}) {
        if (n.traits().has(op_flag_source)) return 0.0;
        Signature& s = m_scratch[0];  // reused: pricing a node allocates nothing once warm
        s.assign(g, n, constant);
        if constexpr (ContextCostBackend<Backend>) {
            if (const auto head = fusion_head(g, n, constant)) {
                Signature& producer = m_scratch[1];
                producer.assign(g, g.node(head->node), constant);
                const OpSignature alone = producer.view();
                OpSignature pair = s.view();
                pair.producer = &alone;
                pair.producer_slot = head->slot;
                const Priced whole = priced(pair);
                const double added = whole.ms - op_cost(alone);
                // A pair the runtime runs as one op costs that op's price in all, exactly,
                // as every other way of writing it does; the share is not clamped, since
                // the head's own price was measured apart and may differ by noise.
                return whole.canonical ? added : std::max(added, 0.0);
            }
        }
        return op_cost(s.view());
    }
    /// Where a runtime may fuse `n` into the kernel before it: the first runtime input of a
    /// fusion tail that a fusion head produces as its only output, read by `n` alone and
    /// not a graph output. Only context-pricing backends ask.
    struct FusionHead {
        NodeId node;
        std::uint32_t slot = 0;
    };
    [[nodiscard]] static std::optional<FusionHead> fusion_head(const Graph& g, const Node& n, std::span<const char> constant) {
        if (!n.traits().has(op_flag_fusion_tail)) return std::nullopt;
        for (std::uint32_t i = 0; i < n.inputs.size(); ++i) {
            const TensorRef in = n.inputs[i];
            if (!in.present() || (!constant.empty() && constant[in.node.value])) continue;
            const Node& p = g.node(in.node);
            if (p.traits().has(op_flag_fusion_head) && p.outputs.size() == 1 && p.outputs[0].uses.size() == 1
                && !g.is_graph_output(in))
                return FusionHead{p.id, i};
            return std::nullopt;  // the first runtime input decides
        }
        return std::nullopt;
    }

    /// Milliseconds of one inference: the sum over op nodes, weight-only ones excluded.
    [[nodiscard]] double graph_cost(const Graph& g) {
        const std::vector<char> precomputed = weight_only_nodes(g);
        prefetch(g, precomputed);
        double total = 0;
        for (const Node& n : g.nodes())
            if (!precomputed[n.id.value]) total += node_cost(g, n, precomputed);
        return total;
    }
    /// Prices, in one batch, every signature of `g` that is not cached yet, when the
    /// backend prices batches (a measuring process answers a batch in one round trip);
    /// otherwise does nothing, and ops are priced one by one as they are asked for.
    void prefetch(const Graph& g, std::span<const char> constant) {
        if constexpr (BatchCostBackend<Backend>) {
            std::deque<Signature> storage;
            std::deque<OpSignature> views;  // stable addresses: a pair's producer points into them
            std::vector<OpSignature> missing;
            std::vector<std::string> keys;
            std::unordered_set<std::string> seen;
            std::deque<OwnedSignature> forms;  // canonical forms the batch points into
            const auto want = [&](const OpSignature& asked) {
                const OpSignature* priced = &asked;
                if constexpr (CanonicalCostBackend<Backend>)
                    if (std::optional<OwnedSignature> form = m_backend.canonical(asked))
                        priced = &views.emplace_back(forms.emplace_back(std::move(*form)).view());
                const OpSignature& op = *priced;
                std::string key = signature_key(op);
                if (m_cache.contains(key) || !seen.insert(key).second) return;
                keys.push_back(std::move(key));
                missing.push_back(op);
            };
            for (const Node& n : g.nodes()) {
                if (n.traits().has(op_flag_source) || (!constant.empty() && constant[n.id.value])) continue;
                const OpSignature& own = views.emplace_back(storage.emplace_back(g, n, constant).view());
                if constexpr (ContextCostBackend<Backend>) {
                    if (const auto head = fusion_head(g, n, constant)) {
                        const OpSignature& alone = views.emplace_back(storage.emplace_back(g, g.node(head->node), constant).view());
                        OpSignature pair = own;
                        pair.producer = &alone;
                        pair.producer_slot = head->slot;
                        want(alone);
                        want(pair);
                        continue;
                    }
                }
                want(own);
            }
            if (missing.empty()) return;
            const std::vector<double> costs = m_backend.op_costs_ms(std::span<const OpSignature>(missing));
            for (std::size_t i = 0; i < keys.size(); ++i) m_cache.emplace(std::move(keys[i]), costs.at(i));
        }
    }

    [[nodiscard]] std::size_t cache_size() const noexcept { return m_cache.size(); }

    /// Writes the cache (format version, backend name, entries, checksum) atomically. The
    /// entries go in key order, not the hash map's, which depends on the standard
    /// library's std::hash: equal caches make equal files everywhere.
    void save_cache(const std::filesystem::path& path) const {
        rlflow::detail::ByteWriter w;
        w.str(cache_magic);
        w.u64(cache_version);
        w.str(m_backend.name());
        w.u64(m_cache.size());
        std::vector<const std::pair<const std::string, double>*> entries;
        entries.reserve(m_cache.size());
        for (const auto& entry : m_cache) entries.push_back(&entry);
        std::sort(entries.begin(), entries.end(), [](const auto* a, const auto* b) { return a->first < b->first; });
        for (const auto* entry : entries) {
            w.str(entry->first);
            w.f64(entry->second);
        }
        w.u64(rlflow::detail::hash_bytes(w.data()));
        write_file_atomically(path, w.data());
    }
    /// Adds the entries of a cache file written for this backend. A missing, corrupt,
    /// other-version or other-backend file is ignored (costs are measured again), never
    /// trusted; returns whether entries were loaded.
    bool load_cache(const std::filesystem::path& path) {
        std::ifstream in(path, std::ios::binary);
        if (!in) return false;
        const std::string bytes{std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
        Cache entries;
        if (!parse_cache(bytes, entries)) return false;
        m_cache.merge(entries);
        return true;
    }

    /// A node's signature with the storage its views point into (what a backend is asked
    /// to price for node `n` of `g`).
    struct Signature {
        Signature() = default;
        Signature(const Graph& g, const Node& n, std::span<const char> constant) { assign(g, n, constant); }
        /// Becomes node `n`'s signature, reusing the storage it has.
        void assign(const Graph& g, const Node& n, std::span<const char> constant) {
            node = &n;
            inputs.clear();
            g.append_types(n.inputs, inputs);
            outputs.clear();
            for (const auto& o : n.outputs) outputs.push_back(o.type);
            constant_inputs.clear();
            constant_values.clear();
            if (constant.empty()) return;
            for (const TensorRef& in : n.inputs) {
                const bool known = in.present() && constant[in.node.value];
                constant_inputs.push_back(known ? 1 : 0);
                const Node* source = known ? &g.node(in.node) : nullptr;
                const bool small = source && source->data && source->data->numel() <= max_signature_value_elements;
                constant_values.push_back(small ? source->data.get() : nullptr);
            }
        }
        [[nodiscard]] OpSignature view() const {
            return OpSignature{node->op, node->attributes, inputs, outputs, constant_inputs, constant_values};
        }
        const Node* node = nullptr;
        std::vector<TensorType> inputs;
        std::vector<TensorType> outputs;
        std::vector<char> constant_inputs;
        std::vector<const Tensor*> constant_values;
    };

private:
    /// Hashes a key as a string_view, so that a key written into a reused buffer is looked
    /// up without a copy.
    struct KeyHash {
        using is_transparent = void;
        std::size_t operator()(std::string_view key) const noexcept { return rlflow::detail::table_hash(key); }
    };
    using Cache = std::unordered_map<std::string, double, KeyHash, std::equal_to<>>;

    /// A price, and whether it is that of the op's canonical form (CanonicalCostBackend).
    struct Priced {
        double ms = 0;
        bool canonical = false;
    };
    /// The price of `op` (of its canonical form, if it has one), from the cache or the backend.
    [[nodiscard]] Priced priced(const OpSignature& op) {
        if constexpr (CanonicalCostBackend<Backend>)
            if (const std::optional<OwnedSignature> form = m_backend.canonical(op)) return {priced(form->view()).ms, true};
        m_key.clear();
        write_signature_key(m_key, op);
        const std::string_view key = m_key.data();
        if (const auto it = m_cache.find(key); it != m_cache.end()) return {it->second, false};
        const double ms = static_cast<double>(m_backend.op_cost_ms(op));
        m_cache.emplace(std::string(key), ms);
        return {ms, false};
    }


    static constexpr std::string_view cache_magic = "rlflow-cost-cache";

    /// Reads a cache file; false unless it is intact and for this backend and version.
    [[nodiscard]] bool parse_cache(const std::string& bytes, Cache& out) const {
        constexpr std::size_t checksum_bytes = sizeof(std::uint64_t);
        if (bytes.size() < checksum_bytes) return false;
        const std::string_view body(bytes.data(), bytes.size() - checksum_bytes);
        rlflow::detail::ByteReader checksum(std::string_view(bytes).substr(body.size()));
        if (checksum.u64() != rlflow::detail::hash_bytes(body)) return false;
        rlflow::detail::ByteReader r(body);
        if (r.str() != cache_magic || r.u64() != cache_version || r.str() != m_backend.name()) return false;
        const std::uint64_t count = r.u64();
        for (std::uint64_t i = 0; i < count && r.ok(); ++i) {
            std::string key(r.str());
            const double ms = r.f64();
            out.emplace(std::move(key), ms);
        }
        return r.ok() && r.at_end();
    }

    Backend m_backend;
    Cache m_cache;
    /// Scratch for node_cost and priced: a node's signature, its fusion head's, and a key.
    Signature m_scratch[2];
    rlflow::detail::ByteWriter m_key;
};

}  // namespace rlflow::cost
