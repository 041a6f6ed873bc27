#!/usr/bin/env python3
"""When did each training run first reach the graph another run ended with?

    tools/latency_race.py --reference MF_DIR RUN_DIR... [--json OUT.json]

A real measurement is a graph timed (a line of timed.jsonl; answers from the cache are not
counted): "reached at measurement k" says how many graphs the run had timed when it first
timed the reference's final graph, the measure of sample efficiency.

Every DIR is the checkpoint folder of `rlflow train --reward ort-latency` on one graph
(the same input file for all of them). Its fastest.json names, per training graph, the
fastest graph the run timed, the hash of the model as written (onnx/model_hash.hpp: what it computes, not its names), its latency timed again against the
start (`confirmed_ratio`) and the second it was first timed (`found_seconds`); its
timed.jsonl lists every graph the run timed, with hash and second.

A latency is one noisy measurement, so "run B reached run A's final latency" is read
here by identity: the first second at which B timed the very graph A ended with (its
hash). When B never met that graph, its own fastest graph's confirmed ratio is set
beside A's, and the comparison is only as good as their noise. Seconds are wall-clock
seconds since training began: for the model-based agent they include the world model's
training and the dream.

Prints a table, one row per run and graph, and with --json writes the rows."""
import argparse
import json
import os


def read_run(path):
    """fastest.json by graph; per (graph, hash), the second and the count of real measurements
    (graphs timed, 1 for the first) at which the run first timed it; and the measurements in all."""
    with open(os.path.join(path, "fastest.json")) as f:
        fastest = {entry["graph"]: entry for entry in json.load(f)}
    first = {}
    count = 0
    with open(os.path.join(path, "timed.jsonl")) as f:
        for line in f:
            if line.strip():
                t = json.loads(line)
                count += 1
                first.setdefault((t["graph"], t["hash"]), (t["seconds"], count))
    return fastest, first, count


def race(reference, runs):
    ref_fastest, _, _ = read_run(reference)
    rows = []
    for path in [reference] + runs:
        fastest, first, count = read_run(path)
        for graph, target in ref_fastest.items():
            own = fastest.get(graph)
            reached = first.get((graph, target["hash"]))
            rows.append({
                "run": path,
                "graph": graph,
                "reference_hash": target["hash"],
                "reference_confirmed_ratio": target["confirmed_ratio"],
                "reached_seconds": reached[0] if reached else None,
                "reached_measurements": reached[1] if reached else None,
                "measurements": count,
                "own_hash": own["hash"] if own else None,
                "own_found_seconds": own["found_seconds"] if own else None,
                "own_confirmed_ratio": own["confirmed_ratio"] if own else None,
            })
    return rows


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--reference", required=True, help="the run whose final graph the others race to")
    parser.add_argument("runs", nargs="*")
    parser.add_argument("--json", help="write the rows here")
    args = parser.parse_args()
    rows = race(args.reference, args.runs)
    print("| run | graph | reached the reference's graph at s (measurement) | measurements in all | own fastest: same graph, found at s, confirmed ratio |")
    print("|---|---|---|---|---|")
    for r in rows:
        reached = "never" if r["reached_seconds"] is None else f"{r['reached_seconds']:.1f} ({r['reached_measurements']})"
        same = "same" if r["own_hash"] == r["reference_hash"] else "other"
        own = "none" if r["own_hash"] is None else f"{same}, {r['own_found_seconds']:.1f}, {r['own_confirmed_ratio']:.3f}"
        print(f"| {r['run']} | {r['graph']} | {reached} | {r['measurements']} | {own} |")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(rows, f, indent=2)


if __name__ == "__main__":
    main()
