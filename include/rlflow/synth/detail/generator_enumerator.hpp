#pragma once
/// \file
/// Depth-first enumeration of the generator's graphs (TASO's generator; the TASO paper,
/// Jia et al., SOSP 2019): every DAG of up to K op applications over the space's
/// variables, each evaluated exactly on the first input set as it is built.
///
/// Reductions, each exact up to what the pairing stage does anyway:
/// - a DAG is expanded once, whatever order its nodes were added in (a shared set of
///   128-bit structural keys);
/// - a commutative op takes its operands in one order only (by structural hash, so the
///   same DAG gets the same order whichever path built it), and no op takes the same
///   tensor twice (x + x is a special case of x + y, which is enumerated);
/// - inputs must have the roles the op accepts (generator_config.hpp);
/// - the same op on the same inputs twice is never built;
/// - an op never takes constants alone (the result is a constant no rule can name), and a
///   constant is read only by the ops its variable lists;
/// - variables of one type are interchangeable, so a state must use them as a prefix
///   (x1 before x2): every graph has a renaming that passes (name variables in order
///   of first use), and rules are deduplicated up to renaming later;
/// - a state holding two equal tensors is recorded but not extended (TASO);
/// - a state with more unconsumed outputs than the remaining ops can reduce to
///   max_outputs is dropped.

#include <rlflow/synth/detail/generator_graph.hpp>

#include <algorithm>
#include <atomic>
#include <functional>
#include <mutex>
#include <unordered_set>
#include <vector>

namespace rlflow::synth::detail {

/// How far and how wide to enumerate.
struct EnumerationLimits {
    std::size_t max_ops = 3;
    std::size_t max_outputs = 2;
    std::uint64_t seed = 0;
    std::int64_t value_bound = 3;
    /// Keep a StateLog per state (for ranks that enumerate shares of the roots, each with
    /// its own SeenStates: their counts are merged over the union of their states).
    bool log_states = false;
};

/// One expanded state, for merging counts over ranks: its key, whether it holds two equal
/// tensors, and how many of its extensions were not exact. 24 bytes, no padding.
struct StateLog {
    GraphKey key;
    std::uint32_t inexact_children = 0;
    std::uint32_t redundant = 0;
};

/// Counts of one enumeration.
struct EnumerationCounts {
    std::size_t states = 0;
    std::size_t recorded = 0;
    std::size_t redundant = 0;
    std::size_t inexact = 0;
    EnumerationCounts& operator+=(const EnumerationCounts& o) {
        states += o.states;
        recorded += o.recorded;
        redundant += o.redundant;
        inexact += o.inexact;
        return *this;
    }
};

/// The states seen so far, shared by the workers.
class SeenStates {
public:
    /// True if `key` was not there.
    bool insert(const GraphKey& key) {
        const std::lock_guard lock(m_mutex);
        return m_keys.insert(key).second;
    }

private:
    struct Hash {
        std::size_t operator()(const GraphKey& k) const noexcept { return static_cast<std::size_t>(k.low ^ k.high); }
    };
    std::mutex m_mutex;
    std::unordered_set<GraphKey, Hash> m_keys;
};

/// One worker's enumeration state: a graph being built, with every tensor's type,
/// structural hashes, first-set value and fingerprint, and use count.
class Enumerator {
public:
    Enumerator(const GeneratorSpace& space, const EnumerationLimits& limits, SeenStates& seen)
        : m_limits(limits), m_applier(space), m_fingerprint(limits.seed), m_seen(seen) {
        const auto values = variable_values(space, limits.seed, 0, limits.value_bound);
        for (std::size_t v = 0; v < space.variables.size(); ++v) {
            const std::uint32_t type = m_applier.types().intern(space.variables[v].type);
            const bool constant = space.variables[v].is_constant();
            std::uint16_t previous = no_tensor;
            for (std::size_t u = v; u-- > 0 && !constant;)
                if (m_tensors[u].type == type && !m_tensors[u].constant) {
                    previous = static_cast<std::uint16_t>(u);
                    break;
                }
            const std::uint64_t h = mix64(v ^ variable_hash_salt);
            m_tensors.push_back({type, space.variables[v].role, h, mix64(h ^ second_hash_salt), m_fingerprint(values[v]), 0,
                                 previous, constant, reader_mask(space, space.variables[v])});
            m_values.push_back(values[v]);
        }
        m_variables = space.variables.size();
    }

    /// Every node that can be the first one.
    [[nodiscard]] std::vector<GenNode> first_nodes() {
        std::vector<GenNode> nodes;
        for_each_candidate([&](const GenNode& n, const Applied&) { nodes.push_back(n); });
        return nodes;
    }

    /// Enumerates every graph whose first node is `first`.
    void run_from(const GenNode& first) {
        std::vector<std::uint32_t> in;
        for (const std::uint16_t t : first.inputs)
            if (t != no_tensor) in.push_back(m_tensors[t].type);
        const Applied* applied = m_applier.apply(first.op, in);
        RLFLOW_ASSERT(applied != nullptr);
        if (!visit(first, *applied)) ++m_roots_inexact;
    }

    [[nodiscard]] std::vector<GenGraph>& recorded() noexcept { return m_recorded; }
    [[nodiscard]] const EnumerationCounts& counts() const noexcept { return m_counts; }
    /// The expanded states (with EnumerationLimits::log_states).
    [[nodiscard]] const std::vector<StateLog>& states() const noexcept { return m_states; }
    /// First nodes that were not exact (counted in counts().inexact too).
    [[nodiscard]] std::size_t roots_inexact() const noexcept { return m_roots_inexact; }

private:
    struct TensorInfo {
        std::uint32_t type;
        TensorRole role;
        std::uint64_t hash;
        std::uint64_t hash2;
        std::uint64_t fingerprint;
        std::uint32_t uses;
        /// Variables: the previous variable of the same type, which must be used first.
        std::uint16_t previous;
        /// A constant of the space (node outputs never are: no op takes constants alone).
        bool constant;
        /// Bit k: op k may read it.
        std::uint64_t readers;
    };

    /// The ops that may read leaf `v`, as a bit mask over the space's ops.
    [[nodiscard]] static std::uint64_t reader_mask(const GeneratorSpace& space, const GeneratorVariable& v) {
        RLFLOW_EXPECTS(space.ops.size() <= 64, precondition_error, "the generator takes at most 64 ops");
        if (v.readers.empty()) return ~std::uint64_t{0};
        std::uint64_t mask = 0;
        for (std::size_t k = 0; k < space.ops.size(); ++k)
            if (std::find(v.readers.begin(), v.readers.end(), space.ops[k].name) != v.readers.end()) mask |= std::uint64_t{1} << k;
        return mask;
    }
    static constexpr std::uint64_t second_hash_salt = 0x5bd1e9955bd1e995;
    /// Variables and ops hash from different seeds, so (op a, variable b) never meets
    /// (op b, variable a) when combining.
    static constexpr std::uint64_t variable_hash_salt = 0x7661726961626c65;  // "variable"

    /// Calls `f(node, applied)` for every node that may extend the current graph.
    template <class F>
    void for_each_candidate(F&& f) {
        const auto& ops = m_applier.space().ops;
        const auto count = static_cast<std::uint16_t>(m_tensors.size());
        for (std::uint16_t op = 0; op < ops.size(); ++op) {
            const bool commutative = op_traits(ops[op].op).has(op_flag_commutative);
            GenNode node;
            node.op = op;
            std::array<std::uint32_t, max_generator_arity> types{};
            const std::function<void(std::size_t)> choose = [&](std::size_t slot) {
                if (slot == ops[op].arity) {
                    // An op on constants alone is a constant a rule cannot name.
                    if (std::all_of(node.inputs.begin(), node.inputs.begin() + static_cast<std::ptrdiff_t>(slot),
                                    [&](std::uint16_t t) { return m_tensors[t].constant; }))
                        return;
                    if (const Applied* a = m_applier.apply(op, std::span(types.data(), slot)); a && fresh(node)) {
                        node.num_outputs = static_cast<std::uint8_t>(a->outputs.size());
                        f(node, *a);
                    }
                    return;
                }
                for (std::uint16_t t = 0; t < count; ++t) {
                    // A commutative op takes its operands in structural-hash order, which
                    // does not depend on the path that built the graph (tensor ids do).
                    if (commutative && slot > 0 && !(m_tensors[node.inputs[slot - 1]].hash < m_tensors[t].hash)) continue;
                    if (!role_fits(ops[op].roles, slot, t, node) || !(m_tensors[t].readers >> op & 1)) continue;
                    if (std::find(node.inputs.begin(), node.inputs.begin() + static_cast<std::ptrdiff_t>(slot), t)
                        != node.inputs.begin() + static_cast<std::ptrdiff_t>(slot))
                        continue;
                    node.inputs[slot] = t;
                    types[slot] = m_tensors[t].type;
                    choose(slot + 1);
                }
                node.inputs[slot] = no_tensor;
            };
            choose(0);
        }
    }

    /// Whether tensor `t` may be input `slot` of `node` (inputs before `slot` chosen).
    [[nodiscard]] bool role_fits(const RoleSignature& roles, std::size_t slot, std::uint16_t t, const GenNode& node) const {
        if (roles.inputs.empty()) return true;
        using Slot = RoleSignature::Slot;
        const TensorRole role = m_tensors[t].role;
        switch (roles.inputs.at(slot)) {
            case Slot::data: return role == TensorRole::data;
            case Slot::weight: return role == TensorRole::weight;
            case Slot::bias: return role == TensorRole::bias;
            case Slot::scalar: return role == TensorRole::scalar;
            case Slot::same: return slot == 0 ? role != TensorRole::scalar : role == m_tensors[node.inputs[0]].role;
        }
        return false;
    }

    /// No node with the same op and inputs exists, and variables stay a prefix per type.
    [[nodiscard]] bool fresh(const GenNode& n) const {
        for (const GenNode& m : m_nodes)
            if (m.op == n.op && m.inputs == n.inputs) return false;
        for (const std::uint16_t t : n.inputs) {
            if (t == no_tensor || t >= m_variables) continue;
            const std::uint16_t p = m_tensors[t].previous;
            if (p != no_tensor && m_tensors[p].uses == 0
                && std::find(n.inputs.begin(), n.inputs.end(), p) == n.inputs.end())
                return false;
        }
        return true;
    }

    /// Adds `n`, records the graph, goes deeper, and removes `n` again. False if `n`'s
    /// outputs are not exact (nothing added).
    bool visit(const GenNode& n, const Applied& applied) {
        if (!push(n, applied)) {
            ++m_counts.inexact;
            return false;
        }
        const std::size_t outputs = unconsumed_outputs();
        const std::size_t remaining = m_limits.max_ops - m_nodes.size();
        const bool reachable = outputs <= m_limits.max_outputs + remaining * (max_generator_arity - 1);
        if (const GraphKey k = reachable ? key() : GraphKey{}; reachable && m_seen.insert(k)) {
            ++m_counts.states;
            const bool redundant = holds_equal_tensors(n.num_outputs);
            m_counts.redundant += redundant ? 1 : 0;
            if (outputs >= 1 && outputs <= m_limits.max_outputs) record(k, redundant);
            std::uint32_t inexact_children = 0;
            if (!redundant && remaining > 0)
                for_each_candidate([&](const GenNode& next, const Applied& a) { inexact_children += visit(next, a) ? 0 : 1; });
            if (m_limits.log_states) m_states.push_back({k, inexact_children, redundant ? 1u : 0u});
        }
        pop(n);
        return true;
    }

    /// Appends `n` and its exact outputs; false (and nothing appended) if they are not exact.
    [[nodiscard]] bool push(const GenNode& n, const Applied& applied) {
        std::vector<const ExactTensor*> in;
        std::uint64_t h = mix64(n.op + 1), h2 = mix64(h ^ second_hash_salt);
        for (const std::uint16_t t : n.inputs)
            if (t != no_tensor) {
                in.push_back(&m_values[t]);
                h = mix64(h ^ m_tensors[t].hash);
                h2 = mix64(h2 + m_tensors[t].hash2);
            }
        std::vector<ExactTensor> out;
        try {
            out = exact_op(m_applier.space().ops[n.op].op, applied.attributes, in, applied.outputs);
        } catch (const exact_error&) {
            return false;  // overflow, or a value with no exact form: this graph is skipped
        }
        for (const std::uint16_t t : n.inputs)
            if (t != no_tensor) ++m_tensors[t].uses;
        const RoleSignature& roles = m_applier.space().ops[n.op].roles;
        const TensorRole role = roles.makes_data ? TensorRole::data : m_tensors[n.inputs[0]].role;
        m_nodes.push_back(n);
        m_node_hashes.push_back({h, h2});
        for (std::size_t k = 0; k < out.size(); ++k) {
            const std::uint32_t type = m_applier.types().intern(applied.outputs[k]);
            m_tensors.push_back(
                {type, role, mix64(h + k + 1), mix64(h2 ^ (k + 1)), m_fingerprint(out[k]), 0, no_tensor, false, ~std::uint64_t{0}});
            m_values.push_back(std::move(out[k]));
        }
        return true;
    }

    void pop(const GenNode& n) {
        for (std::size_t k = 0; k < n.num_outputs; ++k) {
            m_tensors.pop_back();
            m_values.pop_back();
        }
        m_nodes.pop_back();
        m_node_hashes.pop_back();
        for (const std::uint16_t t : n.inputs)
            if (t != no_tensor) --m_tensors[t].uses;
    }

    [[nodiscard]] std::size_t unconsumed_outputs() const {
        std::size_t count = 0;
        for (std::size_t t = m_variables; t < m_tensors.size(); ++t) count += m_tensors[t].uses == 0 ? 1 : 0;
        return count;
    }

    /// The order-independent key of the current DAG.
    [[nodiscard]] GraphKey key() const {
        std::vector<std::pair<std::uint64_t, std::uint64_t>> hashes = m_node_hashes;
        std::sort(hashes.begin(), hashes.end());
        GraphKey k{mix64(hashes.size()), mix64(hashes.size() ^ second_hash_salt)};
        for (const auto& [a, b] : hashes) {
            k.high = mix64(k.high ^ a);
            k.low = mix64(k.low + b);
        }
        return k;
    }

    /// Whether one of the last node's `outputs` equals an earlier tensor exactly.
    [[nodiscard]] bool holds_equal_tensors(std::size_t outputs) const {
        const std::size_t first_new = m_tensors.size() - outputs;
        for (std::size_t t = first_new; t < m_tensors.size(); ++t)
            for (std::size_t u = 0; u < t; ++u)
                if (m_tensors[u].fingerprint == m_tensors[t].fingerprint && m_values[u] == m_values[t]) return true;
        return false;
    }

    void record(const GraphKey& key, bool redundant) {
        GenGraph g;
        g.nodes = m_nodes;
        g.redundant = redundant;
        g.key = key;
        std::vector<std::pair<std::uint64_t, std::uint16_t>> outs;
        for (std::size_t t = m_variables; t < m_tensors.size(); ++t)
            if (m_tensors[t].uses == 0) outs.emplace_back(m_tensors[t].fingerprint, static_cast<std::uint16_t>(t));
        std::sort(outs.begin(), outs.end());
        for (std::size_t i = 1; i < outs.size(); ++i)
            if (outs[i].first == outs[i - 1].first) return;  // two equal outputs: no output order to pair by
        std::vector<std::uint64_t> fps;
        for (const auto& [fp, t] : outs) {
            g.outputs.push_back(t);
            fps.push_back(fp);
        }
        g.fingerprint = graph_fingerprint(fps);
        m_recorded.push_back(std::move(g));
        ++m_counts.recorded;
    }

    EnumerationLimits m_limits;
    OpApplier m_applier;
    Fingerprinter m_fingerprint;
    SeenStates& m_seen;
    std::size_t m_variables = 0;
    std::vector<TensorInfo> m_tensors;
    std::vector<ExactTensor> m_values;
    std::vector<GenNode> m_nodes;
    std::vector<std::pair<std::uint64_t, std::uint64_t>> m_node_hashes;
    std::vector<GenGraph> m_recorded;
    std::vector<StateLog> m_states;
    EnumerationCounts m_counts;
    std::size_t m_roots_inexact = 0;
};

}  // namespace rlflow::synth::detail
