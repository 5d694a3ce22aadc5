#!/bin/sh
# Outputs never overwrite an input of the same command, nor each other; a write that fails keeps
# the old file; a write to stdout that fails is exit 2 (issue 45).
# Usage: output_safety_test.sh MEMPLAN FIXTURES WORK
set -u
BIN=$1
FIX=$2
WORK=$3
rm -rf "$WORK"
mkdir -p "$WORK"
cd "$WORK" || exit 1
fail() {
  echo "FAIL: $*" >&2
  exit 1
}
cp "$FIX/tiny_mlp.onnx" m.onnx
cp m.onnx m.orig
# expect_refused EXPECTED_LINE_REGEX FILE_THAT_MUST_NOT_CHANGE ORIGINAL -- memplan args...
expect_refused() {
  pattern=$1
  file=$2
  original=$3
  shift 3
  "$BIN" "$@" >out.txt 2>err.txt
  rc=$?
  [ "$rc" -eq 2 ] || fail "memplan $*: exit $rc, expected 2; stderr: $(cat err.txt)"
  [ "$(wc -l <err.txt)" -eq 1 ] || fail "memplan $*: not one line: $(cat err.txt)"
  grep -Eq "$pattern" err.txt || fail "memplan $*: '$(cat err.txt)' does not match '$pattern'"
  cmp -s "$file" "$original" || fail "memplan $*: $file changed"
}

# Every writer over its own input (baseline used to destroy the model).
expect_refused "^memplan: --out 'm.onnx' is the model 'm.onnx' this command reads; refusing to overwrite it$" \
  m.onnx m.orig baseline m.onnx --gpu 24G --batch 4 --out m.onnx
expect_refused "^memplan: --svg '\./m.onnx' is the model 'm.onnx' this command reads; refusing to overwrite it$" \
  m.onnx m.orig analyze m.onnx --gpu 24G --batch 4 --svg ./m.onnx
expect_refused "^memplan: --export-out 'm.onnx' is the model 'm.onnx' " \
  m.onnx m.orig analyze m.onnx --gpu 24G --batch 4 --export pytorch --export-out m.onnx
expect_refused "^memplan: --html 'm.onnx' is the model 'm.onnx' " \
  m.onnx m.orig report m.onnx --gpu 24G --batch 4 --html m.onnx
# Another spelling of the same file: a symbolic link and a hard link are the same inode.
ln -s m.onnx link.onnx
ln m.onnx hard.onnx
expect_refused "^memplan: --out 'link.onnx' is the model 'm.onnx' " \
  m.onnx m.orig baseline m.onnx --gpu 24G --batch 4 --out link.onnx
expect_refused "^memplan: --svg 'hard.onnx' is the model 'm.onnx' " \
  m.onnx m.orig analyze m.onnx --gpu 24G --batch 4 --svg hard.onnx
# export --out over its plan, baseline --out over its config list.
"$BIN" analyze m.onnx --gpu 24G --batch 4 --json >plan.json || fail "analyze --json"
cp plan.json plan.orig
expect_refused "^memplan: --out 'plan.json' is the plan 'plan.json' " \
  plan.json plan.orig export plan.json --to pytorch --out plan.json
printf '{"schema": "memplan-configs/1", "configurations": [{"name": "a", "model": "m.onnx", "flags": {"batch": 4, "gpu": "24G"}}]}\n' >configs.json
cp configs.json configs.orig
expect_refused "^memplan: --out 'configs.json' is the config list 'configs.json' " \
  configs.json configs.orig baseline --configs configs.json --out configs.json
# A config list's model is an input too.
expect_refused "^memplan: --out 'm.onnx' is the model of configuration 'a' '[^']*m.onnx' " \
  m.onnx m.orig baseline --configs configs.json --out m.onnx
# Two outputs to one path.
expect_refused "^memplan: --html and --svg both name 'page'; give each output its own file$" \
  m.onnx m.orig report m.onnx --gpu 24G --batch 4 --html page --svg page
[ ! -e page ] || fail "report --html page --svg page wrote page"

# A failed write keeps the old file: a 1 KiB file-size limit (SIGXFSZ ignored, so write() fails
# with EFBIG) stops the HTML page, which is far larger, part way.
printf 'old page\n' >page.html
cp page.html page.orig
(
  trap '' XFSZ
  ulimit -f 1
  exec "$BIN" report m.onnx --gpu 24G --batch 4 --html page.html
) >out.txt 2>err.txt
rc=$?
[ "$rc" -eq 2 ] || fail "report under a 1 KiB file limit: exit $rc, expected 2; $(cat err.txt)"
grep -Eq "^memplan: cannot write 'page.html': File too large$" err.txt ||
  fail "report under a file limit: $(cat err.txt)"
cmp -s page.html page.orig || fail "a failed write truncated page.html"
leftover=$(ls -A | grep -c memplan-)
[ "$leftover" -eq 0 ] || fail "temporary files left: $(ls -A)"
# A successful write replaces the file and keeps its permission bits.
chmod 640 page.html
"$BIN" report m.onnx --gpu 24G --batch 4 --html page.html >/dev/null 2>err.txt ||
  fail "report --html page.html: $(cat err.txt)"
grep -q '<html' page.html || fail "page.html was not replaced"
[ "$(stat -c %a page.html)" = 640 ] || fail "page.html lost its mode: $(stat -c %a page.html)"

# stdout that cannot take the report: exit 2 and one line, not exit 0 with nothing written.
if [ -w /dev/full ]; then
  "$BIN" inspect m.onnx >/dev/full 2>err.txt
  rc=$?
  [ "$rc" -eq 2 ] || fail "inspect >/dev/full: exit $rc, expected 2"
  grep -Eq "^memplan: cannot write to standard output: No space left on device$" err.txt ||
    fail "inspect >/dev/full: $(cat err.txt)"
  [ "$(wc -l <err.txt)" -eq 1 ] || fail "inspect >/dev/full: more than one line: $(cat err.txt)"
  "$BIN" export plan.json --to pytorch >/dev/full 2>err.txt
  [ $? -eq 2 ] || fail "export >/dev/full: not exit 2"
fi
# An empty flag value is refused, never read as the flag left out (`--global-batch ''` planned
# without a global batch; `--out ''` wrote to stdout).
expect_refused "^memplan: analyze: --global-batch: an empty value; give one or leave it out$" \
  m.onnx m.orig analyze m.onnx --gpu 24G --global-batch ''
expect_refused "^memplan: analyze: --reserve: an empty value; give one or leave it out$" \
  m.onnx m.orig analyze m.onnx --gpu 24G --reserve ''
expect_refused "^memplan: export: --out: an empty value; give one or leave it out$" \
  plan.json plan.orig export plan.json --to pytorch --out ''
expect_refused "^memplan: inspect: --dim: an empty value; give one or leave it out$" \
  m.onnx m.orig inspect m.onnx --dim ''
echo "output safety: all checks passed"
