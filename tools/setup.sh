#!/usr/bin/env bash
# Installs memplan's build and test dependencies from Debian 12 packages, only those missing.
# Idempotent: when everything is present it prints one line and changes nothing.
set -euo pipefail

packages=(
  build-essential cmake ninja-build ccache pkg-config
  libboost-graph-dev libonnx-dev libprotobuf-dev protobuf-compiler
  catch2 libcli11-dev nlohmann-json3-dev libyaml-cpp-dev libpugixml-dev libopenblas-dev libjemalloc-dev clang-format
  clang libclang-rt-14-dev
  clang-tidy
  python3 python3-onnx python3-yaml
)
# Extra packages a caller asks for (e.g. chromium for the report test).
packages+=("$@")

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -eq 0 ]; then
  echo "memplan setup: all dependencies present"
  exit 0
fi

SUDO=""
if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi
echo "memplan setup: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
echo "memplan setup: done"
