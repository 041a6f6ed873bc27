#pragma once
/// \file
/// The locations of every rule in one graph, kept current edit by edit: the action masks
/// of the RL environment (thesis §3.3.3). After a rewrite only the neighbourhood of the
/// touched nodes is searched again; the result always equals a full recomputation.
///
/// Why that is enough: a location's validity depends on its matched nodes (their ops,
/// attributes, inputs and the uses of their outputs), the types of its variables (which
/// rewrites never change, as replacements keep types) and, for cycle-prone rules, on
/// reachability in the whole graph. Edits record every node whose inputs or output uses
/// changed, so a location that appears or disappears binds a touched node, except for a
/// cycle-prone rule's cycle check, which is redone for all of its candidates.

#include <rlflow/rewrite/matcher.hpp>

#include <algorithm>
#include <memory>
#include <span>
#include <vector>

namespace rlflow::rewrite {

/// Options of a LocationIndex.
struct IndexOptions {
    /// L: the number of locations per rule an agent can choose from (thesis: 200).
    std::size_t max_locations = 200;
};

/// Every rule's locations in one graph, with xfer and location masks.
class LocationIndex {
public:
    /// An empty index of `rules`; call rebuild() with a graph.
    explicit LocationIndex(std::shared_ptr<const RuleSet> rules, IndexOptions options = {})
        : m_rules(std::move(rules)), m_options(options), m_per_rule(m_rules->size()) {
        RLFLOW_EXPECTS(m_options.max_locations > 0, precondition_error, "max_locations must be positive");
    }

    /// Matches every rule in `graph` from scratch.
    void rebuild(const Graph& graph) {
        m_added.clear();
        m_graph_index.rebuild(graph);
        Matcher matcher(*m_rules, graph, m_graph_index);
        matcher.defer_cycle_checks();
        for (std::uint32_t r = 0; r < m_rules->size(); ++r) {
            m_per_rule[r].candidates.clear();
            matcher.find_all(r, m_per_rule[r].candidates);
            refresh_valid(matcher, r);
        }
    }

    /// Brings the locations up to date after edits that touched `touched` (as listed by
    /// EditJournal::touched_nodes), for the graph as it is now. The edits must be rewrites
    /// and their undos (apply() and Graph::undo journals): edits that retype an existing
    /// tensor would change the validity of locations whose nodes they do not touch.
    void update(const Graph& graph, std::span<const NodeId> touched) {
        m_added.clear();
        m_graph_index.update(graph, touched);
        for (const NodeId id : touched) {
            // Ids an undo dropped lie past id_bound() and still need stamping.
            if (id.value >= m_stamp.size()) m_stamp.resize(id.value + 1, 0);
            m_stamp[id.value] = 1;
        }
        for (auto& entry : m_per_rule)
            std::erase_if(entry.candidates, [&](const Location& l) { return binds_stamped(l); });
        for (const NodeId id : touched) m_stamp[id.value] = 0;
        Matcher matcher(*m_rules, graph, m_graph_index);
        matcher.defer_cycle_checks();
        m_found.clear();
        for (const NodeId id : touched) {
            if (!graph.contains(id)) continue;
            for (const auto& [rule, anchor] : m_rules->anchors(graph.node(id).op)) {
                const std::size_t before = m_scratch.size();
                matcher.find_anchored(rule, anchor, id, m_scratch);
                for (std::size_t i = before; i < m_scratch.size(); ++i) m_found.emplace_back(rule, m_scratch[i]);
            }
            m_scratch.clear();
        }
        merge_found();
        for (const auto& [rule, l] : m_found)
            if (!m_rules->compiled(rule).cycle_prone) m_added.emplace_back(rule, l);
        for (std::uint32_t r = 0; r < m_rules->size(); ++r) refresh_valid(matcher, r, true);
    }

    /// The locations the last update() listed that may not have been listed before it
    /// (those found around the touched nodes, and cycle-prone rules' locations that stopped
    /// closing a cycle), as (rule, location); every location listed now that was not
    /// listed before the update is among them. rebuild() clears it.
    [[nodiscard]] std::span<const std::pair<std::uint32_t, Location>> added() const noexcept { return m_added; }
    /// Whether `location` is listed among rule `rule`'s locations (all of them, not only
    /// the first max_locations).
    [[nodiscard]] bool lists(std::size_t rule, const Location& location) const {
        const std::span<const Location> all = locations(rule);
        return std::binary_search(all.begin(), all.end(), location);
    }

    [[nodiscard]] const RuleSet& rules() const noexcept { return *m_rules; }
    [[nodiscard]] std::size_t num_rules() const noexcept { return m_rules->size(); }
    [[nodiscard]] std::size_t max_locations() const noexcept { return m_options.max_locations; }
    [[nodiscard]] const GraphIndex& graph_index() const noexcept { return m_graph_index; }

    /// All locations of `rule`, sorted (possibly more than max_locations).
    [[nodiscard]] std::span<const Location> locations(std::size_t rule) const {
        const auto& e = m_per_rule.at(rule);
        return m_rules->compiled(rule).cycle_prone ? std::span<const Location>(e.valid) : std::span<const Location>(e.candidates);
    }
    /// Number of locations an agent can choose from: min(count, L).
    [[nodiscard]] std::size_t num_choices(std::size_t rule) const {
        return std::min(locations(rule).size(), m_options.max_locations);
    }
    /// The location behind action (rule, index); index < num_choices(rule).
    [[nodiscard]] const Location& location(std::size_t rule, std::size_t index) const {
        RLFLOW_EXPECTS(rule < num_rules() && index < num_choices(rule), precondition_error,
                       "no location " + std::to_string(index) + " for rule " + std::to_string(rule));
        return locations(rule)[index];
    }
    /// N + 1 entries: 1 where the rule has a location; the last (NO-OP) is always 1.
    [[nodiscard]] std::vector<std::uint8_t> xfer_mask() const {
        std::vector<std::uint8_t> mask(num_rules() + 1, 1);
        for (std::size_t r = 0; r < num_rules(); ++r) mask[r] = locations(r).empty() ? 0 : 1;
        return mask;
    }
    /// L entries: 1 for the first min(count, L) locations of `rule`.
    [[nodiscard]] std::vector<std::uint8_t> location_mask(std::size_t rule) const {
        std::vector<std::uint8_t> mask(m_options.max_locations, 0);
        std::fill_n(mask.begin(), num_choices(rule), 1);
        return mask;
    }

private:
    struct PerRule {
        /// Locations that pass every check except, for cycle-prone rules, the cycle check.
        std::vector<Location> candidates;
        /// Cycle-prone rules only: the candidates that close no cycle.
        std::vector<Location> valid;
    };

    [[nodiscard]] bool binds_stamped(const Location& l) const {
        for (const NodeId n : l.nodes)
            if (n.valid() && n.value < m_stamp.size() && m_stamp[n.value]) return true;
        return false;
    }
    /// Merges the newly found locations into each rule's sorted candidates.
    void merge_found() {
        std::sort(m_found.begin(), m_found.end());
        m_found.erase(std::unique(m_found.begin(), m_found.end()), m_found.end());
        for (std::size_t i = 0; i < m_found.size();) {
            const std::uint32_t rule = m_found[i].first;
            auto& list = m_per_rule[rule].candidates;
            const std::size_t old_size = list.size();
            for (; i < m_found.size() && m_found[i].first == rule; ++i) list.push_back(m_found[i].second);
            std::inplace_merge(list.begin(), list.begin() + static_cast<std::ptrdiff_t>(old_size), list.end());
        }
    }
    /// Recomputes a cycle-prone rule's valid locations; with `note_added`, lists in
    /// added() those that were not valid before.
    void refresh_valid(Matcher& matcher, std::uint32_t rule, bool note_added = false) {
        if (!m_rules->compiled(rule).cycle_prone) return;
        auto& e = m_per_rule[rule];
        std::swap(e.valid, m_previous_valid);
        e.valid.clear();
        for (const Location& l : e.candidates)
            if (!matcher.closes_cycle(rule, l)) e.valid.push_back(l);
        if (!note_added) return;
        auto old = m_previous_valid.begin();
        for (const Location& l : e.valid) {
            while (old != m_previous_valid.end() && *old < l) ++old;
            if (old == m_previous_valid.end() || l < *old) m_added.emplace_back(rule, l);
        }
    }

    std::shared_ptr<const RuleSet> m_rules;
    IndexOptions m_options;
    GraphIndex m_graph_index;
    std::vector<PerRule> m_per_rule;
    std::vector<char> m_stamp;
    std::vector<Location> m_scratch;
    std::vector<std::pair<std::uint32_t, Location>> m_found;
    std::vector<std::pair<std::uint32_t, Location>> m_added;
    std::vector<Location> m_previous_valid;
};

}  // namespace rlflow::rewrite
