#pragma once
// The stylesheet and script inlined into every HTML report, so the file works offline, from an
// e-mail attachment or a CI artifact: no CDN, no font, no URL of any kind.
//
// The script reads the JSON in <script id="memplan-data">, draws the candidates chart into
// <svg id="frontier-svg">, adds a hover read-out to the static timeline (<svg id="timeline-svg">,
// drawn by timeline_svg.cc) and finally sets on <body>:
//   data-rendered="true", data-frontier-points="<circles drawn>",
//   data-timeline-areas="<category layers present>"
// which the headless-browser test (tests/report/browser_test.sh) checks.

#include <string_view>

namespace memplan {

inline constexpr std::string_view kReportCss = R"css(
:root { --ink: #222; --muted: #666; --line: #ddd; --ok: #2e7d32; --bad: #c62828; }
* { box-sizing: border-box; }
body { margin: 0; padding: 24px 32px 48px; font: 14px/1.45 system-ui, -apple-system, "Segoe UI",
       Roboto, sans-serif; color: var(--ink); background: #fafafa; }
main { max-width: 1240px; margin: 0 auto; }
h1 { font-size: 22px; margin: 0 0 4px; }
h2 { font-size: 17px; margin: 28px 0 8px; }
.subtitle { color: var(--muted); margin: 0 0 12px; }
.verdict { display: inline-block; padding: 4px 10px; border-radius: 4px; font-weight: 600;
           color: #fff; }
.verdict.fits { background: var(--ok); }
.verdict.over { background: var(--bad); }
.banner { border-left: 4px solid var(--bad); background: #fdecea; padding: 8px 12px;
          margin: 12px 0; }
.cards { display: grid; grid-template-columns: repeat(auto-fill, minmax(170px, 1fr)); gap: 10px;
         margin: 16px 0; }
.card { background: #fff; border: 1px solid var(--line); border-radius: 6px; padding: 8px 12px; }
.card .label { color: var(--muted); font-size: 12px; text-transform: uppercase;
               letter-spacing: .04em; }
.card .value { font-size: 17px; font-weight: 600; }
.panel { background: #fff; border: 1px solid var(--line); border-radius: 6px; padding: 12px;
         position: relative; }
.panel svg { display: block; width: 100%; height: auto; }
.caption { color: var(--muted); font-size: 13px; margin: 6px 0 0; }
table { border-collapse: collapse; background: #fff; }
th, td { border-bottom: 1px solid var(--line); padding: 4px 10px; text-align: left; }
td.num, th.num { text-align: right; font-variant-numeric: tabular-nums; }
tr.chosen td { background: #fff6d6; font-weight: 600; }
.swatch { display: inline-block; width: 10px; height: 10px; margin-right: 6px;
          vertical-align: baseline; }
.two-col { display: grid; grid-template-columns: minmax(0, 3fr) minmax(0, 2fr); gap: 16px;
           align-items: start; }
.frontier-panel { max-width: 760px; margin-bottom: 12px; }
details summary { cursor: pointer; color: var(--muted); }
.tooltip { position: absolute; pointer-events: none; background: rgba(255,255,255,.96);
           border: 1px solid #bbb; border-radius: 4px; padding: 6px 8px; font-size: 12px;
           box-shadow: 0 2px 6px rgba(0,0,0,.15); white-space: nowrap; }
.tooltip .name { font-weight: 600; }
ul.advice li { margin-bottom: 6px; }
footer { margin-top: 32px; color: var(--muted); font-size: 12px; }
)css";

inline constexpr std::string_view kReportScript = R"js(
(function () {
  'use strict';
  var data = JSON.parse(document.getElementById('memplan-data').textContent);
  var frontierSvg = document.getElementById('frontier-svg');
  var timelineSvg = document.getElementById('timeline-svg');
  // The SVG namespace, read from an inline <svg> so the report contains no URL at all.
  var SVG_NS = frontierSvg.namespaceURI;

  function svgEl(name, attrs, parent) {
    var e = document.createElementNS(SVG_NS, name);
    Object.keys(attrs).forEach(function (k) { e.setAttribute(k, String(attrs[k])); });
    if (parent) parent.appendChild(e);
    return e;
  }
  function svgText(text, attrs, parent) {
    var e = svgEl('text', attrs, parent);
    e.textContent = text;
    return e;
  }
  // Mirrors FormatBytes (analyzer/text/memory_size.cc): binary units, one decimal.
  function formatBytes(b) {
    var m = Math.abs(b), sign = b < 0 ? '-' : '';
    if (m < 1024) return sign + m.toFixed(0) + ' B';
    var names = ['KiB', 'MiB', 'GiB', 'TiB', 'PiB'], u = 0, s = m / 1024;
    while (u + 1 < names.length && s >= 1023.95) { s /= 1024; u++; }
    return sign + s.toFixed(1) + ' ' + names[u];
  }
  function niceStep(top, ticks, base) {
    var target = Math.max(top / ticks, 1e-9);
    var unit = 1;
    if (base === 1024) { while (unit * 1024 <= target) unit *= 1024; }
    var mantissa = target / unit, pow = Math.pow(10, Math.floor(Math.log10(mantissa)));
    var steps = [1, 2, 5, 10];
    for (var i = 0; i < steps.length; i++) {
      if (steps[i] * pow >= mantissa) return steps[i] * pow * unit;
    }
    return 10 * pow * unit;
  }
  function sameCandidate(a, b) {
    return a.micro_batch === b.micro_batch && a.accumulation_steps === b.accumulation_steps &&
        a.precision === b.precision && a.recompute === b.recompute;
  }

  // Peak memory (x) against throughput (y) for every candidate; the chosen one ringed, the
  // budget a vertical line, the fitting Pareto frontier joined.
  function drawFrontier() {
    var analysis = data.analysis, cands = analysis.candidates, budget = analysis.budget_bytes;
    var W = 640, H = 380, L = 80, R = 24, T = 28, B = 52;
    svgEl('rect', {x: 0, y: 0, width: W, height: H, fill: '#ffffff'}, frontierSvg);
    if (!cands.length) {
      svgText('no candidates were evaluated', {x: W / 2, y: H / 2, 'text-anchor': 'middle'},
              frontierSvg);
      return 0;
    }
    var maxPeak = Math.max.apply(null, cands.map(function (c) { return c.peak_bytes; }));
    var maxRate = Math.max.apply(null, cands.map(function (c) { return c.samples_per_second; }));
    var budgetIn = budget > 0 && budget <= maxPeak * 1.5;
    var xTop = Math.max(maxPeak, budgetIn ? budget : 0) * 1.08 || 1;
    var xStep = niceStep(xTop, 5, 1024), xMax = Math.ceil(xTop / xStep) * xStep;
    // Throughputs of candidates often differ by a few percent: the y axis spans their range
    // (padded), not 0..max, so the differences are visible; its labels say where it starts.
    var minRate = Math.min.apply(null, cands.map(function (c) { return c.samples_per_second; }));
    var pad = Math.max((maxRate - minRate) * 0.15, maxRate * 0.02, 1e-6);
    var yStep = niceStep(maxRate - minRate + 2 * pad, 5, 10);
    var yMin = Math.max(0, Math.floor((minRate - pad) / yStep) * yStep);
    var yMax = Math.ceil((maxRate + pad) / yStep) * yStep;
    function X(v) { return L + (W - L - R) * v / xMax; }
    function Y(v) { return H - B - (H - B - T) * (v - yMin) / (yMax - yMin); }
    var axes = svgEl('g', {'class': 'axes', 'font-size': 11}, frontierSvg);
    for (var x = 0; x <= xMax + xStep / 2; x += xStep) {
      svgEl('line', {x1: X(x), x2: X(x), y1: T, y2: H - B, stroke: '#000', 'stroke-opacity': 0.1},
            axes);
      svgText(formatBytes(x), {x: X(x), y: H - B + 16, 'text-anchor': 'middle'}, axes);
    }
    for (var y = yMin; y <= yMax + yStep / 2; y += yStep) {
      svgEl('line', {x1: L, x2: W - R, y1: Y(y), y2: Y(y), stroke: '#000', 'stroke-opacity': 0.1},
            axes);
      svgText(y.toLocaleString('en-US', {maximumFractionDigits: 2}),
              {x: L - 6, y: Y(y) + 4, 'text-anchor': 'end'}, axes);
    }
    svgText('peak memory (' + analysis.allocator + ' allocator model)',
            {x: (L + W - R) / 2, y: H - 12, 'text-anchor': 'middle'}, axes);
    svgText('samples/s (roofline estimate)',
            {x: 14, y: (T + H - B) / 2, 'text-anchor': 'middle',
             transform: 'rotate(-90 14 ' + (T + H - B) / 2 + ')'}, axes);
    if (budgetIn) {
      svgEl('line', {'class': 'budget-line', x1: X(budget), x2: X(budget), y1: T, y2: H - B,
                     stroke: '#d62728', 'stroke-width': 1.5, 'stroke-dasharray': '6 4'},
            frontierSvg);
      svgText('budget ' + formatBytes(budget), {x: X(budget) - 4, y: T + 12,
              'text-anchor': 'end', fill: '#d62728', 'font-size': 11}, frontierSvg);
    } else {
      svgText('budget ' + formatBytes(budget) + ' (off the chart, to the right)',
              {x: W - R, y: T - 10, 'text-anchor': 'end', fill: '#d62728', 'font-size': 11},
              frontierSvg);
    }
    // The Pareto frontier of the candidates that fit: less memory, or more throughput.
    var fitting = cands.filter(function (c) { return c.fits; }).slice().sort(function (a, b) {
      return a.peak_bytes - b.peak_bytes || b.samples_per_second - a.samples_per_second;
    });
    var best = -1, front = [];
    fitting.forEach(function (c) {
      if (c.samples_per_second > best) { front.push(c); best = c.samples_per_second; }
    });
    if (front.length > 1) {
      svgEl('polyline', {'class': 'frontier', fill: 'none', stroke: '#4e79a7', 'stroke-width': 1.5,
                         points: front.map(function (c) {
                           return X(c.peak_bytes).toFixed(1) + ',' +
                               Y(c.samples_per_second).toFixed(1);
                         }).join(' ')}, frontierSvg);
    }
    var chosen = data.chosen_candidate, drawn = 0;
    var dots = svgEl('g', {'class': 'candidates'}, frontierSvg);
    cands.forEach(function (c, i) {
      var isChosen = i === chosen;
      var dot = svgEl('circle', {
        'class': 'candidate ' + (c.fits ? 'fits' : 'over-budget') + (isChosen ? ' chosen' : ''),
        cx: X(c.peak_bytes), cy: Y(c.samples_per_second), r: isChosen ? 7 : 4.5,
        fill: c.fits ? (isChosen ? '#f28e2b' : '#4e79a7') : '#ffffff',
        stroke: c.fits ? '#ffffff' : '#c62828', 'stroke-width': 1.5}, dots);
      var title = svgEl('title', {}, dot);
      title.textContent = 'm=' + c.micro_batch + ' k=' + c.accumulation_steps + ' G=' +
          c.global_batch + ', ' + c.precision + ', recompute ' + c.recompute + ': peak ' +
          formatBytes(c.peak_bytes) + ', ' + c.samples_per_second.toFixed(1) + ' samples/s' +
          (c.fits ? '' : ' (does not fit)');
      drawn++;
      if (isChosen) {
        svgEl('circle', {'class': 'chosen-ring', cx: X(c.peak_bytes),
                         cy: Y(c.samples_per_second), r: 11, fill: 'none', stroke: '#f28e2b',
                         'stroke-width': 2}, dots);
        var right = X(c.peak_bytes) > (L + W - R) / 2;
        svgText('chosen: m=' + c.micro_batch + ' x k=' + c.accumulation_steps,
                {x: X(c.peak_bytes) + (right ? -14 : 14), y: Y(c.samples_per_second) - 12,
                 'text-anchor': right ? 'end' : 'start', 'font-size': 12, 'font-weight': 'bold'},
                dots);
      }
    });
    return drawn;
  }

  // A cursor and a read-out of the step under the mouse on the static timeline.
  function attachTimelineHover() {
    var t = data.timeline;
    if (!timelineSvg || !t.points) return;
    var left = +timelineSvg.getAttribute('data-plot-left');
    var right = +timelineSvg.getAttribute('data-plot-right');
    var top = +timelineSvg.getAttribute('data-plot-top');
    var bottom = +timelineSvg.getAttribute('data-plot-bottom');
    var tip = document.getElementById('timeline-tooltip');
    var cursor = svgEl('line', {'class': 'cursor', x1: 0, x2: 0, y1: top, y2: bottom,
                                stroke: '#000', 'stroke-opacity': 0.45, visibility: 'hidden'},
                       timelineSvg);
    function hide() { tip.hidden = true; cursor.setAttribute('visibility', 'hidden'); }
    function row(parent, label, value, color) {
      var div = document.createElement('div');
      if (color) {
        var sw = document.createElement('span');
        sw.className = 'swatch';
        sw.style.background = color;
        div.appendChild(sw);
      }
      div.appendChild(document.createTextNode(label + ': ' + value));
      parent.appendChild(div);
    }
    timelineSvg.addEventListener('mousemove', function (ev) {
      var box = timelineSvg.getBoundingClientRect();
      var scale = timelineSvg.viewBox.baseVal.width / box.width;
      var x = (ev.clientX - box.left) * scale;
      if (x < left || x >= right) { hide(); return; }
      var index = Math.min(t.points - 1, Math.floor((x - left) / (right - left) * t.points));
      var lo = 0, hi = t.begin.length - 1;
      while (lo < hi) {
        var mid = (lo + hi + 1) >> 1;
        if (t.begin[mid] <= index) lo = mid; else hi = mid - 1;
      }
      var kept = t.index[lo];
      var band = t.bands.filter(function (b) { return b[0] <= kept && kept < b[1]; })[0];
      tip.textContent = '';
      var name = document.createElement('div');
      name.className = 'name';
      name.textContent = t.name[lo];
      tip.appendChild(name);
      if (band) {
        row(tip, 'when', band[3] < 0 ? 'setup' : 'iteration ' + (band[3] + 1) +
            (band[4] >= 0 ? ', micro-batch ' + (band[4] + 1) : '') + ', ' + band[2]);
      }
      row(tip, 'step', kept + (t.begin.length < t.points ? ' (largest of its bucket)' : ''));
      row(tip, 'live', formatBytes(t.live[lo]));
      if (t.show_reserved) row(tip, 'reserved', formatBytes(t.reserved[lo]));
      t.categories.forEach(function (c, ci) {
        var bytes = t.by_category[c][lo];
        if (bytes > 0) row(tip, c, formatBytes(bytes), t.colors[ci]);
      });
      var vx = left + (right - left) * (kept + 0.5) / t.points;
      cursor.setAttribute('x1', vx);
      cursor.setAttribute('x2', vx);
      cursor.setAttribute('visibility', 'visible');
      tip.hidden = false;
      var panel = tip.parentNode.getBoundingClientRect();
      var px = ev.clientX - panel.left, py = ev.clientY - panel.top;
      tip.style.left = (px > panel.width / 2 ? px - tip.offsetWidth - 14 : px + 14) + 'px';
      tip.style.top = Math.max(0, py - tip.offsetHeight / 2) + 'px';
    });
    timelineSvg.addEventListener('mouseleave', hide);
  }

  var drawn = drawFrontier();
  attachTimelineHover();
  document.body.setAttribute('data-frontier-points', String(drawn));
  document.body.setAttribute('data-timeline-areas',
      String(timelineSvg ? timelineSvg.querySelectorAll('path.area').length : 0));
  document.body.setAttribute('data-rendered', 'true');
})();
)js";

}  // namespace memplan
