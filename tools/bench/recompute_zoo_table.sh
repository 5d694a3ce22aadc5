#!/usr/bin/env bash
# Prints the docs/measurements.md table of recompute strategies on the zoo: for each model at a
# fixed micro-batch, fp32, a 24 GB budget, the simulated peak and the estimated step time with
# --recompute none / sqrt / optimal, and optimal's added time relative to sqrt's.
# Usage: tools/bench/recompute_zoo_table.sh [build-dir]
set -euo pipefail
build=${1:-build}
memplan=$build/tools/memplan
zoo=$build/zoo
row() {
  local name=$1 model=$2; shift 2
  local cells="" none_s="" sqrt_s="" opt_s=""
  for strategy in none sqrt optimal; do
    local json
    json=$("$memplan" analyze "$zoo/$model.onnx" --gpu 24G --precision fp32 --json \
      --recompute "$strategy" "$@" || [ $? -eq 1 ])
    read -r peak fits secs < <(echo "$json" | python3 -c '
import json, sys
j = json.load(sys.stdin)
print(j["peak_bytes"] / 2**30, "fits" if j["fits"] else "over", j["estimated_step_seconds"])')
    cells+=$(printf " %.2f GiB (%s), %.3f s |" "$peak" "$fits" "$secs")
    case $strategy in none) none_s=$secs ;; sqrt) sqrt_s=$secs ;; optimal) opt_s=$secs ;; esac
  done
  local overhead
  overhead=$(python3 -c "n,s,o=$none_s,$sqrt_s,$opt_s; print(f'{100*(o-n)/n:+.1f}% vs {100*(s-n)/n:+.1f}%')")
  echo "| $name |$cells $overhead |"
}
echo "| model (fp32, 24 GB) | none | sqrt | optimal | added time: optimal vs sqrt |"
echo "|---|---|---|---|---|"
row "ResNet-50, m=384" resnet50 --micro-batch 384
row "ViT-B/16, m=192" vit_b16 --micro-batch 192
row "BERT-base, seq 512, m=64" bert_base --micro-batch 64 --dim seq=512
row "GPT-2 small, seq 1024, m=16" gpt2_small --micro-batch 16 --dim seq=1024
