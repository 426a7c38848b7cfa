// The report page's stylesheet and its optional hover script (vanilla JS, no library: the
// page renders fully without it; it only adds a read-out of the nearest logged point when
// the pointer is over a line chart).
#include "report/report_internal.h"

namespace oc::report::detail {

std::string_view page_css() {
  return R"CSS(:root{--bg:#f4f5f7;--card:#fff;--border:#e2e5ea;--text:#1f2937;--muted:#6b7280;--blue:#2563eb;--ok:#15803d;--bad:#b91c1c}
*{box-sizing:border-box}
body{margin:0;background:var(--bg);color:var(--text);font:14px/1.45 system-ui,-apple-system,"Segoe UI",Roboto,"Helvetica Neue",Arial,sans-serif}
main{max-width:1240px;margin:0 auto;padding:24px 20px 40px}
h1{font-size:24px;margin:2px 0 4px;font-weight:650;overflow-wrap:anywhere}
h2{font-size:17px;font-weight:600;margin:30px 0 12px}
h3{font-size:14px;font-weight:600;margin:0 0 10px;color:#111827}
.card{background:var(--card);border:1px solid var(--border);border-radius:10px;padding:16px 18px;box-shadow:0 1px 2px rgba(16,24,40,.05);min-width:0}
.grid{display:grid;grid-template-columns:repeat(auto-fill,minmax(540px,1fr));gap:16px;align-items:start}
.card.wide{grid-column:1/-1}
.card.problems{margin-top:16px;border-color:#fecaca}
.title-row{display:flex;justify-content:space-between;gap:24px;flex-wrap:wrap;align-items:flex-start}
.title{min-width:0;flex:1 1 380px}
.eyebrow{font-size:11px;text-transform:uppercase;letter-spacing:.08em;color:var(--muted)}
.sub{color:var(--muted);font-size:13px;overflow-wrap:anywhere}
.kpis{display:flex;gap:12px;flex-wrap:wrap}
.kpi{border:1px solid var(--border);border-radius:8px;padding:8px 16px;min-width:160px;background:#f9fafb}
.kpi-label{font-size:12px;color:var(--muted)}
.kpi-value{font-size:30px;font-weight:650;letter-spacing:-.01em;font-variant-numeric:tabular-nums;color:#111827}
.kpi-sub{font-size:11px;color:var(--muted)}
.facts{display:grid;grid-template-columns:repeat(auto-fill,minmax(125px,1fr));gap:10px 16px;margin:18px 0 0;padding-top:14px;border-top:1px solid #eef0f3}
.fact{min-width:0}
.fact dt{font-size:11px;color:var(--muted);text-transform:uppercase;letter-spacing:.05em}
.fact dd{margin:2px 0 0;font-weight:600;overflow-wrap:anywhere}
.facts.small{grid-template-columns:repeat(auto-fill,minmax(270px,1fr));border-top:0;padding-top:0;margin-top:14px}
.facts.small dd{font-weight:400}
code{font:12px/1.4 ui-monospace,SFMono-Regular,Menlo,Consolas,monospace;background:#f1f3f5;padding:1px 4px;border-radius:4px;overflow-wrap:anywhere}
code.flag{white-space:nowrap}
.note{margin:0;padding:10px 12px;background:#fffbeb;border:1px solid #fde68a;border-radius:8px;color:#78350f}
header .note{margin-top:14px}
.foot{margin-top:8px;font-size:12px;color:var(--muted)}
.warn{color:#b45309;font-weight:600}
.chart-box{position:relative;overflow-x:auto}
svg.chart{display:block;max-width:100%;height:auto;font-family:inherit}
svg .gridline{stroke:#e5e7eb;stroke-width:1}
svg .gridline.x{stroke:#f0f1f4}
svg .axis{stroke:#9ca3af;stroke-width:1}
svg .tick{font-size:11px;fill:#6b7280;font-variant-numeric:tabular-nums}
svg .axis-label{font-size:11.5px;fill:#374151;font-weight:500}
svg .legend{font-size:11.5px;fill:#374151}
svg .no-data{font-size:13px;fill:#9ca3af}
svg .track{fill:#f1f5f9}
svg .bar-label{font-size:12px;fill:#374151}
svg .bar-value{font-size:11.5px;fill:#374151;font-variant-numeric:tabular-nums}
svg .cell{stroke:#fff;stroke-width:1}
svg .frame{stroke:#d1d5db;stroke-width:1}
svg .count{font-variant-numeric:tabular-nums}
svg .hover-line{stroke:#94a3b8;stroke-dasharray:3 3}
.tip{position:absolute;pointer-events:none;background:rgba(17,24,39,.92);color:#fff;font-size:12px;padding:6px 9px;border-radius:6px;white-space:nowrap;display:none;z-index:2}
.stats{display:flex;flex-wrap:wrap;gap:10px}
.stat{padding:6px 14px;border-left:3px solid var(--blue);background:#f8fafc;border-radius:4px}
.stat-label{font-size:11px;color:var(--muted)}
.stat-value{font-size:18px;font-weight:600;font-variant-numeric:tabular-nums}
.table{border-collapse:collapse;width:100%;font-size:13px}
.table th,.table td{padding:5px 8px;border-bottom:1px solid #eef0f3;text-align:left}
.table th{font-weight:600;color:var(--muted);font-size:12px}
.table .num{text-align:right;font-variant-numeric:tabular-nums}
.problems{margin:8px 0 0;padding-left:18px;color:#991b1b}
.examples{display:grid;grid-template-columns:repeat(auto-fill,minmax(190px,1fr));gap:12px}
.example{margin:0;border:1px solid var(--border);border-top:4px solid var(--border);border-radius:8px;padding:10px;background:#fff;min-width:0}
.example.ok{border-top-color:var(--ok)}
.example.bad{border-top-color:var(--bad)}
.example img,.example .noimg{display:block;width:128px;height:128px;margin:0 auto 8px;image-rendering:pixelated;object-fit:contain;background:#111;border-radius:4px}
.example .noimg{color:#9ca3af;font-size:12px;display:flex;align-items:center;justify-content:center}
.truth{font-size:12.5px;margin-bottom:4px;overflow-wrap:anywhere}
.badge{display:inline-block;width:16px;height:16px;line-height:16px;text-align:center;border-radius:50%;color:#fff;font-size:10px;margin-right:5px;vertical-align:1px}
.ok .badge{background:var(--ok)}
.bad .badge{background:var(--bad)}
ol.top{list-style:none;margin:0;padding:0}
ol.top li{margin:4px 0 0;font-size:12px}
ol.top .line{display:flex;justify-content:space-between;gap:6px}
ol.top .cap{overflow:hidden;text-overflow:ellipsis;white-space:nowrap;min-width:0}
ol.top .prob{font-variant-numeric:tabular-nums;flex:none}
ol.top .hit{color:var(--ok)}
ol.top .miss{color:var(--bad)}
.pbar{height:4px;background:#f1f5f9;border-radius:2px;margin-top:2px}
.pbar i{display:block;height:4px;border-radius:2px}
.hit .pbar i{background:#22c55e}
.miss .pbar i{background:#f87171}
.key{font-size:11px;color:var(--muted);margin-top:6px;overflow-wrap:anywhere}
footer{margin-top:30px;color:var(--muted);font-size:12px}
@media print{body{background:#fff}.card{box-shadow:none;break-inside:avoid}}
)CSS";
}

std::string_view page_script() {
  return R"JS((function () {
  function fmt(v, pct) {
    if (pct) return (v * 100).toFixed(2) + '%';
    var a = Math.abs(v);
    return (a >= 1e6 || (a < 1e-3 && a !== 0)) ? v.toExponential(3) : String(+v.toPrecision(5));
  }
  document.querySelectorAll('svg.line-chart').forEach(function (svg) {
    var d = svg.dataset, x0 = +d.x0, x1 = +d.x1, L = +d.l, T = +d.t, W = +d.w, H = +d.h, pct = d.percent === '1';
    var series = [].map.call(svg.querySelectorAll('polyline.series'), function (p) {
      var v = p.dataset.v.split(' ').map(Number), xs = [], ys = [];
      for (var i = 0; i + 1 < v.length; i += 2) { xs.push(v[i]); ys.push(v[i + 1]); }
      return { name: p.dataset.name, color: p.getAttribute('stroke'), xs: xs, ys: ys };
    });
    if (!series.length) return;
    var guide = document.createElementNS('http://www.w3.org/2000/svg', 'line');
    guide.setAttribute('class', 'hover-line');
    guide.setAttribute('y1', T); guide.setAttribute('y2', T + H);
    guide.style.display = 'none';
    svg.appendChild(guide);
    var box = svg.parentNode, tip = document.createElement('div');
    tip.className = 'tip';
    box.appendChild(tip);
    function hide() { guide.style.display = 'none'; tip.style.display = 'none'; }
    svg.addEventListener('mouseleave', hide);
    svg.addEventListener('mousemove', function (ev) {
      var r = svg.getBoundingClientRect(), sx = (ev.clientX - r.left) * svg.viewBox.baseVal.width / r.width;
      if (sx < L || sx > L + W) return hide();
      var x = x0 + (sx - L) / W * (x1 - x0), at = null;
      tip.textContent = '';
      var head = document.createElement('div');
      tip.appendChild(head);
      series.forEach(function (s) {
        var lo = 0, hi = s.xs.length - 1;
        while (hi - lo > 1) { var m = (lo + hi) >> 1; if (s.xs[m] < x) lo = m; else hi = m; }
        var i = Math.abs(s.xs[lo] - x) <= Math.abs(s.xs[hi] - x) ? lo : hi;
        if (at === null) at = s.xs[i];
        var row = document.createElement('div'), dot = document.createElement('span'), b = document.createElement('b');
        dot.textContent = '\u25CF '; dot.style.color = s.color;
        b.textContent = fmt(s.ys[i], pct);
        row.appendChild(dot); row.appendChild(document.createTextNode(s.name + ': ')); row.appendChild(b);
        tip.appendChild(row);
      });
      head.textContent = (svg.querySelector('.axis-label') || {}).textContent + ' ' + at;
      var gx = L + (at - x0) / (x1 - x0) * W;
      guide.setAttribute('x1', gx); guide.setAttribute('x2', gx);
      guide.style.display = '';
      var br = box.getBoundingClientRect(), left = ev.clientX - br.left + box.scrollLeft + 14;
      tip.style.display = 'block';
      if (left + tip.offsetWidth > box.clientWidth) left -= tip.offsetWidth + 28;
      tip.style.left = left + 'px';
      tip.style.top = (ev.clientY - br.top + 10) + 'px';
    });
  });
})();
)JS";
}

}  // namespace oc::report::detail
