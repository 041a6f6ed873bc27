#!/usr/bin/env bash
# Fuzzes rlflow's readers with libFuzzer (clang 16: Debian clang-16 and libclang-rt-16-dev),
# under AddressSanitizer and UndefinedBehaviorSanitizer.
#
#   bash tools/fuzz.sh TARGET|all SECONDS [BUILD_DIR]
#
# Targets (tests/fuzz/targets.hpp): onnx_import, onnx_import_nofold, onnx_roundtrip, onnx_run,
# rule_text, rule_binary, checkpoint, cost_cache, tensor_pb.
#
# Builds BUILD_DIR (default: build-fuzz) with clang and RLFLOW_FUZZ=ON; seeds each target's
# working corpus once (BUILD_DIR/corpus/TARGET) from the small models in tests/data and the
# ONNX conformance data (Debian libonnx-testdata), a small generated rule set, and a
# checkpoint and a cost cache written by the regular build's `rlflow` (BUILD, default
# build/, when it is there); then runs each target SECONDS seconds. What stops a run: a
# crash or sanitizer report, an exception other than rlflow's own errors, a broken promise
# of a reader (targets.hpp), more than 2 GiB of memory (-rss_limit_mb; a claimed tensor
# bigger than the file must not be allocated), or one input running over 10 s (-timeout).
# The input is kept in BUILD_DIR/crashes/TARGET/; once fixed, copy it into
# tests/fuzz/corpus/TARGET/, which the normal suite replays (tests/fuzz/replay.test.cpp).
#
# Writes BUILD_DIR/fuzz_summary.tsv: target, seconds, executions, coverage (libFuzzer's
# cov: edges and ft: features), status.
set -euo pipefail
what=${1:?usage: tools/fuzz.sh TARGET|all SECONDS [BUILD_DIR]}
seconds=${2:?usage: tools/fuzz.sh TARGET|all SECONDS [BUILD_DIR]}
root=$(cd "$(dirname "$0")/.." && pwd)
build=$(realpath -m "${3:-$root/build-fuzz}")
regular=$(realpath -m "${BUILD:-$root/build}")
all=(onnx_import onnx_import_nofold onnx_roundtrip onnx_run rule_text rule_binary checkpoint cost_cache tensor_pb)
if [ "$what" = all ]; then targets=("${all[@]}"); else targets=("$what"); fi
for t in "${targets[@]}"; do
  [[ " ${all[*]} " == *" $t "* ]] || { echo "fuzz: unknown target '$t' (${all[*]})" >&2; exit 2; }
done
# clang 16 or later: clang 14 and 15 cannot compile libstdc++ 12's ranges or lambdas that
# capture structured bindings, both of which rlflow uses.
cxx=$(command -v clang++-18 clang++-17 clang++-16 | head -1 || true)
if [ -z "$cxx" ]; then
  echo "fuzz: needs clang 16 or later with libFuzzer: apt-get install clang-16 libclang-rt-16-dev" >&2
  exit 2
fi
cmake -S "$root" -B "$build" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_CXX_COMPILER="$cxx" -DCMAKE_C_COMPILER="${cxx/clang++/clang}" \
  -DRLFLOW_FUZZ=ON -DRLFLOW_ENABLE_CUDA=OFF -DRLFLOW_BUILD_TOOLS=OFF -DRLFLOW_BUILD_BENCHMARKS=OFF -DRLFLOW_BUILD_EXAMPLES=OFF >/dev/null
cmake --build "$build" -j "$(nproc)" --target rlflow_fuzz

# Seeds: small files of each reader's kind, copied once.
seed() {
  local target=$1; shift
  local dir="$build/corpus/$target"
  [ -d "$dir" ] && return 0
  mkdir -p "$dir"
  local f
  for f in "$@"; do [ -f "$f" ] && cp "$f" "$dir/$(echo "$f" | md5sum | cut -c1-16)"; done
  return 0
}
small_models() {
  echo "$root"/tests/data/opaque/*.onnx "$root"/tests/data/ops/*.onnx
  find /usr/share/libonnx-testdata/data/node -name model.onnx -size -8k 2>/dev/null | sort | head -300
}
seeds="$build/seeds"
mkdir -p "$seeds"
if [ -x "$regular/tools/rlflow" ]; then
  [ -f "$seeds/rules.pb" ] || "$regular/tools/rlflow" rules generate --max-ops 2 --ops matmul,add,relu -o "$seeds/rules.pb" >/dev/null
  [ -f "$seeds/agent/weights.ckpt" ] || "$regular/tools/rlflow" train --graph zoo:squeezenet1_1 --cost analytic --rollout-steps 4 \
    --updates 1 --checkpoint "$seeds/agent" >/dev/null
  [ -f "$seeds/cache.bin" ] || "$regular/tools/rlflow" optimize "$root/tests/data/opaque/conv_sin_branches.onnx" --cost cpu \
    --guard none --cost-cache "$seeds/cache.bin" -o "$seeds/out.onnx" >/dev/null
fi
mapfile -t models < <(small_models)
seed onnx_import "${models[@]}"
seed onnx_import_nofold "${models[@]}"
seed onnx_roundtrip "${models[@]}"
seed onnx_run "${models[@]}"
seed rule_text "$root"/tests/data/rules/*.rules
seed rule_binary "$seeds/rules.pb"
seed checkpoint "$seeds/agent/weights.ckpt"
seed cost_cache "$seeds/cache.bin"
mapfile -t tensors < <(find /usr/share/libonnx-testdata/data/node -name '*.pb' -size -8k 2>/dev/null | sort | head -300)
seed tensor_pb "${tensors[@]}"

summary="$build/fuzz_summary.tsv"
[ -f "$summary" ] || printf 'target\tseconds\texecutions\tcoverage\tfeatures\tstatus\n' >"$summary"
status=0
for t in "${targets[@]}"; do
  mkdir -p "$build/crashes/$t"
  log="$build/fuzz_$t.log"
  set +e
  RLFLOW_FUZZ_TARGET=$t "$build/tests/fuzz/rlflow_fuzz" "$build/corpus/$t" -max_total_time="$seconds" -rss_limit_mb=2048 -malloc_limit_mb=2048 \
    -timeout=10 -max_len=65536 -print_final_stats=1 -artifact_prefix="$build/crashes/$t/" >"$log" 2>&1
  code=$?
  set -e
  execs=$(grep -o 'stat::number_of_executed_units: *[0-9]*' "$log" | grep -o '[0-9]*$' || echo 0)
  cov=$(grep -o 'cov: [0-9]*' "$log" | tail -1 | grep -o '[0-9]*' || echo 0)
  ft=$(grep -o 'ft: [0-9]*' "$log" | tail -1 | grep -o '[0-9]*' || echo 0)
  result=$([ "$code" = 0 ] && echo ok || echo "FAILED (exit $code; see $log)")
  printf '%s\t%s\t%s\t%s\t%s\t%s\n' "$t" "$seconds" "$execs" "$cov" "$ft" "$result" | tee -a "$summary"
  [ "$code" = 0 ] || status=1
done
exit $status
