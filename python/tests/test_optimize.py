"""rlflow.optimize: the result is equivalent, saved and reloaded; the GIL is released; Ctrl-C keeps the best graph."""

import json
import os
import re
import shutil
import signal
import subprocess
import threading
import time

import numpy as np
import pytest

import rlflow
from conftest import SOURCE_DIR

# The reference executor runs both graphs; rewrites reassociate float sums (fused
# convolutions, merged matmuls), so outputs agree within a tolerance, not bit for bit.
RTOL, ATOL = 1e-4, 1e-4


def fast_search(model, **kwargs):
    """A short greedy search under the analytic CPU roofline, without the ORT guard."""
    return rlflow.optimize(model, search="greedy", cost="analytic", guard="none", **kwargs)


def test_optimise_save_reload_gives_equal_outputs(squeezenet_file, tmp_path):
    g = rlflow.load(squeezenet_file)
    o, report = fast_search(g)
    assert report["written"] == "optimised" and report["verified"]
    assert report["cost_after_ms"] < report["cost_before_ms"]
    assert report["model"] == str(squeezenet_file)
    assert sum(report["rewrites_applied"].values()) == len(report["rewrite_sequence"]) > 0
    path = tmp_path / "o.onnx"
    o.save(path)
    again = rlflow.load(path)
    # Fused convolutions are written as Conv + activation, so the file has more op nodes
    # than the graph in memory, and fewer than the input.
    assert o.info()["op_nodes"] <= again.info()["op_nodes"] < g.info()["op_nodes"]
    want, got = g.run(seed=11), again.run(seed=11)
    for name in g.outputs:
        np.testing.assert_allclose(got[name], want[name], rtol=RTOL, atol=ATOL)


def test_the_command_line_and_the_module_give_the_same_report_and_bytes(squeezenet_file, tmp_path):
    """`rlflow optimize` and rlflow.optimize call the same function (rlflow::optimize): for one
    seed, the same report keys and values (the clocks' readings aside) and the same bytes."""
    cli = os.environ.get("RLFLOW_CLI")
    if not cli:
        pytest.skip("needs the command line beside the module (RLFLOW_CLI, set by ctest)")
    subprocess.run([cli, "optimize", str(squeezenet_file), "-o", str(tmp_path / "cli.onnx"), "--search", "greedy", "--cost",
                    "analytic", "--guard", "none", "--seed", "5", "--report", str(tmp_path / "cli.json")],
                   check=True, capture_output=True)
    o, report = fast_search(rlflow.load(squeezenet_file), seed=5)
    o.save(tmp_path / "py.onnx")
    with open(tmp_path / "cli.json") as f:
        from_cli = json.load(f)
    assert set(from_cli) == set(report)
    clocks = {"seconds", "peak_rss_bytes", "peak_search_bytes"}
    for proposer in from_cli["proposers"] + report["proposers"]:
        del proposer["seconds"]
    for key in set(from_cli) - clocks:
        assert from_cli[key] == report[key], key
    assert report["written"] == "optimised"
    assert (tmp_path / "cli.onnx").read_bytes() == (tmp_path / "py.onnx").read_bytes()


def test_every_flag_of_the_command_is_a_keyword_of_the_module():
    """rlflow.optimize takes the whole request `rlflow optimize` reads: each of the command's
    flags, dashes as underscores, but those about files and loading, which the module's
    model argument and the returned report stand for."""
    cli = os.environ.get("RLFLOW_CLI")
    if not cli:
        pytest.skip("needs the command line beside the module (RLFLOW_CLI, set by ctest)")
    text = subprocess.run([cli, "optimize", "--help"], check=True, capture_output=True, text=True).stdout
    flags = {m.replace("-", "_") for m in re.findall(r"^\s+(?:-\w,)?--([a-z-]+)", text, re.MULTILINE)}
    about_files = {"help", "output", "report", "batch", "dim", "data_inputs", "no_fold", "max_nodes", "weight_free"}
    assert len(flags) > 30
    assert flags - about_files == set(rlflow._core._optimize_keywords()) - {"progress"}  # progress: the command's bars are always on
    with pytest.raises(TypeError, match="unexpected keyword argument 'guard_level'.*guard_levels"):
        rlflow.optimize(rlflow.zoo("squeezenet1_1"), guard_level=["all"])
    with pytest.raises(rlflow.PreconditionError, match="guard_rounds must be 5 to 1000"):
        fast_search(rlflow.zoo("squeezenet1_1"), guard_rounds=2)
    with pytest.raises(rlflow.PreconditionError, match="guard_levels"):
        fast_search(rlflow.zoo("squeezenet1_1"), guard_levels=["fast"])


def test_the_guard_and_eqsat_options_reach_the_request(squeezenet_file):
    """The issue's example: guard levels and ORT level, and eqsat's limits, as keywords."""
    _, report = rlflow.optimize(squeezenet_file, search="eqsat", cost="analytic", guard="none", iter_limit=2, node_limit=3000,
                                extract="greedy", multi_rounds=0)
    assert report["eqsat"]["iteration_limit"] == 2 and report["eqsat"]["node_limit"] == 3000
    assert report["eqsat"]["iterations"] <= 2 and report["verified"]
    ort_dir = SOURCE_DIR / "tools" / "ort"
    if shutil.which("node") is None or not (ort_dir / "node_modules" / "onnxruntime-node").is_dir():
        pytest.skip("the guard needs Node.js and onnxruntime-node (bash tools/setup.sh)")
    _, report = rlflow.optimize(squeezenet_file, search="greedy", cost="analytic", budget=3, ort_level="all",
                                guard_levels=["basic"], guard_rounds=5, guard_candidates=1, propose="none", cost_cache="none")
    assert report["guard"]["rounds"] == 5
    assert report["ort_level"] == "all" and [p["model"] for p in report["proposers"]] == [report["cost_backend"]]
    if report["guard"]["candidates"]:  # timed at the target's level, then at the level that must not lose
        assert report["guard"]["levels"] == ["all", "basic"]
        assert {c["candidate"] for c in report["guard"]["candidates"]} == {1}


def test_onnxruntime_node_runs_the_saved_files_alike(squeezenet_file, tmp_path):
    """ONNX Runtime (the npm package tools/setup.sh installs) as the independent oracle."""
    ort_dir = SOURCE_DIR / "tools" / "ort"
    if shutil.which("node") is None or not (ort_dir / "node_modules" / "onnxruntime-node").is_dir():
        pytest.skip("needs Node.js and onnxruntime-node in tools/ort (bash tools/setup.sh)")
    o, _ = fast_search(rlflow.load(squeezenet_file))
    o.save(tmp_path / "o.onnx")
    line = subprocess.run(["node", str(ort_dir / "compare.js"), str(squeezenet_file), str(tmp_path / "o.onnx"), "--runs", "1"],
                          check=True, capture_output=True, text=True).stdout.strip().splitlines()[-1]
    result = json.loads(line)
    assert result["outputs"] == 1 and result["max_rel_diff"] < RTOL


def test_onnxruntime_runs_the_optimised_bytes_alike(squeezenet_file):
    ort = pytest.importorskip("onnxruntime", reason="needs ONNX Runtime's Python package")
    g = rlflow.load(squeezenet_file)
    o, _ = fast_search(g)
    feeds = g.random_inputs(seed=11)
    before = ort.InferenceSession(str(squeezenet_file)).run(None, feeds)
    after = ort.InferenceSession(o.to_bytes()).run(None, feeds)
    for x, y in zip(before, after):
        np.testing.assert_allclose(y, x, rtol=RTOL, atol=ATOL)


def test_optimise_takes_a_path_and_rules(squeezenet_file):
    builtin = rlflow.rules.load("builtin")
    o, report = fast_search(str(squeezenet_file), rules=builtin, budget=5)
    assert report["verified"] and len(report["rewrite_sequence"]) <= 5
    assert set(report["rewrites_applied"]) <= set(builtin.names)


def test_the_input_comes_back_when_nothing_is_cheaper(squeezenet_file, data_dir):
    g = rlflow.load(squeezenet_file)
    # Matrix rules (MatMul, Transpose): none matches SqueezeNet's convolutions.
    matrix_rules = rlflow.rules.load(data_dir / "rules" / "matrix_k2.rules")
    o, report = fast_search(g, rules=matrix_rules)
    assert report["written"] == "input" and report["rewrites"] == {}
    assert o.num_nodes == g.num_nodes and o.source == g.source


def test_a_second_thread_runs_while_optimize_works():
    ticks, done = [], threading.Event()

    def count():
        while not done.is_set():
            ticks.append(time.perf_counter())
            time.sleep(0.001)

    g = rlflow.zoo("inception_v3")
    worker = threading.Thread(target=count)
    worker.start()
    while not ticks:
        time.sleep(0.001)
    start = time.perf_counter()
    try:
        rlflow.optimize(g, search="taso", cost="analytic", guard="none", budget=60)
        end = time.perf_counter()
    finally:
        done.set()
        worker.join()
    # Were the GIL held through the call, the counter could not tick inside it (at most
    # once, before the call takes the GIL): its ticks would wait for the return.
    during = [t for t in ticks if start < t < end]
    assert len(during) >= 20, f"{len(during)} ticks in {end - start:.2f} s"


def test_ctrl_c_stops_the_search_with_the_best_graph_so_far():
    g = rlflow.zoo("inception_v3")
    seen, done = [], threading.Event()
    previous = signal.signal(signal.SIGINT, lambda *_: seen.append("python"))

    def press_ctrl_c():
        # Again and again until the search returns: a press that lands before the search
        # has taken over SIGINT goes to the Python handler above, and is only recorded.
        while not done.wait(0.5):
            os.kill(os.getpid(), signal.SIGINT)

    presser = threading.Thread(target=press_ctrl_c)
    presser.start()
    try:
        o, report = rlflow.optimize(g, search="taso", cost="analytic", guard="none", budget=1_000_000)
    finally:
        done.set()
        presser.join()
        signal.signal(signal.SIGINT, previous)
    assert report["stop_reason"] == "interrupted"
    assert report["verified"] and report["cost_after_ms"] <= report["cost_before_ms"]
    assert report["expansions"] < 1_000_000


def test_optimize_names_the_target_and_takes_the_clis_target_options():
    g = rlflow.zoo("squeezenet1_1")
    _, report = fast_search(g, budget=5, target="ort-cpu", ort_level="basic", ort_threads=1)
    assert report["target"] == "ort-cpu"
    assert report["target_description"] == "ort-cpu (ONNX Runtime, level basic, 1 thread)"
    # The default target is ONNX Runtime as a session runs by default: level all.
    _, default = fast_search(g, budget=5)
    assert default["target_description"].startswith("ort-cpu (ONNX Runtime, level all, ")
    with pytest.raises(ValueError, match="ort_level='fast' is not one of"):
        fast_search(g, ort_level="fast")


def test_portable_refuses_a_contrib_op_input(squeezenet_file, tmp_path):
    """As `rlflow optimize --portable`: standard ONNX ops only, so an input already holding
    an ONNX Runtime contrib op is refused, naming it; without it the op passes through."""
    o, _ = fast_search(rlflow.load(squeezenet_file))
    contrib = tmp_path / "ms.onnx"
    o.save(contrib, fused_conv_ms=True)
    with pytest.raises(rlflow.Error, match="com.microsoft.FusedConv.*--portable"):
        fast_search(rlflow.load(contrib), portable=True)
    _, report = fast_search(rlflow.load(contrib))
    assert report["needs_onnxruntime"] and not report["portable"]
    _, report = fast_search(rlflow.load(squeezenet_file), portable=True)
    assert report["portable"] and report["nonstandard_ops"] == [] and not report["needs_onnxruntime"]


def test_the_ledger_leaves_out_the_families_that_never_paid(squeezenet_file, tmp_path):
    """`ledger` is a file, none, or auto: the shipped ledger, for the default rules at
    ort-cpu, level all, under the target's own prices; a damaged one is refused with its
    name."""
    shipped_file = SOURCE_DIR / "share" / "rlflow" / "ledger_ort_cpu.json"
    shipped = json.loads(shipped_file.read_text())
    never = [f["family"] for f in shipped["families"] if not f["pays_on"] and f["slower_on"]]
    _, report = fast_search(squeezenet_file, ledger=str(shipped_file))
    assert report["ledger"]["file"] == str(shipped_file)
    assert sorted(report["ledger"]["dropped_families"]) == sorted(never)
    assert (report["ledger"]["dropped_rules"] > 0) == bool(never)
    # auto under a price model the user chose, or at another level: not applied.
    _, report = fast_search(squeezenet_file, target="ort-cpu", ort_level="all")
    assert report["ledger"] is None
    _, report = fast_search(squeezenet_file, ledger="none")
    assert report["ledger"] is None
    damaged = tmp_path / "ledger.json"
    damaged.write_text('{"target": "ort-cpu", "fam')
    with pytest.raises(rlflow.Error, match="ledger.json: not a usable rule ledger"):
        fast_search(squeezenet_file, ledger=str(damaged))
    ort_dir = SOURCE_DIR / "tools" / "ort"
    if shutil.which("node") is None or not (ort_dir / "node_modules" / "onnxruntime-node").is_dir():
        pytest.skip("auto under the target's own prices needs Node.js and onnxruntime-node (bash tools/setup.sh)")
    _, report = rlflow.optimize(squeezenet_file, search="greedy", budget=2, guard="none", target="ort-cpu", ort_level="all")
    assert report["ledger"]["file"].endswith("ledger_ort_cpu.json")
    assert sorted(report["ledger"]["dropped_families"]) == sorted(never)
