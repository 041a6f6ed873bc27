#pragma once
/// \file
/// TASO's cost-based backtracking search (thesis Algorithm 2): a priority queue of graphs
/// by cost; each dequeued graph is expanded by every location of every rule, and a
/// successor is kept if its cost is below alpha x the best cost so far (and the queue is
/// capped at SearchOptions::max_queue graphs, dropping the costliest). Successors are
/// deduplicated by exact canonical form (TASO trusted a 64-bit hash). The queue is
/// ordered by (cost, insertion order), so the search is deterministic. Successors are
/// kept as (parent, rewrite) and made when dequeued, where duplicates are dropped; a dequeued
/// graph's location index is its parent's, updated where the rewrite touched it.

#include <rlflow/core/canonical.hpp>
#include <rlflow/search/greedy.hpp>

#include <algorithm>
#include <memory>
#include <iterator>
#include <set>
#include <span>
#include <unordered_map>
#include <vector>

namespace rlflow::search {

namespace detail {

/// A graph waiting in the queue: its parent (a graph with its location index) and the
/// rewrite, a location choice of the parent's index, that makes it from the parent
/// (applied only when the candidate is dequeued, so kept successors cost no copy until
/// then), with the rewrites that made it from the input.
struct Candidate {
    double cost_ms = 0;
    std::uint64_t order = 0;
    std::shared_ptr<const rewrite::Rewriter> parent;
    std::uint32_t rule = 0;
    std::uint32_t choice = 0;
    /// Whether `parent` is the graph itself (the input).
    bool materialized = false;
    /// The rule ids applied from the input to this graph, in order.
    std::vector<std::uint32_t> path;

    /// The graph, and the nodes the rewrite touched in the parent's graph.
    [[nodiscard]] std::pair<Graph, std::vector<NodeId>> graph() const {
        Graph g = parent->graph();
        if (materialized) return {std::move(g), {}};
        const rewrite::Location& where = parent->index().location(rule, choice);
        std::vector<NodeId> touched = rewrite::apply(g, parent->rules(), rule, where, rewrite::Verify::no).touched_nodes();
        return {std::move(g), std::move(touched)};
    }
    /// The graph with its location index: the parent's, updated where the rewrite touched it.
    [[nodiscard]] std::shared_ptr<rewrite::Rewriter> state(Graph made, std::span<const NodeId> touched) const {
        return std::make_shared<rewrite::Rewriter>(*parent, std::move(made), touched);
    }
};
struct CheaperFirst {
    bool operator()(const Candidate& a, const Candidate& b) const noexcept {
        return a.cost_ms != b.cost_ms ? a.cost_ms < b.cost_ms : a.order < b.order;
    }
};

/// Canonical forms seen so far, compared exactly (hash first).
class SeenGraphs {
public:
    /// Records `g`; false if an identical graph was recorded before.
    bool insert(const Graph& g) {
        CanonicalForm form = canonical_form(g);
        auto& bucket = m_by_hash[form.hash];
        for (const auto& bytes : bucket)
            if (bytes == form.bytes) return false;
        bucket.push_back(std::move(form.bytes));
        return true;
    }

private:
    std::unordered_map<std::uint64_t, std::vector<std::string>> m_by_hash;
};

/// The k cheapest candidates seen, cheapest first (ties to the earlier one).
class Cheapest {
public:
    explicit Cheapest(std::size_t k) : m_k(k) {}
    void offer(const Candidate& c) {
        if (m_k == 0 || (m_kept.size() == m_k && !CheaperFirst{}(c, m_kept.back()))) return;
        m_kept.insert(std::upper_bound(m_kept.begin(), m_kept.end(), c, CheaperFirst{}), c);
        if (m_kept.size() > m_k) m_kept.pop_back();
    }
    /// The kept graphs other than `best` and each other (by canonical form), priced by
    /// `model`, cheapest first.
    template <cost::CostBackend Backend>
    [[nodiscard]] std::vector<SearchResult::RunnerUp> runners_up(const Graph& best, const rewrite::RuleSet& rules,
                                                                 cost::CostModel<Backend>& model) const {
        SeenGraphs seen;
        seen.insert(best);
        std::vector<SearchResult::RunnerUp> result;
        for (const Candidate& c : m_kept) {
            Graph g = c.graph().first;
            if (!seen.insert(g)) continue;
            const double ms = model.graph_cost(g);
            result.push_back({std::move(g), ms, named_counts(rules, c.path), named_sequence(rules, c.path)});
        }
        return result;
    }

private:
    std::size_t m_k;
    std::vector<Candidate> m_kept;
};

}  // namespace detail

/// Backtracking search from `graph` with `rules`, priced by `model`.
template <cost::CostBackend Backend>
[[nodiscard]] SearchResult backtracking(const Graph& graph, std::shared_ptr<const rewrite::RuleSet> rules,
                                        cost::CostModel<Backend>& model, const SearchOptions& options = {}) {
    const detail::StopRules stop(options);
    SearchResult result;
    result.initial_cost_ms = model.graph_cost(graph);
    // Cheapest first; past max_queue candidates the most expensive is dropped.
    std::set<detail::Candidate, detail::CheaperFirst> queue;
    detail::SeenGraphs seen;
    std::uint64_t order = 0;
    detail::Candidate best{result.initial_cost_ms, order,
                           std::make_shared<const rewrite::Rewriter>(graph, rules, detail::every_location), 0, 0, true,
                           {}};
    queue.insert(best);
    detail::Cheapest cheapest(options.keep_best);
    cheapest.offer(best);
    result.reason = StopReason::converged;
    while (!queue.empty()) {
        if (const auto why = stop.check(result.expansions)) {
            result.reason = *why;
            break;
        }
        const detail::Candidate current = *queue.begin();
        queue.erase(queue.begin());
        auto [made, touched] = current.graph();
        if (!seen.insert(made)) continue;
        const std::shared_ptr<rewrite::Rewriter> state = current.state(std::move(made), touched);
        ++result.expansions;
        rewrite::Rewriter& rw = *state;
        cost::CostTracker<Backend> tracker(model, rw.graph());
        for (std::size_t r = 0; r < rules->size(); ++r)
            for (std::size_t l = 0; l < rw.index().num_choices(r); ++l) {
                const double c = probe_cost(rw, tracker, r, l);
                if (!(c < options.alpha * best.cost_ms)) continue;
                detail::Candidate successor{c, ++order, state, static_cast<std::uint32_t>(r), static_cast<std::uint32_t>(l),
                                            false, current.path};
                successor.path.push_back(static_cast<std::uint32_t>(r));
                if (c < best.cost_ms) best = successor;
                cheapest.offer(successor);
                queue.insert(std::move(successor));
                if (queue.size() > options.max_queue) queue.erase(std::prev(queue.end()));
            }
        if (options.on_progress) options.on_progress({result.expansions, options.budget, result.initial_cost_ms, best.cost_ms});
    }
    result.graph = best.graph().first;
    result.best_cost_ms = model.graph_cost(result.graph);
    result.rewrites = detail::named_counts(*rules, best.path);
    result.sequence = detail::named_sequence(*rules, best.path);
    result.runners_up = cheapest.runners_up(result.graph, *rules, model);
    result.seconds = stop.seconds();
    return result;
}

}  // namespace rlflow::search
