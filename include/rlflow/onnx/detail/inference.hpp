#pragma once
/// \file
/// ONNX shape inference (libonnx) on a model's structure, run in a child process. libonnx
/// 1.12's inference functions crash on some malformed models (found by fuzzing: a node
/// that reads an undefined tensor; a ConvTranspose whose weight rank differs from its
/// input's), and a crash in a library must not take rlflow down with it.

#include <rlflow/core/isolated.hpp>
#include <rlflow/onnx/tensor_io.hpp>

#include <onnx/defs/schema.h>
#include <onnx/shape_inference/implementation.h>

namespace rlflow::onnx_io::detail {

/// Inference on a model's structure takes well under a second even for large models; a
/// child still running after this long is taken to hang.
inline constexpr std::chrono::seconds inference_time_limit{120};

/// What ONNX shape inference made of a model.
struct InferenceOutcome {
    bool ok = false;
    /// Why inference failed: libonnx's message, or that it crashed or hung.
    std::string error;
    /// The model with inferred value_info (when ok).
    pb::ModelProto model;
};

/// Runs ONNX shape inference on `structure` (a structure_only() copy); `strict` is what
/// Python's `check_model(full_check=True)` runs: types checked, errors raised.
[[nodiscard]] inline InferenceOutcome infer_shapes(const pb::ModelProto& structure, bool strict) {
    // Data propagation lets inference read shapes computed by Shape, Gather, Concat and the
    // like; the strict check is what check_model runs, without it.
    const ::onnx::ShapeInferenceOptions options{strict, strict ? 1 : 0, !strict};
    auto* registry = ::onnx::OpSchemaRegistry::Instance();
    // libonnx builds its schema tables on first use (12 ms); built here once, not in every
    // child, a child's inference costs well under a millisecond more than running it here.
    static const bool warmed = [registry] {
        pb::ModelProto tiny;
        constexpr int opset = 13;  // any opset with Relu
        tiny.add_opset_import()->set_version(opset);
        pb::GraphProto& g = *tiny.mutable_graph();
        auto* x = g.add_input();
        x->set_name("x");
        x->mutable_type()->mutable_tensor_type()->set_elem_type(pb::TensorProto::FLOAT);
        pb::NodeProto& relu = *g.add_node();
        relu.set_op_type("Relu");
        relu.add_input("x");
        relu.add_output("y");
        g.add_output()->set_name("y");
        ::onnx::shape_inference::InferShapes(tiny, registry);
        return true;
    }();
    (void)warmed;
    auto infer = [&]() {
        pb::ModelProto copy = structure;
        ::onnx::shape_inference::InferShapes(copy, registry, options);
        return copy.SerializeAsString();
    };
    InferenceOutcome outcome;
    IsolatedResult result = run_isolated(infer, inference_time_limit);
    if (result.status == IsolatedResult::Status::Unstarted) {  // no child to be had: run here
        try {
            result = {IsolatedResult::Status::Ok, infer()};
        } catch (const std::exception& e) {
            result = {IsolatedResult::Status::Failed, e.what()};
        }
    }
    switch (result.status) {
        case IsolatedResult::Status::Ok:
            outcome.ok = outcome.model.ParseFromString(result.bytes);
            if (!outcome.ok) outcome.error = "ONNX shape inference returned an unreadable model";
            break;
        case IsolatedResult::Status::Failed: outcome.error = result.bytes; break;
        case IsolatedResult::Status::TimedOut:
            outcome.error = "ONNX shape inference did not finish in "
                            + std::to_string(inference_time_limit.count()) + " s";
            break;
        default: outcome.error = "ONNX shape inference (libonnx) crashed on this model"; break;
    }
    return outcome;
}

}  // namespace rlflow::onnx_io::detail
