#pragma once
/// \file
/// The working state of a search: one graph that moves by rewrites and their undos, with
/// its location index, its cost, its structure hash, and the price of every action in
/// it, all kept current edit by edit. An action's price (the change of the graph's cost
/// if it were applied) is measured once by probing, and kept until an edit touches a node
/// it read; so after a rewrite only the actions around the rewrite are probed again, and
/// a step of greedy search or an expansion of backtracking costs in proportion to the
/// change, not to the graph.
///
/// What a price reads: the matched nodes, the nodes the probe's edits touched (among them
/// the producers of the rule's variables and the consumers of the replaced outputs), the
/// nodes the cost tracker priced again, and their producers (a node's price depends on
/// its inputs' types, on whether they are known before the model runs, and on a fusion
/// head before it). An edit that touches none of these leaves the price as it was: a
/// node whose inputs, uses or weight-only status change is touched or priced again.

#include <rlflow/core/structure_hash.hpp>
#include <rlflow/cost/cost_tracker.hpp>
#include <rlflow/rewrite/applier.hpp>
#include <rlflow/rewrite/location_index.hpp>

#include <algorithm>
#include <cstdint>
#include <limits>
#include <memory>
#include <optional>
#include <set>
#include <span>
#include <unordered_map>
#include <utility>
#include <vector>

namespace rlflow::search {

/// An action and what it would change the graph's cost by.
struct PricedAction {
    double delta_ms = 0;
    std::uint32_t rule = 0;
    rewrite::Location where;
};

/// Cheapest change first; ties in (rule, location) order, the index's order.
struct CheaperAction {
    bool operator()(const PricedAction& a, const PricedAction& b) const noexcept {
        if (a.delta_ms != b.delta_ms) return a.delta_ms < b.delta_ms;
        if (a.rule != b.rule) return a.rule < b.rule;
        return a.where < b.where;
    }
};

namespace detail {

/// An action, as a hash map key.
struct ActionKey {
    std::uint32_t rule = 0;
    rewrite::Location where;
    friend bool operator==(const ActionKey&, const ActionKey&) = default;
};
/// An action to look up without copying its location.
struct ActionView {
    std::uint32_t rule = 0;
    const rewrite::Location* where = nullptr;
};
[[nodiscard]] inline std::size_t hash_action(std::uint32_t rule, const rewrite::Location& where) noexcept {
    std::uint64_t h = rlflow::detail::mix64(rule + 0x9e3779b97f4a7c15ULL);
    for (const NodeId n : where.nodes) h = rlflow::detail::mix64(h ^ n.value);
    for (const TensorRef& v : where.variables) h = rlflow::detail::mix64(h ^ (std::uint64_t{v.node.value} << 8 | v.index));
    return static_cast<std::size_t>(h);
}
struct ActionKeyHash {
    using is_transparent = void;
    std::size_t operator()(const ActionKey& k) const noexcept { return hash_action(k.rule, k.where); }
    std::size_t operator()(const ActionView& k) const noexcept { return hash_action(k.rule, *k.where); }
};
struct ActionKeyEqual {
    using is_transparent = void;
    bool operator()(const ActionKey& a, const ActionKey& b) const noexcept { return a == b; }
    bool operator()(const ActionView& a, const ActionKey& b) const noexcept { return a.rule == b.rule && *a.where == b.where; }
    bool operator()(const ActionKey& a, const ActionView& b) const noexcept { return b.rule == a.rule && *b.where == a.where; }
};

}  // namespace detail

/// How a SearchState keeps its actions.
struct SearchStateOptions {
    /// The index's choices per rule (every location is listed whatever this is; an agent
    /// chooses among the first max_locations).
    rewrite::IndexOptions index{std::numeric_limits<std::size_t>::max()};
    /// Keep every action's price. Off, the state keeps the graph, its index, cost and hash
    /// alone (an environment whose observations carry no one-step gains).
    bool price_actions = true;
    /// Keep the graph's structure hash (hash()). Off, edits skip it (an environment, which
    /// never asks whether it has seen a graph before).
    bool hash = true;
};

/// A graph under search with the price of every action in it: the one working-graph
/// engine of the searches and of the RL environment.
template <cost::CostBackend Backend>
class SearchState {
public:
    /// Starts on `graph`; prices every action. `model` must outlive the state.
    SearchState(Graph graph, std::shared_ptr<const rewrite::RuleSet> rules, cost::CostModel<Backend>& model,
                SearchStateOptions options = {})
        : m_graph(std::move(graph)),
          m_index(std::move(rules), options.index),
          m_tracker(model, m_graph),
          m_hash(options.hash ? std::optional<StructureHash>(std::in_place, m_graph) : std::nullopt),
          m_price_actions(options.price_actions) {
        m_index.rebuild(m_graph);
        if (!m_price_actions) return;
        for (std::size_t r = 0; r < m_index.num_rules(); ++r)
            for (const rewrite::Location& l : m_index.locations(r)) price(static_cast<std::uint32_t>(r), l);
    }

    [[nodiscard]] const Graph& graph() const noexcept { return m_graph; }
    [[nodiscard]] const rewrite::LocationIndex& index() const noexcept { return m_index; }
    [[nodiscard]] const rewrite::RuleSet& rules() const noexcept { return m_index.rules(); }
    /// The graph's cost now (the tracker's running total). Needs sync().
    [[nodiscard]] double cost() const {
        expect_synced();
        return m_tracker.total();
    }
    /// The graph's structure hash now (current after every edit, synced or not); a state
    /// kept without it (SearchStateOptions::hash off) throws precondition_error.
    [[nodiscard]] Hash128 hash() const {
        RLFLOW_EXPECTS(m_hash.has_value(), precondition_error, "SearchState: kept without its structure hash");
        return m_hash->value();
    }
    /// Actions priced and kept (every listed action, and none other).
    [[nodiscard]] std::size_t priced_actions() const noexcept { return m_ranked.size(); }
    /// Probes run so far: what the price cache saved is the probes it did not run.
    [[nodiscard]] std::size_t probes() const noexcept { return m_probes; }
    /// The kept price of action (rule, where): the change of the graph's cost if it were
    /// applied; nullopt for an action the index does not list (or with pricing off).
    [[nodiscard]] std::optional<double> price_of(std::uint32_t rule, const rewrite::Location& where) const {
        expect_synced();
        const auto it = m_entries.find(detail::ActionView{rule, &where});
        if (it == m_entries.end()) return std::nullopt;
        return it->second.delta_ms;
    }
    /// The cost tracker: every node's price now. Needs sync().
    [[nodiscard]] const cost::CostTracker<Backend>& tracker() const {
        expect_synced();
        return m_tracker;
    }

    /// Applies rule `rule` at `where` (a location the index lists now, or listed for the
    /// same graph reached by the same edits: ids are reproducible) and syncs; returns the
    /// record undo() takes.
    [[nodiscard]] EditJournal apply(std::uint32_t rule, const rewrite::Location& where) {
        EditJournal journal = edit(rule, where);
        sync();
        return journal;
    }
    /// Steps back one apply() and syncs; records are undone newest first.
    void undo(EditJournal&& journal) {
        revert(std::move(journal));
        sync();
    }
    /// apply() without sync(): only the graph and its hash follow, so that a walk of many
    /// rewrites and undos updates the index, the cost and the prices once, at its end.
    [[nodiscard]] EditJournal edit(std::uint32_t rule, const rewrite::Location& where) {
        EditJournal journal = rewrite::apply(m_graph, rules(), rule, where, rewrite::Verify::no);
        note_edit(journal.touched_nodes());
        return journal;
    }
    /// undo() without sync().
    void revert(EditJournal&& journal) {
        const std::vector<NodeId> touched = journal.touched_nodes();
        m_graph.undo(std::move(journal));
        note_edit(touched);
    }
    /// Brings the index, the cost and the prices up to date after edit()s and revert()s.
    void sync() {
        m_synced.clear();
        if (m_pending.empty()) return;
        std::sort(m_pending.begin(), m_pending.end());
        m_pending.erase(std::unique(m_pending.begin(), m_pending.end()), m_pending.end());
        m_index.update(m_graph, m_pending);
        after_edit(m_pending);
        m_synced.swap(m_pending);
        m_pending.clear();
    }
    /// Whether edit()s or revert()s wait for a sync().
    [[nodiscard]] bool pending() const noexcept { return !m_pending.empty(); }
    /// The nodes the last sync() brought up to date: those the edits since the sync
    /// before touched (sorted, unique).
    [[nodiscard]] std::span<const NodeId> synced_nodes() const noexcept { return m_synced; }

    /// Calls `visit(action, cost_after)` for the listed actions, cheapest first, until it
    /// returns false.
    template <class Visit>
    void for_each_cheapest(Visit&& visit) const {
        const double now = cost();  // checks the state is synced
        for (const PricedAction& a : m_ranked)
            if (!visit(a, now + a.delta_ms)) return;
    }
    /// The cheapest listed action, if any.
    [[nodiscard]] std::optional<PricedAction> cheapest() const {
        expect_synced();
        if (m_ranked.empty()) return std::nullopt;
        return *m_ranked.begin();
    }

    /// Bytes held by the price cache (entries, ranking and the nodes each read).
    [[nodiscard]] std::size_t cache_bytes() const noexcept {
        constexpr std::size_t tree_node_overhead = 48;  // a red-black tree node's links and colour
        constexpr std::size_t hash_node_overhead = 24;
        std::size_t bytes = m_ranked.size() * (sizeof(PricedAction) + tree_node_overhead)
                            + m_entries.size() * (sizeof(detail::ActionKey) + sizeof(Entry) + hash_node_overhead);
        return bytes + m_reader_entries * sizeof(Reader) + m_readers.size() * sizeof(std::vector<Reader>);
    }

private:
    struct Entry {
        double delta_ms = 0;
        std::uint64_t generation = 0;
    };
    /// An entry that read a node: its key and the generation it had then.
    struct Reader {
        std::uint32_t slot = 0;
        std::uint64_t generation = 0;
    };

    void expect_synced() const {
        RLFLOW_EXPECTS(m_pending.empty(), precondition_error, "SearchState: edits not synced; call sync()");
    }
    void note_edit(const std::vector<NodeId>& touched) {
        if (m_hash) m_hash->update(m_graph, touched);
        m_pending.insert(m_pending.end(), touched.begin(), touched.end());
    }
    /// Brings the tracker and the prices up to date after edits of the graph (whose
    /// index is current already) that touched `touched`.
    void after_edit(const std::vector<NodeId>& touched) {
        const Graph& g = m_graph;
        m_tracker.update(g, touched);
        if (!m_price_actions) return;
        // Prices that read a touched or re-priced node go; those still listed are probed again.
        std::vector<detail::ActionKey> again;
        forget_readers(touched, again);
        const std::vector<NodeId> repriced(m_tracker.last_repriced().begin(), m_tracker.last_repriced().end());
        forget_readers(repriced, again);
        for (const auto& [rule, l] : m_index.added()) again.push_back({rule, l});
        for (const detail::ActionKey& k : again)
            if (!m_entries.contains(k) && m_index.lists(k.rule, k.where)) price(k.rule, k.where);
    }

    void forget_readers(std::span<const NodeId> nodes, std::vector<detail::ActionKey>& again) {
        for (const NodeId n : nodes) {
            if (n.value >= m_readers.size()) continue;
            for (const Reader& r : m_readers[n.value]) {
                if (r.slot >= m_slots.size() || m_slots[r.slot].generation != r.generation) continue;
                Slot& s = m_slots[r.slot];
                const auto it = m_entries.find(s.key);
                if (it != m_entries.end() && it->second.generation == r.generation) {
                    m_ranked.erase(PricedAction{it->second.delta_ms, s.key.rule, s.key.where});
                    m_entries.erase(it);
                    again.push_back(s.key);
                }
                s.generation = 0;  // dead
                m_free.push_back(r.slot);
            }
            m_reader_entries -= m_readers[n.value].size();
            m_readers[n.value].clear();
        }
    }

    /// Probes action (rule, where), a listed location, and keeps its price with the
    /// nodes the price read.
    void price(std::uint32_t rule, const rewrite::Location& where) {
        ++m_probes;
        const Graph& g = m_graph;
        const std::uint32_t bound = g.id_bound();
        std::vector<NodeId> read;
        for (const NodeId n : where.nodes)
            if (n.valid()) read.push_back(n);
        EditJournal journal = rewrite::apply(m_graph, rules(), rule, where, rewrite::Verify::no);
        const std::vector<NodeId> touched = journal.touched_nodes();
        double delta = 0;
        try {
            m_tracker.update(g, touched);
            delta = m_tracker.last_change();
            for (const NodeId n : touched)
                if (n.value < bound) read.push_back(n);
            for (const NodeId n : m_tracker.last_repriced()) {
                if (n.value < bound) read.push_back(n);
                for (const TensorRef& in : g.node(n).inputs)
                    if (in.present() && in.node.value < bound) read.push_back(in.node);
            }
        } catch (...) {
            m_graph.undo(std::move(journal));
            m_tracker.revert_update();
            throw;
        }
        m_graph.undo(std::move(journal));
        m_tracker.revert_update();  // the graph is as it was: so are its prices, bit for bit
        std::sort(read.begin(), read.end());
        read.erase(std::unique(read.begin(), read.end()), read.end());

        const std::uint64_t generation = ++m_generation;
        std::uint32_t slot;
        if (!m_free.empty()) {
            slot = m_free.back();
            m_free.pop_back();
        } else {
            slot = static_cast<std::uint32_t>(m_slots.size());
            m_slots.emplace_back();
        }
        m_slots[slot] = {{rule, where}, generation};
        m_entries[{rule, where}] = {delta, generation};
        m_ranked.insert({delta, rule, where});
        if (!read.empty() && read.back().value >= m_readers.size()) m_readers.resize(read.back().value + 1);
        for (const NodeId n : read) m_readers[n.value].push_back({slot, generation});
        m_reader_entries += read.size();
    }

    struct Slot {
        detail::ActionKey key;
        std::uint64_t generation = 0;  // 0: free
    };

    Graph m_graph;
    rewrite::LocationIndex m_index;
    cost::CostTracker<Backend> m_tracker;
    std::optional<StructureHash> m_hash;
    std::unordered_map<detail::ActionKey, Entry, detail::ActionKeyHash, detail::ActionKeyEqual> m_entries;
    std::set<PricedAction, CheaperAction> m_ranked;
    std::vector<Slot> m_slots;
    std::vector<std::uint32_t> m_free;
    std::vector<std::vector<Reader>> m_readers;  // by node id
    std::size_t m_reader_entries = 0;
    std::uint64_t m_generation = 0;
    std::size_t m_probes = 0;
    std::vector<NodeId> m_pending;  // touched by edits not synced yet
    std::vector<NodeId> m_synced;   // what the last sync() covered
    bool m_price_actions = true;
};

}  // namespace rlflow::search
