#pragma once
/// \file
/// A graph and its location index kept in step: what an RL environment holds. An action
/// (rule, location) is applied in place, the masks are updated incrementally, and the
/// returned record steps both back.

#include <rlflow/rewrite/applier.hpp>
#include <rlflow/rewrite/location_index.hpp>

#include <memory>
#include <span>
#include <utility>

namespace rlflow::rewrite {

/// A graph under rewriting, with every rule's locations always current.
class Rewriter {
public:
    /// Starts on `graph` with every location of `rules` indexed.
    Rewriter(Graph graph, std::shared_ptr<const RuleSet> rules, IndexOptions options = {})
        : m_graph(std::move(graph)), m_index(std::move(rules), options) {
        m_index.rebuild(m_graph);
    }

    /// Continues from `parent` on `graph`: parent's graph after rewrites (and undos) that
    /// touched `touched`. The parent's index is copied and updated where they touched it,
    /// which costs far less than matching every rule again.
    Rewriter(const Rewriter& parent, Graph graph, std::span<const NodeId> touched)
        : m_graph(std::move(graph)), m_index(parent.m_index) {
        m_index.update(m_graph, touched);
    }

    [[nodiscard]] const Graph& graph() const noexcept { return m_graph; }
    [[nodiscard]] const LocationIndex& index() const noexcept { return m_index; }
    [[nodiscard]] const RuleSet& rules() const noexcept { return m_index.rules(); }

    /// Applies location `location` (an index below index().num_choices(rule)) of rule
    /// `rule`; returns the record that undo() takes.
    [[nodiscard]] EditJournal apply(std::size_t rule, std::size_t location) {
        return apply_at(rule, m_index.location(rule, location));
    }
    /// Applies rule `rule` at `where`, a location the index lists for the graph as it is
    /// (or listed for the same graph re-derived by the same edits: ids are reproducible).
    [[nodiscard]] EditJournal apply_at(std::size_t rule, Location where) {
        EditJournal journal = rewrite::apply(m_graph, rules(), static_cast<std::uint32_t>(rule), where, Verify::no);
        m_index.update(m_graph, journal.touched_nodes());
        return journal;
    }

    /// Applies action (rule, location) without touching the index, calls
    /// `inspect(graph, touched_nodes)` on the rewritten graph, undoes the rewrite and
    /// returns what `inspect` returned: how a search prices a successor without copying.
    template <class Inspect>
    auto probe(std::size_t rule, std::size_t location, Inspect&& inspect) {
        return probe_at(rule, m_index.location(rule, location), std::forward<Inspect>(inspect));
    }
    /// probe() of the rewrite at `where`, a location the index lists.
    template <class Inspect>
    auto probe_at(std::size_t rule, Location where, Inspect&& inspect) {
        EditJournal journal = rewrite::apply(m_graph, rules(), static_cast<std::uint32_t>(rule), where, Verify::no);
        const std::vector<NodeId> touched = journal.touched_nodes();
        try {
            auto result = inspect(static_cast<const Graph&>(m_graph), std::span<const NodeId>(touched));
            m_graph.undo(std::move(journal));
            return result;
        } catch (...) {
            m_graph.undo(std::move(journal));
            throw;
        }
    }

    /// Steps back one apply(); records are undone newest first.
    void undo(EditJournal&& journal) {
        const std::vector<NodeId> touched = journal.touched_nodes();
        m_graph.undo(std::move(journal));
        m_index.update(m_graph, touched);
    }

    /// Starts over on another graph.
    void reset(Graph graph) {
        m_graph = std::move(graph);
        m_index.rebuild(m_graph);
    }

private:
    Graph m_graph;
    LocationIndex m_index;
};

}  // namespace rlflow::rewrite
