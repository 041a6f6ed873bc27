#!/usr/bin/env bash
# Regenerates the rule library that ships with rlflow (share/rlflow/generated_rules.pb,
# loaded by rewrite::default_rules()) and its generation report, with the default
# generator space, at most 3 ops a side, proving with Z3 where rlflow was built with it.
#   bash tools/regenerate_rules.sh [BUILD_DIR]     (default: build)
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build}
jobs=$(nproc 2>/dev/null || echo 2)
"$build/tools/rlflow" rules generate --max-ops 3 --jobs "$jobs" --seed 0 \
    -o share/rlflow/generated_rules.pb --report share/rlflow/generated_rules.report.json
"$build/tools/rlflow" rules stats share/rlflow/generated_rules.pb
