#pragma once
/// \file
/// Extraction as an integer linear program (Tensat's formulation), solved by CBC.
///
/// A binary x_e per e-node of the classes the roots reach, and an order value t_c in
/// [0, M] per class (M classes):
/// - every root class has a chosen e-node: sum of x_e over it >= 1;
/// - a chosen e-node's child classes each have one: sum of x_f over child class k - x_e >= 0;
/// - a chosen e-node sits above its children: t_class(e) - t_k - M x_e >= 1 - M, so the
///   choices form no cycle (an e-node that consumes its own class is left out). Only
///   edges inside a strongly connected component of the class graph can lie on a cycle,
///   and each big-M row weakens the LP relaxation, so these rows are added lazily, for
///   the components a solution's cycle runs in (ExtractionIlp);
/// - minimise the sum of the chosen e-nodes' prices: the graph's cost with every shared
///   subgraph counted once, where greedy counts it once per use.
/// The solver is given a start choice (eqsat's: the local search's, which satisfies all
/// of this) as a complete start, every variable set, and its cost as a cutoff. The LP
/// relaxation of these rows is weak, so eqsat keeps the cheapest of its extractions. With
/// no solution, the start is returned and the status says so. Large e-graphs are solved
/// by windows (ilp_choice): CBC's time grows faster than the model.
///
/// Built only where CBC is found (Debian: coinor-libcbc-dev, which tools/setup.sh installs);
/// elsewhere `ilp_available` is false and ilp_choice throws.

#include <rlflow/search/egraph_convert.hpp>
#include <rlflow/search/extract.hpp>

#include <algorithm>
#include <chrono>
#include <limits>
#include <memory>
#include <optional>
#include <set>
#include <span>
#include <string>
#include <unordered_map>
#include <vector>

#if defined(RLFLOW_HAS_CBC)
#include <Cbc_C_Interface.h>
#endif

namespace rlflow::search {

#if defined(RLFLOW_HAS_CBC)
inline constexpr bool ilp_available = true;
#else
inline constexpr bool ilp_available = false;
#endif

/// How the ILP keeps its choice acyclic.
enum class IlpCycles {
    /// Order rows (lazily, per strongly connected component): exact, but big-M rows make
    /// the LP relaxation weak.
    order,
    /// Cycle filtering before extraction, after Tensat's: e-nodes that close a cycle of
    /// the e-graph are left out, newest first, never the start's choice
    /// (ExtractionIlp::cycle_closers). What is left is acyclic, so no order rows are
    /// needed; the choice may miss a graph that needed a filtered e-node.
    filter
};

/// When and how ilp_choice solves by windows.
struct IlpWindows {
    /// Above this many classes (those the roots reach; 0: never), by windows.
    std::size_t above = 0;
    /// Classes per window.
    std::size_t classes = 2000;
};

/// What the ILP gave.
struct IlpOutcome {
    /// class id -> e-node (the start's where the solver found nothing).
    std::vector<ENodeId> choice;
    /// optimal, time_limit (a solution, not proven optimal), no_solution, infeasible, or
    /// cycles_broken (its last solution had cycles, broken with the start's choices).
    std::string status;
    /// The solver's objective and lower bound, ms, and their relative gap.
    double objective = 0;
    double bound = 0;
    double gap = 0;
    std::size_t variables = 0;
    std::size_t constraints = 0;
    /// E-nodes left out by IlpCycles::filter.
    std::size_t filtered = 0;
    /// Models solved (order rows are added lazily, see ExtractionIlp).
    int rounds = 0;
    /// Windows solved (0: one ILP over everything; see ilp_choice).
    std::size_t windows = 0;
    double seconds = 0;
};

namespace detail {

/// The classes `roots` reach through any e-node; with `inside`, only through classes it
/// marks (the others are left out, as the fixed surroundings of a window).
[[nodiscard]] inline ClassIndex reached_classes(const EGraph& eg, const std::vector<ClassId>& roots,
                                                const std::vector<char>* inside = nullptr) {
    ClassIndex r;
    r.index.assign(eg.class_bound(), -1);
    std::vector<ClassId> stack;
    for (const ClassId c : roots) stack.push_back(eg.find(c));
    while (!stack.empty()) {
        const ClassId c = stack.back();
        stack.pop_back();
        if (r.index[c] >= 0) continue;
        r.index[c] = static_cast<int>(r.classes.size());
        r.classes.push_back(c);
        for (const ENodeId e : eg.members(c))
            for (const ClassId k : eg.node(e).children)
                if (k != no_class && r.index[eg.find(k)] < 0 && (!inside || (*inside)[eg.find(k)])) stack.push_back(eg.find(k));
    }
    return r;
}

/// The classes `roots` reach through any e-node, children first (a depth-first post
/// order; on a cycle, in the order the search closes it). Chunks of it are the windows of
/// ilp_choice_by_windows: on a graph built layer by layer, a chunk is a band of layers.
[[nodiscard]] inline std::vector<ClassId> class_post_order(const EGraph& eg, const std::vector<ClassId>& roots) {
    std::vector<char> seen(eg.class_bound(), 0);
    std::vector<ClassId> order;
    std::vector<std::pair<ClassId, std::size_t>> stack;  // (class, next child among its e-nodes' children)
    std::vector<std::vector<ClassId>> kids_of(eg.class_bound());
    for (const ClassId r : roots) {
        if (seen[eg.find(r)]) continue;
        seen[eg.find(r)] = 1;
        stack.emplace_back(eg.find(r), 0);
        while (!stack.empty()) {
            auto& [c, next] = stack.back();
            if (next == 0)
                for (const ENodeId e : eg.members(c))
                    for (const ClassId k : child_classes(eg, e)) kids_of[c].push_back(k);
            if (next < kids_of[c].size()) {
                const ClassId k = kids_of[c][next++];
                if (!seen[k]) {
                    seen[k] = 1;
                    stack.emplace_back(k, 0);
                }
                continue;
            }
            std::vector<ClassId>().swap(kids_of[c]);
            order.push_back(c);
            stack.pop_back();
        }
    }
    return order;
}

/// `choice` with its cycles broken: while the chosen e-nodes form a cycle, the first class
/// on it whose choice differs from `fallback`'s takes `fallback`'s. Each turn gives one
/// more class `fallback`'s choice, so with an acyclic `fallback` this ends, at worst in
/// `fallback` itself.
[[nodiscard]] inline std::vector<ENodeId> break_cycles(const EGraph& eg, const std::vector<ClassId>& roots, std::vector<ENodeId> choice,
                                                       const std::vector<ENodeId>& fallback) {
    for (ChoiceWalk walk = walk_choice(eg, roots, choice); !walk.cycle.empty(); walk = walk_choice(eg, roots, choice)) {
        const auto differs = std::find_if(walk.cycle.begin(), walk.cycle.end(), [&](ClassId c) { return choice[c] != fallback[c]; });
        RLFLOW_EXPECTS(differs != walk.cycle.end(), graph_error, "extraction: the fallback choice has a cycle");
        choice[*differs] = fallback[*differs];
    }
    return choice;
}

}  // namespace detail

#if defined(RLFLOW_HAS_CBC)

namespace detail {

/// Deletes a CBC model.
struct CbcModelDeleter {
    void operator()(Cbc_Model* m) const { Cbc_deleteModel(m); }
};
using CbcModel = std::unique_ptr<Cbc_Model, CbcModelDeleter>;

/// The ILP of the file comment. Order rows are added lazily: a first model has none; if
/// its solution has a cycle, the strongly connected components that the solution's
/// edges run inside get their order rows and the model is solved again (at most
/// `max_rounds` times, the last with every component's rows).
class ExtractionIlp {
public:
    /// Added to every e-node's price, in ms: a tiny price on free e-nodes (sources,
    /// outputs of tuples, weight-only arithmetic) keeps the LP from choosing them
    /// fractionally where nothing needs them, which otherwise stops CBC from completing
    /// the start it is given.
    static constexpr double free_node_price = 1e-6;
    static constexpr int max_rounds = 4;

    /// The model over the classes `roots` reach; with IlpCycles::filter, without the
    /// e-nodes on cycles that `start` does not choose. With `inside`, only the classes it
    /// marks are modelled (a window): a child class outside is taken as `start` chose it,
    /// at no price, and an e-node with an unchosen child outside is left out.
    ExtractionIlp(const EGraph& eg, const std::vector<ClassId>& roots, const std::vector<double>& cost,
                  const std::vector<ENodeId>& start, IlpCycles cycles, const std::vector<char>* inside = nullptr)
        : m_eg(eg), m_roots(roots), m_cycles(cycles), m_reach(reached_classes(eg, roots, inside)),
          m_component(class_components(eg, m_reach)) {
        const std::set<ENodeId> dropped = cycles == IlpCycles::filter ? cycle_closers(start) : std::set<ENodeId>{};
        m_filtered = dropped.size();
        for (const ClassId c : m_reach.classes)
            for (const ENodeId e : eg.members(c)) {
                const std::vector<ClassId> kids = child_classes(eg, e);
                if (std::find(kids.begin(), kids.end(), c) != kids.end()) continue;  // consumes its own class
                if (dropped.contains(e)) continue;
                if (std::any_of(kids.begin(), kids.end(), [&](ClassId k) { return m_reach.index[k] < 0 && start[k] == no_choice; }))
                    continue;
                m_column_of.emplace(e, static_cast<int>(m_nodes.size()));
                m_nodes.push_back(e);
                m_cost.push_back(cost[e] + free_node_price);
            }
    }

    /// Solves from `start` for at most `seconds` in all.
    [[nodiscard]] IlpOutcome solve(const std::vector<ENodeId>& start, double seconds);

private:
    /// IlpCycles::filter's e-nodes to leave out. The candidates are the e-nodes with a
    /// child in their own strongly connected component that `start` does not choose.
    /// Newest first, each is left out if it still closes a cycle through the e-nodes kept
    /// so far. One pass leaves no cycle: a cycle left at the end was there when each of
    /// its e-nodes was looked at, and one of them is not the start's (the start is
    /// acyclic). Newest first, because a rewrite that closes a cycle adds the newer
    /// e-node. On inception-v3, Concat(conv(x, w1), conv(x, w2)) = conv(x, Concat(w1, w2))
    /// makes a Concat that closes a cycle through an earlier merge's Split; leaving out
    /// every candidate also left out the merges.
    [[nodiscard]] std::set<ENodeId> cycle_closers(const std::vector<ENodeId>& start) const {
        std::vector<ENodeId> candidates;
        for (const ClassId c : m_reach.classes)
            for (const ENodeId e : m_eg.members(c)) {
                const std::vector<ClassId> kids = child_classes(m_eg, e);
                if (e != start[c] && std::any_of(kids.begin(), kids.end(), [&](ClassId k) { return component_of(k) == component_of(c); }))
                    candidates.push_back(e);
            }
        std::sort(candidates.rbegin(), candidates.rend());
        std::set<ENodeId> dropped;
        for (const ENodeId e : candidates)
            if (closes_cycle(e, dropped)) dropped.insert(e);
        return dropped;
    }

    /// Whether `e`'s class is reachable from its children through e-nodes not in
    /// `dropped`, inside its strongly connected component.
    [[nodiscard]] bool closes_cycle(ENodeId e, const std::set<ENodeId>& dropped) const {
        const ClassId own = m_eg.class_of(e);
        const int component = component_of(own);
        std::vector<ClassId> stack = child_classes(m_eg, e);
        std::set<ClassId> seen;
        while (!stack.empty()) {
            const ClassId k = stack.back();
            stack.pop_back();
            if (k == own) return true;
            if (component_of(k) != component || !seen.insert(k).second) continue;
            for (const ENodeId f : m_eg.members(k))
                if (!dropped.contains(f))
                    for (const ClassId j : child_classes(m_eg, f)) stack.push_back(j);
        }
        return false;
    }

    [[nodiscard]] int t_column(ClassId c) const { return static_cast<int>(m_nodes.size()) + m_reach.index[c]; }
    /// -1 for a class outside the model (a window's surroundings).
    [[nodiscard]] int component_of(ClassId c) const {
        return m_reach.index[c] < 0 ? -1 : m_component[static_cast<std::size_t>(m_reach.index[c])];
    }

    /// The model's rows, gathered row by row and loaded at once: CBC's Cbc_addRow grows
    /// its matrix on every row, which cost as much as solving a window's model.
    struct Rows {
        std::vector<int> row;  // per entry
        std::vector<int> column;
        std::vector<double> coef;
        std::vector<double> lower;  // per row; every row is "at least"

        void add(std::span<const int> columns, std::span<const double> coefs, double at_least) {
            for (std::size_t i = 0; i < columns.size(); ++i) {
                row.push_back(static_cast<int>(lower.size()));
                column.push_back(columns[i]);
                coef.push_back(coefs[i]);
            }
            lower.push_back(at_least);
        }
    };

    /// The model with order rows inside the components marked in `ordered`.
    [[nodiscard]] CbcModel build(const std::vector<char>& ordered) {
        Rows rows;
        const double m = static_cast<double>(m_reach.classes.size());
        for (const ClassId r : m_roots) add_choice_row(rows, m_eg.find(r), -1);
        for (std::size_t i = 0; i < m_nodes.size(); ++i) {
            const ClassId own = m_eg.class_of(m_nodes[i]);
            for (const ClassId k : child_classes(m_eg, m_nodes[i])) {
                if (m_reach.index[k] < 0) continue;  // outside the window: start's choice
                add_choice_row(rows, k, static_cast<int>(i));
                if (component_of(own) != component_of(k) || !ordered[static_cast<std::size_t>(component_of(own))]) continue;
                const int cols[] = {t_column(own), t_column(k), static_cast<int>(i)};
                const double coefs[] = {1.0, -1.0, -m};
                rows.add(cols, coefs, 1.0 - m);
            }
        }
        m_rows = rows.lower.size();
        // Column-major, as Cbc_loadProblem takes it.
        const std::size_t columns = m_nodes.size() + m_reach.classes.size();
        std::vector<CoinBigIndex> starts(columns + 1, 0);
        for (const int c : rows.column) ++starts[static_cast<std::size_t>(c) + 1];
        for (std::size_t c = 0; c < columns; ++c) starts[c + 1] += starts[c];
        std::vector<int> index(rows.row.size());
        std::vector<double> value(rows.row.size());
        std::vector<CoinBigIndex> fill(starts.begin(), starts.end() - 1);
        for (std::size_t e = 0; e < rows.row.size(); ++e) {
            const auto at = static_cast<std::size_t>(fill[static_cast<std::size_t>(rows.column[e])]++);
            index[at] = rows.row[e];
            value[at] = rows.coef[e];
        }
        std::vector<double> lower(columns, 0.0), upper(columns, 1.0), objective(columns, 0.0);
        std::copy(m_cost.begin(), m_cost.end(), objective.begin());
        std::fill(upper.begin() + static_cast<std::ptrdiff_t>(m_nodes.size()), upper.end(), m);
        const std::vector<double> row_upper(m_rows, std::numeric_limits<double>::max());
        CbcModel model(Cbc_newModel());
        Cbc_loadProblem(model.get(), static_cast<int>(columns), static_cast<int>(m_rows), starts.data(), index.data(), value.data(),
                        lower.data(), upper.data(), objective.data(), rows.lower.data(), row_upper.data());
        // Columns are named: CBC's solver maps a MIP start onto its preprocessed model by
        // column name. With empty names it used none of greedy's start ("values outside
        // bounds"), and on inception-v3's e-graph found no solution in 60 s.
        for (std::size_t i = 0; i < columns; ++i) {
            const bool x = i < m_nodes.size();
            Cbc_setColName(model.get(), static_cast<int>(i), ((x ? "x" : "t") + std::to_string(x ? i : i - m_nodes.size())).c_str());
            if (x) Cbc_setInteger(model.get(), static_cast<int>(i));
        }
        // Rows are named too: Clp's presolve copies the names of rows and columns alike
        // when there are any, and crashed on named columns beside unnamed rows.
        for (std::size_t r = 0; r < m_rows; ++r) Cbc_setRowName(model.get(), static_cast<int>(r), ("r" + std::to_string(r)).c_str());
        return model;
    }

    /// sum of x over class c (minus x of column `parent`, if any) >= (parent ? 0 : 1).
    void add_choice_row(Rows& rows, ClassId c, int parent) const {
        std::vector<int> cols;
        std::vector<double> coefs;
        for (const ENodeId f : m_eg.members(c))
            if (const auto it = m_column_of.find(f); it != m_column_of.end()) {
                cols.push_back(it->second);
                coefs.push_back(1.0);
            }
        if (parent >= 0) {
            cols.push_back(parent);
            coefs.push_back(-1.0);
        }
        rows.add(cols, coefs, parent >= 0 ? 0.0 : 1.0);
    }

    /// Marks in `ordered` the components a chosen e-node's edge runs inside; whether any was new.
    [[nodiscard]] bool order_used_components(const std::vector<ENodeId>& choice, std::vector<char>& ordered) const {
        bool added = false;
        for (const ClassId c : m_reach.classes) {
            if (choice[c] == no_choice) continue;
            for (const ClassId k : child_classes(m_eg, choice[c])) {
                const int comp = component_of(c);
                if (comp != component_of(k) || ordered[static_cast<std::size_t>(comp)]) continue;
                ordered[static_cast<std::size_t>(comp)] = 1;
                added = true;
            }
        }
        return added;
    }

    /// Solves `model` from `start` for `seconds`; fills `out` and returns the solution's choice
    /// (nullopt when there is none).
    [[nodiscard]] std::optional<std::vector<ENodeId>> run(Cbc_Model* model, const std::vector<ENodeId>& start, double seconds,
                                                          IlpOutcome& out) const;

    const EGraph& m_eg;
    std::vector<ClassId> m_roots;
    IlpCycles m_cycles;
    ClassIndex m_reach;
    std::vector<int> m_component;
    std::vector<ENodeId> m_nodes;  // column -> e-node
    std::vector<double> m_cost;    // column -> price
    std::unordered_map<ENodeId, int> m_column_of;
    std::size_t m_rows = 0;
    std::size_t m_filtered = 0;
};

inline std::optional<std::vector<ENodeId>> ExtractionIlp::run(Cbc_Model* model, const std::vector<ENodeId>& start, double seconds,
                                                              IlpOutcome& out) const {
    // The start as a complete MIP start: every binary (1 for the e-nodes it chose,
    // 0 for the rest) and every order value (a chosen class's position in the choice's
    // post order, so each sits above its children; 0 elsewhere), so that CBC need not
    // complete it. Nothing costlier is worth exploring.
    std::vector<double> values(m_nodes.size() + m_reach.classes.size(), 0.0);
    double start_cost = 0;
    double position = 0;
    for (const ClassId c : post_order(m_eg, m_roots, start)) {
        if (m_reach.index[c] < 0) continue;
        values[static_cast<std::size_t>(t_column(c))] = position++;
        if (const auto it = m_column_of.find(start[c]); it != m_column_of.end()) {
            values[static_cast<std::size_t>(it->second)] = 1.0;
            start_cost += m_cost[static_cast<std::size_t>(it->second)];
        }
    }
    std::vector<int> columns(values.size());
    for (std::size_t i = 0; i < columns.size(); ++i) columns[i] = static_cast<int>(i);
    Cbc_setMIPStartI(model, static_cast<int>(columns.size()), columns.data(), values.data());
    constexpr double cutoff_slack = 1e-3;
    Cbc_setCutoff(model, start_cost * (1 + cutoff_slack) + 1e-9);
    Cbc_setLogLevel(model, 0);
    // CBC 2.10 (Debian 12) crashes in CglPreProcess::postProcess when the time limit ends
    // a preprocessed search at an unlucky moment (inception-v3's e-graph with a 5 s limit,
    // every time); without preprocessing it does not. The ILP benchmarks run 2-3x slower
    // without it (search_bench), which a crash of the whole program outweighs.
    Cbc_setParameter(model, "preprocess", "off");
    Cbc_setMaximumSeconds(model, std::max(seconds, 1.0));
    Cbc_solve(model);
    const double* x = Cbc_bestSolution(model);
    out.variables = m_nodes.size() + m_reach.classes.size();
    out.constraints = m_rows;
    if (Cbc_isProvenInfeasible(model)) out.status = "infeasible";
    else if (!x) out.status = "no_solution";
    else out.status = Cbc_isProvenOptimal(model) ? "optimal" : "time_limit";
    if (!x) return std::nullopt;
    std::vector<ENodeId> choice = start;
    for (const ClassId c : m_reach.classes) choice[c] = no_choice;
    for (std::size_t i = 0; i < m_nodes.size(); ++i)
        if (x[i] > 0.5 && choice[m_eg.class_of(m_nodes[i])] == no_choice) choice[m_eg.class_of(m_nodes[i])] = m_nodes[i];
    // Classes the solution leaves unchosen keep the start's choice. In a window, a chosen
    // e-node can newly reach a class outside it whose start choice consumes a class
    // inside that nothing in the model required (NasNet-A's saturated e-graph did): the
    // walk of the solution must still find a choice there.
    for (const ClassId c : m_reach.classes)
        if (choice[c] == no_choice) choice[c] = start[c];
    out.objective = Cbc_getObjValue(model);
    out.bound = Cbc_getBestPossibleObjValue(model);
    out.gap = out.objective > 0 ? std::max(0.0, (out.objective - out.bound) / out.objective) : 0.0;
    return choice;
}

inline IlpOutcome ExtractionIlp::solve(const std::vector<ENodeId>& start, double seconds) {
    const auto began = std::chrono::steady_clock::now();
    const auto left = [&] { return seconds - std::chrono::duration<double>(std::chrono::steady_clock::now() - began).count(); };
    IlpOutcome out;
    out.choice = start;
    out.filtered = m_filtered;
    std::vector<char> ordered(m_reach.classes.size(), 0);
    for (int round = 1; round <= max_rounds; ++round) {
        if (round == max_rounds) std::fill(ordered.begin(), ordered.end(), char{1});
        CbcModel model = build(ordered);
        // With order rows, each round gets an equal share of the time left, so that a
        // first round's cyclic solution leaves time to order it; filtered, one round has
        // it all, since its solution cannot have a cycle.
        const double share = m_cycles == IlpCycles::filter ? left() : left() / (max_rounds - round + 1);
        const std::optional<std::vector<ENodeId>> choice = run(model.get(), start, share, out);
        out.rounds = round;
        if (!choice) break;
        if (walk_choice(m_eg, m_roots, *choice).cycle.empty()) {
            out.choice = *choice;
            break;
        }
        // A cycle: order the components the solution runs inside, and solve again; with
        // nothing new to order or no time left, break its cycles with the start's choices.
        if (!order_used_components(*choice, ordered) || left() <= 0 || round == max_rounds) {
            out.choice = break_cycles(m_eg, m_roots, *choice, start);
            out.status = "cycles_broken";
            break;
        }
    }
    out.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - began).count();
    return out;
}

}  // namespace detail

namespace detail {

/// The ILP by windows (see ilp_choice): each window's classes are modelled with the rest
/// fixed at the current choice, and a window's choice is kept when the whole choice stays
/// acyclic and its DAG cost falls.
[[nodiscard]] inline IlpOutcome ilp_by_windows(const EGraph& eg, const std::vector<ClassId>& roots, const std::vector<double>& cost,
                                               const std::vector<ENodeId>& start, double seconds, IlpCycles cycles,
                                               std::size_t window_classes) {
    const auto began = std::chrono::steady_clock::now();
    const auto left = [&] { return seconds - std::chrono::duration<double>(std::chrono::steady_clock::now() - began).count(); };
    const std::vector<ClassId> order = class_post_order(eg, roots);
    // Two passes, the second's windows straddling the first's borders, so that a merge
    // whose classes a border split is modelled whole once.
    std::vector<std::pair<std::size_t, std::size_t>> windows;
    for (std::size_t begin = 0; begin < order.size(); begin += window_classes)
        windows.emplace_back(begin, std::min(order.size(), begin + window_classes));
    for (std::size_t begin = window_classes / 2; begin + window_classes / 2 < order.size(); begin += window_classes)
        windows.emplace_back(begin, std::min(order.size(), begin + window_classes));
    IlpOutcome out;
    out.choice = start;
    out.status = "windows_optimal";
    ChoiceWalk walk = walk_choice(eg, roots, out.choice);
    out.objective = walk_cost(walk, out.choice, cost);
    std::vector<char> inside(eg.class_bound(), 0);
    for (std::size_t w = 0; w < windows.size() && left() > 0; ++w) {
        const auto [begin, end] = windows[w];
        for (std::size_t i = begin; i < end; ++i) inside[order[i]] = 1;
        // The window's roots: its classes the fixed part of the choice consumes, and the roots.
        std::vector<ClassId> window_roots;
        for (const ClassId r : roots)
            if (inside[eg.find(r)]) window_roots.push_back(eg.find(r));
        for (const ClassId c : walk.order)
            if (!inside[c])
                for (const ClassId k : child_classes(eg, out.choice[c]))
                    if (inside[k]) window_roots.push_back(k);
        std::sort(window_roots.begin(), window_roots.end());
        window_roots.erase(std::unique(window_roots.begin(), window_roots.end()), window_roots.end());
        if (!window_roots.empty()) {
            ExtractionIlp ilp(eg, window_roots, cost, out.choice, cycles, &inside);
            IlpOutcome part = ilp.solve(out.choice, left() / static_cast<double>(windows.size() - w));
            ++out.windows;
            out.variables += part.variables;
            out.constraints += part.constraints;
            out.filtered += part.filtered;
            out.rounds += part.rounds;
            out.gap = std::max(out.gap, part.gap);
            if (part.status != "optimal") out.status = "windows_" + part.status;
            // Classes the window's solution left unchosen kept the current choice (run); a
            // cycle through the fixed part is broken with the current choice.
            std::vector<ENodeId> candidate = break_cycles(eg, roots, std::move(part.choice), out.choice);
            ChoiceWalk candidate_walk = walk_choice(eg, roots, candidate);
            if (const double c = walk_cost(candidate_walk, candidate, cost); c < out.objective) {
                out.objective = c;
                out.choice = std::move(candidate);
                walk = std::move(candidate_walk);
            }
        }
        for (std::size_t i = begin; i < end; ++i) inside[order[i]] = 0;
    }
    if (out.windows < windows.size()) out.status = "windows_time_limit";
    out.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - began).count();
    return out;
}

}  // namespace detail

/// The ILP's choice for `roots` (see the file comment), starting from `start` (acyclic),
/// kept acyclic as `cycles` says. Where the roots reach more than `windows.above` classes,
/// it is solved by windows, since CBC's time grows faster than the model (on the scale
/// family: 2.0 s for 10,000 variables, 7.5 s for 34,000): chunks of `windows.classes`
/// classes in a children-first order, then chunks straddling their borders, each
/// modelled with the rest of the choice fixed (its classes free, as the choice already
/// holds them), and kept where the whole choice's DAG cost falls. The time is shared
/// among the windows left. The outcome then sums the windows' variables, constraints
/// and rounds; `objective` is the whole choice's DAG cost, `bound` 0 (no bound on the
/// whole problem), `gap` the largest of a window's, and the status windows_optimal,
/// windows_time_limit or windows_ and the first status of a window that was not optimal.
[[nodiscard]] inline IlpOutcome ilp_choice(const EGraph& eg, const std::vector<ClassId>& roots, const std::vector<double>& cost,
                                           const std::vector<ENodeId>& start, double seconds, IlpCycles cycles = IlpCycles::order,
                                           IlpWindows windows = {}) {
    if (windows.above > 0 && windows.classes > 0 && detail::reached_classes(eg, roots).classes.size() > windows.above)
        return detail::ilp_by_windows(eg, roots, cost, start, seconds, cycles, windows.classes);
    detail::ExtractionIlp ilp(eg, roots, cost, start, cycles);
    return ilp.solve(start, seconds);
}

#else

[[nodiscard]] inline IlpOutcome ilp_choice(const EGraph&, const std::vector<ClassId>&, const std::vector<double>&,
                                           const std::vector<ENodeId>&, double, IlpCycles = IlpCycles::order, IlpWindows = {}) {
    throw precondition_error("ILP extraction needs CBC: install coinor-libcbc-dev (bash tools/setup.sh does) and rebuild");
}

#endif

}  // namespace rlflow::search
