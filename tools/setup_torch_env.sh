#!/usr/bin/env bash
# Installs the ground-truth Python environment: PyTorch 2.x and the training libraries whose
# recipes, exports and exporters memplan is checked against (transformers, peft, accelerate,
# lightning, deepspeed, bitsandbytes, torchtune, timm, torchvision, onnx, onnxscript, onnxruntime).
# Into a virtual environment OUTSIDE the repository (default ../memplan-venv beside the checkout,
# or $MEMPLAN_VENV), from PyPI. PyPI's torch wheel is a CUDA build of several GB; it runs on the
# CPU, which is all the checks here need. Idempotent: an environment that already imports every
# package is left as it is. Prints the venv's python path last, for MEMPLAN_PYTHON.
#
#   tools/setup_torch_env.sh            # creates or completes the venv
#   MEMPLAN_PYTHON=$(tools/setup_torch_env.sh | tail -1) ctest ...   # torch checks use it
#
# CI does not run this (the rows it measured are checked in and re-predicted without it).
set -euo pipefail
cd "$(dirname "$0")/.."
venv=${MEMPLAN_VENV:-$(cd .. && pwd)/memplan-venv}
python=${MEMPLAN_BASE_PYTHON:-python3}
modules="torch transformers peft accelerate lightning deepspeed bitsandbytes torchtune timm torchvision onnx onnxscript onnxruntime torchao"
if [ -x "$venv/bin/python" ] && "$venv/bin/python" - "$modules" >/dev/null 2>&1 <<'PY'
import importlib, sys
for name in sys.argv[1].split():
    importlib.import_module(name)
PY
then
  echo "memplan torch env: complete at $venv" >&2
  echo "$venv/bin/python"
  exit 0
fi
if [ ! -x "$venv/bin/python" ]; then
  "$python" -m venv "$venv" >&2
fi
pip=("$venv/bin/python" -m pip install --disable-pip-version-check -q)
"${pip[@]}" --upgrade pip setuptools wheel >&2
# torch first: deepspeed's setup imports it.
"${pip[@]}" "torch>=2.4" torchvision >&2
# torchtune 0.6 imports torchao.dtypes.nf4tensor, which torchao 0.15 removed.
"${pip[@]}" transformers peft accelerate lightning bitsandbytes torchtune "torchao<0.15" timm \
  onnx onnxscript onnxruntime pyyaml >&2
DS_BUILD_OPS=0 "${pip[@]}" --no-build-isolation deepspeed >&2
"$venv/bin/python" - <<'PY' >&2
import importlib
for name in ["torch", "transformers", "peft", "accelerate", "lightning", "deepspeed", "bitsandbytes",
             "torchtune", "timm", "torchvision", "onnx", "onnxscript", "onnxruntime"]:
    module = importlib.import_module(name)
    print(f"  {name} {getattr(module, '__version__', '?')}")
PY
echo "$venv/bin/python"
