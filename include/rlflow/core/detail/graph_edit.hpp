#pragma once
/// \file
/// The primitive edits an EditJournal records: one per private mutation of Graph, each
/// holding what undoing it needs (the previous value) and naming the nodes it touches.

#include <rlflow/core/node.hpp>

#include <cstdint>
#include <limits>
#include <string>
#include <variant>
#include <vector>

namespace rlflow::detail {

/// An edit of one node's own fields.
struct NodeEdit {
    NodeId id;
    void add_touched(std::vector<NodeId>& ids) const { ids.push_back(id); }
};

/// A use added to or removed from a producer's (sorted) use list: touches both ends.
struct UseEdit {
    TensorRef producer;
    Use use;
    void add_touched(std::vector<NodeId>& ids) const {
        ids.push_back(producer.node);
        ids.push_back(use.node);
    }
};

/// Node `id` was appended; it is the last node while this edit is being undone.
struct NodeAppended : NodeEdit {};
/// A use was inserted into its producer's use list.
struct UseLinked : UseEdit {};
/// A use was erased from its producer's use list.
struct UseUnlinked : UseEdit {};

/// Input `slot` of node `id` held `previous`.
struct InputWritten : NodeEdit {
    std::uint32_t slot = 0;
    TensorRef previous;
};

/// Node `id` was removed. The Node itself is kept in the journal's removed-node list (in
/// removal order), so this entry stays small; positions are its indices in the graph's
/// input and weight lists, or `absent`.
struct NodeRemoved : NodeEdit {
    static constexpr std::uint32_t absent = std::numeric_limits<std::uint32_t>::max();
    std::uint32_t input_position = absent;
    std::uint32_t weight_position = absent;
};

/// A graph output was appended (it is the last one while this edit is being undone).
struct OutputAppended : NodeEdit {};

/// Graph output `index` named `previous` and now names `value`: both producers change
/// graph-output status.
struct OutputRetargeted {
    std::uint32_t index = 0;
    TensorRef previous;
    TensorRef value;
    void add_touched(std::vector<NodeId>& ids) const {
        ids.push_back(previous.node);
        ids.push_back(value.node);
    }
};

/// Node `id` was called `previous`.
struct NodeRenamed : NodeEdit {
    std::string previous;
};

/// Output `index` of node `id` was called `previous`.
struct OutputRenamed : NodeEdit {
    std::uint32_t index = 0;
    std::string previous;
};

/// Shape inference changed the output types of node `id`; these were the old ones.
struct TypesChanged : NodeEdit {
    std::vector<TensorType> previous;
};

/// The attributes of node `id` were replaced.
struct AttributesReplaced : NodeEdit {
    Attributes previous;
};

/// The data of node `id` was replaced.
struct DataReplaced : NodeEdit {
    TensorPtr previous;
};

/// One primitive graph edit.
using GraphEdit = std::variant<NodeAppended, UseLinked, UseUnlinked, InputWritten, NodeRemoved, OutputAppended,
                               OutputRetargeted, NodeRenamed, OutputRenamed, TypesChanged, AttributesReplaced,
                               DataReplaced>;

}  // namespace rlflow::detail
