#pragma once
/// \file
/// The error hierarchy and the three kinds of check.
///
/// Every error a user can cause derives from `rlflow::error`. Its message names the thing
/// at fault (file, node, op); `what()` puts `[rlflow.<kind>]` before it, for logs and for
/// tests to match on, and `message()` is the plain text a CLI prints.

#include <stdexcept>
#include <string>
#include <string_view>

namespace rlflow {

/// Base of every user-visible rlflow error.
class error : public std::runtime_error {
public:
    error(std::string_view kind, const std::string& message)
        : std::runtime_error("[rlflow." + std::string(kind) + "] " + message), m_kind(kind), m_message(message) {}
    /// The short kind, e.g. "shape_error".
    [[nodiscard]] const std::string& kind() const noexcept { return m_kind; }
    /// The message without the `[rlflow.<kind>]` tag: what a person reads.
    [[nodiscard]] const std::string& message() const noexcept { return m_message; }

private:
    std::string m_kind;
    std::string m_message;
};

#define RLFLOW_DEFINE_ERROR(name)                                                   \
    class name : public ::rlflow::error {                                          \
    public:                                                                        \
        explicit name(const std::string& message) : ::rlflow::error(#name, message) {} \
    }

/// Malformed, truncated or unsupported ONNX input.
RLFLOW_DEFINE_ERROR(onnx_error);
/// Tensor shapes that do not fit an op.
RLFLOW_DEFINE_ERROR(shape_error);
/// A structurally invalid graph or graph edit (cycle, dangling edge, bad arity).
RLFLOW_DEFINE_ERROR(graph_error);
/// A corrupt, incompatible or unsound rule (file).
RLFLOW_DEFINE_ERROR(rule_error);
/// A corrupt or incompatible checkpoint.
RLFLOW_DEFINE_ERROR(checkpoint_error);
/// A training step that cannot go on (a NaN or infinite gradient or update).
RLFLOW_DEFINE_ERROR(training_error);
/// A failed CUDA, cuBLAS or cuDNN call.
RLFLOW_DEFINE_ERROR(cuda_error);
/// A file that cannot be read or written.
RLFLOW_DEFINE_ERROR(io_error);
/// A job that would need more memory or time than rlflow allows itself (a model whose
/// tensors would not fit in memory, a graph beyond the node limit).
RLFLOW_DEFINE_ERROR(resource_error);
/// A bad argument to a public function (a violated user precondition).
RLFLOW_DEFINE_ERROR(precondition_error);
/// An optimised graph that differs from its input on random inputs: it is never written.
RLFLOW_DEFINE_ERROR(verification_error);

#undef RLFLOW_DEFINE_ERROR

namespace detail {
[[noreturn]] inline void assertion_failed(const char* expr, const char* file, int line) {
    throw std::logic_error(std::string("rlflow internal invariant violated: ") + expr + " at " + file
                           + ":" + std::to_string(line));
}
}  // namespace detail

}  // namespace rlflow

/// Internal invariant. Compiled out unless `RLFLOW_ENABLE_ASSERTS` is defined (tests do),
/// or in debug builds.
#if defined(RLFLOW_ENABLE_ASSERTS) || !defined(NDEBUG)
#define RLFLOW_ASSERT(cond) \
    ((cond) ? static_cast<void>(0) : ::rlflow::detail::assertion_failed(#cond, __FILE__, __LINE__))
#else
#define RLFLOW_ASSERT(cond) static_cast<void>(0)
#endif

/// User precondition, always checked: throws `ErrorType` with the given message.
#define RLFLOW_EXPECTS(cond, ErrorType, message) \
    do {                                         \
        if (!(cond)) throw ErrorType(message);   \
    } while (false)
