#!/bin/sh
# `memplan analyze owner/name`: a Hugging Face hub id, resolved through huggingface_hub's cache
# (config.json only), offline. A fake cache laid out as huggingface_hub lays it out
# (models--acme--tiny-llama/snapshots/<rev>/config.json and refs/main) under HF_HUB_CACHE and
# under HF_HOME/hub, with HF_HUB_OFFLINE=1; the refusals (offline and not cached, no network, no
# such repository, gated) each one line, exit 2, against a local stand-in hub; and a local folder
# whose path looks like owner/name is that folder. Needs a Python with torch, transformers and
# huggingface_hub ($MEMPLAN_PYTHON, else ../memplan-venv), else exit 77 (skipped).
#   hf_hub_test.sh MEMPLAN CONFIGS WORK
set -u
memplan=$(realpath "$1") configs=$(realpath "$2") work=$3
python=${MEMPLAN_PYTHON:-$(dirname "$configs")/../../../memplan-venv/bin/python}
if ! "$python" -c 'import torch, transformers, onnx, onnx_ir, huggingface_hub' >/dev/null 2>&1; then
  echo "skipped: no Python with torch, transformers, onnx and huggingface_hub ($python)"
  exit 77
fi
rm -rf "$work" && mkdir -p "$work/cache/models--acme--tiny-llama/snapshots/0123abcd" \
  "$work/cache/models--acme--tiny-llama/refs" "$work/home" "$work/empty"
cp "$configs/llama/config.json" "$work/cache/models--acme--tiny-llama/snapshots/0123abcd/"
printf 0123abcd > "$work/cache/models--acme--tiny-llama/refs/main"
ln -s ../cache "$work/home/hub"
export MEMPLAN_PYTHON="$python" MEMPLAN_CACHE_DIR="$work/memplan"
unset HF_TOKEN HF_ENDPOINT
failed=0
expect() {  # expect NAME CODE REGEX: the last command's exit code and its output
  if [ "$rc" = "$2" ] && grep -Eq -- "$3" "$work/out.txt"; then
    echo "ok   $1"
  else
    echo "FAIL $1 (exit $rc):"; cat "$work/out.txt"; failed=1
  fi
}
one_line() {  # the output is one line
  [ "$(wc -l < "$work/out.txt")" -eq 1 ] || { echo "FAIL $1: not one line"; failed=1; }
}

HF_HUB_OFFLINE=1 HF_HUB_CACHE="$work/cache" "$memplan" analyze acme/tiny-llama --gpu 24G \
  --dim seq=16 > "$work/out.txt" 2>&1; rc=$?
expect "a hub id from HF_HUB_CACHE, offline" 0 "^memplan analyze tiny-llama on .*"
grep -q -- "- fits" "$work/out.txt" || { echo "FAIL the hub id's plan does not fit"; failed=1; }
HF_HUB_OFFLINE=1 HF_HOME="$work/home" "$memplan" analyze acme/tiny-llama --gpu 24G \
  --dim seq=16 --json > "$work/out.txt" 2>&1; rc=$?
# The tiny Llama's two layers, their attention by its transformers path.
expect "a hub id from HF_HOME/hub, offline" 0 '"node": "/model/layers.1/self_attn/'

HF_HUB_OFFLINE=1 HF_HUB_CACHE="$work/empty" "$memplan" analyze acme/absent --gpu 24G \
  > "$work/out.txt" 2>&1; rc=$?
expect "offline and not cached: one line" 2 "^memplan: 'acme/absent' is no local path, so it names a Hugging Face repository: the config of 'acme/absent' is not in the Hugging Face cache and the hub cannot be reached \(HF_HUB_OFFLINE is set\)$"
one_line "offline and not cached"

# No network: a hub endpoint where nothing listens (port 9 on this machine: discard, closed).
HF_ENDPOINT=http://127.0.0.1:9 HF_HUB_ETAG_TIMEOUT=5 HF_HUB_CACHE="$work/empty" \
  "$memplan" analyze acme/absent --gpu 24G > "$work/out.txt" 2>&1; rc=$?
expect "no network and not cached: one line" 2 "^memplan: 'acme/absent' is no local path, so it names a Hugging Face repository: .*(no network|cannot reach the Hugging Face hub)"
one_line "no network and not cached"

"$python" "$(dirname "$0")/hf_hub_server.py" > "$work/port" & server=$!
for _ in 1 2 3 4 5 6 7 8 9 10; do [ -s "$work/port" ] && break; sleep 1; done
hub=http://127.0.0.1:$(cat "$work/port")
HF_ENDPOINT=$hub HF_HUB_CACHE="$work/empty" "$memplan" analyze acme/absent --gpu 24G \
  > "$work/out.txt" 2>&1; rc=$?
expect "an unknown repository: one line" 2 "^memplan: 'acme/absent' is no local path, so it names a Hugging Face repository: no Hugging Face repository 'acme/absent' \(or it is private: log in with hf auth login, or HF_TOKEN\)$"
one_line "an unknown repository"
HF_ENDPOINT=$hub HF_HUB_CACHE="$work/empty" "$memplan" analyze gated/model --gpu 24G \
  > "$work/out.txt" 2>&1; rc=$?
expect "a gated repository: one line" 2 "^memplan: 'gated/model' is no local path, so it names a Hugging Face repository: the Hugging Face repository 'gated/model' is gated: accept its terms on huggingface.co, then log in \(hf auth login, or HF_TOKEN\)$"
one_line "a gated repository"
kill "$server"

# A local folder acme/tiny-llama (holding BERT's config) is the folder, though the cache has a
# repository of that id (Llama): the local path wins.
mkdir -p "$work/local/acme/tiny-llama" && cp "$configs/bert/config.json" "$work/local/acme/tiny-llama/"
(cd "$work/local" && HF_HUB_OFFLINE=1 HF_HUB_CACHE="$work/cache" "$memplan" analyze \
  acme/tiny-llama --gpu 24G --dim seq=16 --json) > "$work/out.txt" 2>&1; rc=$?
expect "a local path that looks like owner/name is the local path" 0 '"node": "/bert/encoder/layer.1/'
exit $failed
