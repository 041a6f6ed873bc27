#!/usr/bin/env bash
# Installs, with apt-get and without prompts, whatever rlflow's build needs that this
# Debian machine lacks. Safe to run again: it installs nothing when all is present.
set -euo pipefail

packages=(
  g++ cmake make ccache
  libeigen3-dev
  libprotobuf-dev protobuf-compiler libonnx-dev
  doctest-dev libbenchmark-dev
  libz3-dev libcli11-dev nlohmann-json3-dev
)

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -eq 0 ]; then
  echo "setup: all build dependencies are installed"
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
