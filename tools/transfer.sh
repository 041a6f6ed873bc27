#!/usr/bin/env bash
# The transfer protocol: one model-free agent trained on a training set of graphs is
# evaluated on graphs it never saw, zero-shot and after a short fine-tune, against agents
# trained on each of those graphs alone and against taso and eqsat, in cost and seconds.
#
#   bash tools/transfer.sh OUT [BUILD_DIR]
#
# Settings (environment variables, defaults in brackets):
#   SEEDS [3]            seeds 1..SEEDS of every agent and eval cell
#   TRAIN_SECONDS [600]  training of the transfer agent, on all training graphs together
#   TUNE_SECONDS [60]    fine-tune of the transfer agent on each unseen graph (--init-from)
#   OWN_SECONDS [600]    training of the per-graph agents
#   COST [ort]           the cost backend (rlflow train/eval --cost)
#   TRAIN_GRAPHS, TEST_GRAPHS   space-separated models (defaults below)
#   ORT [--ort]          eval's ONNX Runtime timing ("" to leave it out)
#   JOBS [2]             threads of each training (rlflow train --jobs)
#   EVAL_ARGS [""]       more options of every eval (e.g. "--ort-level basic,all --time-limit 60")
#   PYTHON [python3]     the Python with matplotlib that draws the figures
#   ZERO_SHOT_OUT [OUT/zero_shot]   the zero-shot eval's folder (tools/results.sh shares it
#                        with its full eval, whose cells are the same)
#
# Writes OUT/agents/{transfer,tuned_G,own_G}_sS (agents), and three evals of the unseen
# graphs: OUT/zero_shot (taso, eqsat and the transfer agent), OUT/fine_tuned and
# OUT/per_graph (mf only), then OUT/figures/transfer.{png,svg}
# (tools/eval_figures.py --compare). Each step is kept when done: running it again resumes.
set -euo pipefail
out=$(realpath -m "${1:?usage: tools/transfer.sh OUT [BUILD_DIR]}")
root=$(cd "$(dirname "$0")/.." && pwd)
build=$(realpath -m "${2:-$root/build}")
cd "$root"  # graphs are named relative to the source tree, as in tools/results.sh
rlflow="$build/tools/rlflow"
seeds=${SEEDS:-3}
cost=${COST:-ort}
ort=${ORT---ort}
read -r -a train <<<"${TRAIN_GRAPHS:-zoo:resnet18 zoo:inception_v3 zoo:squeezenet1_1 zoo:bert}"
read -r -a test <<<"${TEST_GRAPHS:-zoo:resnet50 zoo:resnext50 zoo:nasnet_a zoo:nasrnn zoo:vit_base $(ls tests/data/*_op13.onnx | tr '\n' ' ')}"
mkdir -p "$out/agents"

slug() { local g=$1; g=${g#zoo:}; g=$(basename "$g" .onnx); echo "${g//[^A-Za-z0-9_-]/_}"; }

# Trains into DIR unless an agent is already there.
train_once() {
  local dir=$1; shift
  [ -f "$dir/agent.json" ] && return 0
  "$rlflow" train --agent mf --checkpoint "$dir" --cost "$cost" --jobs "${JOBS:-2}" "$@" >"$dir.log" 2>&1
}

transfer=() tuned=() own=()
for s in $(seq 1 "$seeds"); do
  echo "transfer: seed $s: training on ${train[*]}"
  train_once "$out/agents/transfer_s$s" --graph "${train[@]}" --time-limit "${TRAIN_SECONDS:-600}" --seed "$s"
  transfer+=("$out/agents/transfer_s$s")
  for g in "${test[@]}"; do
    echo "transfer: seed $s: $g: fine-tune and own agent"
    train_once "$out/agents/tuned_$(slug "$g")_s$s" --graph "$g" --init-from "$out/agents/transfer_s$s" \
      --time-limit "${TUNE_SECONDS:-60}" --seed "$s"
    train_once "$out/agents/own_$(slug "$g")_s$s" --graph "$g" --time-limit "${OWN_SECONDS:-600}" --seed "$s"
    tuned+=("$out/agents/tuned_$(slug "$g")_s$s")
    own+=("$out/agents/own_$(slug "$g")_s$s")
  done
done

zero_shot=${ZERO_SHOT_OUT:-$out/zero_shot}
read -r -a extra <<<"${EVAL_ARGS:-}"
common=(--graphs "${test[@]}" --seeds "$seeds" --cost "$cost" "${extra[@]}")
[ -n "$ort" ] && common+=("$ort")
"$rlflow" eval "${common[@]}" --methods taso,eqsat,mf --agent "${transfer[@]}" --out "$zero_shot"
"$rlflow" eval "${common[@]}" --methods mf --agent "${tuned[@]}" --out "$out/fine_tuned"
"$rlflow" eval "${common[@]}" --methods mf --agent "${own[@]}" --out "$out/per_graph"
"${PYTHON:-python3}" tools/eval_figures.py "$zero_shot" --out "$out/figures" \
  --compare zero-shot="$zero_shot" fine-tuned="$out/fine_tuned" per-graph="$out/per_graph"
