#pragma once
/// \file
/// Reverse-mode automatic differentiation: a `Tape<B>` records each op's output and the
/// op itself; `backward(loss)` walks the records newest first and each op adds its
/// inputs' gradients. Ops are types with a `backward(tape, grad_output)` member, and
/// recording one without it is a compile error (the `Differentiable` concept), never a
/// run-time "not implemented".
///
/// `Parameter<B>`s are trainable tensors that outlive tapes; a tape reads them in place
/// (no copy) and `backward` adds into their `grad`. Under `NoGrad` (rollouts) ops record
/// values only.

#include <rlflow/core/error.hpp>
#include <rlflow/nn/tensor.hpp>

#include <concepts>
#include <cstdint>
#include <deque>
#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace rlflow::nn {

template <TensorBackend B>
class Tape;

/// A trainable tensor and its gradient (zeros until a backward pass adds to it).
template <TensorBackend B>
struct Parameter {
    std::string name;
    Tensor<B> value;
    Tensor<B> grad;

    Parameter() = default;
    Parameter(std::string parameter_name, Tensor<B> initial)
        : name(std::move(parameter_name)), value(std::move(initial)), grad(value.shape()) {}
    void zero_grad() { grad.fill(0); }
    /// Adds `g` (of the value's shape) to the gradient.
    void add_grad(const Tensor<B>& g) {
        RLFLOW_EXPECTS(g.shape() == value.shape(), shape_error,
                       "gradient of shape " + g.shape().to_string() + " for parameter '" + name + "' of shape "
                           + value.shape().to_string());
        if (!grad.defined()) grad = Tensor<B>(value.shape());
        Strided3 plan;
        plan.dims = detail::padded3(grad.shape());
        plan.a = plan.b = detail::broadcast_strides(grad.shape(), plan.dims);
        B::template zip<fn::Add>(plan, grad.data(), grad.data(), g.data());
    }
};

/// A tensor on a tape: a handle (the tape and a record number), cheap to copy.
template <TensorBackend B>
class Var {
public:
    Var() = default;
    Var(Tape<B>* tape, std::uint32_t id) noexcept : m_tape(tape), m_id(id) {}

    [[nodiscard]] const Tensor<B>& value() const { return m_tape->value(*this); }
    [[nodiscard]] const Shape& shape() const { return value().shape(); }
    [[nodiscard]] std::int64_t dim(int axis) const { return value().dim(axis); }
    [[nodiscard]] bool requires_grad() const { return m_tape->requires_grad(*this); }
    [[nodiscard]] Tape<B>& tape() const noexcept { return *m_tape; }
    [[nodiscard]] std::uint32_t id() const noexcept { return m_id; }
    [[nodiscard]] bool valid() const noexcept { return m_tape != nullptr; }

private:
    Tape<B>* m_tape = nullptr;
    std::uint32_t m_id = 0;
};

/// What a recorded op must provide: given the gradient of its output (and the output
/// itself, which the tape keeps), add its inputs' gradients to the tape (Tape::accumulate).
template <class Op, class B>
concept Differentiable = requires(const Op& op, Tape<B>& tape, const Tensor<B>& grad_output, const Tensor<B>& output) {
    { op.backward(tape, grad_output, output) } -> std::same_as<void>;
};

template <TensorBackend B>
class Tape {
public:
    Tape() = default;
    Tape(const Tape&) = delete;
    Tape& operator=(const Tape&) = delete;

    /// A value no gradient flows to (inputs, targets, masks).
    Var<B> constant(Tensor<B> value) {
        Node n;
        n.owned = std::move(value);
        return push(std::move(n));
    }
    /// `p` read in place; backward() adds its gradient into p.grad.
    Var<B> parameter(Parameter<B>& p) {
        RLFLOW_EXPECTS(p.value.defined(), precondition_error, "parameter '" + p.name + "' has no value");
        Node n;
        n.parameter = &p;
        n.requires_grad = m_grad_enabled;
        return push(std::move(n));
    }

    /// Records `value`, the output of `op`, which reads inputs of which some may require
    /// gradients. Ops call this; users call the op functions (ops.hpp).
    template <class Op>
    Var<B> record(Tensor<B> value, Op op, bool inputs_require_grad) {
        static_assert(Differentiable<Op, B>,
                      "every nn op recorded on a tape needs `void backward(Tape<B>&, const Tensor<B>& grad_output, "
                      "const Tensor<B>& output) const`");
        Node n;
        n.owned = std::move(value);
        if (m_grad_enabled && inputs_require_grad) {
            n.requires_grad = true;
            n.backward = std::make_unique<Recorded<Op>>(std::move(op));
        }
        return push(std::move(n));
    }

    [[nodiscard]] const Tensor<B>& value(Var<B> v) const {
        const Node& n = node(v);
        return n.parameter != nullptr ? n.parameter->value : n.owned;
    }
    [[nodiscard]] bool requires_grad(Var<B> v) const { return node(v).requires_grad; }
    /// The gradient of `v` after backward(): kept for leaves (parameters); an op's output
    /// passes its gradient on and drops it. Zeros of v's shape if none is held.
    [[nodiscard]] Tensor<B> grad(Var<B> v) const {
        const Node& n = node(v);
        return n.grad.defined() ? n.grad : Tensor<B>(value(v).shape());
    }

    /// Adds `g` (of v's shape) to v's gradient; nothing if v needs none.
    void accumulate(Var<B> v, Tensor<B> g) {
        Node& n = node(v);
        if (!n.requires_grad) return;
        RLFLOW_ASSERT(g.shape() == value(v).shape());
        if (!n.grad.defined()) {
            n.grad = std::move(g);
            return;
        }
        Strided3 plan;
        plan.dims = detail::padded3(g.shape());
        plan.a = plan.b = detail::broadcast_strides(g.shape(), plan.dims);
        B::template zip<fn::Add>(plan, n.grad.data(), n.grad.data(), g.data());
    }

    /// Backpropagates from `loss`, a one-element tensor, whose gradient is 1. Gradients of
    /// parameters are added to Parameter::grad. A tape is walked once; clear() it after.
    void backward(Var<B> loss) {
        RLFLOW_EXPECTS(loss.valid() && &loss.tape() == this, precondition_error, "backward() of a value from another tape");
        RLFLOW_EXPECTS(value(loss).numel() == 1, shape_error,
                       "backward() needs a one-element loss, got shape " + value(loss).shape().to_string());
        RLFLOW_EXPECTS(!m_walked, precondition_error, "backward() was already run on this tape; clear() it first");
        m_walked = true;
        if (!node(loss).requires_grad) return;
        node(loss).grad = Tensor<B>(value(loss).shape(), typename B::Scalar(1));
        for (std::size_t i = loss.id() + 1; i-- > 0;) {
            Node& n = m_nodes[i];
            if (!n.grad.defined()) continue;
            if (n.backward) n.backward->run(*this, n.grad, n.owned);
            if (n.parameter != nullptr) n.parameter->add_grad(n.grad);
            // Intermediate gradients are not needed once passed on.
            if (n.parameter == nullptr && n.backward) n.grad = Tensor<B>();
        }
    }

    /// Forgets every record (parameters keep their gradients).
    void clear() {
        m_nodes.clear();
        m_walked = false;
    }
    [[nodiscard]] std::size_t size() const noexcept { return m_nodes.size(); }

    [[nodiscard]] bool grad_enabled() const noexcept { return m_grad_enabled; }
    /// Returns the previous setting.
    bool set_grad_enabled(bool enabled) noexcept { return std::exchange(m_grad_enabled, enabled); }

private:
    struct Backward {
        virtual ~Backward() = default;
        virtual void run(Tape& tape, const Tensor<B>& grad_output, const Tensor<B>& output) const = 0;
    };
    template <class Op>
    struct Recorded final : Backward {
        explicit Recorded(Op o) : op(std::move(o)) {}
        void run(Tape& tape, const Tensor<B>& grad_output, const Tensor<B>& output) const override {
            op.backward(tape, grad_output, output);
        }
        Op op;
    };
    struct Node {
        Tensor<B> owned;
        Parameter<B>* parameter = nullptr;
        Tensor<B> grad;
        bool requires_grad = false;
        std::unique_ptr<Backward> backward;
    };

    Var<B> push(Node n) {
        m_nodes.push_back(std::move(n));
        return Var<B>(this, static_cast<std::uint32_t>(m_nodes.size() - 1));
    }
    [[nodiscard]] const Node& node(Var<B> v) const {
        RLFLOW_EXPECTS(v.valid() && &v.tape() == this && v.id() < m_nodes.size(), precondition_error,
                       "a value used on a tape it does not belong to (or after clear())");
        return m_nodes[v.id()];
    }
    [[nodiscard]] Node& node(Var<B> v) { return const_cast<Node&>(std::as_const(*this).node(v)); }

    /// A deque: recording never moves earlier records, so references from value() stay valid.
    std::deque<Node> m_nodes;
    bool m_grad_enabled = true;
    bool m_walked = false;
};

/// Turns recording of gradients off on a tape for a scope (rollouts, evaluation).
template <TensorBackend B>
class NoGrad {
public:
    explicit NoGrad(Tape<B>& tape) noexcept : m_tape(tape), m_previous(tape.set_grad_enabled(false)) {}
    ~NoGrad() { m_tape.set_grad_enabled(m_previous); }
    NoGrad(const NoGrad&) = delete;
    NoGrad& operator=(const NoGrad&) = delete;

private:
    Tape<B>& m_tape;
    bool m_previous;
};

}  // namespace rlflow::nn
