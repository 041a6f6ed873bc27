#!/usr/bin/env python3
"""Writes tests/data/ops/*.onnx: one-node models (after a scaling Mul) of the ops rlflow
imports as core ops beyond its first set, with the edge cases of each, for the ONNX
Runtime one-node checks in tests/onnx/ort_oracle.sh. ORT runs each model on random
inputs in [-1, 1]; the Mul by 4 first spreads them over [-4, 4] so that HardSigmoid and
HardSwish saturate on both sides and LeakyRelu sees both signs. rlflow's reference
executor must give ORT's outputs, and `rlflow info` must list no opaque op.

    /usr/bin/python3 tools/make_op_cases.py [OUT_DIR]
"""
import os
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

INT64_MAX = np.iinfo(np.int64).max
INT64_MIN = np.iinfo(np.int64).min


def model(name, opset, x_shape, y_shape, op, attributes=None, constants=None):
    """x -> Mul(x, 4) -> op(scaled, *constants) -> y, at `opset`."""
    constants = constants or []
    inits = [numpy_helper.from_array(np.array(4.0, dtype=np.float32), "four")]
    names = ["scaled"]
    for i, value in enumerate(constants):
        if value is None:
            names.append("")
            continue
        inits.append(numpy_helper.from_array(np.array(value, dtype=np.int64), f"c{i}"))
        names.append(f"c{i}")
    while names and names[-1] == "":
        names.pop()
    nodes = [
        helper.make_node("Mul", ["x", "four"], ["scaled"], name="scale"),
        helper.make_node(op, names, ["y"], name=name, **(attributes or {})),
    ]
    graph = helper.make_graph(nodes, name, [helper.make_tensor_value_info("x", TensorProto.FLOAT, x_shape)],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, y_shape)], inits)
    m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)], producer_name="rlflow-op-cases")
    m.ir_version = 8
    onnx.checker.check_model(m, full_check=True)
    return m


def cases():
    x4 = [2, 8, 6, 5]  # N, H, W, C as Swin's PatchMerging slices it
    return {
        "hard_sigmoid_default": model("hard_sigmoid", 14, [3, 17], [3, 17], "HardSigmoid"),
        "hard_sigmoid_alpha_beta": model("hard_sigmoid", 14, [3, 17], [3, 17], "HardSigmoid",
                                         {"alpha": 0.5, "beta": 0.25}),
        "hard_swish": model("hard_swish", 14, [2, 4, 9], [2, 4, 9], "HardSwish"),
        "leaky_relu_default": model("leaky_relu", 14, [4, 11], [4, 11], "LeakyRelu"),
        "leaky_relu_alpha": model("leaky_relu", 14, [4, 11], [4, 11], "LeakyRelu", {"alpha": 0.3}),
        # x[:, 0::2, 1::2, :] (PatchMerging's quarters)
        "slice_patch_merging": model("slice", 14, x4, [2, 4, 3, 5], "Slice",
                                     constants=[[0, 1], [INT64_MAX, INT64_MAX], [1, 2], [2, 2]]),
        # x[:, ::-1, -2:0:-2, :] (a flip, and negative indices with a negative step)
        "slice_negative_steps": model("slice", 14, x4, [2, 8, 2, 5], "Slice",
                                      constants=[[-1, -2], [INT64_MIN, 0], [1, -2], [-1, -2]]),
        # starts and ends far outside the axis, clamped; a step longer than the axis
        "slice_clamped": model("slice", 14, x4, [1, 3, 6, 1], "Slice",
                               constants=[[-100, 1, 100], [100, 100, -100], [0, 1, -1], [7, 3, -9]]),
        # steps far beyond the axis, which ORT clamps to its length: one index each
        "slice_huge_steps": model("slice", 14, x4, [2, 1, 1, 5], "Slice",
                                  constants=[[0, -1], [INT64_MAX, INT64_MIN], [1, 2], [INT64_MAX, INT64_MIN]]),
        "reduce_sum_axes": model("reduce_sum", 14, [3, 4, 5], [3, 5], "ReduceSum", {"keepdims": 0},
                                 constants=[[-2]]),
        "reduce_sum_all": model("reduce_sum", 14, [3, 4, 5], [1, 1, 1], "ReduceSum"),
        "reduce_max_axes": model("reduce_max", 14, [3, 4, 5], [1, 4, 1], "ReduceMax", {"axes": [0, -1]}),
        "reduce_max_keepdims_0": model("reduce_max", 14, [3, 4, 5], [3, 4], "ReduceMax",
                                       {"axes": [2], "keepdims": 0}),
    }


def main() -> None:
    out = sys.argv[1] if len(sys.argv) > 1 else "tests/data/ops"
    os.makedirs(out, exist_ok=True)
    for name, m in cases().items():
        onnx.save(m, os.path.join(out, name + ".onnx"))
        print(os.path.join(out, name + ".onnx"))


if __name__ == "__main__":
    main()
