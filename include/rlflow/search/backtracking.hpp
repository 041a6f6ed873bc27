#pragma once
/// \file
/// TASO's cost-based backtracking search (thesis Algorithm 2): a priority queue of graphs
/// by cost; each dequeued graph is expanded by every location of every rule, and a
/// successor is kept if its cost is below alpha x the best cost so far (and the queue is
/// capped at SearchOptions::max_queue graphs, dropping the costliest). The queue is
/// ordered by (cost, insertion order), and successors are inserted in (rule, location)
/// order, so the search is deterministic.
///
/// Memory is bounded by the budget, not by the budget times the graph. No graph is kept
/// whole: an expanded graph is a node of a search tree (its parent and the rewrite that
/// made it), a queued graph is a tree node and one rewrite, and one working graph
/// (SearchState, with its index and action prices) walks the tree by undoing rewrites to
/// the common ancestor and applying the ones down to the graph wanted. Graphs met before
/// are dropped by their structure hash (StructureHash: 128 bits, kept current edit by
/// edit), as TASO dropped them by a hash. An expansion thus costs in proportion to the
/// rewrites walked and to the queue, not to the graph.

#include <rlflow/core/canonical.hpp>
#include <rlflow/search/greedy.hpp>
#include <rlflow/search/search_state.hpp>

#include <algorithm>
#include <iterator>
#include <memory>
#include <set>
#include <unordered_map>
#include <unordered_set>
#include <vector>

namespace rlflow::search {

namespace detail {

/// No tree node: a queued entry for the input graph itself.
inline constexpr std::uint32_t no_tree_node = std::numeric_limits<std::uint32_t>::max();

/// A graph waiting in the queue: tree node `node`'s graph with rule `rule` applied at
/// `where` (or the input itself, when `node` is no_tree_node).
struct Candidate {
    double cost_ms = 0;
    std::uint64_t order = 0;
    std::uint32_t node = no_tree_node;
    std::uint32_t rule = 0;
    rewrite::Location where;
};
struct CheaperFirst {
    bool operator()(const Candidate& a, const Candidate& b) const noexcept {
        return a.cost_ms != b.cost_ms ? a.cost_ms < b.cost_ms : a.order < b.order;
    }
};

/// An expanded graph: its parent's graph with one rewrite applied (the root: the input).
struct TreeNode {
    std::uint32_t parent = no_tree_node;
    std::uint32_t depth = 0;
    std::uint32_t rule = 0;
    rewrite::Location where;
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

/// The search tree and the working graph that walks it.
template <cost::CostBackend Backend>
class TreeWalker {
public:
    TreeWalker(const Graph& graph, std::shared_ptr<const rewrite::RuleSet> rules, cost::CostModel<Backend>& model)
        : m_state(graph, std::move(rules), model) {
        m_tree.push_back({});  // the input
    }

    [[nodiscard]] SearchState<Backend>& state() noexcept { return m_state; }
    [[nodiscard]] std::uint32_t at() const noexcept { return m_at; }
    [[nodiscard]] const TreeNode& node(std::uint32_t id) const { return m_tree[id]; }

    /// Moves the working graph to tree node `target`'s graph (not synced).
    void go_to(std::uint32_t target) {
        std::vector<std::uint32_t> down;  // from target up to the common ancestor, exclusive
        std::uint32_t t = target;
        while (m_tree[t].depth > m_tree[m_at].depth) {
            down.push_back(t);
            t = m_tree[t].parent;
        }
        while (m_at != t) {
            if (m_tree[m_at].depth >= m_tree[t].depth) {
                m_journal_edits -= m_journals.back().size();
                m_state.revert(std::move(m_journals.back()));
                m_journals.pop_back();
                m_at = m_tree[m_at].parent;
            }
            if (m_tree[t].depth > m_tree[m_at].depth) {
                down.push_back(t);
                t = m_tree[t].parent;
            }
        }
        for (auto it = down.rbegin(); it != down.rend(); ++it) {
            push(m_state.edit(m_tree[*it].rule, m_tree[*it].where));
            m_at = *it;
        }
    }
    /// Makes `c`'s graph the working graph, synced; false (and the working graph is `c`'s
    /// parent's, not synced) if a graph with its structure hash was made before.
    bool make(const Candidate& c) {
        if (c.node == no_tree_node) {
            go_to(0);
            m_state.sync();
            return m_seen.insert(m_state.hash()).second;
        }
        go_to(c.node);
        EditJournal journal = m_state.edit(c.rule, c.where);
        if (!m_seen.insert(m_state.hash()).second) {
            m_state.revert(std::move(journal));
            return false;
        }
        push(std::move(journal));
        m_tree.push_back({c.node, m_tree[c.node].depth + 1, c.rule, c.where});
        m_at = static_cast<std::uint32_t>(m_tree.size() - 1);
        m_state.sync();
        return true;
    }
    /// A copy of `c`'s graph (made without recording it as seen or expanded).
    [[nodiscard]] Graph graph_of(const Candidate& c) {
        if (c.node == no_tree_node) {
            go_to(0);
            return m_state.graph();
        }
        go_to(c.node);
        EditJournal journal = m_state.edit(c.rule, c.where);
        Graph g = m_state.graph();
        m_state.revert(std::move(journal));
        return g;
    }
    /// The rule ids applied from the input to `c`'s graph, in order.
    [[nodiscard]] std::vector<std::uint32_t> path_of(const Candidate& c) const {
        std::vector<std::uint32_t> path;
        if (c.node == no_tree_node) return path;
        path.push_back(c.rule);
        for (std::uint32_t n = c.node; n != 0; n = m_tree[n].parent) path.push_back(m_tree[n].rule);
        std::reverse(path.begin(), path.end());
        return path;
    }
    /// Bytes the search holds beyond the working graph: the tree, the journals of the
    /// path walked, the hashes seen and the price cache.
    [[nodiscard]] std::size_t bytes() const noexcept {
        constexpr std::size_t hash_node_overhead = 24;
        constexpr std::size_t bytes_per_edit = 96;  // a recorded primitive edit, with a removed node's copy
        return m_tree.capacity() * sizeof(TreeNode) + m_journal_edits * bytes_per_edit
               + m_seen.size() * (sizeof(Hash128) + hash_node_overhead) + m_state.cache_bytes();
    }

private:
    void push(EditJournal&& journal) {
        m_journal_edits += journal.size();
        m_journals.push_back(std::move(journal));
    }

    SearchState<Backend> m_state;
    std::vector<TreeNode> m_tree;
    std::vector<EditJournal> m_journals;  // the rewrites from the input to m_at, in order
    std::uint32_t m_at = 0;
    std::size_t m_journal_edits = 0;
    std::unordered_set<Hash128, Hash128Hasher> m_seen;
};

/// The queue of candidates (cheapest first, at most max_queue, the costliest dropped),
/// the best candidate so far, and the keep_best cheapest seen.
class Frontier {
public:
    Frontier(const Candidate& input, const SearchOptions& options) : m_options(options), m_best(input) {
        m_queue.insert(input);
        offer(input);
    }

    [[nodiscard]] bool empty() const noexcept { return m_queue.empty(); }
    [[nodiscard]] const Candidate& best() const noexcept { return m_best; }
    /// The keep_best cheapest candidates seen, cheapest first.
    [[nodiscard]] const std::vector<Candidate>& cheapest() const noexcept { return m_cheapest; }

    /// Takes the cheapest queued candidate out.
    [[nodiscard]] Candidate pop() {
        const Candidate c = *m_queue.begin();
        m_queue.erase(m_queue.begin());
        return c;
    }

    /// Queues the successors of the graph `state` holds (tree node `at`): those below
    /// alpha x the best cost so far, this expansion's cheapest successor counted, and of
    /// those only the max_queue cheapest, which alone can stay queued; inserted in (rule,
    /// location) order.
    template <cost::CostBackend Backend>
    void expand(const SearchState<Backend>& state, std::uint32_t at) {
        m_successors.clear();
        double bound = 0;
        state.for_each_cheapest([&](const PricedAction& a, double cost) {
            if (m_successors.empty()) bound = m_options.alpha * std::min(m_best.cost_ms, cost);
            if (!(cost < bound) || m_successors.size() == m_options.max_queue) return false;
            if (m_queue.size() == m_options.max_queue && !(cost < std::prev(m_queue.end())->cost_ms)) return false;
            m_successors.push_back({cost, 0, at, a.rule, a.where});
            return true;
        });
        std::sort(m_successors.begin(), m_successors.end(), [](const Candidate& a, const Candidate& b) {
            return a.rule != b.rule ? a.rule < b.rule : a.where < b.where;
        });
        const Candidate* cheapest_successor = nullptr;
        for (Candidate& s : m_successors) {
            s.order = ++m_order;
            if (!cheapest_successor || CheaperFirst{}(s, *cheapest_successor)) cheapest_successor = &s;
            offer(s);
            m_queue.insert(s);
            if (m_queue.size() > m_options.max_queue) m_queue.erase(std::prev(m_queue.end()));
        }
        if (cheapest_successor && cheapest_successor->cost_ms < m_best.cost_ms) m_best = *cheapest_successor;
    }

private:
    void offer(const Candidate& c) {
        const std::size_t k = m_options.keep_best;
        if (k == 0 || (m_cheapest.size() == k && !CheaperFirst{}(c, m_cheapest.back()))) return;
        m_cheapest.insert(std::upper_bound(m_cheapest.begin(), m_cheapest.end(), c, CheaperFirst{}), c);
        if (m_cheapest.size() > k) m_cheapest.pop_back();
    }

    const SearchOptions& m_options;
    std::set<Candidate, CheaperFirst> m_queue;
    std::uint64_t m_order = 0;
    Candidate m_best;
    std::vector<Candidate> m_cheapest;
    std::vector<Candidate> m_successors;  // scratch
};

/// The kept candidates' graphs other than `best` and each other (by canonical form),
/// priced by `model`, cheapest first.
template <cost::CostBackend Backend>
[[nodiscard]] std::vector<SearchResult::RunnerUp> runners_up(TreeWalker<Backend>& walker, const std::vector<Candidate>& kept,
                                                             const Graph& best, const rewrite::RuleSet& rules,
                                                             cost::CostModel<Backend>& model) {
    SeenGraphs distinct;
    distinct.insert(best);
    std::vector<SearchResult::RunnerUp> out;
    for (const Candidate& c : kept) {
        Graph g = walker.graph_of(c);
        if (!distinct.insert(g)) continue;
        const double ms = model.graph_cost(g);
        const std::vector<std::uint32_t> path = walker.path_of(c);
        out.push_back({std::move(g), ms, named_counts(rules, path), named_sequence(rules, path)});
    }
    return out;
}

}  // namespace detail

/// Backtracking search from `graph` with `rules`, priced by `model`.
template <cost::CostBackend Backend>
[[nodiscard]] SearchResult backtracking(const Graph& graph, std::shared_ptr<const rewrite::RuleSet> rules,
                                        cost::CostModel<Backend>& model, const SearchOptions& options = {}) {
    const StopRules stop(options);
    SearchResult result;
    detail::TreeWalker<Backend> walker(graph, rules, model);
    result.initial_cost_ms = walker.state().cost();
    detail::Frontier frontier({result.initial_cost_ms, 0, detail::no_tree_node, 0, {}}, options);
    result.reason = StopReason::converged;
    while (!frontier.empty()) {
        if (const auto why = stop.check(result.expansions)) {
            result.reason = *why;
            break;
        }
        if (!walker.make(frontier.pop())) continue;
        ++result.expansions;
        result.peak_search_bytes = std::max(result.peak_search_bytes, walker.bytes());
        if (const auto why = stop.check_memory(walker.bytes())) {
            result.reason = *why;
            break;
        }
        const double best_before = frontier.best().cost_ms;
        frontier.expand(walker.state(), walker.at());
        if (frontier.best().cost_ms < best_before) result.best_found_at = result.expansions;
        if (options.on_progress)
            options.on_progress({result.expansions, options.budget, result.initial_cost_ms, frontier.best().cost_ms});
    }
    result.graph = walker.graph_of(frontier.best());
    result.best_cost_ms = model.graph_cost(result.graph);
    const std::vector<std::uint32_t> path = walker.path_of(frontier.best());
    result.rewrites = named_counts(*rules, path);
    result.sequence = named_sequence(*rules, path);
    result.runners_up = detail::runners_up(walker, frontier.cheapest(), result.graph, *rules, model);
    result.peak_search_bytes = std::max(result.peak_search_bytes, walker.bytes());
    result.seconds = stop.seconds();
    return result;
}

}  // namespace rlflow::search
