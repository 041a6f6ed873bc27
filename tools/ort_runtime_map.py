#!/usr/bin/python3
"""What ONNX Runtime does to a model, and what it leaves that its contrib ops could run.

    /usr/bin/python3 tools/ort_runtime_map.py MODEL.onnx... [--level all] [--json OUT.json]
        [--markdown OUT.md] [--keep DIR]

For every model, tools/ort/compare.js has ONNX Runtime (CPU execution provider) optimise it
at --level (default all, the level users run) and write the graph it runs
(SessionOptions.optimizedModelFilePath). Both graphs are read with the onnx package and
compared:

  - fusions: each node of the runtime's graph whose outputs some other op computed in the
    model, with the model's nodes it replaced. Those are the model's nodes that computed its
    outputs and every value that no longer exists in the runtime's graph, back to values
    that do. Grouped as "QuickGelu <- Sigmoid + Mul: 69".
  - removed: model ops with no counterpart (constant folding, Identity and Dropout removal).
  - layout: the ops the runtime added (NCHWc reorders), by the ops they feed, which is
    where the blocked layout breaks.
  - left: patterns in the runtime's graph that a contrib op (com.microsoft) could run as
    one kernel, and which the runtime's own fusions did not take:
      attention      MatMul [-> Mul/Div/Add/Reshape...] -> Softmax -> MatMul  (Attention / MultiHeadAttention)
      skip_layernorm Add -> LayerNormalization                        (SkipLayerNormalization)
      erf_gelu       Div -> Erf -> Add -> Mul -> Mul                  (Gelu / BiasGelu)
      bias_gelu      Add (1-D constant) -> Gelu                       (BiasGelu / FastGelu)
      transposed_matmul  Transpose (last two axes swapped) -> MatMul  (FusedMatMul)
      scaled_matmul  MatMul -> Mul/Div by a scalar constant           (FusedMatMul alpha)
      conv_activation  Conv -> Relu/Sigmoid/Tanh/LeakyRelu/Clip/HardSigmoid (FusedConv)
      silu           x * Sigmoid(x)                                   (QuickGelu)
      batched_matmul_bias  MatMul (rank > 2) -> Add (1-D constant)    (Gemm after a Reshape)

This is the map of what is left to win on a runtime: what a rewrite could still give it.
It prints a table per model; --json writes every model's report; --markdown a summary
table. Needs Node.js and tools/ort (npm ci) and the onnx Python package (python3-onnx).
"""

import argparse
import collections
import json
import os
import subprocess
import sys
import tempfile

import onnx
from onnx import numpy_helper

SOURCE_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
COMPARE_JS = os.path.join(SOURCE_DIR, "tools", "ort", "compare.js")
ACTIVATIONS = {"Relu", "Sigmoid", "Tanh", "LeakyRelu", "Clip", "HardSigmoid"}


def parse_args():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("models", nargs="+", help="ONNX models")
    parser.add_argument("--level", default="all", choices=["basic", "extended", "all"],
                        help="ONNX Runtime's graph optimisation level (default all)")
    parser.add_argument("--json", help="write every model's report here")
    parser.add_argument("--markdown", help="write a summary table (Markdown) here")
    parser.add_argument("--keep", help="keep the runtime's graphs in this folder")
    return parser.parse_args()


def op_name(node):
    """An op as the report names it: ONNX ops bare, others with their domain's last part."""
    domain = node.domain or "ai.onnx"
    if domain in ("ai.onnx", ""):
        return node.op_type
    return domain.replace("com.microsoft", "ms") + ":" + node.op_type


class Graph:
    """A graph's nodes with who produces and who reads each value."""

    def __init__(self, model):
        self.graph = model.graph
        self.nodes = list(model.graph.node)
        self.producer = {}
        self.readers = collections.defaultdict(list)
        for node in self.nodes:
            for out in node.output:
                if out:
                    self.producer[out] = node
            for i in node.input:
                if i:
                    self.readers[i].append(node)
        self.initializers = {t.name: t for t in model.graph.initializer}
        for node in self.nodes:
            if node.op_type == "Constant" and node.output:
                for a in node.attribute:
                    if a.name == "value":
                        self.initializers.setdefault(node.output[0], a.t)
        self.values = set(self.producer) | set(self.initializers) | {i.name for i in model.graph.input}

    def constant(self, name):
        """The value of a constant input, or None."""
        tensor = self.initializers.get(name)
        return None if tensor is None else numpy_helper.to_array(tensor)

    def only_reader(self, name):
        readers = self.readers.get(name, [])
        return readers[0] if len(readers) == 1 else None


def foldable_nodes(g):
    """The model's nodes whose values the runtime computes once, at load: constants, the
    shapes of (static) tensors, and whatever reads only those. In topological order."""
    folded = set()
    known = set(g.initializers)
    for node in g.nodes:
        inputs = [i for i in node.input if i]
        if node.op_type in ("Constant", "Shape", "Size") or all(i in known for i in inputs):
            folded.add(id(node))
            known.update(o for o in node.output if o)
    return folded


def aliases(model, runtime):
    """The model's value each runtime value stands for, where the runtime renamed it:
    an NCHWc op named "<value>_nchwc" computes <value> in the blocked layout, a reorder
    passes its value through, and a fused op named "<model node>/<Fusion>/" computes
    that node's output."""
    by_name = {n.name: n for n in model.nodes if n.name}
    alias = {}
    for node in runtime.nodes:
        if not node.output or node.output[0] in model.values:
            continue
        if node.name.endswith("_nchwc") and node.name[:-len("_nchwc")] in model.values:
            alias[node.output[0]] = node.name[:-len("_nchwc")]
        elif node.op_type == "ReorderInput":
            alias[node.output[0]] = alias.get(node.input[0], node.input[0])
        else:
            owner = max((name for name in by_name if node.name.startswith(name + "/")), key=len, default=None)
            if owner is not None:
                alias[node.output[0]] = by_name[owner].output[0]
    for node in runtime.nodes:
        if node.op_type == "ReorderOutput" and node.output[0] in model.values:
            alias.setdefault(node.input[0], node.output[0])
    return alias


def replaced_nodes(node, model, present, alias, folded):
    """The model's nodes a runtime node replaced: the producers of its outputs, and of every
    value they read that the runtime no longer has and no other model node reads, short of
    folded constants."""
    seen = []
    ids = set()
    outputs = [alias.get(o, o) for o in node.output]
    stack = [model.producer[o] for o in outputs if o in model.producer]
    while stack:
        n = stack.pop()
        if id(n) in ids or id(n) in folded:
            continue
        ids.add(id(n))
        seen.append(n)
        for i in n.input:
            # A value some other op of the model also reads is computed for that op too:
            # the walk stops there (a residual sum read by the next block's Conv and Add).
            if i and i not in present and i in model.producer and all(
                    id(r) in ids or id(r) in folded for r in model.readers.get(i, [])):
                stack.append(model.producer[i])
    return seen


def is_reorder(node):
    return node.domain == "com.microsoft.nchwc" and node.op_type in ("ReorderInput", "ReorderOutput")


def fusions(model, runtime):
    """(runtime op, the model ops it replaced) -> count; the model nodes some runtime op
    computes; the model nodes folded at load."""
    alias = aliases(model, runtime)
    present = {alias.get(v, v) for v in runtime.values}
    folded = foldable_nodes(model)
    groups = []  # (runtime node, the model nodes it replaced)
    owner = {}  # id(model node) -> index into groups
    for node in runtime.nodes:
        if is_reorder(node):
            continue
        replaced = replaced_nodes(node, model, present, alias, folded)
        for n in replaced:
            owner.setdefault(id(n), len(groups))
        groups.append((node, replaced))
    # A model op whose output the runtime no longer has, left over, went into the op that
    # computes its input (an NCHWc Conv named after its Conv's output also adds the
    # residual and applies the Relu that follow it).
    direct = set(owner)
    for n in model.nodes:
        if id(n) in owner or id(n) in folded or any(o in present for o in n.output if o):
            continue
        inputs = [model.producer[i] for i in n.input if i in model.producer and id(model.producer[i]) in owner]
        # Prefer the op a runtime node computes itself over one attached here before (a
        # residual Add reads its block's Conv and the previous block's sum).
        inputs.sort(key=lambda p: id(p) not in direct)
        source = (inputs or [None])[0]
        if source is not None:
            owner[id(n)] = owner[id(source)]
            groups[owner[id(n)]][1].append(n)
    counts = collections.Counter()
    for node, replaced in groups:
        if not replaced:
            continue
        before = sorted(collections.Counter(op_name(n) for n in replaced).items())
        label = " + ".join(op if k == 1 else f"{k} {op}" for op, k in before)
        if label == node.op_type and node.domain in ("", "com.microsoft.nchwc"):
            continue  # the same op (NCHWc: the same op in the blocked layout)
        counts[(op_name(node), label)] += 1
    return counts, set(owner), folded


def layout_breaks(runtime):
    """Where the runtime leaves its blocked layout: each reorder back to NCHW, by the ops
    that read it (ops that cannot run on NCHWc)."""
    breaks = collections.Counter()
    for node in runtime.nodes:
        if is_reorder(node) and node.op_type == "ReorderOutput":
            readers = sorted({op_name(r) for r in runtime.readers.get(node.output[0], [])})
            breaks[", ".join(readers) or "graph output"] += 1
    return breaks


def is_scalar_constant(graph, name):
    value = graph.constant(name)
    return value is not None and value.size == 1


def is_vector_constant(graph, name):
    value = graph.constant(name)
    return value is not None and value.ndim == 1


def left_patterns(g):
    """Patterns in the runtime's graph that one contrib op could run (see the module doc)."""
    found = collections.Counter()
    for node in g.nodes:
        if node.domain:
            continue
        op = node.op_type
        if op == "Softmax":
            # attention: MatMul [-> Mul/Div scale] [-> Add mask] -> Softmax -> MatMul
            source = g.producer.get(node.input[0])
            while source is not None and source.op_type in ("Add", "Mul", "Div", "Reshape") and not source.domain:
                source = g.producer.get(source.input[0])
            after = g.only_reader(node.output[0])
            if source is not None and source.op_type in ("MatMul", "FusedMatMul") and after is not None \
                    and after.op_type in ("MatMul", "FusedMatMul"):
                found["attention"] += 1
        elif op == "LayerNormalization":
            add = g.producer.get(node.input[0])
            if add is not None and add.op_type == "Add" and not add.domain:
                found["skip_layernorm"] += 1
        elif op == "Erf":
            found["erf_gelu"] += 1
        elif op == "Gelu":
            add = g.producer.get(node.input[0])
            if add is not None and add.op_type == "Add" and any(is_vector_constant(g, i) for i in add.input):
                found["bias_gelu"] += 1
        elif op == "MatMul":
            for i in node.input:
                t = g.producer.get(i)
                if t is not None and t.op_type == "Transpose" and not t.domain:
                    perm = next((list(a.ints) for a in t.attribute if a.name == "perm"), None)
                    if perm and len(perm) >= 2 and perm[-2:] == [len(perm) - 1, len(perm) - 2] \
                            and perm[:-2] == list(range(len(perm) - 2)):
                        found["transposed_matmul"] += 1
                        break
            reader = g.only_reader(node.output[0])
            if reader is not None and not reader.domain and reader.op_type in ("Mul", "Div") \
                    and any(is_scalar_constant(g, i) for i in reader.input):
                found["scaled_matmul"] += 1
            if reader is not None and not reader.domain and reader.op_type == "Add" \
                    and any(is_vector_constant(g, i) for i in reader.input):
                found["batched_matmul_bias"] += 1
        elif op == "Conv":
            reader = g.only_reader(node.output[0])
            if reader is not None and not reader.domain and reader.op_type in ACTIVATIONS:
                found["conv_activation"] += 1
        elif op == "Sigmoid":
            x = node.input[0]
            for reader in g.readers.get(node.output[0], []):
                if reader.op_type == "Mul" and not reader.domain and x in reader.input:
                    found["silu"] += 1
    return found


def runtime_graph(path, level, keep):
    out_dir = keep or tempfile.mkdtemp(prefix="rlflow_runtime_map_")
    os.makedirs(out_dir, exist_ok=True)
    out = os.path.join(out_dir, os.path.basename(path).replace(".onnx", f"_ort_{level}.onnx"))
    result = subprocess.run(["node", COMPARE_JS, path, "--level", level, "--write-optimized", out],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    if result.returncode != 0:
        raise RuntimeError(f"{path}: ONNX Runtime could not optimise it: {result.stderr.strip()[-400:]}")
    info = json.loads(result.stdout.strip().splitlines()[-1])
    model = onnx.load(out, load_external_data=False)
    if not keep:
        os.remove(out)
        os.rmdir(out_dir)
    return model, info


def report(path, level, keep):
    model = Graph(onnx.load(path, load_external_data=False))
    runtime_model, info = runtime_graph(path, level, keep)
    runtime = Graph(runtime_model)
    groups, taken, folded = fusions(model, runtime)
    kept = {id(n) for n in model.nodes if id(n) in taken}
    constant = collections.Counter(op_name(n) for n in model.nodes if id(n) in folded)
    removed = collections.Counter(op_name(n) for n in model.nodes if id(n) not in kept and id(n) not in folded)
    return {
        "model": path,
        "level": level,
        "ort_version": info.get("ort_version"),
        "nodes": len(model.nodes),
        "runtime_nodes": len(runtime.nodes),
        "runtime_ops": dict(collections.Counter(op_name(n) for n in runtime.nodes).most_common()),
        "fusions": [{"op": op, "replaced": label, "count": k} for (op, label), k in groups.most_common()],
        "folded": dict(constant.most_common()),
        "removed": dict(removed.most_common()),
        "reorders": sum(1 for n in runtime.nodes if is_reorder(n)),
        "layout_breaks": [{"feeds": feeds, "count": k} for feeds, k in layout_breaks(runtime).most_common()],
        "left": dict(left_patterns(runtime).most_common()),
    }


def print_report(r):
    print(f"{r['model']}: {r['nodes']} nodes -> {r['runtime_nodes']} in ONNX Runtime {r['ort_version']} at level {r['level']}")
    for f in r["fusions"]:
        print(f"  fused    {f['count']:4d} x {f['op']} <- {f['replaced']}")
    if r["folded"]:
        print("  folded   " + ", ".join(f"{k} {op}" for op, k in r["folded"].items()))
    if r["removed"]:
        print("  removed  " + ", ".join(f"{k} {op}" for op, k in r["removed"].items()))
    if r["reorders"]:
        print(f"  layout   {r['reorders']} NCHWc reorders; back to NCHW before: "
              + ", ".join(f"{f['feeds']} ({f['count']})" for f in r["layout_breaks"]))
    if r["left"]:
        print("  left     " + ", ".join(f"{k} {p}" for p, k in r["left"].items()))
    else:
        print("  left     nothing a contrib op could run as one kernel")


def markdown(reports):
    lines = ["| model | nodes | runtime nodes | fused by the runtime | layout reorders | left for contrib ops |",
             "|---|---|---|---|---|---|"]
    for r in reports:
        fused = "; ".join(f"{f['count']} {f['op']} ({f['replaced']})" for f in r["fusions"][:6]) or "none"
        if len(r["fusions"]) > 6:
            fused += f"; {len(r['fusions']) - 6} more kinds"
        layout = r["reorders"]
        left = ", ".join(f"{k} {p}" for p, k in r["left"].items()) or "none"
        lines.append(f"| {os.path.basename(r['model'])} | {r['nodes']} | {r['runtime_nodes']} | {fused} | {layout} | {left} |")
    return "\n".join(lines) + "\n"


def main():
    args = parse_args()
    reports = []
    for path in args.models:
        try:
            r = report(path, args.level, args.keep)
        except (RuntimeError, OSError, onnx.onnx_cpp2py_export.checker.ValidationError) as e:
            print(f"ort_runtime_map: {e}", file=sys.stderr)
            return 2
        print_report(r)
        reports.append(r)
    if args.json:
        with open(args.json, "w") as f:
            json.dump(reports, f, indent=1)
    if args.markdown:
        with open(args.markdown, "w") as f:
            f.write(markdown(reports))
    return 0


if __name__ == "__main__":
    sys.exit(main())
