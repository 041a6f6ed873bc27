"""Bad input raises an rlflow.Error subclass with rlflow's message; the interpreter survives."""

import pytest

import rlflow


def test_garbage_bytes_raise_an_onnx_error():
    with pytest.raises(rlflow.OnnxError, match="<bytes>: not a valid ONNX model"):
        rlflow.load(b"\x08\x07 this is not a model")


def test_a_missing_file_raises_an_os_error(tmp_path):
    missing = tmp_path / "nowhere.onnx"
    with pytest.raises(rlflow.IoError, match="no such file") as caught:
        rlflow.load(missing)
    assert isinstance(caught.value, OSError) and isinstance(caught.value, rlflow.Error)


def test_a_truncated_model_names_its_file(squeezenet_file, tmp_path):
    cut = tmp_path / "cut.onnx"
    cut.write_bytes(squeezenet_file.read_bytes()[:5000])
    with pytest.raises(rlflow.OnnxError, match="cut.onnx"):
        rlflow.load(cut)


def test_bad_arguments_raise_value_errors():
    with pytest.raises(rlflow.PreconditionError, match="unknown zoo model|no zoo model|not a zoo"):
        rlflow.zoo("no_such_model")
    g = rlflow.zoo("squeezenet1_1")
    with pytest.raises(ValueError, match="search='bogus' is not one of"):
        rlflow.optimize(g, search="bogus")
    with pytest.raises(rlflow.PreconditionError, match="--agent"):
        rlflow.optimize(g, search="mf", guard="none", cost="analytic")
    with pytest.raises(ValueError, match="cost='tpu' is not one of"):
        rlflow.Env(g, cost="tpu")
    with pytest.raises(ValueError, match="target='tpu' is not one of"):
        rlflow.optimize(g, target="tpu")
    with pytest.raises(rlflow.PreconditionError, match="unknown target 'tpu'"):
        rlflow.Env(g, target="tpu")


def test_a_corrupt_rules_file_raises_a_rule_error(tmp_path):
    bad = tmp_path / "bad.rules"
    bad.write_text("rlflow-rules 1\n\nrule broken\n  src s0 = NoSuchOp(x)\nend\n")
    with pytest.raises(rlflow.RuleError, match="bad.rules"):
        rlflow.rules.load(bad)


def test_errors_are_runtime_errors_with_the_message_alone():
    with pytest.raises(RuntimeError) as caught:
        rlflow.load(b"")
    assert not str(caught.value).startswith("[rlflow.")


def test_optimize_takes_the_command_lines_choices(squeezenet_file):
    """search, guard and ort_level are checked against the tables `rlflow optimize` reads:
    guard='cuda' is a choice (refused for a CPU target, as on the command line)."""
    g = rlflow.load(squeezenet_file)
    with pytest.raises(ValueError, match="guard='maybe' is not one of: auto, cuda, none, ort"):
        rlflow.optimize(g, guard="maybe")
    with pytest.raises(ValueError, match="ort_level='fast' is not one of: all, basic, disabled, extended"):
        rlflow.optimize(g, ort_level="fast")
    with pytest.raises(rlflow.Error, match="cuda"):
        rlflow.optimize(g, guard="cuda", target="ort-cpu", cost="analytic", search="greedy")
