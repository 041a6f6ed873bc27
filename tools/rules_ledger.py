#!/usr/bin/python3
"""The ledger of what pays: every rule family measured alone on real exports, and
docs/rules.md written from it.

    /usr/bin/python3 tools/rules_ledger.py [--build BUILD] [--work DIR] [--doc docs/rules.md]
        [--measure-args "..."] MODEL.onnx... [--weight-free EXPORT.onnx...]
    /usr/bin/python3 tools/rules_ledger.py --from-ledger LEDGER.json [--doc docs/rules.md]

Runs `rlflow rules measure MODEL... -o WORK/ledger.json` at the default target (ONNX
Runtime at level all, a thread per physical core), then writes the Markdown page: per
family, the models it was measured on, its median ratio (time of the model with the family
applied over the input's; below 1 is faster), its best, and the models where it paid (a
second, separate comparison confirmed it faster: sign test p < 0.05 and at least the
ledger's min_gain) or was slower. Weight-free exports (export_params=False, as in
tests/data) are first given seeded random weights with `rlflow weights`.
--from-ledger renders a ledger already measured. Slow (minutes per model): never run by
the unit tests. Time it on a quiet machine.
"""

import argparse
import json
import os
import shlex
import subprocess
import sys

SOURCE_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

# What each model's design is known for, for the table (models not listed show no design).
DESIGNS = {
    "resnet18": "residual", "resnet50": "residual bottleneck", "resnext50_32x4d": "grouped bottleneck",
    "resnext101_32x8d": "grouped bottleneck", "wide_resnet50_2": "wide residual", "inception_v3": "inception",
    "googlenet": "inception", "squeezenet1_0": "fire modules", "squeezenet1_1": "fire modules",
    "densenet121": "dense", "mobilenet_v3_large": "depthwise + SE + hard-swish", "mnasnet1_0": "depthwise",
    "efficientnet_b1": "depthwise + SE + SiLU", "regnet_x_400mf": "grouped", "regnet_y_400mf": "grouped + SE",
    "regnet_y_800mf": "grouped + SE", "shufflenet_v2_x0_5": "channel shuffle", "vit_b_16": "transformer",
    "swin_t": "windowed transformer", "transformer": "transformer encoder", "masked_transformer": "masked transformer encoder",
    "regnet_x_1_6gf": "grouped", "regnet_y_1_6gf": "grouped + SE", "regnet_y_3_2gf": "grouped + SE",
    "resnext101_64x4d": "grouped bottleneck", "convnext_tiny": "depthwise 7x7 + LayerNorm",
    "regnet_y_8gf": "grouped + SE", "regnet_x_8gf": "grouped",
}


def parse_args():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("models", nargs="*", help="ONNX models with their weights")
    parser.add_argument("--weight-free", nargs="*", default=[], help="weight-free exports (data input named 'input')")
    parser.add_argument("--build", default=os.path.join(SOURCE_DIR, "build"), help="the CMake build folder")
    parser.add_argument("--work", help="folder for the weighted copies and the ledger (default BUILD/rules_ledger)")
    parser.add_argument("--doc", default=os.path.join(SOURCE_DIR, "docs", "rules.md"), help="the page to write")
    parser.add_argument("--measure-args", default="", help="extra arguments for rlflow rules measure")
    parser.add_argument("--from-ledger", help="render this ledger instead of measuring")
    parser.add_argument("--ship", default=os.path.join(SOURCE_DIR, "share", "rlflow", "ledger_ort_cpu.json"),
                        help="where to write the ledger rlflow ships and optimize reads (model paths reduced to file "
                             "names); 'none': do not write it")
    return parser.parse_args()


def run(command):
    print("+", " ".join(command), file=sys.stderr, flush=True)
    subprocess.run(command, check=True)


def model_name(path):
    stem = os.path.splitext(os.path.basename(path))[0]
    for suffix in ("_weighted", "_op17", "_op13"):
        stem = stem.replace(suffix, "")
    return stem


def ratio_text(r):
    return f"{r:.3f}"


def render(ledger):
    models = ledger["models"]
    lines = [
        "# The ledger: which rule families pay, where",
        "",
        "<!-- Written by tools/rules_ledger.py from `rlflow rules measure`; do not edit by hand. -->",
        "",
        f"Target: {ledger['target_description']} on {ledger['target_device']}. Rules: `{ledger['rules']}`.",
        "",
        "Each family (a built-in rule, or the generated rules that rewrite the same ops into the",
        "same ops) that matches in a model was applied alone: `everywhere` (every place it",
        "matches in the input) and `priced:MODEL` (the greedy search with the family's rules",
        "alone under a price model: the target's, and the analytic cpu and v100 presets that",
        "`optimize` also proposes with). Each result whose written form differs from the input's was verified on",
        "random inputs and timed whole in ONNX Runtime, interleaved run by",
        "run, against the input as rlflow writes it unchanged (so that what import and export alone",
        "change, folded shape arithmetic above all, is not credited to a family: the column",
        "'original / as written' times the user's file against that),",
        f"{ledger['rounds']} rounds, beside a copy of the input (the noise: a comparison whose copy",
        f"is more than {ledger.get('noise_limit', 0.02) * 100:.0f}% from the input is timed again, at most twice, then left",
        "unjudged). A result faster by",
        f"more than {ledger['min_gain'] * 100:.1f}% was timed again, alone against the input, in fresh",
        "sessions; it **pays** when that second comparison's sign test says faster",
        f"(p < {ledger['significance']}) by at least as much. Ratios are the model's time with the",
        "family over the input's (below 1 is faster): per model the better of the family's",
        "results (the second comparison's where there was one), then the median over models.",
        "",
        "## Models",
        "",
        "| model | design | nodes | original / as written | families matching | noise (copy / input) | results timed | too noisy | paying families |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for m in models:
        name = model_name(m["model"])
        paying = sorted({r["family"] for r in m["results"] if r["pays"]})
        noise = ", ".join(ratio_text(x) for x in m["noise_ratios"]) or "not timed"
        noisy = sum(1 for r in m["results"] if r.get("noisy"))
        written = m.get("original_over_written")
        written = ratio_text(written["ratio"]) if written else "-"
        lines.append(f"| {name} | {DESIGNS.get(name, '')} | {m['nodes']} | {written} | {m['families_matching']} | {noise} | "
                     f"{len(m['results'])} | {noisy} | {', '.join(f'`{f}`' for f in paying) or 'none'} |")
    lines += [
        "",
        "## Families",
        "",
        "| family | models measured | median ratio | best ratio | pays on | slower on |",
        "|---|---|---|---|---|---|",
    ]
    for f in ledger["families"]:
        lines.append(f"| `{f['family']}` | {len(f['models'])} | {ratio_text(f['median_ratio'])} | {ratio_text(f['best_ratio'])} | "
                     f"{', '.join(model_name(x) for x in f['pays_on']) or '-'} | {', '.join(model_name(x) for x in f['slower_on']) or '-'} |")
    never = sorted({s["family"] for m in models for s in m["skipped"]} - {f["family"] for f in ledger["families"]})
    dropped = [f["family"] for f in ledger["families"] if not f["pays_on"] and f["slower_on"]]
    lines += [
        "",
        "## Left out of the default rules at this target",
        "",
        "A family that paid on none of these models and was slower on one at least is left out",
        f"of `rlflow optimize`'s default rules, and of a new agent's action space (`rlflow train`),",
        f"when the target is {ledger['target']} at level {ledger.get('target_level', 'all')}, priced by its own",
        "measured prices (the default `--cost auto`; a price model chosen with `--cost` or `--device` keeps every rule; this ledger ships as",
        "`share/rlflow/ledger_ort_cpu.json`; `--ledger none` keeps every rule, `--ledger FILE` reads",
        "another). The guard also times candidates in the order the ledger expects of them: the",
        "product of their families' median ratios.",
        "",
        ", ".join(f"`{f}`" for f in dropped) or "none",
        "",
        "## Families that matched but wrote nothing new",
        "",
        "These matched somewhere but their result is written as the input is (a fusion ONNX has",
        "no op for is written back as the ops it fused) or as another family's result:",
        "",
        ", ".join(f"`{f}`" for f in never) or "none",
        "",
        "## Regenerating this page",
        "",
        "One command measures and writes it (6 minutes for these 19 models here; a quiet",
        "machine). The models: the `tests/data` exports, given seeded weights, and torchvision",
        "exports with seeded weights (`tools/export_models.py --with-params --opsets 17 --out",
        "DIR`, with `--unseen` and with `--models regnet_y_400mf vit_b_16 regnet_x_1_6gf",
        "regnet_y_1_6gf regnet_y_3_2gf regnet_y_8gf convnext_tiny resnext101_64x4d`):",
        "",
        "```",
        "/usr/bin/python3 tools/rules_ledger.py --build build \\",
        "  --weight-free tests/data/{resnet18,resnet50,resnext50_32x4d,squeezenet1_1,inception_v3,transformer}_op17.onnx \\",
        "  DIR/{regnet_y_400mf,mobilenet_v3_large,efficientnet_b1,shufflenet_v2_x0_5,densenet121,vit_b_16,swin_t}_op17.onnx \\",
        "  DIR/{regnet_x_1_6gf,regnet_y_1_6gf,regnet_y_3_2gf,convnext_tiny,regnet_y_8gf,resnext101_64x4d}_op17.onnx",
        "```",
        "",
    ]
    return "\n".join(lines)


def main():
    args = parse_args()
    if args.from_ledger:
        with open(args.from_ledger) as f:
            ledger = json.load(f)
    else:
        rlflow = os.path.join(args.build, "tools", "rlflow")
        work = args.work or os.path.join(args.build, "rules_ledger")
        os.makedirs(work, exist_ok=True)
        models = list(args.models)
        for export in args.weight_free:
            weighted = os.path.join(work, model_name(export) + "_weighted.onnx")
            if not os.path.exists(weighted):
                run([rlflow, "weights", export, weighted, "--data-inputs", "input"])
            models.append(weighted)
        if not models:
            print("rules_ledger: no models given", file=sys.stderr)
            return 2
        out = os.path.join(work, "ledger.json")
        run([rlflow, "rules", "measure", *models, "-o", out, *shlex.split(args.measure_args)])
        with open(out) as f:
            ledger = json.load(f)
    with open(args.doc, "w") as f:
        f.write(render(ledger))
    print(f"wrote {args.doc}")
    if args.ship != "none":
        shipped = dict(ledger)
        shipped["models"] = [dict(m, model=os.path.basename(m["model"])) for m in ledger["models"]]
        with open(args.ship + ".tmp", "w") as f:
            json.dump(shipped, f, indent=1)
            f.write("\n")
        os.replace(args.ship + ".tmp", args.ship)
        print(f"wrote {args.ship}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
