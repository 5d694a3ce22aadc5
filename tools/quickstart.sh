#!/usr/bin/env bash
# The README's first command: installs what is missing, builds memplan (Release) and analyses
# the bundled example model for a 24 GB GPU. Extra arguments go to `memplan analyze`.
set -euo pipefail
cd "$(dirname "$0")/.."
tools/setup.sh
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release -DMEMPLAN_BUILD_TESTS=OFF >/dev/null
cmake --build build -j "$(nproc)"
build/tools/memplan analyze build/zoo/resnet18.onnx --gpu 24G "$@"
