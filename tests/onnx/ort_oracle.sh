#!/usr/bin/env bash
# ONNX Runtime as an independent oracle for rlflow's ONNX import/export and reference
# executor.
#
#   tests/onnx/ort_oracle.sh RLFLOW_BIN SOURCE_DIR WORK_DIR
#
# For every weight-free export SOURCE_DIR/tests/data/*.onnx:
#   1. rlflow weights: give it seeded random weights              -> W/full.onnx
#   2. rlflow convert: import and export it again, no rewriting    -> W/converted.onnx
#   3. compare.js: full and converted must agree in ORT to 1e-5 relative; ORT's inputs
#      and outputs are dumped as TensorProto files                -> W/ort_io/
#   4. rlflow run: rlflow's reference executor, on the converted model and ORT's inputs,
#      must match ORT's outputs (rtol/atol 1e-4).
#   For every SOURCE_DIR/tests/data/ops/*.onnx (one-node models of the newer core ops,
#   from tools/make_op_cases.py): rlflow info lists no opaque op, then steps 2-4.
#   For every SOURCE_DIR/tests/data/contrib/*.onnx (a Conv and its activation): written with
#   --fused-conv-ms it is one com.microsoft.FusedConv node, which ORT must run to the
#   standard ops' outputs (1e-5 relative).
#   5. for the opset-17 exports and every SOURCE_DIR/tests/data/opaque/*.onnx (models with
#      ops rlflow cannot execute, verified region by region): rlflow optimize (greedy, the
#      guard timing 5 rounds),
#      and compare.js: the optimised model must agree with the original in ORT to 1e-4
#      relative                                                 -> W/optimized.onnx
#      and again written with com.microsoft.FusedConv (--fused-conv-ms): ORT must run it
#      and agree with the original alike                       -> W/optimized_ms.onnx
# W is WORK_DIR/<model name>. Every model is checked even when one fails; the script
# ends with "N passed, M failed" and exits 1 if M > 0.
#
# When /usr/bin/python3 can import PyTorch (Debian python3-torch), also exports
# full-weight resnet18 and squeezenet1_1 (opset 17) with tools/export_models.py into
# WORK_DIR/full_exports and checks them the same way (steps 2-4; they have weights).
# RLFLOW_FULL_EXPORTS=0 turns this off.
set -euo pipefail

if [[ $# -ne 3 ]]; then
    echo "usage: $0 RLFLOW_BIN SOURCE_DIR WORK_DIR" >&2
    exit 2
fi
RLFLOW_BIN=$1
SOURCE_DIR=$2
WORK_DIR=$3

COMPARE_JS="$SOURCE_DIR/tools/ort/compare.js"
if [[ ! -d "$SOURCE_DIR/tools/ort/node_modules/onnxruntime-node" ]]; then
    echo "ort_oracle: onnxruntime-node is not installed (run bash tools/setup.sh --test)" >&2
    exit 1
fi
if ! command -v node >/dev/null 2>&1; then
    echo "ort_oracle: node is not on PATH (run bash tools/setup.sh --test)" >&2
    exit 1
fi
if [[ ! -x "$RLFLOW_BIN" ]]; then
    echo "ort_oracle: $RLFLOW_BIN is not an executable" >&2
    exit 1
fi

mkdir -p "$WORK_DIR"
passed=0
failed=0
failed_names=()
# Models written with a contrib op and checked in ORT (step 5); none is a failure.
contrib_models=0

now() { date +%s.%N; }
elapsed() { awk -v a="$1" -v b="$(now)" 'BEGIN { printf "%.1f", b - a }'; }

# step NAME LOG CMD...: runs CMD with its output in LOG; on failure prints which step
# failed, its exit status and the end of LOG, and returns 1.
step() {
    local what=$1 log=$2
    shift 2
    local rc=0
    "$@" >"$log" 2>&1 || rc=$?
    if [[ $rc -ne 0 ]]; then
        echo "  $what failed (exit $rc): $*"
        tail -n 20 "$log" | sed 's/^/    /'
        return 1
    fi
}

# check NAME MODEL DIR: steps 2-4 on MODEL (which has weights), working in DIR.
check() {
    local name=$1 model=$2 w=$3
    step convert "$w/convert.log" "$RLFLOW_BIN" convert "$model" "$w/converted.onnx" || return 1
    step compare "$w/compare.log" node "$COMPARE_JS" "$model" "$w/converted.onnx" \
        --rtol 1e-5 --seed 3 --runs 3 --dump-dir "$w/ort_io" || return 1
    echo "$name: $(grep '^{' "$w/compare.log" | tail -n 1)"
    step run "$w/run.log" "$RLFLOW_BIN" run "$w/converted.onnx" --inputs "$w/ort_io" \
        --expect "$w/ort_io" --rtol 1e-4 --atol 1e-4 || return 1
    local line
    while IFS= read -r line; do
        echo "$name: rlflow run: $line"
    done < <(grep max_abs_diff "$w/run.log" || tail -n 1 "$w/run.log")
}

# optimized NAME MODEL DIR: step 5 on MODEL (which has weights), working in DIR.
optimized() {
    local name=$1 model=$2 w=$3
    # The guard's timing at its fewest rounds: what is checked here is that what it writes
    # agrees with the original, not how surely it chose.
    step optimize "$w/optimize.log" "$RLFLOW_BIN" optimize "$model" -o "$w/optimized.onnx" --search greedy \
        --guard-rounds 5 --report "$w/optimize.json" || return 1
    echo "$name: rlflow optimize: $(grep -E '^(cost|verified)' "$w/optimize.log" | tr -s ' ' | paste -sd ';')"
    step compare_optimized "$w/compare_optimized.log" node "$COMPARE_JS" "$model" "$w/optimized.onnx" \
        --rtol 1e-4 --seed 5 --runs 1 || return 1
    echo "$name: optimised vs original in ORT: $(grep '^{' "$w/compare_optimized.log" | tail -n 1)"
    # Written with ONNX Runtime's contrib op (--fused-conv-ms: fused convolutions as
    # com.microsoft.FusedConv): ORT must load it and give the original's outputs.
    step optimize_ms "$w/optimize_ms.log" "$RLFLOW_BIN" optimize "$model" -o "$w/optimized_ms.onnx" --search greedy \
        --cost analytic --guard none --fused-conv-ms --report "$w/optimize_ms.json" || return 1
    local contrib_ops
    contrib_ops=$(node -e 'const r = JSON.parse(require("fs").readFileSync(process.argv[1], "utf8"));
        process.stdout.write(r.needs_onnxruntime ? r.nonstandard_ops.join(",") : "");' "$w/optimize_ms.json") || return 1
    if [[ -n $contrib_ops ]]; then
        step compare_ms "$w/compare_ms.log" node "$COMPARE_JS" "$model" "$w/optimized_ms.onnx" \
            --rtol 1e-4 --seed 5 --runs 1 || return 1
        echo "$name: written with $contrib_ops vs original in ORT: $(grep '^{' "$w/compare_ms.log" | tail -n 1)"
        contrib_models=$((contrib_models + 1))
    fi
}

# begin NAME: starts checking NAME in a fresh W=WORK_DIR/NAME (sets name, w, t0, status).
begin() {
    name=$1
    w="$WORK_DIR/$name"
    rm -rf "$w"
    mkdir -p "$w"
    t0=$(now)
    status=0
}

# record NAME START STATUS
record() {
    if [[ $3 -eq 0 ]]; then
        passed=$((passed + 1))
        echo "$1: ok ($(elapsed "$2") s)"
    else
        failed=$((failed + 1))
        failed_names+=("$1")
        echo "$1: FAILED ($(elapsed "$2") s)"
    fi
}

t_all=$(now)
shopt -s nullglob
models=("$SOURCE_DIR"/tests/data/*.onnx)
shopt -u nullglob
if [[ ${#models[@]} -eq 0 ]]; then
    echo "ort_oracle: no models in $SOURCE_DIR/tests/data" >&2
    exit 1
fi

for f in "${models[@]}"; do
    begin "$(basename "$f" .onnx)"
    step weights "$w/weights.log" "$RLFLOW_BIN" weights "$f" "$w/full.onnx" \
        --data-inputs input --seed 7 && check "$name" "$w/full.onnx" "$w" || status=1
    if [[ $status -eq 0 && $name == *_op17 ]]; then
        optimized "$name" "$w/full.onnx" "$w" || status=1
    fi
    record "$name" "$t0" "$status"
done

for f in "$SOURCE_DIR"/tests/data/opaque/*.onnx; do
    begin "opaque_$(basename "$f" .onnx)"
    optimized "$name" "$f" "$w" || status=1
    record "$name" "$t0" "$status"
done

# core_only NAME MODEL DIR: rlflow info must list no opaque op in MODEL.
core_only() {
    local name=$1 model=$2 w=$3
    # The JSON alone (stdout): a model of an opset outside 11-18 adds a warning on stderr.
    step info "$w/info.log" bash -c '"$1" info "$2" --json > "$3"' info "$RLFLOW_BIN" "$model" "$w/info.json" || return 1
    local opaque
    opaque=$(node -e 'const r = JSON.parse(require("fs").readFileSync(process.argv[1], "utf8"));
        process.stdout.write(String(r.opaque_ops.reduce((n, o) => n + o.count, 0)));' "$w/info.json") || return 1
    if [[ $opaque != 0 ]]; then
        echo "  $name: $opaque opaque ops, expected none"
        return 1
    fi
}

# One-node models of the newer core ops (tools/make_op_cases.py): core ops only, and
# rlflow's executor gives ORT's outputs (steps 2-4).
for f in "$SOURCE_DIR"/tests/data/ops/*.onnx; do
    begin "op_$(basename "$f" .onnx)"
    core_only "$name" "$f" "$w" && check "$name" "$f" "$w" || status=1
    record "$name" "$t0" "$status"
done

# fused_conv_node NAME MODEL DIR: MODEL (a Conv and its activation in standard ops, from
# tools/make_op_cases.py) written with --fused-conv-ms is one com.microsoft.FusedConv node,
# and ORT runs it to MODEL's outputs.
fused_conv_node() {
    local name=$1 model=$2 w=$3
    step optimize_ms "$w/optimize_ms.log" "$RLFLOW_BIN" optimize "$model" -o "$w/fused.onnx" --search greedy \
        --cost analytic --guard none --fused-conv-ms --report "$w/optimize_ms.json" || return 1
    local written
    written=$(node -e 'const r = JSON.parse(require("fs").readFileSync(process.argv[1], "utf8"));
        const fused = Object.keys(r.rewrites_applied).filter(k => k.startsWith("fuse_conv_"));
        process.stdout.write(r.nonstandard_ops.join(",") + " " + fused.join(","));' "$w/optimize_ms.json") || return 1
    if [[ $written != "com.microsoft.FusedConv fuse_conv_"* ]]; then
        echo "  $name: expected one fused convolution written as com.microsoft.FusedConv, got '$written'"
        return 1
    fi
    step compare_ms "$w/compare_ms.log" node "$COMPARE_JS" "$model" "$w/fused.onnx" --rtol 1e-5 --seed 3 --runs 1 || return 1
    echo "$name: one node ($written) vs standard ops in ORT: $(grep '^{' "$w/compare_ms.log" | tail -n 1)"
    contrib_models=$((contrib_models + 1))
}

for f in "$SOURCE_DIR"/tests/data/contrib/*.onnx; do
    begin "contrib_$(basename "$f" .onnx)"
    fused_conv_node "$name" "$f" "$w" || status=1
    record "$name" "$t0" "$status"
done

if [[ "${RLFLOW_FULL_EXPORTS:-1}" == 1 ]]; then
    if /usr/bin/python3 -c "import torch" >/dev/null 2>&1; then
        exports="$WORK_DIR/full_exports"
        t0=$(now)
        rm -rf "$exports"
        if step export "$WORK_DIR/full_exports.log" /usr/bin/python3 "$SOURCE_DIR/tools/export_models.py" \
            --with-params --out "$exports" --opsets 17 --models resnet18 squeezenet1_1; then
            echo "full exports written ($(elapsed "$t0") s)"
            for f in "$exports"/*.onnx; do
                begin "full_$(basename "$f" .onnx)"
                check "$name" "$f" "$w" || status=1
                record "$name" "$t0" "$status"
            done
        else
            record full_exports "$t0" 1
        fi
    else
        echo "note: /usr/bin/python3 cannot import torch (python3-torch): full-weight exports not checked"
    fi
fi

if [[ $contrib_models -eq 0 ]]; then
    echo "contrib ops: no model was written with com.microsoft.FusedConv to check in ORT"
    failed=$((failed + 1))
    failed_names+=("contrib_ops")
else
    echo "contrib ops: $contrib_models models written with com.microsoft.FusedConv agree with their originals in ORT"
fi
echo "total: $(elapsed "$t_all") s"
if [[ $failed -ne 0 ]]; then
    echo "failed: ${failed_names[*]}"
fi
echo "$passed passed, $failed failed"
[[ $failed -eq 0 ]]
