#!/usr/bin/env bash
# The run behind docs/results.md: every method on every zoo graph and every real export in
# tests/data, under 3 seeds, timed in ONNX Runtime at levels basic and all; the transfer
# protocol (tools/transfer.sh); the model-based agent's temperature sweep; the figures.
#
#   bash tools/results.sh OUT [BUILD_DIR]
#
# Steps, each kept when done (running it again resumes):
# 1. model-based agents on the transfer training set, one per seed (OUT/agents/mb_sS);
# 2. tools/transfer.sh OUT/transfer: model-free agents on the training set, fine-tunes and
#    per-graph agents on the unseen graphs, and their evals; its zero-shot eval writes into
#    OUT/full, whose cells it shares;
# 3. OUT/full: rlflow eval of greedy, taso, eqsat, mf (the transfer agents) and mb on all
#    graphs; an agent that did not train on a graph is used zero-shot, marked as such;
# 4. OUT/sweep: model-based agents on resnext50 at dream temperatures 0.5 to 2;
# 5. OUT/figures: eval bars and heatmap, transfer, training curves, temperature sweep.
#
# Settings (environment variables, defaults in brackets): SEEDS [3], TRAIN_SECONDS [240],
# TUNE_SECONDS [20], OWN_SECONDS [60], JOBS [1] (threads per training), SWEEP_SECONDS [90],
# TEMPERATURES ["0.5 1 1.5 2"], EVAL_ARGS ["--ort-level basic,all --ort-runs 15
# --time-limit 60"], PYTHON [/usr/bin/python3 when present, else python3]. The defaults fit
# a 2-core machine in about three hours.
set -euo pipefail
out=$(realpath -m "${1:?usage: tools/results.sh OUT [BUILD_DIR]}")
root=$(cd "$(dirname "$0")/.." && pwd)
build=$(realpath -m "${2:-$root/build}")
cd "$root"
rlflow="$build/tools/rlflow"
export SEEDS=${SEEDS:-3} TRAIN_SECONDS=${TRAIN_SECONDS:-240} TUNE_SECONDS=${TUNE_SECONDS:-20} OWN_SECONDS=${OWN_SECONDS:-60}
export JOBS=${JOBS:-1} EVAL_ARGS=${EVAL_ARGS:---ort-level basic,all --ort-runs 15 --time-limit 60}
export PYTHON=${PYTHON:-$([ -x /usr/bin/python3 ] && echo /usr/bin/python3 || echo python3)}
train=(zoo:resnet18 zoo:inception_v3 zoo:squeezenet1_1 zoo:bert)
mkdir -p "$out/agents" "$out/sweep" "$out/figures"

# Trains into DIR unless an agent is already there.
train_once() {
  local dir=$1; shift
  [ -f "$dir/agent.json" ] && return 0
  echo "results: training $dir"
  "$rlflow" train --checkpoint "$dir" --jobs "$JOBS" "$@" >"$dir.log" 2>&1
}

mb=()
for s in $(seq 1 "$SEEDS"); do
  train_once "$out/agents/mb_s$s" --agent mb --graph "${train[@]}" --real-steps 2000 --time-limit "$TRAIN_SECONDS" --seed "$s"
  mb+=("$out/agents/mb_s$s")
done
ZERO_SHOT_OUT="$out/full" bash tools/transfer.sh "$out/transfer" "$build"

read -r -a extra <<<"$EVAL_ARGS"
graphs=(zoo:resnet18 zoo:resnet50 zoo:inception_v3 zoo:squeezenet1_1 zoo:bert zoo:resnext50 zoo:nasnet_a zoo:nasrnn zoo:vit_base
        tests/data/*_op13.onnx tests/data/*_op17.onnx)
"$rlflow" eval --graphs "${graphs[@]}" --methods greedy,taso,eqsat,mf,mb --seeds "$SEEDS" --ort "${extra[@]}" \
  --agent "$out"/transfer/agents/transfer_s* "${mb[@]}" --out "$out/full"

sweep=()
for t in ${TEMPERATURES:-0.5 1 1.5 2}; do
  for s in $(seq 1 "$SEEDS"); do
    train_once "$out/sweep/mb_T${t}_s$s" --agent mb --graph zoo:resnext50 --temperature "$t" --real-steps 1000 \
      --time-limit "${SWEEP_SECONDS:-90}" --seed "$s"
    sweep+=("$out/sweep/mb_T${t}_s$s")
  done
done

"$PYTHON" tools/eval_figures.py "$out/full" --out "$out/figures" \
  --compare zero-shot="$out/full" fine-tuned="$out/transfer/fine_tuned" per-graph="$out/transfer/per_graph"
"$PYTHON" tools/training_curves.py --out "$out/figures/training_curves" "$out"/transfer/agents/transfer_s* "${mb[@]}"
"$PYTHON" tools/temperature_sweep.py --out "$out/figures/temperature_sweep" "${sweep[@]}" | tee "$out/figures/temperature_sweep.md"
echo "results: wrote $out/full/results.md and $out/figures"
