#!/bin/sh
# Headless-browser test of `memplan report --html`: the page's script must run without error
# (it sets data-rendered="true" on <body> last), draw one circle per candidate, and the inline
# timeline must keep its category layers. Also takes a screenshot.
#
# usage: browser_test.sh MEMPLAN_BINARY MODEL.onnx OUT_DIR [SCREENSHOT.png]
#   SCREENSHOT.png: where to copy the screenshot (docs/report_screenshot.png is made this way:
#   tests/report/browser_test.sh build/tools/memplan build/zoo/resnet18.onnx /tmp/r docs/report_screenshot.png)
# Exit 0 pass, 1 fail, 77 skipped (no chromium; ctest reports it as skipped).
# CHROMIUM overrides the browser (default /usr/bin/chromium, Debian's package "chromium").
set -u

bin=$1
model=$2
out=$3
screenshot_copy=${4:-}
chromium=${CHROMIUM:-/usr/bin/chromium}

fail() {
  echo "FAIL: $*" >&2
  exit 1
}

mkdir -p "$out" || fail "cannot create $out"
out=$(cd "$out" && pwd)
html="$out/report.html"
rm -f "$html" "$out/timeline.svg" "$out/dom.html" "$out/report.png"

# The report itself (no browser needed): exit 0, both files, JSON on stdout.
"$bin" report "$model" --gpu 24G --global-batch 64 --html "$html" --svg "$out/timeline.svg" \
  --json >"$out/analysis.json" || fail "memplan report exited $?"
[ -s "$html" ] || fail "no $html"
[ -s "$out/timeline.svg" ] || fail "no $out/timeline.svg"
grep -q '"schema": "memplan/1"' "$out/analysis.json" || fail "stdout is not the memplan/1 JSON"
if grep -q -E 'https?:' "$html"; then fail "the report contains a URL"; fi

if [ ! -x "$chromium" ]; then
  echo "SKIP: $chromium not found; install Debian's chromium (apt-get install -y chromium) to" \
    "run the headless-browser test of the HTML report"
  exit 77
fi

profile=$(mktemp -d)
trap 'rm -rf "$profile"' EXIT
browser() {
  # Background networking, component updates and sync off: the test needs no network and the
  # report must not ask for any.
  timeout 120 "$chromium" --headless --no-sandbox --disable-gpu --disable-background-networking \
    --disable-component-update --disable-sync --no-first-run --user-data-dir="$profile" "$@"
}

browser --dump-dom "file://$html" >"$out/dom.html" 2>"$out/chromium.log" ||
  fail "chromium --dump-dom failed (see $out/chromium.log)"
grep -q 'data-rendered="true"' "$out/dom.html" ||
  fail "the page's script did not finish (no data-rendered=\"true\"; see $out/dom.html)"

# Count what the script drew and compare with what it reports and what the data says.
frontier=$(sed -n 's/.*data-frontier-points="\([0-9]*\)".*/\1/p' "$out/dom.html" | head -n 1)
circles=$(grep -o '<circle class="candidate ' "$out/dom.html" | wc -l)
# Candidates are the objects of the "candidates" array: in the 2-space-indented JSON their keys
# sit at 6 spaces (the plan's own "micro_batch" is at 4).
candidates=$(grep -c '^      "micro_batch": ' "$out/analysis.json")
areas=$(sed -n 's/.*data-timeline-areas="\([0-9]*\)".*/\1/p' "$out/dom.html" | head -n 1)
paths=$(grep -o '<path class="area"' "$out/dom.html" | wc -l)
chosen=$(grep -o '<circle class="candidate fits chosen"' "$out/dom.html" | wc -l)
echo "frontier circles: $circles (script: $frontier, candidates in the JSON: $candidates);" \
  "timeline layers: $paths (script: $areas); chosen: $chosen"
[ "$circles" -gt 0 ] || fail "no candidate drawn"
[ "$circles" = "$frontier" ] || fail "drew $circles circles, the script counted $frontier"
[ "$circles" = "$candidates" ] || fail "drew $circles circles for $candidates candidates"
[ "$chosen" = 1 ] || fail "expected exactly one chosen candidate, found $chosen"
[ "$paths" -gt 0 ] || fail "no timeline layer"
[ "$paths" = "$areas" ] || fail "the timeline has $paths layers, the script counted $areas"

# The hover read-out: a copy of the page with a probe script that moves the mouse over the
# timeline (60% across: inside the plot) and records the tooltip.
probe='<script>(function () { var s = document.getElementById("timeline-svg");'\
' var r = s.getBoundingClientRect(); s.dispatchEvent(new MouseEvent("mousemove",'\
' {clientX: r.left + r.width * 0.6, clientY: r.top + r.height / 2}));'\
' var t = document.getElementById("timeline-tooltip");'\
' document.body.setAttribute("data-probe", (t.hidden ? "hidden" : "shown") + ": " +'\
' t.textContent); })();</script>'
sed "s#</body>#$probe</body>#" "$html" >"$out/probe.html" || fail "cannot write the probe page"
browser --dump-dom "file://$out/probe.html" >"$out/probe_dom.html" 2>>"$out/chromium.log" ||
  fail "chromium --dump-dom of the probe page failed"
grep -q 'data-probe="shown: [^"]*live: [0-9.]* [KMG]\{0,1\}i\{0,1\}B' "$out/probe_dom.html" ||
  fail "hovering the timeline shows no read-out (see $out/probe_dom.html)"
echo "hover: $(sed -n 's/.*data-probe="\([^"]*\)".*/\1/p' "$out/probe_dom.html" | head -n 1)"

browser --screenshot="$out/report.png" --window-size=1280,900 "file://$html" \
  >>"$out/chromium.log" 2>&1 || fail "chromium --screenshot failed (see $out/chromium.log)"
[ -s "$out/report.png" ] || fail "no screenshot"
[ "$(head -c 4 "$out/report.png" | tail -c 3)" = "PNG" ] || fail "the screenshot is not a PNG"
if [ -n "$screenshot_copy" ]; then cp "$out/report.png" "$screenshot_copy" || fail "cannot copy"; fi
echo "PASS: the report renders in $("$chromium" --version 2>/dev/null)"
