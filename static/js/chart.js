// contextlab: the context growth chart (uPlot). The page works without this file.
(function () {
  "use strict";

  // --- Context growth chart ----------------------------------------------------------------
  function short(n) {
    if (n === null || n === undefined) return "?";
    return n >= 1000 ? (n / 1000).toFixed(1).replace(/\.0$/, "") + "k" : String(n);
  }
  // Compaction labels are HTML over the plot, placed left to right in up to `rows` lines at its
  // top: a label that would touch one already placed goes one line down, and is left out when no
  // line has room (its dashed line stays; the list under the chart names every compaction).
  function placeMarks(u, compactions) {
    var layer = u.over.querySelector(".chart-marks");
    if (!layer) {
      layer = document.createElement("div");
      layer.className = "chart-marks";
      u.over.appendChild(layer);
    }
    layer.textContent = "";
    var width = u.over.clientWidth, rows = width < 600 ? 2 : 3, ends = [], gap = 6, shown = 0;
    compactions.forEach(function (c, n) {
      var mark = document.createElement("span");
      mark.className = "chart-mark";
      mark.textContent = short(c.before) + "→" + short(c.after);
      mark.title = "compaction " + (n + 1) + " at request " + c.index + ": " + c.before + " → " + c.after + " tokens";
      layer.appendChild(mark);
      var w = mark.offsetWidth, x = u.valToPos(c.index, "x");
      var left = x + 3 + w <= width ? x + 3 : Math.max(0, x - 3 - w);
      var row = 0;
      while (row < rows && ends[row] !== undefined && ends[row] + gap > left) row++;
      if (row === rows || left + w > width) { layer.removeChild(mark); return; }
      ends[row] = left + w;
      mark.style.left = left + "px";
      mark.style.top = 2 + row * 16 + "px";
      shown++;
    });
    layer.setAttribute("data-shown", shown + " of " + compactions.length);
  }
  function setupChart(holder) {
    if (!window.uPlot) return;
    var data = JSON.parse(document.getElementById(holder.getAttribute("data-series")).textContent);
    if (!data.points.length) return;
    var xs = data.points.map(function (p, i) { return i; });
    var estimate = data.points.map(function (p) { return p.estimate; });
    var reported = data.points.map(function (p) { return p.reported; });
    var windowLine = data.points.map(function () { return data.contextWindow || null; });
    var reserveLine = data.points.map(function () { return data.contextWindow ? data.contextWindow - data.reserveTokens : null; });
    var width = Math.max(260, holder.clientWidth - 8);
    var compactions = [];
    data.points.forEach(function (p, i) { if (p.compaction) compactions.push({ index: i, before: p.compaction.before, after: p.compaction.after }); });
    var opts = {
      width: width,
      height: 380,
      scales: { x: { time: false } },
      axes: [
        { label: "request along the active path", incrs: [1, 2, 5, 10, 20, 50, 100, 200, 500, 1000, 2000, 5000, 10000, 20000, 50000] },
        { label: "tokens", size: 70, values: function (u, ticks) { return ticks.map(function (t) { return t >= 1000 ? Math.round(t / 1000) + "k" : t; }); } },
      ],
      series: [
        { label: "request" },
        { label: "estimate", stroke: "#1f5fbf", width: 2, points: { size: 4 } },
        { label: "reported", stroke: "#1b7f3b", width: 1.5, spanGaps: false, points: { size: 4 } },
        { label: "context window", stroke: "#b42318", dash: [6, 4], points: { show: false } },
        { label: "compaction threshold", stroke: "#a15c00", dash: [2, 4], points: { show: false } },
      ],
      hooks: {
        draw: [function (u) {
          var ctx = u.ctx;
          ctx.save();
          ctx.strokeStyle = "#6941c6";
          ctx.lineWidth = 1;
          ctx.setLineDash([3, 3]);
          compactions.forEach(function (c) {
            var x = u.valToPos(c.index, "x", true);
            ctx.beginPath();
            ctx.moveTo(x, u.bbox.top);
            ctx.lineTo(x, u.bbox.top + u.bbox.height);
            ctx.stroke();
          });
          ctx.restore();
          placeMarks(u, compactions);
        }],
        ready: [function (u) {
          u.over.addEventListener("click", function () {
            var i = u.cursor.idx;
            if (i === null || i === undefined) return;
            var point = data.points[i];
            if (point) window.location.href = data.pageUrl + "?entry=" + encodeURIComponent(point.leaf) + "&tab=context";
          });
          u.over.style.cursor = "pointer";
        }],
      },
    };
    holder.innerHTML = "";
    holder.chart = new window.uPlot(opts, [xs, estimate, reported, windowLine, reserveLine], holder);
  }

  function init(root) {
    (root || document).querySelectorAll("[data-chart]").forEach(function (el) {
      if (!el.dataset.ready) { el.dataset.ready = "1"; setupChart(el); }
    });
  }
  document.addEventListener("DOMContentLoaded", function () { init(document); });
  document.addEventListener("htmx:load", function (event) { init(event.detail.elt); });
})();
