// profile-train report page: timeline (canvas, zoom/pan/hover), copy buttons, render marker.
// Data comes from the JSON block with id "pt-data"; every string in it is program-supplied
// and only ever reaches the page through textContent or canvas fillText, never through innerHTML.
(function () {
  'use strict';
  var CAT_COLORS = {
    annotation: '#8c6bb1', python: '#a6cee3', cpu_op: '#54a24b', runtime: '#ff9da6', driver: '#d4a6c8',
    kernel: '#4c78a8', memcpy: '#f58518', memset: '#e45756', sync: '#7f7f7f'
  };
  var CAT_LABELS = {
    annotation: 'annotation / NVTX', python: 'Python', cpu_op: 'CPU op', runtime: 'CUDA runtime',
    driver: 'CUDA driver', kernel: 'kernel', memcpy: 'memcpy', memset: 'memset', sync: 'sync'
  };

  function fmtDur(ns) {
    if (ns >= 1e9) return (ns / 1e9).toFixed(3) + ' s';
    if (ns >= 1e6) return (ns / 1e6).toFixed(ns >= 1e8 ? 1 : 3) + ' ms';
    if (ns >= 1e3) return (ns / 1e3).toFixed(ns >= 1e5 ? 0 : 2) + ' \u00b5s';
    return Math.round(ns) + ' ns';
  }
  // Axis label for time t with just the decimals the tick spacing needs.
  function fmtTick(t, step) {
    var unit = step >= 1e8 ? [1e9, 's'] : step >= 1e5 ? [1e6, 'ms'] : step >= 1e2 ? [1e3, '\u00b5s'] : [1, 'ns'];
    var dec = Math.max(0, Math.min(3, Math.ceil(-Math.log10(step / unit[0]) - 1e-9)));
    return (t / unit[0]).toFixed(dec) + ' ' + unit[1];
  }
  function fmtBytes(b) {
    var u = ['B', 'KB', 'MB', 'GB', 'TB'], i = 0;
    while (b >= 1000 && i < 4) { b /= 1000; i++; }
    return (i ? b.toFixed(b >= 100 ? 0 : 2) : String(b)) + ' ' + u[i];
  }

  // ---- sortable tables: click a header to sort by it (numbers by data-v, text otherwise) ----------------
  function setupSortable() {
    var tables = document.querySelectorAll('table.sortable');
    Array.prototype.forEach.call(tables, function (table) {
      var heads = table.querySelectorAll('thead th');
      Array.prototype.forEach.call(heads, function (th, col) {
        th.addEventListener('click', function () {
          var body = table.tBodies[0], rows = Array.prototype.slice.call(body.rows);
          var desc = th.getAttribute('data-sort') !== 'desc';
          Array.prototype.forEach.call(heads, function (h) { h.removeAttribute('data-sort'); });
          th.setAttribute('data-sort', desc ? 'desc' : 'asc');
          rows.sort(function (a, b) {
            var x = a.cells[col], y = b.cells[col];
            var xv = x.getAttribute('data-v'), yv = y.getAttribute('data-v');
            var c = xv !== null && yv !== null ? parseFloat(xv) - parseFloat(yv)
                                               : x.textContent.localeCompare(y.textContent);
            return desc ? -c : c;
          });
          rows.forEach(function (r) { body.appendChild(r); });
        });
      });
    });
    return tables.length;
  }

  // ---- copy buttons -------------------------------------------------------------------------------------
  function setupCopy() {
    var buttons = document.querySelectorAll('button.copy');
    Array.prototype.forEach.call(buttons, function (btn) {
      btn.addEventListener('click', function () {
        var code = btn.closest('.fix').querySelector('code');
        var text = code ? code.textContent : '';
        function done(ok) {
          btn.textContent = ok ? 'Copied' : 'Select + Ctrl-C';
          setTimeout(function () { btn.textContent = 'Copy'; }, 1500);
        }
        function fallback() {
          var range = document.createRange();
          range.selectNodeContents(code);
          var sel = window.getSelection();
          sel.removeAllRanges();
          sel.addRange(range);
          var ok = false;
          try { ok = document.execCommand('copy'); } catch (e) { ok = false; }
          done(ok);
        }
        if (navigator.clipboard && navigator.clipboard.writeText) {
          navigator.clipboard.writeText(text).then(function () { done(true); }, fallback);
        } else {
          fallback();
        }
      });
    });
  }

  // ---- timeline -----------------------------------------------------------------------------------------
  function setupTimeline(tl) {
    var host = document.getElementById('timeline');
    var canvas = document.getElementById('tl-canvas');
    var tip = document.getElementById('tl-tip');
    if (!host || !canvas || !tl) return 0;
    var ctx = canvas.getContext('2d');
    var S = tl.stride, ev = tl.ev, n = Math.floor(ev.length / S);
    var span = Math.max(1, tl.window.end_ns - tl.window.start_ns);
    var LABEL_W = 200, AXIS_H = 26, ROW_H = 17, TRACK_GAP = 8;

    // Row layout: one row per (track, depth level).
    var trackTop = [], y = AXIS_H + 4;
    tl.tracks.forEach(function (t, i) {
      trackTop[i] = y;
      y += Math.max(1, t.depth) * ROW_H + TRACK_GAP;
    });
    var totalH = y + 4;
    var rows = {};  // "track:depth" -> event indices
    for (var i = 0; i < n; i++) {
      var key = ev[i * S] + ':' + ev[i * S + 4];
      (rows[key] || (rows[key] = [])).push(i);
    }
    var used = {};
    for (i = 0; i < n; i++) used[tl.cats[ev[i * S + 5]]] = true;
    var legend = document.getElementById('tl-legend');
    if (legend) {
      tl.cats.forEach(function (c) {
        if (!used[c]) return;
        var item = document.createElement('span');
        item.className = 'tl-leg';
        var sw = document.createElement('span');
        sw.className = 'swatch';
        sw.style.background = CAT_COLORS[c] || '#999';
        item.appendChild(sw);
        item.appendChild(document.createTextNode(CAT_LABELS[c] || c));
        legend.appendChild(item);
      });
    }

    var v0 = 0, v1 = span, width = 0;
    function resize() {
      var dpr = window.devicePixelRatio || 1;
      width = Math.max(400, host.clientWidth);
      canvas.style.width = width + 'px';
      canvas.style.height = totalH + 'px';
      canvas.width = Math.round(width * dpr);
      canvas.height = Math.round(totalH * dpr);
      ctx.setTransform(dpr, 0, 0, dpr, 0, 0);
      draw();
    }
    function xOf(t) { return LABEL_W + (t - v0) / (v1 - v0) * (width - LABEL_W - 8); }
    function tOf(x) { return v0 + (x - LABEL_W) / (width - LABEL_W - 8) * (v1 - v0); }

    function draw() {
      ctx.clearRect(0, 0, width, totalH);
      ctx.font = '11px system-ui, -apple-system, "Segoe UI", sans-serif';
      ctx.textBaseline = 'middle';
      // Track backgrounds and labels.
      tl.tracks.forEach(function (t, i) {
        var h = Math.max(1, t.depth) * ROW_H;
        ctx.fillStyle = t.kind === 'gpu' ? '#f3f6fb' : '#f7f7f5';
        ctx.fillRect(0, trackTop[i] - 2, width, h + 4);
        ctx.fillStyle = t.kind === 'gpu' ? '#2b4c7e' : '#3a3a3a';
        ctx.font = '600 11px system-ui, -apple-system, "Segoe UI", sans-serif';
        var label = t.name;
        while (label.length > 4 && ctx.measureText(label).width > LABEL_W - 14) label = label.slice(0, -2);
        if (label !== t.name) label += '\u2026';
        ctx.fillText(label, 8, trackTop[i] + ROW_H / 2);
      });
      ctx.font = '11px system-ui, -apple-system, "Segoe UI", sans-serif';
      // Events.
      ctx.save();
      ctx.beginPath();
      ctx.rect(LABEL_W, 0, width - LABEL_W, totalH);
      ctx.clip();
      var scale = (width - LABEL_W - 8) / (v1 - v0);
      for (var i = 0; i < n; i++) {
        var o = i * S, s = ev[o + 1], d = ev[o + 2];
        if (s + d < v0 || s > v1) continue;
        var x0 = LABEL_W + (s - v0) * scale, w = Math.max(1, d * scale);
        var ry = trackTop[ev[o]] + ev[o + 4] * ROW_H;
        var cat = tl.cats[ev[o + 5]];
        ctx.fillStyle = CAT_COLORS[cat] || '#999';
        ctx.globalAlpha = ev[o + 6] > 1 ? 0.55 : 1;
        ctx.fillRect(x0, ry + 1, w, ROW_H - 3);
        ctx.globalAlpha = 1;
        if (w > 36) {
          var name = ev[o + 6] > 1 ? ev[o + 6] + ' merged' : tl.names[ev[o + 3]];
          var maxChars = Math.floor((w - 6) / 6.2);
          if (maxChars >= 3) {
            if (name.length > maxChars) name = name.slice(0, maxChars - 1) + '\u2026';
            ctx.fillStyle = (cat === 'python' || cat === 'driver' || cat === 'runtime') ? '#222' : '#fff';
            ctx.fillText(name, Math.max(x0, LABEL_W) + 3, ry + ROW_H / 2 - 0.5);
          }
        }
      }
      ctx.restore();
      // Time axis.
      ctx.fillStyle = '#fff';
      ctx.fillRect(0, 0, width, AXIS_H);
      ctx.strokeStyle = '#d0d4da';
      ctx.beginPath();
      ctx.moveTo(LABEL_W, AXIS_H - 0.5);
      ctx.lineTo(width, AXIS_H - 0.5);
      ctx.stroke();
      var range = v1 - v0, step = Math.pow(10, Math.floor(Math.log10(range / 8)));
      if (range / step > 16) step *= 5; else if (range / step > 8) step *= 2;
      ctx.fillStyle = '#555';
      for (var t = Math.ceil(v0 / step) * step; t <= v1; t += step) {
        var x = xOf(t);
        ctx.fillRect(x, AXIS_H - 6, 1, 6);
        ctx.fillStyle = 'rgba(0,0,0,0.05)';
        ctx.fillRect(x, AXIS_H, 1, totalH - AXIS_H);
        ctx.fillStyle = '#555';
        ctx.fillText(fmtTick(t, step), x + 3, AXIS_H / 2 - 2);
      }
      var r = document.getElementById('tl-range');
      if (r) r.textContent = 'showing ' + fmtDur(v0) + ' \u2013 ' + fmtDur(v1) + ' of ' + fmtDur(span);
    }

    function hit(mx, my) {
      if (mx < LABEL_W) return -1;
      for (var ti = 0; ti < tl.tracks.length; ti++) {
        var top = trackTop[ti], h = Math.max(1, tl.tracks[ti].depth) * ROW_H;
        if (my < top || my >= top + h) continue;
        var row = rows[ti + ':' + Math.floor((my - top) / ROW_H)];
        if (!row) return -1;
        var t = tOf(mx), slack = 2 * (v1 - v0) / (width - LABEL_W), best = -1;
        for (var k = 0; k < row.length; k++) {
          var o = row[k] * S;
          if (ev[o + 1] - slack <= t && t <= ev[o + 1] + ev[o + 2] + slack) { best = row[k]; if (ev[o + 1] <= t) break; }
        }
        return best;
      }
      return -1;
    }
    function showTip(i, mx, my) {
      if (i < 0) { tip.hidden = true; return; }
      var o = i * S, cat = tl.cats[ev[o + 5]];
      while (tip.firstChild) tip.removeChild(tip.firstChild);
      function line(text, cls) {
        var div = document.createElement('div');
        if (cls) div.className = cls;
        div.textContent = text;
        tip.appendChild(div);
      }
      line(tl.names[ev[o + 3]], 'tip-name');
      if (ev[o + 6] > 1) line(ev[o + 6] + ' short events merged (first one named above)', 'tip-merged');
      line((CAT_LABELS[cat] || cat) + ' \u00b7 ' + fmtDur(ev[o + 2]) + ' \u00b7 at +' + fmtDur(ev[o + 1]));
      if (ev[o + 7] > 0) {
        var gbps = ev[o + 2] > 0 ? ev[o + 7] / ev[o + 2] : 0;
        line(fmtBytes(ev[o + 7]) + (gbps > 0 ? ' \u00b7 ' + gbps.toFixed(2) + ' GB/s' : ''));
      }
      tip.hidden = false;
      var tx = Math.min(mx + 14, width - tip.offsetWidth - 4);
      tip.style.left = Math.max(0, tx) + 'px';
      tip.style.top = (my + 16) + 'px';
    }

    var drag = null;
    canvas.addEventListener('wheel', function (e) {
      e.preventDefault();
      var rect = canvas.getBoundingClientRect(), mx = e.clientX - rect.left;
      var t = tOf(Math.max(LABEL_W, mx));
      var f = Math.exp((e.deltaY || 0) * 0.0015);
      var nv0 = t - (t - v0) * f, nv1 = t + (v1 - t) * f;
      if (nv1 - nv0 < 1000) return;  // 1 us minimum window
      v0 = Math.max(-span * 0.05, nv0);
      v1 = Math.min(span * 1.05, nv1);
      draw();
    }, { passive: false });
    canvas.addEventListener('mousedown', function (e) { drag = { x: e.clientX, v0: v0, v1: v1 }; });
    window.addEventListener('mouseup', function () { drag = null; });
    canvas.addEventListener('mousemove', function (e) {
      var rect = canvas.getBoundingClientRect(), mx = e.clientX - rect.left, my = e.clientY - rect.top;
      if (drag) {
        var dt = (e.clientX - drag.x) / (width - LABEL_W - 8) * (drag.v1 - drag.v0);
        v0 = drag.v0 - dt;
        v1 = drag.v1 - dt;
        draw();
        tip.hidden = true;
        return;
      }
      showTip(hit(mx, my), mx, my);
    });
    canvas.addEventListener('mouseleave', function () { tip.hidden = true; });
    function reset() { v0 = 0; v1 = span; draw(); }
    canvas.addEventListener('dblclick', reset);
    var btn = document.getElementById('tl-reset');
    if (btn) btn.addEventListener('click', reset);
    window.addEventListener('resize', resize);
    resize();
    host.setAttribute('data-render', 'ok');
    return n;
  }

  function main() {
    var node = document.getElementById('pt-data');
    var data = node ? JSON.parse(node.textContent) : {};
    setupCopy();
    document.body.setAttribute('data-sortable-tables', String(setupSortable()));
    var drawn = setupTimeline(data.timeline);
    document.body.setAttribute('data-timeline-events', String(drawn));
    // Time from navigation start to the end of rendering (parse + scripts + first timeline draw), for
    // the benchmark; performance.now() is relative to the page's time origin.
    document.body.setAttribute('data-render-ms', performance.now().toFixed(1));
  }

  try {
    main();
    document.body.setAttribute('data-render', window.__ptErrors && window.__ptErrors.length ? 'error' : 'ok');
  } catch (e) {
    if (window.__ptErrors) window.__ptErrors.push(String(e && e.stack ? e.stack : e));
    document.body.setAttribute('data-render', 'error');
  }
  if (window.__ptMarkErrors) window.__ptMarkErrors();
})();
