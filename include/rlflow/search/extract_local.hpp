#pragma once
/// \file
/// Extraction's local search: a choice improved under the DAG cost, where a subgraph
/// shared by several classes counts once.
///
/// Greedy prices a class by its tree cost, so a shared subgraph counts once per use. It
/// therefore never chooses, say, a merged convolution whose two Split outputs stand in
/// two classes: for either class alone the merge costs more than the convolution it
/// replaces; only for both together is it cheaper. This pass starts from an acyclic
/// choice and keeps moves that lower the DAG cost (each class the roots reach, its
/// chosen e-node's price once: the ILP's objective). A move:
/// 1. switches one reached class c to another of its e-nodes n (every child class of n
///    has a choice); where that closes a cycle, another class on it takes the e-node
///    that leaves the choice acyclic at least cost;
/// 2. then, for each class the switch newly reaches, offers each of its parent e-nodes to
///    the parent's class, where that class is reached and the offer lowers the cost: the
///    second Split output takes the merged convolution that the first one paid for.
/// 3. at depth 2, the one class that step 1 newly reached whose own move (steps 1 and 2)
///    then lowers the cost most takes it: a nested merge (convolutions a, b, c merged as
///    (a, (b, c)) rather than ((a, b), c)) needs two switches before it pays.
/// A move is kept when the whole choice stays acyclic and is cheaper than before. Passes
/// over the reached classes run at depth 1 until one keeps nothing, then at depth 2, and
/// back at depth 1 after a pass that kept a move (variable neighbourhood descent), until
/// a depth-2 pass keeps nothing or the limits end them. Classes and e-nodes are visited
/// in id order, and the main limit counts DAG-cost evaluations, so the result is
/// deterministic; the seconds limit, a safety, is not.
///
/// extraction-gym's greedy-dag extractor counts sharing inside one class's subtree; step
/// 2 also sees sharing between classes that no common consumer joins yet, which is what
/// merges of sibling operators (TASO's and Tensat's multi-output rules) need.

#include <rlflow/search/egraph_convert.hpp>
#include <rlflow/search/extract.hpp>

#include <chrono>
#include <cmath>
#include <limits>
#include <vector>

namespace rlflow::search {

/// Limits of the local search.
struct LocalSearchOptions {
    /// DAG-cost evaluations, at most (each walks the choice once).
    std::size_t max_evaluations = 200'000;
    /// Wall-clock seconds, at most (0: no pass runs).
    double seconds = 60;
    /// The deepest moves (1 or 2; see the file comment).
    std::size_t depth = 2;
};

/// What the local search gave.
struct LocalSearchOutcome {
    /// class id -> e-node: the start with the kept moves.
    std::vector<ENodeId> choice;
    /// DAG costs (ms) of the start and of `choice`.
    double start_cost_ms = 0;
    double cost_ms = 0;
    std::size_t moves = 0;
    std::size_t passes = 0;
    std::size_t evaluations = 0;
    double seconds = 0;
};

namespace detail {

/// Whether every child class of e-node `e` has a choice, so that choosing `e` keeps the
/// choice complete.
[[nodiscard]] inline bool children_chosen(const EGraph& eg, const std::vector<ENodeId>& choice, ENodeId e) {
    for (const ClassId k : eg.node(e).children)
        if (k != no_class && choice[eg.find(k)] == no_choice) return false;
    return true;
}

/// A cost lower than `than` by more than rounding (sums taken in another order differ in
/// their last bits).
[[nodiscard]] inline bool clearly_lower(double cost, double than) {
    constexpr double relative_rounding = 1e-9;
    return cost < than - relative_rounding * std::abs(than);
}

/// The moves of the file comment on one e-graph, counting DAG-cost evaluations.
class LocalMoves {
public:
    LocalMoves(const EGraph& eg, const std::vector<ClassId>& roots, const std::vector<double>& cost)
        : m_eg(eg), m_roots(roots), m_cost(cost) {}

    /// DAG-cost evaluations so far.
    [[nodiscard]] std::size_t evaluations() const noexcept { return m_evaluations; }

    /// The DAG cost of `choice` (see the file comment), or infinity when its chosen
    /// e-nodes form a cycle (whose classes then go to `cycle`, when given); `reached`
    /// (when given) gets 1 for each class it reaches.
    [[nodiscard]] double dag_cost(const std::vector<ENodeId>& choice, std::vector<char>* reached = nullptr,
                                  std::vector<ClassId>* cycle = nullptr) {
        ++m_evaluations;
        ChoiceWalk walk = walk_choice(m_eg, m_roots, choice);
        if (!walk.cycle.empty()) {
            if (cycle) *cycle = std::move(walk.cycle);
            return std::numeric_limits<double>::infinity();
        }
        const double total = walk_cost(walk, choice, m_cost);
        if (reached) {
            reached->assign(m_eg.class_bound(), 0);
            for (const ClassId c : walk.order) (*reached)[c] = 1;
        }
        return total;
    }

    /// A move (see the file comment) on `trial`, reached classes `reached`: class c takes
    /// e-node n (step 1), then adoption (step 2); at `depth` 2, step 3. `before` marks the
    /// classes reached before the whole move. Returns the trial's DAG cost (infinity: it
    /// has a cycle).
    double move(const std::vector<char>& before, std::vector<ENodeId>& trial, std::vector<char>& reached, ClassId c,
                ENodeId n, std::size_t depth) {
        trial[c] = n;
        std::vector<ClassId> cycle;
        double trial_cost = dag_cost(trial, &reached, &cycle);
        if (trial_cost == std::numeric_limits<double>::infinity()) trial_cost = repair_cycle(trial, reached, c, cycle);
        if (trial_cost == std::numeric_limits<double>::infinity()) return trial_cost;
        adopt_shared(before, c, trial, trial_cost, reached);
        if (depth > 1) trial_cost = best_sub_move(before, trial, reached, trial_cost, depth - 1);
        return trial_cost;
    }

private:
    /// Step 1 made a cycle through class `fixed` (its classes in `cycle`): a class the
    /// switch newly reaches may still choose, as greedy did, an e-node that reads the
    /// switched class (a Concat of two convolutions, where the switch takes their merge).
    /// Tries every other e-node of every other class on the cycle and keeps the cheapest
    /// that leaves `trial` acyclic. Returns the trial's cost (infinity: none did).
    double repair_cycle(std::vector<ENodeId>& trial, std::vector<char>& reached, ClassId fixed, const std::vector<ClassId>& cycle) {
        double best = std::numeric_limits<double>::infinity();
        ClassId best_class = no_class;
        ENodeId best_node = no_choice;
        for (const ClassId k : cycle) {
            if (k == fixed) continue;
            const ENodeId kept = trial[k];
            for (const ENodeId m : m_eg.members(k)) {
                if (!m_eg.alive(m) || m == kept || !children_chosen(m_eg, trial, m)) continue;
                trial[k] = m;
                if (const double c = dag_cost(trial); c < best) {
                    best = c;
                    best_class = k;
                    best_node = m;
                }
            }
            trial[k] = kept;
        }
        if (best_class == no_class) return best;
        trial[best_class] = best_node;
        return dag_cost(trial, &reached);
    }

    /// Step 2 on `trial` (cost `trial_cost`, reached classes `reached`): every class
    /// reached since `before` offers each of its parent e-nodes to the parent's class.
    /// Class `fixed`, which step 1 switched, is offered nothing (an offer that undoes the
    /// switch would always pay). Offers repeat until none is taken, since one taken offer
    /// can make another pay.
    void adopt_shared(const std::vector<char>& before, ClassId fixed, std::vector<ENodeId>& trial, double& trial_cost,
                      std::vector<char>& reached) {
        for (bool took = true; took;) {
            took = false;
            std::vector<ClassId> fresh;
            for (ClassId k = 0; k < reached.size(); ++k)
                if (reached[k] && !before[k]) fresh.push_back(k);
            for (const ClassId k : fresh) {
                for (const ENodeId p : m_eg.parents(k)) {
                    if (!m_eg.alive(p)) continue;
                    const ClassId d = m_eg.class_of(p);
                    if (d == fixed || !reached[d] || trial[d] == p || !children_chosen(m_eg, trial, p)) continue;
                    const ENodeId kept = trial[d];
                    trial[d] = p;
                    std::vector<char> now;
                    if (const double c = dag_cost(trial, &now); clearly_lower(c, trial_cost)) {
                        trial_cost = c;
                        reached = std::move(now);
                        took = true;
                    } else {
                        trial[d] = kept;
                    }
                }
            }
        }
    }

    /// Step 3: of the moves (at `depth`) of the classes reached since `before`, each tried
    /// from the same trial, the one that lowers the trial's cost most is taken (taking the
    /// first that pays can end where the move started). Returns the trial's cost.
    double best_sub_move(const std::vector<char>& before, std::vector<ENodeId>& trial, std::vector<char>& reached,
                         double trial_cost, std::size_t depth) {
        const std::vector<char> after = reached;
        std::vector<ENodeId> best;
        std::vector<char> best_reached;
        double best_cost = trial_cost;
        for (ClassId k = 0; k < after.size(); ++k) {
            if (!after[k] || before[k]) continue;
            for (const ENodeId m : m_eg.members(k)) {
                if (!m_eg.alive(m) || m == trial[k] || !children_chosen(m_eg, trial, m)) continue;
                std::vector<ENodeId> sub = trial;
                std::vector<char> sub_reached;
                const double sub_cost = move(before, sub, sub_reached, k, m, depth);
                if (!clearly_lower(sub_cost, best_cost)) continue;
                best = std::move(sub);
                best_cost = sub_cost;
                best_reached = std::move(sub_reached);
            }
        }
        if (best.empty()) return trial_cost;
        trial = std::move(best);
        reached = std::move(best_reached);
        return best_cost;
    }

    const EGraph& m_eg;
    const std::vector<ClassId>& m_roots;
    const std::vector<double>& m_cost;
    std::size_t m_evaluations = 0;
};

}  // namespace detail

/// Improves `start` (acyclic, every reached class chosen) under the DAG cost from `roots`
/// with `cost` per e-node (see the file comment).
[[nodiscard]] inline LocalSearchOutcome improve_choice(const EGraph& eg, const std::vector<ClassId>& roots,
                                                       const std::vector<double>& cost, const std::vector<ENodeId>& start,
                                                       const LocalSearchOptions& options = {}) {
    using Clock = std::chrono::steady_clock;
    const auto begin = Clock::now();
    detail::LocalMoves moves(eg, roots, cost);
    const auto spent = [&] {
        return moves.evaluations() >= options.max_evaluations ||
               std::chrono::duration<double>(Clock::now() - begin).count() >= options.seconds;
    };
    LocalSearchOutcome out;
    out.choice = start;
    std::vector<char> reached;
    out.start_cost_ms = out.cost_ms = moves.dag_cost(out.choice, &reached);
    RLFLOW_EXPECTS(out.cost_ms < std::numeric_limits<double>::infinity(), precondition_error,
                   "improve_choice: the start choice has a cycle");
    for (std::size_t depth = 1; depth <= options.depth && !spent();) {
        ++out.passes;
        const std::size_t kept = out.moves;
        for (ClassId c = 0; c < eg.class_bound() && !spent(); ++c) {
            for (const ENodeId n : eg.members(c)) {
                if (!reached[c] || spent()) break;  // a kept move may no longer reach c
                if (!eg.alive(n) || n == out.choice[c] || !detail::children_chosen(eg, out.choice, n)) continue;
                std::vector<ENodeId> trial = out.choice;
                std::vector<char> trial_reached;
                const double trial_cost = moves.move(reached, trial, trial_reached, c, n, depth);
                if (!detail::clearly_lower(trial_cost, out.cost_ms)) continue;
                out.choice = std::move(trial);
                out.cost_ms = trial_cost;
                reached = std::move(trial_reached);
                ++out.moves;
            }
        }
        depth = out.moves > kept ? 1 : depth + 1;
    }
    out.evaluations = moves.evaluations();
    out.seconds = std::chrono::duration<double>(Clock::now() - begin).count();
    return out;
}

}  // namespace rlflow::search
