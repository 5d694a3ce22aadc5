#!/usr/bin/env bash
# Packs what a GPU machine without memplan's build dependencies needs to run it: the memplan
# binary and the [gpu] test binary from a Release build with CUDA, the zoo models, and the shared
# libraries they link that such a machine lacks (libonnx, libprotobuf, Boost, OpenBLAS, ICU ...;
# the C/C++ runtime and the CUDA libraries are the machine's own). One .tar.xz, small enough to
# travel with a command (the device tool carries 64 MiB).
#
#   tools/gpu/make_bundle.sh BUILD_DIR OUT.tar.xz
set -euo pipefail
build=$1
out=$2
stage=$(mktemp -d)
trap 'rm -rf "$stage"' EXIT
mkdir -p "$stage/bundle/lib" "$stage/bundle/zoo"
cp "$build/tools/memplan" "$stage/bundle/"
cp "$build/tests/cuda_tests" "$stage/bundle/"
cp "$build"/zoo/*.onnx "$stage/bundle/zoo/"
strip "$stage/bundle/memplan" "$stage/bundle/cuda_tests"
# The machine's own: glibc, the GCC runtime, zlib, and CUDA (driver, runtime, cuBLAS, CUPTI).
system='^(linux-vdso|ld-linux|libc\.|libm\.|libdl\.|librt\.|libpthread\.|libutil\.|libstdc\+\+|libgcc_s|libz\.|libcuda|libcublas|libcupti|libcudnn|libnvperf|libnvrtc)'
for binary in "$stage/bundle/memplan" "$stage/bundle/cuda_tests"; do
  ldd "$binary" | awk '$3 ~ /^\// {print $1, $3}' | while read -r name path; do
    if ! [[ $name =~ $system ]]; then
      cp -L "$path" "$stage/bundle/lib/$name"
    fi
  done
done
tar -C "$stage" -cJf "$out" bundle
ls -la "$out"
