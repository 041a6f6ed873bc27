#!/usr/bin/env bash
# The research benchmark of the agents' planning: the TASO/Tensat graphs of the zoo under
# GPU prices (the analytic h100 preset, or a recorded price table), taso and eqsat at their
# defaults against both agents, each rolled out alone (--plan none), with the tree search
# (--plan mcts) and seeding equality saturation (--plan eqsat), every agent trained on its
# graph alone under seeds 1..SEEDS. Cost ratios and seconds, no runtime timing.
#
#   bash tools/plan_bench.sh OUT [BUILD_DIR]     # then OUT/plan_bench.md
#
# Settings (environment variables, defaults in brackets):
#   SEEDS [3]             seeds of every agent
#   COST ["--cost analytic --device h100"]   how every run prices (e.g. "--cost table:FILE")
#   MF_SECONDS [200]      training of each model-free agent (one thread)
#   MB_REAL_STEPS [2000]  real steps of each model-based agent (one thread, at most MF_SECONDS)
#   BUDGET [2000]         --budget of every agent search
#   GRAPHS                space-separated zoo names (default below)
# Each run is kept when done: running it again resumes.
set -euo pipefail
out=$(realpath -m "${1:?usage: tools/plan_bench.sh OUT [BUILD_DIR]}")
root=$(cd "$(dirname "$0")/.." && pwd)
build=$(realpath -m "${2:-$root/build}")
rlflow="$build/tools/rlflow"
seeds=${SEEDS:-3}
read -r -a cost <<<"${COST:---cost analytic --device h100}"
mf_seconds=${MF_SECONDS:-200}
mb_steps=${MB_REAL_STEPS:-2000}
budget=${BUDGET:-2000}
read -r -a graphs <<<"${GRAPHS:-bert vit_base nasrnn nasnet_a resnext50 inception_v3 squeezenet1_1}"
mkdir -p "$out/agents" "$out/reports"

for g in "${graphs[@]}"; do
  for s in taso eqsat; do
    report="$out/reports/${g}_$s.json"
    [[ -f $report ]] || "$rlflow" optimize "zoo:$g" -o "$out/last.onnx" "${cost[@]}" --guard none --search "$s" --report "$report" >/dev/null
  done
done
for seed in $(seq 1 "$seeds"); do
  for g in "${graphs[@]}"; do
    dir="$out/agents/mf_${g}_s$seed"
    [[ -f $dir/agent.json ]] || "$rlflow" train --agent mf --graph "zoo:$g" --checkpoint "$dir" "${cost[@]}" \
      --time-limit "$mf_seconds" --jobs 1 --seed "$seed" >"$dir.log" 2>&1
    dir="$out/agents/mb_${g}_s$seed"
    [[ -f $dir/agent.json ]] || "$rlflow" train --agent mb --graph "zoo:$g" --checkpoint "$dir" "${cost[@]}" \
      --real-steps "$mb_steps" --time-limit "$mf_seconds" --jobs 1 --seed "$seed" >"$dir.log" 2>&1
    for agent in mf mb; do
      for plan in none mcts eqsat; do
        report="$out/reports/${g}_${agent}_s${seed}_$plan.json"
        [[ -f $report ]] || "$rlflow" optimize "zoo:$g" -o "$out/last.onnx" "${cost[@]}" --guard none --search "$agent" \
          --agent "$out/agents/${agent}_${g}_s$seed" --plan "$plan" --budget "$budget" --report "$report" >/dev/null
      done
    done
  done
done
rm -f "$out/last.onnx"
python3 "$root/tools/plan_table.py" "$out/reports" "${graphs[@]}" >"$out/plan_bench.md"
echo "wrote $out/plan_bench.md"
