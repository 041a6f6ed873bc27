#!/usr/bin/env python3
"""Writes tests/data/opaque/conv_sin_branches.onnx: a small CNN with an op rlflow does not
execute (Sin) between two rewritable parts, for the region-by-region verification tests.

    x[1,8,16,16] -> Conv 3x3 -> Relu -> Sin -> { Conv 1x1 -> Relu, Conv 1x1 -> Relu } -> Concat -> y

The conv+relu pair before Sin and the two parallel 1x1 branches after it are what the
built-in rules rewrite; Sin stays as it is. Weights are seeded initializers.

    /usr/bin/python3 tools/make_opaque_model.py [OUT]
"""
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper


def main() -> None:
    out = sys.argv[1] if len(sys.argv) > 1 else "tests/data/opaque/conv_sin_branches.onnx"
    rng = np.random.default_rng(11)

    def weight(name, shape):
        fan_in = int(np.prod(shape[1:])) if len(shape) > 1 else 1
        bound = 1.0 / np.sqrt(fan_in)
        return numpy_helper.from_array(rng.uniform(-bound, bound, shape).astype(np.float32), name)

    inits = [
        weight("stem.w", (16, 8, 3, 3)), weight("stem.b", (16,)),
        weight("left.w", (16, 16, 1, 1)), weight("left.b", (16,)),
        weight("right.w", (16, 16, 1, 1)), weight("right.b", (16,)),
    ]
    nodes = [
        helper.make_node("Conv", ["x", "stem.w", "stem.b"], ["stem"], name="stem_conv", pads=[1, 1, 1, 1]),
        helper.make_node("Relu", ["stem"], ["stem_relu"], name="stem_relu"),
        helper.make_node("Sin", ["stem_relu"], ["wave"], name="wave"),
        helper.make_node("Conv", ["wave", "left.w", "left.b"], ["left"], name="left_conv"),
        helper.make_node("Relu", ["left"], ["left_relu"], name="left_relu"),
        helper.make_node("Conv", ["wave", "right.w", "right.b"], ["right"], name="right_conv"),
        helper.make_node("Relu", ["right"], ["right_relu"], name="right_relu"),
        helper.make_node("Concat", ["left_relu", "right_relu"], ["y"], name="join", axis=1),
    ]
    graph = helper.make_graph(
        nodes, "conv_sin_branches",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 8, 16, 16])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 32, 16, 16])],
        initializer=inits)
    model = helper.make_model(graph, producer_name="rlflow-tests", opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    model = onnx.shape_inference.infer_shapes(model)
    onnx.checker.check_model(model)
    onnx.save(model, out)


if __name__ == "__main__":
    main()
