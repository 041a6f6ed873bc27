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
/// no solution, the start is returned and the status says so.
///
/// Built only where CBC is found (Debian: coinor-libcbc-dev, which tools/setup.sh installs);
/// elsewhere `ilp_available` is false and ilp_choice throws.

#include <rlflow/search/egraph_convert.hpp>
#include <rlflow/search/extract.hpp>

#include <algorithm>
#include <chrono>
#include <memory>
#include <optional>
#include <set>
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
    double seconds = 0;
};

namespace detail {

/// The classes `roots` reach through any e-node, and an index for each.
struct IlpClasses {
    std::vector<ClassId> classes;
    std::vector<int> index;  // class id -> position, -1 if unreached
};

[[nodiscard]] inline IlpClasses reached_classes(const EGraph& eg, const std::vector<ClassId>& roots) {
    IlpClasses r;
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
                if (k != no_class && r.index[eg.find(k)] < 0) stack.push_back(eg.find(k));
    }
    return r;
}

/// The strongly connected component of each reached class (by position in `r.classes`),
/// over edges from a class to its e-nodes' children (Tarjan's algorithm, iterative). Only
/// an edge inside a component can be part of a cycle.
[[nodiscard]] inline std::vector<int> class_components(const EGraph& eg, const IlpClasses& r) {
    const std::size_t n = r.classes.size();
    std::vector<std::vector<int>> next(n);
    for (std::size_t i = 0; i < n; ++i)
        for (const ENodeId e : eg.members(r.classes[i]))
            for (const ClassId k : child_classes(eg, e)) next[i].push_back(r.index[k]);
    std::vector<int> component(n, -1), order(n, -1), low(n, 0), stack;
    std::vector<char> on_stack(n, 0);
    int counter = 0, components = 0;
    std::vector<std::pair<int, std::size_t>> frames;  // (class, next edge)
    for (std::size_t root = 0; root < n; ++root) {
        if (order[root] >= 0) continue;
        frames.emplace_back(static_cast<int>(root), 0);
        while (!frames.empty()) {
            auto& [v, edge] = frames.back();
            if (edge == 0 && order[v] < 0) {
                order[v] = low[v] = counter++;
                stack.push_back(v);
                on_stack[v] = 1;
            }
            if (edge < next[v].size()) {
                const int w = next[v][edge++];
                if (order[w] < 0) frames.emplace_back(w, 0);
                else if (on_stack[w]) low[v] = std::min(low[v], order[w]);
                continue;
            }
            if (low[v] == order[v]) {
                for (int w = -1; w != v;) {
                    w = stack.back();
                    stack.pop_back();
                    on_stack[w] = 0;
                    component[w] = components;
                }
                ++components;
            }
            const int done = v;
            frames.pop_back();
            if (!frames.empty()) low[frames.back().first] = std::min(low[frames.back().first], low[done]);
        }
    }
    return component;
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
    /// e-nodes on cycles that `start` does not choose.
    ExtractionIlp(const EGraph& eg, const std::vector<ClassId>& roots, const std::vector<double>& cost,
                  const std::vector<ENodeId>& start, IlpCycles cycles)
        : m_eg(eg), m_roots(roots), m_cycles(cycles), m_reach(reached_classes(eg, roots)), m_component(class_components(eg, m_reach)) {
        const std::set<ENodeId> dropped = cycles == IlpCycles::filter ? cycle_closers(start) : std::set<ENodeId>{};
        m_filtered = dropped.size();
        for (const ClassId c : m_reach.classes)
            for (const ENodeId e : eg.members(c)) {
                const std::vector<ClassId> kids = child_classes(eg, e);
                if (std::find(kids.begin(), kids.end(), c) != kids.end()) continue;  // consumes its own class
                if (dropped.contains(e)) continue;
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
    [[nodiscard]] int component_of(ClassId c) const { return m_component[static_cast<std::size_t>(m_reach.index[c])]; }

    /// The model with order rows inside the components marked in `ordered`.
    [[nodiscard]] CbcModel build(const std::vector<char>& ordered) {
        CbcModel model(Cbc_newModel());
        m_rows = 0;
        // Columns are named: CBC's solver maps a MIP start onto its preprocessed model by
        // column name. With empty names it used none of greedy's start ("values outside
        // bounds"), and on inception-v3's e-graph found no solution in 60 s.
        for (std::size_t i = 0; i < m_cost.size(); ++i)
            Cbc_addCol(model.get(), ("x" + std::to_string(i)).c_str(), 0.0, 1.0, m_cost[i], 1, 0, nullptr, nullptr);
        const double m = static_cast<double>(m_reach.classes.size());
        for (std::size_t c = 0; c < m_reach.classes.size(); ++c)
            Cbc_addCol(model.get(), ("t" + std::to_string(c)).c_str(), 0.0, m, 0.0, 0, 0, nullptr, nullptr);
        for (const ClassId r : m_roots) add_choice_row(model.get(), m_eg.find(r), -1);
        for (std::size_t i = 0; i < m_nodes.size(); ++i) {
            const ClassId own = m_eg.class_of(m_nodes[i]);
            for (const ClassId k : child_classes(m_eg, m_nodes[i])) {
                add_choice_row(model.get(), k, static_cast<int>(i));
                if (component_of(own) != component_of(k) || !ordered[static_cast<std::size_t>(component_of(own))]) continue;
                const int cols[] = {t_column(own), t_column(k), static_cast<int>(i)};
                const double coefs[] = {1.0, -1.0, -m};
                Cbc_addRow(model.get(), "", 3, cols, coefs, 'G', 1.0 - m);
                ++m_rows;
            }
        }
        return model;
    }

    /// sum of x over class c (minus x of column `parent`, if any) >= (parent ? 0 : 1).
    void add_choice_row(Cbc_Model* model, ClassId c, int parent) {
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
        Cbc_addRow(model, "", static_cast<int>(cols.size()), cols.data(), coefs.data(), 'G', parent >= 0 ? 0.0 : 1.0);
        ++m_rows;
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
    IlpClasses m_reach;
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

/// The ILP's choice for `roots` (see the file comment), starting from `start` (acyclic),
/// kept acyclic as `cycles` says.
[[nodiscard]] inline IlpOutcome ilp_choice(const EGraph& eg, const std::vector<ClassId>& roots, const std::vector<double>& cost,
                                           const std::vector<ENodeId>& start, double seconds, IlpCycles cycles = IlpCycles::order) {
    detail::ExtractionIlp ilp(eg, roots, cost, start, cycles);
    return ilp.solve(start, seconds);
}

#else

[[nodiscard]] inline IlpOutcome ilp_choice(const EGraph&, const std::vector<ClassId>&, const std::vector<double>&,
                                           const std::vector<ENodeId>&, double, IlpCycles = IlpCycles::order) {
    throw precondition_error("ILP extraction needs CBC: install coinor-libcbc-dev (bash tools/setup.sh does) and rebuild");
}

#endif

}  // namespace rlflow::search
