# shellcheck shell=sh disable=SC2034,SC2154 # sets what the sourcing test reads; it sets $here
# Sourced by the export test scripts (tests/export/*_test.sh), each run as
# `NAME_test.sh MEMPLAN_BINARY [FIXTURES_DIR] WORK_DIR` with $here its directory: set -u, the
# arguments as $bin, $fixtures (empty without one) and $work, the Python they run (PYTHON
# overrides /usr/bin/python3), fail(), the skip when that Python or torch is missing (exit 77,
# which ctest reports as skipped: CI has no torch), a fresh work directory and the precisions an
# exported loop runs in on CPU.
set -u

bin=$1
if [ $# -ge 3 ]; then
  fixtures=$2
  work=$3
else
  fixtures=
  work=$2
fi
# The venv tools/setup_torch_env.sh makes beside the checkout (torch 2.x and the frameworks) when
# it exists, else Debian's python3 (python3-torch 1.13 where installed).
venv_python=$here/../../../memplan-venv/bin/python
if [ -x "$venv_python" ]; then
  python=${PYTHON:-$venv_python}
else
  python=${PYTHON:-/usr/bin/python3}
fi

fail() {
  echo "FAIL: $*" >&2
  exit 1
}

# Skips the test unless $python exists (and, with "torch", imports torch).
require_python() {
  [ -x "$python" ] || { echo "SKIP: $python not found"; exit 77; }
  if [ "${1:-}" = torch ]; then
    "$python" -c 'import torch' 2>/dev/null || { echo "SKIP: $python has no torch"; exit 77; }
  fi
}

# Skips the test unless $python imports every framework an export targets (the venv of
# tools/setup_torch_env.sh has them; CI has none).
require_frameworks() {
  for module in transformers peft accelerate lightning deepspeed bitsandbytes torchtune; do
    "$python" -c "import $module" 2>/dev/null || { echo "SKIP: $python has no $module"; exit 77; }
  done
}

# An empty directory $1 (removed first if it exists).
fresh_dir() {
  rm -rf "$1"
  mkdir -p "$1" || fail "cannot create $1"
}

# Sets $precisions to the precisions an exported loop runs in on CPU: fp32 and bf16, and fp16
# where CPU autocast has float16 (torch 2.x). torch 1.13's torch.autocast("cpu",
# dtype=torch.float16) raises instead; then cpu_fp16_autocast.py's reason is printed.
cpu_loop_precisions() {
  precisions="fp32 bf16"
  if reason=$("$python" "$here/cpu_fp16_autocast.py"); then
    precisions="$precisions fp16"
  else
    echo "fp16 not run: $reason"
  fi
}
