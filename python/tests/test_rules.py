"""rlflow.rules: load, save, generate and verify."""

import pytest

import rlflow


def test_builtin_and_default_rule_sets():
    builtin, default = rlflow.rules.load("builtin"), rlflow.rules.load("default")
    assert 0 < len(builtin) < len(default)
    assert len(set(default.names)) == len(default)
    assert default.names[: len(builtin)] == builtin.names
    generated = default[len(builtin)]  # the generated library follows the built-in rules
    assert generated["name"] == default.names[len(builtin)] and generated["verification"] in {"proved", "tested"}
    assert "\nrule " + generated["name"] + "\n" in generated["text"]
    with pytest.raises(IndexError):
        default[len(default)]


def test_saved_rules_load_back(tmp_path):
    default = rlflow.rules.load("default")
    for name in ("rules.rules", "rules.pb"):
        path = tmp_path / name
        default.save(path)
        again = rlflow.rules.load(path)
        assert again.names == default.names and again.source == str(path)


def test_generate_and_verify_small_rules():
    rules, report = rlflow.rules.generate(max_ops=2, ops=["matmul", "add", "transpose"], jobs=2)
    assert len(rules) > 0
    assert report["proved"] + report["tested"] == len(rules) and report["max_ops"] == 2
    counts = rlflow.rules.verify(rules, jobs=2)
    assert counts["rules"] == len(rules) and counts["rejected"] == 0


def test_verify_rejects_an_unsound_rule(tmp_path):
    wrong = tmp_path / "wrong.rules"
    wrong.write_text(
        "rlflow-rules 1\n\nrule add_is_double\n  var w1 w2\n  src s0 = Add(w1, w2)\n  dst d0 = Add(w1, w1)\n"
        "  out s0 -> d0\n  status tested\nend\n"
    )
    with pytest.raises(rlflow.RuleError, match="add_is_double.*fails verification"):
        rlflow.rules.verify(wrong, prove=False)
