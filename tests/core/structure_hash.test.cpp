#include "../tensor_types.hpp"
#include <rlflow/core/canonical.hpp>
#include <rlflow/core/graph.hpp>
#include <rlflow/core/structure_hash.hpp>

#include <doctest/doctest.h>

#include <vector>

using namespace rlflow;

namespace {

const Shape shape{2, 3};

/// x -> Relu -> Tanh -> y and x -> Sigmoid -> Erf -> z: two independent branches.
struct Branches {
    Graph g;
    NodeId x, relu, tanh, sigmoid, exp;
    Branches() {
        x = g.add_input("x", f32(shape));
        relu = g.add_node(OpKind::Relu, {{x, 0}}, {}, "relu");
        tanh = g.add_node(OpKind::Tanh, {{relu, 0}}, {}, "tanh");
        sigmoid = g.add_node(OpKind::Sigmoid, {{x, 0}}, {}, "sigmoid");
        exp = g.add_node(OpKind::Erf, {{sigmoid, 0}}, {}, "exp");
        g.add_output({tanh, 0}, "y");
        g.add_output({exp, 0}, "z");
    }
};

/// Replaces `node` (one input, one output) by a new node of op `op`, recorded.
EditJournal replace(Graph& g, NodeId node, OpKind op) {
    g.begin_recording();
    const NodeId made = g.add_node(op, {g.node(node).inputs[0]}, {});
    g.replace_all_uses({node, 0}, {made, 0});
    g.remove_node(node);
    return g.end_recording();
}

}  // namespace

TEST_CASE("the structure hash follows edits and undos exactly as a fresh hash") {
    Branches b;
    StructureHash hash(b.g);
    const Hash128 original = hash.value();

    EditJournal first = replace(b.g, b.relu, OpKind::Sqrt);
    hash.update(b.g, first.touched_nodes());
    CHECK(hash.value() == StructureHash(b.g).value());
    CHECK(hash.value() != original);

    EditJournal second = replace(b.g, b.exp, OpKind::Identity);
    hash.update(b.g, second.touched_nodes());
    CHECK(hash.value() == StructureHash(b.g).value());

    for (EditJournal* j : {&second, &first}) {
        const std::vector<NodeId> touched = j->touched_nodes();
        b.g.undo(std::move(*j));
        hash.update(b.g, touched);
        CHECK(hash.value() == StructureHash(b.g).value());
    }
    CHECK(hash.value() == original);
}

TEST_CASE("one graph reached by two orders of edits has one structure hash, as its canonical form") {
    // Ids differ between the two orders (each edit takes the next free id), the
    // structure does not.
    Branches a;
    (void)replace(a.g, a.relu, OpKind::Sqrt);
    (void)replace(a.g, a.exp, OpKind::Identity);
    Branches b;
    (void)replace(b.g, b.exp, OpKind::Identity);
    (void)replace(b.g, b.relu, OpKind::Sqrt);
    REQUIRE(canonical_form(a.g) == canonical_form(b.g));
    CHECK(StructureHash(a.g).value() == StructureHash(b.g).value());
}

TEST_CASE("the structure hash tells apart graphs that differ in an op, an attribute or an output's order") {
    Branches base;
    const Hash128 h = StructureHash(base.g).value();

    Branches op;
    (void)replace(op.g, op.tanh, OpKind::Sigmoid);
    CHECK(StructureHash(op.g).value() != h);

    // The two branches swapped between the outputs.
    Graph swapped;
    const NodeId x = swapped.add_input("x", f32(shape));
    const NodeId relu = swapped.add_node(OpKind::Relu, {{x, 0}}, {}, "relu");
    const NodeId tanh = swapped.add_node(OpKind::Tanh, {{relu, 0}}, {}, "tanh");
    const NodeId sigmoid = swapped.add_node(OpKind::Sigmoid, {{x, 0}}, {}, "sigmoid");
    const NodeId exp = swapped.add_node(OpKind::Erf, {{sigmoid, 0}}, {}, "exp");
    swapped.add_output({exp, 0}, "y");
    swapped.add_output({tanh, 0}, "z");
    CHECK(StructureHash(swapped).value() != h);

    Graph clipped;
    const NodeId cx = clipped.add_input("x", f32(shape));
    const NodeId c1 = clipped.add_node(OpKind::Clip, {{cx, 0}}, {{"min", 0.0}, {"max", 6.0}});
    clipped.add_output({c1, 0}, "y");
    Graph clipped_other;
    const NodeId ox = clipped_other.add_input("x", f32(shape));
    const NodeId o1 = clipped_other.add_node(OpKind::Clip, {{ox, 0}}, {{"min", 0.0}, {"max", 4.0}});
    clipped_other.add_output({o1, 0}, "y");
    CHECK(StructureHash(clipped).value() != StructureHash(clipped_other).value());
}

TEST_CASE("an edit at the head of a chain longer than the hash's depth changes the hash, as a fresh hash does") {
    // A chain longer than the depth: a change at its head must still change the graph's
    // hash (the head's own value changes), and the update must agree with a fresh hash.
    Graph g;
    const NodeId x = g.add_input("x", f32(shape));
    NodeId last = g.add_node(OpKind::Relu, {{x, 0}}, {});
    const NodeId head = last;
    for (int i = 0; i < 10; ++i) last = g.add_node(OpKind::Tanh, {{last, 0}}, {});
    g.add_output({last, 0}, "y");
    StructureHash hash(g);
    const Hash128 before = hash.value();
    EditJournal j = replace(g, head, OpKind::Sqrt);
    hash.update(g, j.touched_nodes());
    CHECK(hash.value() != before);
    CHECK(hash.value() == StructureHash(g).value());
}
