"""rlflow.load / rlflow.zoo / Graph: loading, info, saving and running."""

import numpy as np
import pytest

import rlflow


def test_zoo_names_list_every_model():
    names = rlflow.zoo_names()
    assert "resnet18" in names and "bert" in names and "squeezenet1_1" in names


def test_load_a_file_gives_the_graph_it_saved(squeezenet_file):
    g = rlflow.load(squeezenet_file)
    built = rlflow.zoo("squeezenet1_1", seed=3)
    assert g.num_nodes == built.num_nodes
    assert g.inputs == built.inputs and g.outputs == built.outputs
    assert g.source == str(squeezenet_file)
    # The same weights: the same outputs on the same inputs, bit for bit (one code path).
    a, b = g.run(seed=5), built.run(seed=5)
    for name in g.outputs:
        np.testing.assert_array_equal(a[name], b[name])


def test_info_counts_ops_and_parameters(squeezenet_file):
    info = rlflow.load(squeezenet_file).info()
    assert info["model"] == str(squeezenet_file)
    assert info["op_histogram"]["Conv2D"] == 26  # SqueezeNet 1.1: 2 + 8 fire modules x 3
    assert info["parameters"] > 1_000_000 and info["flops"] > 0
    assert info["opaque_nodes"] == 0
    assert info["opaque_ops"] == []


def test_info_names_the_opaque_ops_and_why(data_dir):
    # The same list `rlflow info --json` prints.
    info = rlflow.load(str(data_dir / "opaque" / "conv_sin_branches.onnx")).info()
    assert [(group["op_type"], group["reason"]) for group in info["opaque_ops"]] == [("Sin", "no core op for Sin")]
    assert info["opaque_ops"][0]["count"] == info["opaque_nodes"] == len(info["opaque_ops"][0]["nodes"])


def test_to_bytes_loads_back_and_in_onnx(squeezenet_file):
    g = rlflow.load(squeezenet_file)
    data = g.to_bytes()
    assert isinstance(data, bytes) and len(data) > 1_000_000  # the weights travel with it
    again = rlflow.load(data)
    assert again.source == "<bytes>" and again.num_nodes == g.num_nodes
    # (Debian's ONNX test data installs a bare `onnx` namespace; the package has onnx.checker.)
    pytest.importorskip("onnx.checker", reason="the onnx Python package checks the bytes when installed")
    import onnx

    model = onnx.load_model_from_string(data)
    onnx.checker.check_model(model)


def test_run_takes_given_inputs(squeezenet_file):
    g = rlflow.load(squeezenet_file)
    inputs = g.random_inputs(seed=9)
    assert list(inputs) == g.inputs and inputs[g.inputs[0]].shape == (1, 3, 224, 224)
    zeros = {g.inputs[0]: np.zeros((1, 3, 224, 224), dtype=np.float32)}
    drawn, given = g.run(inputs), g.run(zeros)
    out = g.outputs[0]
    assert drawn[out].shape == (1, 1000)
    np.testing.assert_array_equal(drawn[out], g.run(seed=9)[out])
    assert not np.array_equal(drawn[out], given[out])


def test_data_inputs_say_which_inputs_of_a_weight_free_export_carry_data(data_dir):
    path = data_dir / "resnet18_op13.onnx"  # exported without its weights: they are graph inputs
    g = rlflow.load(path)
    assert g.info()["op_histogram"]["Conv2D"] == 20 and g.info()["inputs"] == 43
    h = rlflow.load(path, data_inputs=["input"])
    assert h.inputs == ["input"] and h.info()["weights"] == 42
