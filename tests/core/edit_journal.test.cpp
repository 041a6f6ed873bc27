#include "../tensor_types.hpp"
#include <rlflow/core/canonical.hpp>
#include <rlflow/core/edit_journal.hpp>
#include <rlflow/core/graph.hpp>
#include <rlflow/core/random.hpp>

#include <doctest/doctest.h>

#include <algorithm>
#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

using namespace rlflow;

namespace {

const Shape wide{2, 3};
const Shape narrow{1, 3};

TensorPtr filled(const Shape& shape, float value) {
    const auto count = static_cast<std::size_t>(shape.numel());
    return std::make_shared<const Tensor>(Tensor::from_floats(shape, std::vector<float>(count, value)));
}

/// The first way two nodes with the same id differ, or "" if they are identical.
std::string node_difference(const Node& expected, const Node& actual) {
    const std::string where = expected.describe() + ": ";
    if (expected.op != actual.op) return where + "op is " + std::string(actual.op_label());
    if (expected.name != actual.name) return where + "name is '" + actual.name + "'";
    if (expected.op_type != actual.op_type || expected.domain != actual.domain) return where + "op_type or domain";
    if (!(expected.attributes == actual.attributes)) return where + "attributes";
    if (expected.inputs != actual.inputs) return where + "inputs";
    if (expected.data != actual.data) return where + "data pointer";
    if (expected.outputs.size() != actual.outputs.size()) return where + "output count";
    for (std::size_t i = 0; i < expected.outputs.size(); ++i) {
        const NodeOutput& e = expected.outputs[i];
        const NodeOutput& a = actual.outputs[i];
        const std::string output = where + "output " + std::to_string(i) + " ";
        if (!(e.type == a.type)) return output + "type " + a.type.to_string() + " vs " + e.type.to_string();
        if (e.name != a.name) return output + "name '" + a.name + "'";
        if (e.uses != a.uses) return output + "uses";
    }
    return {};
}

/// The first way `actual` differs from `expected`, structurally and in every field, or
/// "" if the two graphs are identical.
std::string first_difference(const Graph& expected, const Graph& actual) {
    if (expected.id_bound() != actual.id_bound())
        return "id_bound " + std::to_string(actual.id_bound()) + " vs " + std::to_string(expected.id_bound());
    if (expected.num_nodes() != actual.num_nodes()) return "num_nodes";
    for (std::uint32_t value = 0; value < expected.id_bound(); ++value) {
        const NodeId id{value};
        if (expected.contains(id) != actual.contains(id)) return "contains #" + std::to_string(value);
        if (!expected.contains(id)) continue;
        if (std::string d = node_difference(expected.node(id), actual.node(id)); !d.empty()) return d;
    }
    if (expected.inputs() != actual.inputs()) return "inputs()";
    if (expected.weights() != actual.weights()) return "weights()";
    if (expected.outputs().size() != actual.outputs().size()) return "outputs() size";
    for (std::size_t i = 0; i < expected.outputs().size(); ++i) {
        const GraphOutput& e = expected.outputs()[i];
        const GraphOutput& a = actual.outputs()[i];
        if (e.value != a.value || e.name != a.name) return "graph output " + std::to_string(i);
    }
    if (canonical_hash(expected) != canonical_hash(actual)) return "canonical_hash";
    return {};
}

/// Checks that `actual` is identical to `expected` and valid.
void check_identical(const Graph& expected, const Graph& actual) {
    CHECK(first_difference(expected, actual) == "");
    CHECK_NOTHROW(actual.validate());
}

/// Inputs x, u, x2 (u unused, in the middle); weights w2 (unused, no data) then w (with
/// data); an unused constant c; a = x + w; r = Relu(a); t = Tanh(a); clip = Clip(r);
/// m = clip * t; dead = Sigmoid(t). Outputs y = m and z = t.
struct Net {
    Graph g;
    NodeId x, u, x2, w, w2, c, a, r, t, clip, m, dead;
    Net() {
        x = g.add_input("x", f32(wide));
        u = g.add_input("u", f32(wide));
        x2 = g.add_input("x2", f32(narrow));
        w2 = g.add_weight("w2", f32(wide));
        w = g.add_weight("w", f32(wide), filled(wide, 1.0f));
        c = g.add_constant("c", Tensor(f32(wide)));
        a = g.add_node(OpKind::Add, {{x, 0}, {w, 0}}, {}, "a");
        r = g.add_node(OpKind::Relu, {{a, 0}}, {}, "r");
        t = g.add_node(OpKind::Tanh, {{a, 0}}, {}, "t");
        clip = g.add_node(OpKind::Clip, {{r, 0}}, {{"min", 0.0}, {"max", 6.0}}, "clip");
        m = g.add_node(OpKind::Mul, {{clip, 0}, {t, 0}}, {}, "m");
        dead = g.add_node(OpKind::Sigmoid, {{t, 0}}, {}, "dead");
        g.add_output({m, 0}, "y");
        g.add_output({t, 0}, "z");
    }
};

using NetEdit = std::pair<const char*, std::function<void(Net&)>>;

std::vector<NetEdit> every_kind_of_edit() {
    return {
        {"add_input", [](Net& n) { n.g.add_input("fresh", f32(wide)); }},
        {"add_weight", [](Net& n) { n.g.add_weight("fresh", f32(wide), filled(wide, 2.0f)); }},
        {"add_constant", [](Net& n) { n.g.add_constant("fresh", Tensor(f32(narrow))); }},
        {"add_node", [](Net& n) { n.g.add_node(OpKind::Sigmoid, {{n.r, 0}}); }},
        {"add_opaque",
         [](Net& n) { n.g.add_opaque("Custom", "com.example", {{n.x, 0}, {}, {n.w, 0}}, {f32(wide)}, {}, "custom"); }},
        {"add_output", [](Net& n) { n.g.add_output({n.r, 0}, "r_out"); }},
        {"remove_node",
         [](Net& n) {
             n.g.remove_node(n.dead);
             n.g.remove_node(n.u);
             n.g.remove_node(n.w2);
         }},
        {"replace_all_uses", [](Net& n) { n.g.replace_all_uses({n.t, 0}, {n.r, 0}); }},
        {"set_input", [](Net& n) { n.g.set_input(n.r, 0, {n.x2, 0}); }},
        {"set_attributes", [](Net& n) { n.g.set_attributes(n.clip, {{"min", -1.0}}); }},
        {"replace_node", [](Net& n) { n.g.replace_node(n.r, OpKind::Sigmoid, {{n.a, 0}}); }},
        {"remove_dead_nodes", [](Net& n) { CHECK(n.g.remove_dead_nodes() == 3); }},
        {"rename", [](Net& n) { n.g.rename(n.a, "renamed"); }},
        {"rename_output", [](Net& n) { n.g.rename_output({n.t, 0}, "renamed"); }},
        {"set_weight_data",
         [](Net& n) {
             n.g.set_weight_data(n.w, filled(wide, 3.0f));
             n.g.set_weight_data(n.w2, filled(wide, 4.0f));
         }},
    };
}

}  // namespace

namespace {

/// Records `edit` on a fresh Net, undoes it, checks that the graph is back exactly as it
/// was, and returns how many primitive edits were recorded.
std::size_t undone_edit_count(const std::function<void(Net&)>& edit) {
    Net net;
    const Graph before = net.g;
    net.g.begin_recording();
    edit(net);
    EditJournal journal = net.g.end_recording();
    const std::size_t size = journal.size();
    // Something was recorded exactly when something changed.
    CHECK((first_difference(before, net.g) != "") == !journal.empty());
    net.g.undo(std::move(journal));
    check_identical(before, net.g);
    return size;
}

}  // namespace

TEST_CASE("undo after each kind of public edit restores the graph exactly") {
    for (const auto& [name, edit] : every_kind_of_edit()) {
        INFO("edit: " << name);
        CHECK(undone_edit_count(edit) > 0);
    }
}

TEST_CASE("undo restores types that set_input re-inferred downstream") {
    CHECK(undone_edit_count([](Net& n) {
              n.g.set_input(n.r, 0, {n.x2, 0});
              CHECK(n.g.type({n.clip, 0}).shape == narrow);
          })
          > 0);
}

TEST_CASE("undo reverts an edit that threw halfway through") {
    CHECK(undone_edit_count([](Net& n) {
              const NodeId bad = n.g.add_input("bad", f32({4, 5}));
              // r and clip are retyped to (4,5) before the Mul with t's (2,3) fails.
              CHECK_THROWS_AS(n.g.set_input(n.r, 0, {bad, 0}), shape_error);
              CHECK(n.g.type({n.clip, 0}).shape == Shape{4, 5});
          })
          > 1);
}

TEST_CASE("infer_shapes on a consistent graph records nothing") {
    CHECK(undone_edit_count([](Net& n) { n.g.infer_shapes(); }) == 0);
}

namespace {

/// Whether `target` is `from` or lies downstream of it.
bool reaches(const Graph& g, NodeId from, NodeId target) {
    std::vector<NodeId> stack{from};
    std::vector<char> seen(g.id_bound(), 0);
    while (!stack.empty()) {
        const NodeId id = stack.back();
        stack.pop_back();
        if (id == target) return true;
        if (seen[id.value]) continue;
        seen[id.value] = 1;
        for (const NodeOutput& out : g.node(id).outputs)
            for (const Use& use : out.uses) stack.push_back(use.node);
    }
    return false;
}

/// Applies random public edits to a graph of (2,3) and (1,3) float tensors built from
/// shape-preserving and broadcasting ops, so every edit type-checks and none makes a cycle.
class RandomEditor {
public:
    RandomEditor(Graph& graph, Rng& rng) : m_graph(graph), m_rng(rng) {}

    /// One random edit (some draws find nothing to do and change nothing).
    void edit() {
        constexpr std::uint64_t kinds = 12;
        switch (m_rng.below(kinds)) {
        case 0: add_compute_node(); break;
        case 1: add_source_node(); break;
        case 2: m_graph.add_output(any_tensor(), fresh_name()); break;
        case 3: replace_uses(); break;
        case 4: rewire(); break;
        case 5: remove_unused(); break;
        case 6: rename_something(); break;
        case 7: reattribute(); break;
        case 8: replace_unary(); break;
        case 9: set_some_weight_data(); break;
        case 10: add_opaque(); break;
        default: maybe_remove_dead(); break;
        }
    }

private:
    static constexpr std::uint64_t dead_removal_odds = 4;  // remove_dead_nodes wipes a lot: 1 in 4 draws
    static constexpr double clip_range = 4.0;

    std::string fresh_name() { return "n" + std::to_string(m_names++); }
    template <class Pred>
    std::vector<NodeId> live(Pred pred) const {
        std::vector<NodeId> ids;
        for (const Node& n : m_graph.nodes())
            if (pred(n)) ids.push_back(n.id);
        return ids;
    }
    template <class T>
    const T& pick(const std::vector<T>& items) {
        return items[m_rng.below(items.size())];
    }
    TensorRef any_tensor() {
        const NodeId id = pick(live([](const Node&) { return true; }));
        return {id, static_cast<std::uint32_t>(m_rng.below(m_graph.node(id).outputs.size()))};
    }
    static bool is_unary(const Node& n) {
        return n.op == OpKind::Relu || n.op == OpKind::Tanh || n.op == OpKind::Sigmoid;
    }

    void add_compute_node() {
        static const std::vector<OpKind> unary{OpKind::Relu, OpKind::Tanh, OpKind::Sigmoid};
        static const std::vector<OpKind> binary{OpKind::Add, OpKind::Mul};
        if (m_rng.below(2) == 0) m_graph.add_node(pick(unary), {any_tensor()});
        else m_graph.add_node(pick(binary), {any_tensor(), any_tensor()}, {}, fresh_name());
    }
    void add_source_node() {
        const Shape shape = m_rng.below(2) == 0 ? wide : narrow;
        switch (m_rng.below(3)) {
        case 0: m_graph.add_input(fresh_name(), f32(shape)); break;
        case 1:
            m_graph.add_weight(fresh_name(), f32(shape), m_rng.below(2) == 0 ? filled(shape, 1.0f) : nullptr);
            break;
        default: m_graph.add_constant(fresh_name(), Tensor(f32(shape))); break;
        }
    }
    void add_opaque() {
        const std::vector<TensorRef> inputs{any_tensor(), TensorRef{}, any_tensor()};
        m_graph.add_opaque("Custom", "com.example", inputs, {f32(wide), f32(narrow)});
    }
    void replace_uses() {
        const TensorRef from = any_tensor();
        const TensorRef to = any_tensor();
        if (m_graph.type(from) == m_graph.type(to) && !reaches(m_graph, from.node, to.node))
            m_graph.replace_all_uses(from, to);
    }
    void rewire() {
        const auto consumers = live([](const Node& n) { return !n.inputs.empty(); });
        if (consumers.empty()) return;
        const NodeId id = pick(consumers);
        const TensorRef value = any_tensor();
        const auto slot = m_rng.below(m_graph.node(id).inputs.size());
        if (!reaches(m_graph, id, value.node)) m_graph.set_input(id, slot, value);
    }
    void remove_unused() {
        const auto unused = live([&](const Node& n) {
            for (std::uint32_t i = 0; i < n.outputs.size(); ++i)
                if (!n.outputs[i].uses.empty() || m_graph.is_graph_output({n.id, i})) return false;
            return true;
        });
        if (!unused.empty()) m_graph.remove_node(pick(unused));
    }
    void rename_something() {
        const TensorRef ref = any_tensor();
        if (m_rng.below(2) == 0) m_graph.rename(ref.node, fresh_name());
        else m_graph.rename_output(ref, fresh_name());
    }
    void reattribute() {
        const auto clips = live([](const Node& n) { return n.op == OpKind::Clip; });
        if (clips.empty()) {
            m_graph.add_node(OpKind::Clip, {any_tensor()}, {{"max", m_rng.uniform(0.0, clip_range)}});
            return;
        }
        m_graph.set_attributes(pick(clips), {{"min", -m_rng.uniform(0.0, clip_range)}});
    }
    void replace_unary() {
        const auto unary = live(is_unary);
        if (!unary.empty()) {
            const NodeId old = pick(unary);
            m_graph.replace_node(old, OpKind::Tanh, {m_graph.node(old).inputs[0]});
        }
    }
    void set_some_weight_data() {
        if (m_graph.weights().empty()) return;
        const NodeId id = pick(m_graph.weights());
        m_graph.set_weight_data(id, filled(m_graph.type({id, 0}).shape, static_cast<float>(m_rng.uniform())));
    }
    void maybe_remove_dead() {
        if (m_rng.below(dead_removal_odds) == 0) m_graph.remove_dead_nodes();
    }

    Graph& m_graph;
    Rng& m_rng;
    int m_names = 0;
};

/// Records `count` random edits and returns their journal.
EditJournal record_random_edits(Graph& g, RandomEditor& editor, std::uint64_t count) {
    g.begin_recording();
    for (std::uint64_t i = 0; i < count; ++i) editor.edit();
    return g.end_recording();
}

}  // namespace

TEST_CASE("undo restores the graph exactly after long random edit sequences in nested journals") {
    constexpr std::uint64_t seed = 20240611;
    constexpr int rounds = 60;
    constexpr std::uint64_t max_edits = 40;
    Rng rng(seed);
    Net net;
    RandomEditor editor(net.g, rng);
    for (int round = 0; round < rounds; ++round) {
        INFO("round " << round);
        const Graph before_outer = net.g;
        EditJournal outer = record_random_edits(net.g, editor, 1 + rng.below(max_edits));
        const Graph before_inner = net.g;
        EditJournal inner = record_random_edits(net.g, editor, 1 + rng.below(max_edits));
        net.g.undo(std::move(inner));
        CHECK(first_difference(before_inner, net.g) == "");
        // Keep the outer edits every other round, so the graph grows and changes shape.
        if (round % 2 == 1) continue;
        net.g.undo(std::move(outer));
        CHECK(first_difference(before_outer, net.g) == "");
        CHECK_NOTHROW(net.g.validate());
    }
}

TEST_CASE("an older journal cannot be undone after a newer edit") {
    Net net;
    net.g.begin_recording();
    net.g.rename(net.a, "first");
    EditJournal older = net.g.end_recording();
    net.g.rename(net.a, "second");
    CHECK_THROWS_WITH_AS(net.g.undo(std::move(older)),
                         "[rlflow.precondition_error] Graph::undo: the graph was edited after this journal ended; "
                         "undo journals newest first",
                         precondition_error);
    CHECK(net.g.node(net.a).name == "second");
}

TEST_CASE("journals are undone newest first and an undone journal cannot be undone again") {
    Net net;
    const Graph original = net.g;
    net.g.begin_recording();
    net.g.rename(net.a, "first");
    EditJournal older = net.g.end_recording();
    net.g.begin_recording();
    net.g.rename(net.a, "second");
    EditJournal newer = net.g.end_recording();
    const EditJournal newer_copy = newer;
    CHECK_THROWS_AS(net.g.undo(std::move(older)), precondition_error);
    net.g.undo(std::move(newer));
    CHECK(net.g.node(net.a).name == "first");
    CHECK_THROWS_AS(net.g.undo(EditJournal(newer_copy)), precondition_error);
    net.g.undo(std::move(older));
    check_identical(original, net.g);
}

TEST_CASE("recording cannot begin twice or end without having begun") {
    Graph g;
    CHECK_FALSE(g.recording());
    CHECK_THROWS_WITH_AS((void)g.end_recording(),
                         "[rlflow.precondition_error] Graph::end_recording: not recording; call begin_recording first",
                         precondition_error);
    g.begin_recording();
    CHECK(g.recording());
    CHECK_THROWS_WITH_AS(g.begin_recording(),
                         "[rlflow.precondition_error] Graph::begin_recording: already recording; call end_recording first",
                         precondition_error);
    CHECK(g.recording());
    (void)g.end_recording();
    CHECK_FALSE(g.recording());
}

TEST_CASE("undo is refused while the graph is recording") {
    Net net;
    net.g.begin_recording();
    net.g.rename(net.a, "first");
    EditJournal journal = net.g.end_recording();
    net.g.begin_recording();
    CHECK_THROWS_WITH_AS(net.g.undo(std::move(journal)),
                         "[rlflow.precondition_error] Graph::undo: cannot undo while recording; call end_recording first",
                         precondition_error);
    CHECK(net.g.recording());
    CHECK(net.g.node(net.a).name == "first");
}

TEST_CASE("touched_nodes lists the old producer, the new producer, its consumers and graph outputs") {
    Net net;
    net.g.begin_recording();
    // t feeds m (slot 1), dead, and graph output z.
    net.g.replace_all_uses({net.t, 0}, {net.r, 0});
    const EditJournal journal = net.g.end_recording();
    std::vector<NodeId> expected{net.r, net.t, net.m, net.dead};
    std::sort(expected.begin(), expected.end());
    CHECK(journal.touched_nodes() == expected);
}

TEST_CASE("touched_nodes lists created and removed nodes with the producers whose uses changed") {
    Net net;
    net.g.begin_recording();
    const NodeId added = net.g.add_node(OpKind::Add, {{net.x, 0}, {net.x2, 0}});
    net.g.remove_node(net.dead);
    net.g.rename_output({net.clip, 0}, "clipped");
    const EditJournal journal = net.g.end_recording();
    CHECK(journal.touched_nodes() == std::vector<NodeId>{net.x, net.x2, net.t, net.clip, net.dead, added});
}

TEST_CASE("revision changes on every edit and on undo and never repeats") {
    Net net;
    const std::uint64_t start = net.g.revision();
    net.g.begin_recording();
    CHECK(net.g.revision() == start);
    net.g.rename(net.a, "renamed");
    const std::uint64_t after_rename = net.g.revision();
    CHECK(after_rename > start);
    net.g.add_constant("k", Tensor(f32(wide)));
    CHECK(net.g.revision() > after_rename);
    const std::uint64_t before_undo = net.g.revision();
    net.g.undo(net.g.end_recording());
    CHECK(net.g.revision() > before_undo);
    const Graph copy = net.g;
    CHECK(copy.revision() == net.g.revision());
}

TEST_CASE("a copy taken while recording goes on recording into its own journal") {
    Net net;
    const Graph original = net.g;
    net.g.begin_recording();
    net.g.remove_node(net.dead);
    Graph copy = net.g;
    CHECK(copy.recording());
    copy.rename(net.a, "copy only");
    net.g.undo(net.g.end_recording());
    check_identical(original, net.g);
    EditJournal copy_journal = copy.end_recording();
    CHECK(copy_journal.touched_nodes() == std::vector<NodeId>{net.a, net.t, net.dead});
    copy.undo(std::move(copy_journal));
    check_identical(original, copy);
}
