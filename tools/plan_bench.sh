#!/usr/bin/env bash
# The research benchmark of the agents' planning: the TASO/Tensat graphs of the zoo under
# GPU prices (the analytic h100 preset, or a recorded price table), taso and eqsat at their
# defaults against both agents, each rolled out alone (--plan none), with the tree search
# (--plan mcts) and seeding equality saturation (--plan eqsat), every agent trained on its
# graph alone under seeds FIRST_SEED..SEEDS. Cost ratios and seconds, no runtime timing.
#
# With TRANSFER_GRAPHS set it also runs the transfer protocol on the benchmark graphs: per
# seed one model-free agent trains on those graphs (none of them a benchmark graph) and is
# run on every benchmark graph zero-shot ("transfer") and after a fine-tune on that graph
# alone ("tuned", rlflow train --init-from), beside the per-graph agents.
#
#   bash tools/plan_bench.sh OUT [BUILD_DIR]     # then OUT/plan_bench.md
#
# Settings (environment variables, defaults in brackets):
#   SEEDS [3]             the last seed of every agent
#   FIRST_SEED [1]        the first (two runs with different seeds may share OUT)
#   COST ["--cost analytic --device h100"]   how every run prices (e.g. "--cost table:FILE")
#   AGENTS ["mf mb"]      the per-graph agents
#   PLANS ["none mcts eqsat"]   the plans every agent is run with
#   MF_SECONDS [200]      training of each model-free agent (one thread)
#   MB_REAL_STEPS [2000]  real steps of each model-based agent (one thread, at most MF_SECONDS)
#   BUDGET [2000]         --budget of every agent search
#   GRAPHS                space-separated zoo names (default below)
#   TRANSFER_GRAPHS [""]  the transfer agent's training set (zoo:NAME or .onnx files)
#   TRANSFER_SECONDS [600]  its training (one thread)
#   TUNE_SECONDS [60]     the fine-tune on each benchmark graph
# Each run is kept when done: running it again resumes.
set -euo pipefail
out=$(realpath -m "${1:?usage: tools/plan_bench.sh OUT [BUILD_DIR]}")
root=$(cd "$(dirname "$0")/.." && pwd)
build=$(realpath -m "${2:-$root/build}")
rlflow="$build/tools/rlflow"
read -r -a cost <<<"${COST:---cost analytic --device h100}"
read -r -a agents <<<"${AGENTS:-mf mb}"
read -r -a plans <<<"${PLANS:-none mcts eqsat}"
read -r -a transfer_graphs <<<"${TRANSFER_GRAPHS:-}"
mf_seconds=${MF_SECONDS:-200}
mb_steps=${MB_REAL_STEPS:-2000}
budget=${BUDGET:-2000}
read -r -a graphs <<<"${GRAPHS:-bert vit_base nasrnn nasnet_a resnext50 inception_v3 squeezenet1_1}"
mkdir -p "$out/agents" "$out/reports"
cd "$root"  # .onnx training graphs are named relative to the source tree

# Trains agent DIR with the remaining options, unless it is already there.
train_once() {
  local dir=$1; shift
  [[ -f $dir/agent.json ]] || "$rlflow" train --checkpoint "$dir" "${cost[@]}" --jobs 1 "$@" >"$dir.log" 2>&1
}
# Runs agent NAME (a report's name; its directory is agents/NAME_GRAPH_sSEED) on GRAPH with every plan.
run_agent() {
  local name=$1 kind=$2 g=$3 seed=$4
  for plan in "${plans[@]}"; do
    local report="$out/reports/${g}_${name}_s${seed}_$plan.json"
    [[ -f $report ]] || "$rlflow" optimize "zoo:$g" -o "$out/last_$seed.onnx" "${cost[@]}" --guard none --search "$kind" \
      --agent "$out/agents/${name}_${g}_s$seed" --plan "$plan" --budget "$budget" --report "$report" >/dev/null
  done
}

for g in "${graphs[@]}"; do
  for s in taso eqsat; do
    report="$out/reports/${g}_$s.json"
    [[ -f $report ]] || "$rlflow" optimize "zoo:$g" -o "$out/last.onnx" "${cost[@]}" --guard none --search "$s" --report "$report" >/dev/null
  done
done
for seed in $(seq "${FIRST_SEED:-1}" "${SEEDS:-3}"); do
  transfer="$out/agents/transfer_s$seed"
  if [[ ${#transfer_graphs[@]} -gt 0 ]]; then
    train_once "$transfer" --agent mf --graph "${transfer_graphs[@]}" --time-limit "${TRANSFER_SECONDS:-600}" --seed "$seed"
  fi
  for g in "${graphs[@]}"; do
    for agent in "${agents[@]}"; do
      limit=(--time-limit "$mf_seconds")
      [[ $agent == mb ]] && limit+=(--real-steps "$mb_steps")
      train_once "$out/agents/${agent}_${g}_s$seed" --agent "$agent" --graph "zoo:$g" "${limit[@]}" --seed "$seed"
      run_agent "$agent" "$agent" "$g" "$seed"
    done
    if [[ ${#transfer_graphs[@]} -gt 0 ]]; then
      ln -sfn "$transfer" "$out/agents/transfer_${g}_s$seed"
      train_once "$out/agents/tuned_${g}_s$seed" --agent mf --graph "zoo:$g" --init-from "$transfer" \
        --time-limit "${TUNE_SECONDS:-60}" --seed "$seed"
      run_agent transfer mf "$g" "$seed"
      run_agent tuned mf "$g" "$seed"
    fi
  done
done
rm -f "$out"/last*.onnx
python3 "$root/tools/plan_table.py" "$out/reports" "${graphs[@]}" >"$out/plan_bench.md"
echo "wrote $out/plan_bench.md"
