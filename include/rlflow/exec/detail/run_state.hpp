#pragma once
/// \file
/// The state of one executor run: the value of every tensor, the buffers that hold
/// them, and live-activation accounting under core/memory.hpp's model. Float32 tensors
/// live in aligned float buffers; int32, int64 and bool tensors (of the typed ops) in
/// byte buffers.

#include <rlflow/core/graph.hpp>
#include <rlflow/exec/detail/kernels.hpp>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <vector>

namespace rlflow::detail {

/// Tensor values while a graph runs. A tensor lives in the buffer of its root: itself,
/// or for the output of a view op the root of the viewed tensor. Graph inputs, weights
/// and constants are borrowed; op outputs own their buffers. A root's buffer is freed
/// once its last reader ran, unless it is a graph output; a root nobody reads is freed
/// as soon as it is produced.
class RunState {
public:
    RunState(const Graph& graph, const std::vector<NodeId>& order) : m_graph(graph), m_slots(graph.id_bound()) {
        for (const NodeId id : order) {
            const Node& n = graph.node(id);
            m_slots[id.value].resize(n.outputs.size());
            for (std::uint32_t i = 0; i < n.outputs.size(); ++i) {
                const TensorRef self{id, i};
                Slot& s = slot(self);
                s.shape = n.outputs[i].type.shape;
                s.dtype = n.outputs[i].type.dtype;
                s.root = n.traits().has(op_flag_view) ? slot(n.inputs[0]).root : self;
                slot(s.root).pending += static_cast<std::int64_t>(n.outputs[i].uses.size())
                                        + (graph.is_graph_output(self) ? 1 : 0);
            }
        }
    }

    /// Binds a graph input to caller-owned data; it counts as a live activation.
    void bind_input(const Node& input, const Tensor& value) {
        Slot& s = slot({input.id, 0});
        s.bind(value);
        s.bytes = input.outputs[0].type.bytes();
        allocated(s.bytes);
        release_if_unread({input.id, 0});
    }

    /// Runs one node: sources bind their data, views alias their input, other ops get
    /// fresh output buffers and their kernel. Inputs read for the last time are freed.
    void execute(const Node& n) {
        const OpTraits& traits = n.traits();
        if (n.op == OpKind::Weight || n.op == OpKind::Constant) {
            slot({n.id, 0}).bind(*n.data);
            return;
        }
        if (traits.has(op_flag_view)) {
            Slot& s = slot({n.id, 0});
            const Slot& viewed = slot(n.inputs[0]);
            s.data = viewed.data;
            s.raw = viewed.raw;
        } else if (const TypedKernelFn typed = typed_kernel_for(n.op)) {
            run_typed(n, typed);
        } else {
            run_kernel(n);
        }
        for (const TensorRef& in : n.inputs) release_read(in);
        for (std::uint32_t i = 0; i < n.outputs.size(); ++i) release_if_unread({n.id, i});
    }

    /// The graph outputs, in order. A buffer only one output uses moves out; any other
    /// output (a graph input, a weight, a buffer shared by several outputs) is copied.
    [[nodiscard]] std::vector<Tensor> take_outputs() {
        const auto& outputs = m_graph.outputs();
        std::vector<Tensor> result;
        result.reserve(outputs.size());
        for (const GraphOutput& o : outputs) {
            Slot& s = slot(o.value);
            if (s.dtype != DType::Float32) {  // typed values are small: copied
                result.push_back(Tensor::from_raw(s.dtype, s.shape, s.raw));
                continue;
            }
            Slot& root = slot(s.root);
            const auto sharing = std::count_if(outputs.begin(), outputs.end(),
                                               [&](const GraphOutput& other) { return slot(other.value).root == s.root; });
            const bool movable = sharing == 1 && root.buffer.size() == s.data.size() && !root.buffer.empty();
            FloatBuffer values = movable ? std::move(root.buffer) : FloatBuffer(s.data.begin(), s.data.end());
            result.push_back(Tensor::from_buffer(s.shape, std::move(values)));
        }
        return result;
    }

    /// The largest number of live activation bytes seen so far.
    [[nodiscard]] std::int64_t peak_activation_bytes() const noexcept { return m_peak; }

private:
    struct Slot {
        /// The values of a float32 tensor.
        std::span<const float> data;
        /// The bytes of a tensor of another dtype.
        std::span<const std::byte> raw;
        Shape shape;
        DType dtype = DType::Float32;
        TensorRef root;
        /// Storage of a root an op produced (empty for borrowed data and views).
        FloatBuffer buffer;
        std::vector<std::byte> raw_buffer;
        /// On a root: reads still to come, graph outputs counting as one read each.
        std::int64_t pending = 0;
        /// On a root: the activation bytes it holds while live.
        std::int64_t bytes = 0;

        /// Borrows `value`'s data.
        void bind(const Tensor& value) {
            if (dtype == DType::Float32) data = value.floats();
            else raw = value.raw();
        }
        /// The value as a tensor of its own (a copy).
        [[nodiscard]] Tensor value() const {
            if (dtype == DType::Float32) return Tensor::from_floats(shape, std::vector<float>(data.begin(), data.end()));
            return Tensor::from_raw(dtype, shape, raw);
        }
    };

    Slot& slot(TensorRef ref) { return m_slots[ref.node.value][ref.index]; }

    void allocated(std::int64_t bytes) {
        m_live += bytes;
        m_peak = std::max(m_peak, m_live);
    }

    /// Allocates the node's outputs, then calls its kernel unless there is nothing to
    /// compute (every output empty: kernels may then assume non-empty reductions).
    void run_kernel(const Node& n) {
        std::vector<ConstView> inputs;
        inputs.reserve(n.inputs.size());
        for (const TensorRef& in : n.inputs) inputs.push_back({slot(in).data, slot(in).shape});
        std::vector<MutableView> outputs;
        outputs.reserve(n.outputs.size());
        for (std::uint32_t i = 0; i < n.outputs.size(); ++i) {
            Slot& s = slot({n.id, i});
            s.buffer.assign(static_cast<std::size_t>(s.shape.numel()), 0.0f);
            s.data = s.buffer;
            s.bytes = static_cast<std::int64_t>(s.buffer.size() * sizeof(float));
            allocated(s.bytes);
            outputs.push_back({s.buffer, s.shape});
        }
        const bool empty = std::all_of(outputs.begin(), outputs.end(), [](const MutableView& o) { return o.data.empty(); });
        if (!empty) kernel_for(n.op)(KernelArgs{n, inputs, outputs});
    }

    /// Runs a typed op on copies of its inputs and keeps its one output.
    void run_typed(const Node& n, TypedKernelFn kernel) {
        std::vector<Tensor> inputs;
        inputs.reserve(n.inputs.size());
        for (const TensorRef& in : n.inputs) inputs.push_back(slot(in).value());
        Tensor out = kernel(n, inputs);
        Slot& s = slot({n.id, 0});
        RLFLOW_ASSERT((out.type() == TensorType{s.dtype, s.shape}));
        if (s.dtype == DType::Float32) {
            s.buffer.assign(out.floats().begin(), out.floats().end());
            s.data = s.buffer;
        } else {
            s.raw_buffer.assign(out.raw().begin(), out.raw().end());
            s.raw = s.raw_buffer;
        }
        s.bytes = static_cast<std::int64_t>(out.raw().size());
        allocated(s.bytes);
    }

    /// One read of `ref` is done; frees its root after the last one.
    void release_read(TensorRef ref) {
        Slot& root = slot(slot(ref).root);
        if (--root.pending == 0) free_root(root);
    }

    /// Frees an op output or graph input that nothing reads and no graph output names.
    void release_if_unread(TensorRef ref) {
        Slot& s = slot(ref);
        if (s.root == ref && s.pending == 0) free_root(s);
    }

    void free_root(Slot& root) {
        m_live -= root.bytes;
        root.bytes = 0;
        root.data = {};
        root.raw = {};
        FloatBuffer().swap(root.buffer);
        std::vector<std::byte>().swap(root.raw_buffer);
    }

    const Graph& m_graph;
    std::vector<std::vector<Slot>> m_slots;
    std::int64_t m_live = 0;
    std::int64_t m_peak = 0;
};

}  // namespace rlflow::detail
