#!/usr/bin/env python3
"""Writes tests/data/ops/*.onnx: one-node models (after a scaling Mul) of the ops rlflow
imports as core ops beyond its first set, with the edge cases of each, for the ONNX
Runtime one-node checks in tests/onnx/ort_oracle.sh. ORT runs each model on random
inputs in [-1, 1]; the Mul by 4 first spreads them over [-4, 4] so that HardSigmoid and
HardSwish saturate on both sides and LeakyRelu sees both signs. rlflow's reference
executor must give ORT's outputs, and `rlflow info` must list no opaque op.

    /usr/bin/python3 tools/make_op_cases.py [OUT_DIR [CONTRIB_DIR]]

It also writes tests/data/contrib/*.onnx: a convolution and its activation (Relu, Sigmoid,
Tanh) in standard ops, which `rlflow optimize --fused-conv-ms` writes as one node of ONNX
Runtime's contrib op com.microsoft.FusedConv; the same oracle checks that ORT runs that
node to the standard ops' outputs.
"""
import os
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

INT64_MAX = np.iinfo(np.int64).max
INT64_MIN = np.iinfo(np.int64).min


def model(name, opset, x_shape, y_shape, op, attributes=None, constants=None):
    """x -> Mul(x, 4) -> op(scaled, *constants) -> y, at `opset`. A constant is int64 unless
    it is a float32 numpy array; None leaves an optional input out."""
    constants = constants or []
    inits = [numpy_helper.from_array(np.array(4.0, dtype=np.float32), "four")]
    names = ["scaled"]
    for i, value in enumerate(constants):
        if value is None:
            names.append("")
            continue
        dtype = np.float32 if isinstance(value, np.ndarray) and value.dtype == np.float32 else np.int64
        inits.append(numpy_helper.from_array(np.array(value, dtype=dtype), f"c{i}"))
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
    # Debian's onnx (1.12) knows opsets up to 17; ONNX Runtime checks the newer ones itself.
    if opset <= onnx.defs.onnx_opset_version():
        onnx.checker.check_model(m, full_check=True)
    return m


def f32(*values):
    return np.array(values, dtype=np.float32)


def gelu_erf_pattern():
    """The Erf form of GELU as PyTorch exports it before opset 20, after the scaling Mul:
    (x * (Erf(x / sqrt 2) + 1)) * 0.5, which rlflow imports as one Gelu."""
    shape = [2, 5, 7]
    inits = [numpy_helper.from_array(np.array(v, dtype=np.float32), n)
             for v, n in [(4.0, "four"), (np.sqrt(2.0), "root_two"), (1.0, "one"), (0.5, "half")]]
    nodes = [
        helper.make_node("Mul", ["x", "four"], ["scaled"], name="scale"),
        helper.make_node("Div", ["scaled", "root_two"], ["d"], name="div"),
        helper.make_node("Erf", ["d"], ["e"], name="erf"),
        helper.make_node("Add", ["e", "one"], ["a"], name="add"),
        helper.make_node("Mul", ["scaled", "a"], ["m"], name="mul"),
        helper.make_node("Mul", ["m", "half"], ["y"], name="half_mul"),
    ]
    graph = helper.make_graph(nodes, "gelu_erf", [helper.make_tensor_value_info("x", TensorProto.FLOAT, shape)],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, shape)], inits)
    m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], producer_name="rlflow-op-cases")
    m.ir_version = 8
    onnx.checker.check_model(m, full_check=True)
    return m


def typed_mask():
    """The typed ops as a transformer export uses them on data, after the scaling Mul: a
    padding mask from int64 token ids (compare.js draws them 0 or 1), values outside
    [-0.5, 0.5] found by Less/Greater/Or/Not, both masks joined by And and applied by Where;
    the ids cast to float and expanded over a new leading axis, the scaled values cast
    (truncated) to int64, and an embedding table gathered by the ids."""
    ids_shape, x_shape = [2, 4], [2, 3, 4]
    inits = [numpy_helper.from_array(np.array(v, dtype=dt), n) for v, dt, n in [
        (4.0, np.float32, "four"), (0, np.int64, "zero"), ([1], np.int64, "axes"), (0.5, np.float32, "half"),
        (-0.5, np.float32, "minus_half"), (-1e9, np.float32, "low"), ([3, 2, 4], np.int64, "expand_to")]]
    inits.append(numpy_helper.from_array(np.linspace(-1, 1, 15, dtype=np.float32).reshape(5, 3), "table"))
    nodes = [
        helper.make_node("Mul", ["x", "four"], ["scaled"], name="scale"),
        helper.make_node("Equal", ["ids", "zero"], ["pad"], name="pad"),
        helper.make_node("Unsqueeze", ["pad", "axes"], ["mask"], name="mask"),
        helper.make_node("Greater", ["scaled", "half"], ["big"], name="big"),
        helper.make_node("Less", ["scaled", "minus_half"], ["small"], name="small"),
        helper.make_node("Or", ["big", "small"], ["outside"], name="outside"),
        helper.make_node("Not", ["outside"], ["inside"], name="inside"),
        helper.make_node("And", ["mask", "inside"], ["hidden"], name="hidden"),
        helper.make_node("Where", ["hidden", "low", "scaled"], ["y"], name="where"),
        helper.make_node("Cast", ["ids"], ["ids_float"], name="ids_float", to=TensorProto.FLOAT),
        helper.make_node("Expand", ["ids_float", "expand_to"], ["ids_expanded"], name="expand"),
        helper.make_node("Cast", ["scaled"], ["truncated"], name="truncate", to=TensorProto.INT64),
        helper.make_node("Gather", ["table", "ids"], ["embedded"], name="embed"),
    ]
    outputs = [helper.make_tensor_value_info("y", TensorProto.FLOAT, x_shape),
               helper.make_tensor_value_info("ids_expanded", TensorProto.FLOAT, [3, 2, 4]),
               helper.make_tensor_value_info("truncated", TensorProto.INT64, x_shape),
               helper.make_tensor_value_info("embedded", TensorProto.FLOAT, ids_shape + [3])]
    graph = helper.make_graph(nodes, "typed_mask", [helper.make_tensor_value_info("x", TensorProto.FLOAT, x_shape),
                                                    helper.make_tensor_value_info("ids", TensorProto.INT64, ids_shape)],
                              outputs, inits)
    m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 14)], producer_name="rlflow-op-cases")
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
        # Resize: an FPN's nearest upsampling, segmentation heads' bilinear ones (sizes that
        # are no whole multiple), align_corners, downsampling, and the rounding modes.
        "resize_nearest_asymmetric_floor": model("resize", 13, [1, 2, 3, 4], [1, 2, 6, 8], "Resize",
                                                 {"mode": "nearest", "coordinate_transformation_mode": "asymmetric",
                                                  "nearest_mode": "floor"},
                                                 constants=[None, f32(1, 1, 2, 2)]),
        "resize_nearest_half_pixel_prefer_ceil": model("resize", 13, [1, 2, 8, 6], [1, 2, 5, 9], "Resize",
                                                       {"mode": "nearest", "nearest_mode": "round_prefer_ceil"},
                                                       constants=[None, None, [1, 2, 5, 9]]),
        "resize_nearest_align_corners": model("resize", 13, [1, 1, 3, 3], [1, 1, 5, 7], "Resize",
                                              {"mode": "nearest", "coordinate_transformation_mode": "align_corners"},
                                              constants=[None, None, [1, 1, 5, 7]]),
        "resize_linear_half_pixel": model("resize", 13, [1, 3, 5, 4], [1, 3, 10, 8], "Resize", {"mode": "linear"},
                                          constants=[None, f32(1, 1, 2, 2)]),
        "resize_linear_pytorch_half_pixel": model("resize", 13, [1, 3, 4, 5], [1, 3, 7, 9], "Resize",
                                                  {"mode": "linear", "coordinate_transformation_mode": "pytorch_half_pixel"},
                                                  constants=[None, None, [1, 3, 7, 9]]),
        "resize_linear_align_corners": model("resize", 13, [1, 2, 4, 4], [1, 2, 9, 9], "Resize",
                                             {"mode": "linear", "coordinate_transformation_mode": "align_corners"},
                                             constants=[None, None, [1, 2, 9, 9]]),
        # 11 -> 13 by sizes: scales 13/11 would size it 12 in float32, so the export keeps sizes
        "resize_linear_uneven_sizes": model("resize", 13, [1, 2, 11, 4], [1, 2, 13, 4], "Resize", {"mode": "linear"},
                                            constants=[None, None, [1, 2, 13, 4]]),
        "resize_linear_down": model("resize", 13, [1, 2, 8, 10], [1, 2, 4, 6], "Resize", {"mode": "linear"},
                                    constants=[None, f32(1, 1, 0.5, 0.6)]),
        "resize_linear_opset11": model("resize", 11, [1, 2, 3, 3], [1, 2, 6, 6], "Resize",
                                       {"mode": "linear", "coordinate_transformation_mode": "pytorch_half_pixel"},
                                       constants=[f32(), f32(1, 1, 2, 2)]),
        "instance_norm": model("instance_norm", 14, [2, 3, 4, 5], [2, 3, 4, 5], "InstanceNormalization",
                               {"epsilon": 1e-3}, constants=[f32(0.5, 1.0, -2.0), f32(0.0, 1.0, 0.25)]),
        "einsum_attention": model("einsum", 14, [1, 2, 5, 4], [1, 2, 5, 3], "Einsum", {"equation": "bhqd,bhkd->bhqk"},
                                  constants=[np.linspace(-1, 1, 24, dtype=np.float32).reshape(1, 2, 3, 4)]),
        "einsum_grouped": model("einsum", 14, [2, 3, 4], [3, 2, 5], "Einsum", {"equation": "ijc,ck->jik"},
                                constants=[np.linspace(-2, 2, 20, dtype=np.float32).reshape(4, 5)]),
        "conv_transpose_stride2": model("conv_transpose", 14, [1, 4, 5, 5], [1, 3, 10, 10], "ConvTranspose",
                                        {"strides": [2, 2], "pads": [1, 1, 1, 1], "output_padding": [1, 1]},
                                        constants=[np.linspace(-1, 1, 108, dtype=np.float32).reshape(4, 3, 3, 3),
                                                   f32(0.1, -0.2, 0.3)]),
        "conv_transpose_groups_dilation": model("conv_transpose", 14, [1, 4, 3, 4], [1, 4, 4, 8], "ConvTranspose",
                                                {"group": 2, "dilations": [2, 1], "strides": [1, 2],
                                                 "pads": [0, 1, 1, 0]},
                                                constants=[np.cos(np.arange(48, dtype=np.float32)).reshape(4, 2, 2, 3)]),
        "gelu_erf_pattern": gelu_erf_pattern(),
        "gelu_opset20": model("gelu", 20, [3, 11], [3, 11], "Gelu"),
        "gelu_tanh_opset20": model("gelu", 20, [3, 11], [3, 11], "Gelu", {"approximate": "tanh"}),
        "typed_mask": typed_mask(),
        # indices out of order, repeated and negative: a core Gather, not a slice
        "gather_scattered": model("gather", 14, [3, 5, 2], [3, 2, 2, 2], "Gather", {"axis": 1},
                                  constants=[np.array([[4, 0], [-1, 4]], dtype=np.int64)]),
        # float data repeated over a new leading axis and along a size-1 one
        "expand_broadcast": model("expand", 14, [4, 1], [2, 4, 3], "Expand", constants=[[2, 1, 3]]),
    }


def conv_activation(activation):
    """x -> Conv(3x3, pads 1, stride 1, bias) -> activation -> y at opset 17, seeded weights:
    what rlflow fuses into one convolution with an activation."""
    rng = np.random.default_rng(17)
    w = rng.uniform(-0.5, 0.5, size=(6, 4, 3, 3)).astype(np.float32)
    b = rng.uniform(-0.5, 0.5, size=(6,)).astype(np.float32)
    nodes = [
        helper.make_node("Conv", ["x", "w", "b"], ["conv"], name="conv", kernel_shape=[3, 3], pads=[1, 1, 1, 1]),
        helper.make_node(activation, ["conv"], ["y"], name="activation"),
    ]
    graph = helper.make_graph(nodes, "conv_" + activation.lower(),
                              [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 4, 9, 7])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 6, 9, 7])],
                              [numpy_helper.from_array(w, "w"), numpy_helper.from_array(b, "b")])
    m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], producer_name="rlflow-op-cases")
    m.ir_version = 8
    onnx.checker.check_model(m, full_check=True)
    return m


def contrib_cases():
    return {f"conv_{a.lower()}": conv_activation(a) for a in ("Relu", "Sigmoid", "Tanh")}


def main() -> None:
    out = sys.argv[1] if len(sys.argv) > 1 else "tests/data/ops"
    contrib = sys.argv[2] if len(sys.argv) > 2 else "tests/data/contrib"
    for folder, models in ((out, cases()), (contrib, contrib_cases())):
        os.makedirs(folder, exist_ok=True)
        for name, m in models.items():
            onnx.save(m, os.path.join(folder, name + ".onnx"))
            print(os.path.join(folder, name + ".onnx"))


if __name__ == "__main__":
    main()
