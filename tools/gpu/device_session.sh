#!/usr/bin/env bash
# memplan's GPU checks in one run, for a machine with a CUDA GPU and PyTorch (issue 13):
#   tests    the [gpu] Catch2 tests (cuda_tests "[gpu]")
#   verify   memplan verify --device cuda on zoo models at the plan analyze recommends for the GPU
#            and near its limit
#   oom      an over-limit plan (must report out of memory at a step and node)
#   profile  memplan profile (CUPTI) on two zoo models, with a Chrome trace
#   bench    tools/bench/bench_cuda_vs_torch.py (the CUDA backend's step time against PyTorch's)
#   compare  tools/gpu/compare_with_torch.py (memplan beside torch.cuda's allocator)
#   sanitize compute-sanitizer (initcheck, racecheck) on a small transformer verify: finds the
#            CUDA kernel that reads memory nothing wrote, or races
#
#   tools/gpu/device_session.sh BUNDLE.tar.xz OUT_DIR [STAGES] [compare_with_torch.py args...]
#
# BUNDLE is tools/gpu/make_bundle.sh's archive; STAGES a comma list (default all four). Logs and
# JSON land in OUT_DIR. Every stage runs even when one before it fails.
set -u
bundle=$1
out=$2
stages=${3:-tests,compare,verify,oom,profile,bench}
shift 3 || shift $#
mkdir -p "$out"
work=$(mktemp -d)
tar -C "$work" -xJf "$bundle"
b=$work/bundle
# CUDA 13 runtime, cuBLAS and CUPTI: the toolkit's, else the ones PyTorch's wheels carry.
cuda_dirs=$(ls -d /usr/local/cuda/lib64 /usr/local/cuda/extras/CUPTI/lib64 2>/dev/null | tr '\n' ':')
wheel_dirs=$(python3 - <<'PY' 2>/dev/null
import glob, os, site
dirs = set()
for root in site.getsitepackages():
    for lib in glob.glob(os.path.join(root, "nvidia", "**", "lib*.so*"), recursive=True):
        dirs.add(os.path.dirname(lib))
print(":".join(sorted(dirs)))
PY
)
# Only memplan's own processes see these: PyTorch keeps the CUDA libraries of its wheels.
libs=$b/lib:$cuda_dirs$wheel_dirs
memplan=$b/run-memplan
printf '#!/bin/sh\nLD_LIBRARY_PATH=%s exec %s "$@"\n' "$libs" "$b/memplan" >"$memplan"
chmod +x "$memplan"
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv | tee "$out/gpu.txt"
python3 -c "import torch, transformers; print(torch.__version__, transformers.__version__)" 2>/dev/null | tee -a "$out/gpu.txt"
LD_LIBRARY_PATH=$libs ldd "$b/memplan" | grep -E "not found|cuda|cublas|cupti" | tee "$out/ldd.txt"

has() { [[ ",$stages," == *",$1,"* ]]; }

if has tests; then
  echo "== [gpu] tests"
  (cd "$b" && LD_LIBRARY_PATH=$libs ./cuda_tests "[gpu]" -s -r compact >"$out/gpu_tests.log" 2>&1)
  echo "cuda_tests exit $?"
  tail -n 3 "$out/gpu_tests.log"
  grep -E "FAILED|failed" "$out/gpu_tests.log" | head -n 20
fi

declare -A dims=([gpt2_small]="--dim seq=512" [bert_base]="--dim seq=512")

if has verify; then
  echo "== verify --device cuda"
  for model in ${VERIFY_MODELS:-resnet18 resnet50 vit_b16 gpt2_small bert_base}; do
    f=$b/zoo/$model.onnx
    # A small fixed plan (fp32: verify's default), the plan analyze recommends for a 4 GiB budget
    # with no headroom (near that limit), and the one it recommends for an H100, each on the GPU.
    for plan in ${VERIFY_PLANS:-small limit}; do
      case $plan in
        small) flags="--micro-batch 4" ;;
        limit) flags="--gpu 4G --headroom 0" ;;
        *) flags="--gpu H100" ;;
      esac
      # shellcheck disable=SC2086
      timeout "${VERIFY_TIMEOUT:-240}" "$memplan" verify "$f" $flags ${dims[$model]:-} --precision fp32 --recompute none --attention eager \
        --device cuda --steps 2 --json >"$out/verify_${model}_$plan.json" 2>"$out/verify_${model}_$plan.err"
      echo "$model $plan: exit $? $(head -c 300 "$out/verify_${model}_$plan.err")"
      python3 -c "import json,sys; d=json.load(open(sys.argv[1])); m=d.get('memory',{}); print({'passed': d.get('passed'), 'micro_batch': d['plan']['micro_batch'], 'predicted': d.get('predicted_peak_bytes'), 'measured': d.get('measured_peak_bytes'), 'reserved': (m.get('predicted_reserved_bytes'), m.get('measured_reserved_bytes')), 'step_s': d.get('step_seconds')})" "$out/verify_${model}_$plan.json" 2>/dev/null
    done
  done
fi

if has oom; then
  # Over the limit: a micro-batch far beyond 80 GB must say where it ran out of memory. (Its own
  # stage: it takes the whole card, so nothing else may run beside it.)
  timeout "${VERIFY_TIMEOUT:-240}" "$memplan" verify "$b/zoo/resnet50.onnx" --micro-batch 2048 --precision fp32 \
    --recompute none --device cuda --steps 1 >"$out/verify_over_limit.txt" 2>&1
  echo "resnet50 over the limit: exit $?"; tail -n 3 "$out/verify_over_limit.txt"
fi

if has sanitize; then
  echo "== compute-sanitizer on a small transformer verify"
  sanitizer=$(command -v compute-sanitizer || ls /usr/local/cuda/bin/compute-sanitizer 2>/dev/null)
  small=(verify "$b/zoo/gpt2_small.onnx" --micro-batch 1 --dim seq=32 --precision fp32 --recompute none
    --attention eager --device cuda --steps 1)
  # First without the sanitizer: does the small run show the run-to-run difference at all?
  timeout "${SANITIZE_TIMEOUT:-120}" "$memplan" "${small[@]}" >"$out/sanitize_plain.log" 2>&1
  echo "plain: exit $?"; tail -n 6 "$out/sanitize_plain.log"
  for tool in ${SANITIZE_TOOLS:-initcheck racecheck}; do
    timeout "${SANITIZE_TIMEOUT:-120}" "$sanitizer" --tool "$tool" --print-limit 30 --show-backtrace device \
      "$memplan" "${small[@]}" >"$out/sanitize_$tool.log" 2>&1
    echo "$tool: exit $?"; grep -E "^=========" "$out/sanitize_$tool.log" | grep -v "^=========     " | sort | uniq -c | sort -rn | head -n 15
  done
fi

if has profile; then
  echo "== profile (CUPTI)"
  for model in resnet50 gpt2_small; do
    # shellcheck disable=SC2086
    timeout "${VERIFY_TIMEOUT:-240}" "$memplan" profile "$b/zoo/$model.onnx" --gpu H100 --precision fp32 --micro-batch 8 --attention eager ${dims[$model]:-} \
      --out "$out/profile_$model.json" --trace "$out/trace_$model.json" >"$out/profile_$model.log" 2>&1
    echo "$model: exit $?"; tail -n 12 "$out/profile_$model.log"
  done
fi

if has bench; then
  echo "== bench: CUDA backend step time against PyTorch eager"
  PYTHONUNBUFFERED=1 timeout "${BENCH_TIMEOUT:-300}" python3 "$(dirname "$0")/../bench/bench_cuda_vs_torch.py" \
    --memplan "$memplan" --zoo "$b/zoo" --steps 5 ${BENCH_MODELS:+--models $BENCH_MODELS} >"$out/bench.log" 2>&1
  echo "bench exit $?"; grep -v -i warn "$out/bench.log" | tail -n 15
fi

if has compare; then
  echo "== compare_with_torch"
  # The exports come back too (weights stripped, one archive): tests/fixtures/gpu_rows keeps
  # them so tools/gpu/repredict_rows.py can check later changes against these rows without a GPU.
  PYTHONUNBUFFERED=1 python3 "$(dirname "$0")/compare_with_torch.py" --memplan "$memplan" \
    --out "$out/gpu_validation.jsonl" --graphs "$out/graphs" "$@" 2>"$out/compare.err"
  echo "compare exit $?"; grep -v -i warn "$out/compare.err" | tail -n 20
  if [ -d "$out/graphs" ]; then
    tar -C "$out" -cJf "$out/graphs.tar.xz" graphs && rm -rf "$out/graphs"
  fi
fi
