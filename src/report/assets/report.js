(function () {
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
