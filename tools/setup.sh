#!/usr/bin/env bash
# Installs, with apt-get and without prompts, whatever rlflow's build needs that this
# Debian machine lacks. Safe to run again: it installs nothing when all is present.
#   bash tools/setup.sh          build dependencies, matplotlib (the figure scripts in
#                                tools/), and ONNX Runtime (Node.js, then npm
#                                onnxruntime-node in tools/ort): the runtime `rlflow
#                                optimize` prices ops in and checks its result in
#   bash tools/setup.sh --test   also what the tests use: the ONNX conformance data
#                                (libonnx-testdata), pytest, Open MPI and Clang 16 (the
#                                compile checks)
set -euo pipefail
cd "$(dirname "$0")/.."
with_tests=0
[ "${1:-}" = "--test" ] && with_tests=1

packages=(
  g++ cmake make ccache
  libeigen3-dev
  libprotobuf-dev protobuf-compiler libonnx-dev
  doctest-dev libbenchmark-dev
  libz3-dev libcli11-dev nlohmann-json3-dev
  coinor-libcbc-dev
  pybind11-dev python3-dev python3-numpy
  python3-matplotlib
)

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ $with_tests -eq 1 ]; then
  # The ONNX conformance data, pytest for the Python module's tests, and Open MPI for the
  # tests on 2 ranks.
  for p in libonnx-testdata python3-pytest mpi-default-dev mpi-default-bin; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
  done
  # Clang 16 or later compiles the suite's compile checks (tests/compile_checks) in about a
  # third of GCC's time; without one they compile with GCC. Debian 12's own clang is 14.
  have_clang=0
  for v in 20 19 18 17 16; do command -v "clang++-$v" >/dev/null && have_clang=1; done
  [ $have_clang -eq 1 ] || missing+=(clang-16)
fi
# tools/ort runs ONNX Runtime (npm onnxruntime-node): the ort cost backend, the guard of
# `rlflow optimize` and the test oracle. Checked by command, not by package: a
# NodeSource nodejs bundles npm and conflicts with Debian's.
command -v node >/dev/null || missing+=(nodejs)
command -v npm >/dev/null || missing+=(npm)

install_ort() {
  [ -d tools/ort/node_modules/onnxruntime-node ] && return 0
  echo "setup: installing onnxruntime-node into tools/ort"
  # The package's post-install step would download binaries; it bundles the CPU ones.
  (cd tools/ort && ONNXRUNTIME_NODE_INSTALL=skip npm ci --no-audit --no-fund --loglevel=error)
}

if [ ${#missing[@]} -eq 0 ]; then
  echo "setup: all dependencies are installed"
  install_ort
  exit 0
fi

sudo=""
if [ "$(id -u)" -ne 0 ]; then
  command -v sudo >/dev/null || { echo "setup: need root (or sudo) to install: ${missing[*]}" >&2; exit 1; }
  sudo="sudo"
fi
echo "setup: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
$sudo apt-get update -qq
$sudo apt-get install -y -qq --no-install-recommends "${missing[@]}"
install_ort
