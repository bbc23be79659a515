// contextlab: small progressive enhancements. Every page works without this file; it adds
// keyboard navigation in the tree, copy buttons, drag-and-drop upload with progress, the chart.
(function () {
  "use strict";

  // --- Tree: selection follows clicks, keyboard moves it -----------------------------------
  function treeRows() {
    return Array.prototype.slice.call(document.querySelectorAll("#tree a.trow"));
  }

  function markSelected(link) {
    document.querySelectorAll("#tree a.trow.selected").forEach(function (el) {
      el.classList.remove("selected");
      el.removeAttribute("aria-current");
    });
    if (link) {
      link.classList.add("selected");
      link.setAttribute("aria-current", "true");
    }
  }

  function openRow(link) {
    if (!link) return;
    markSelected(link);
    link.scrollIntoView({ block: "nearest" });
    link.focus({ preventScroll: true });
    link.click();
  }

  document.addEventListener("click", function (event) {
    var link = event.target.closest && event.target.closest("#tree a.trow");
    if (link) markSelected(link);
  });

  function treeKey(event) {
    if (event.defaultPrevented || event.altKey || event.ctrlKey || event.metaKey) return;
    var target = event.target;
    if (target && (target.tagName === "INPUT" || target.tagName === "TEXTAREA" || target.tagName === "SELECT")) return;
    if (!document.getElementById("tree")) return;
    var rows = treeRows();
    if (!rows.length) return;
    var current = document.querySelector("#tree a.trow.selected");
    var index = current ? rows.indexOf(current) : -1;
    var key = event.key;
    if (key === "ArrowDown" || key === "j") {
      openRow(rows[Math.min(rows.length - 1, index + 1)]);
    } else if (key === "ArrowUp" || key === "k") {
      openRow(rows[Math.max(0, index - 1)]);
    } else if (key === "Home" || key === "g") {
      openRow(rows[0]);
    } else if (key === "End" || key === "G") {
      openRow(rows[rows.length - 1]);
    } else if (key === "ArrowLeft" || key === "h") {
      // Pi: fold the selected segment if it can be folded, else go up to the segment start.
      var li = current && current.closest("li");
      var fold = li && li.querySelector("a.fold-toggle[data-action=fold]");
      if (fold) { fold.click(); }
      else if (li && li.dataset.parent) {
        var parentRow = document.querySelector('#tree li[data-id="' + li.dataset.parent + '"] a.trow');
        if (parentRow) openRow(parentRow);
      }
    } else if (key === "ArrowRight" || key === "l") {
      var li2 = current && current.closest("li");
      var unfold = li2 && li2.querySelector("a.fold-toggle[data-action=unfold]");
      if (unfold) { unfold.click(); }
      else if (index >= 0) { openRow(rows[Math.min(rows.length - 1, index + 1)]); }
    } else if (key === "/") {
      var search = document.querySelector("#tree-search");
      if (search) search.focus();
    } else {
      return;
    }
    event.preventDefault();
  }
  document.addEventListener("keydown", treeKey);

  // Re-mark the selection after the tree is re-rendered (fold, filter) so keys keep working.
  document.addEventListener("htmx:afterSwap", function (event) {
    var swapped = event.detail && event.detail.target;
    if (!swapped) return;
    if (swapped.id === "tree" || swapped.closest && swapped.closest("#tree")) {
      var selected = document.querySelector("#tree a.trow.selected");
      if (selected) selected.scrollIntoView({ block: "nearest" });
    }
    if (swapped.id === "inspector") {
      var pane = document.querySelector(".inspector-pane");
      if (pane) pane.scrollTop = 0;
    }
  });

  // --- Copy buttons: data-copy-from="#id" copies that element's text --------------------------
  document.addEventListener("click", function (event) {
    var button = event.target.closest && event.target.closest("[data-copy-from]");
    if (!button) return;
    event.preventDefault();
    var source = document.querySelector(button.getAttribute("data-copy-from"));
    if (!source) return;
    var text = source.value !== undefined && source.tagName === "TEXTAREA" ? source.value : source.textContent;
    var done = function () {
      var old = button.textContent;
      button.textContent = "Copied";
      setTimeout(function () { button.textContent = old; }, 1200);
    };
    if (navigator.clipboard && window.isSecureContext) {
      navigator.clipboard.writeText(text).then(done, function () { fallbackCopy(text); done(); });
    } else {
      fallbackCopy(text);
      done();
    }
  });

  function fallbackCopy(text) {
    var area = document.createElement("textarea");
    area.value = text;
    area.setAttribute("readonly", "");
    area.style.position = "fixed";
    area.style.opacity = "0";
    document.body.appendChild(area);
    area.select();
    try { document.execCommand("copy"); } catch (e) { /* nothing else to try */ }
    document.body.removeChild(area);
  }

  // --- Upload: drag and drop, several files, progress -------------------------------------
  function setupUpload(form) {
    var input = form.querySelector("input[type=file]");
    var progress = form.querySelector("progress");
    var status = form.querySelector(".upload-status");
    var results = document.getElementById(form.getAttribute("data-results") || "upload-results");
    ["dragenter", "dragover"].forEach(function (name) {
      form.addEventListener(name, function (e) { e.preventDefault(); form.classList.add("dragover"); });
    });
    ["dragleave", "drop"].forEach(function (name) {
      form.addEventListener(name, function (e) { e.preventDefault(); form.classList.remove("dragover"); });
    });
    form.addEventListener("drop", function (e) {
      if (e.dataTransfer && e.dataTransfer.files.length) send(e.dataTransfer.files);
    });
    form.addEventListener("submit", function (e) {
      e.preventDefault();
      if (!input.files.length) {
        if (status) status.textContent = "No file chosen: choose one or more session files (.jsonl) first.";
        return;
      }
      send(input.files);
    });

    function send(files) {
      var data = new FormData();
      data.append("csrfmiddlewaretoken", form.querySelector("[name=csrfmiddlewaretoken]").value);
      for (var i = 0; i < files.length; i++) data.append("files", files[i]);
      var xhr = new XMLHttpRequest();
      xhr.open("POST", form.action);
      xhr.setRequestHeader("HX-Request", "true");
      xhr.setRequestHeader("HX-Target", "upload-results");
      if (progress) { progress.hidden = false; progress.value = 0; }
      if (status) status.textContent = "Uploading " + files.length + " file(s)…";
      xhr.upload.addEventListener("progress", function (e) {
        if (e.lengthComputable && progress) progress.value = Math.round((e.loaded / e.total) * 100);
        if (e.lengthComputable && e.loaded === e.total && status) status.textContent = "Importing…";
      });
      xhr.addEventListener("load", function () {
        if (progress) progress.value = 100;
        if (status) status.textContent = xhr.status < 400 ? "Done." : "Upload failed (" + xhr.status + ").";
        if (results) {
          results.outerHTML = xhr.responseText;
          var fresh = document.getElementById("upload-results");
          if (fresh && window.htmx) window.htmx.process(fresh);
        }
        input.value = "";
      });
      xhr.addEventListener("error", function () {
        if (status) status.textContent = "Upload failed: the server could not be reached.";
      });
      xhr.send(data);
    }
  }

  // --- Context growth chart ----------------------------------------------------------------
  function short(n) {
    if (n === null || n === undefined) return "?";
    return n >= 1000 ? (n / 1000).toFixed(1).replace(/\.0$/, "") + "k" : String(n);
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
    var width = Math.max(480, holder.clientWidth - 8);
    var compactionIndex = {};
    data.points.forEach(function (p, i) { if (p.compaction) compactionIndex[i] = p.compaction; });
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
          ctx.fillStyle = "#6941c6";
          ctx.lineWidth = 1;
          ctx.font = (11 * devicePixelRatio) + "px sans-serif";
          Object.keys(compactionIndex).forEach(function (i) {
            var x = u.valToPos(Number(i), "x", true);
            ctx.beginPath();
            ctx.setLineDash([3, 3]);
            ctx.moveTo(x, u.bbox.top);
            ctx.lineTo(x, u.bbox.top + u.bbox.height);
            ctx.stroke();
            var c = compactionIndex[i];
            ctx.fillText(short(c.before) + "→" + short(c.after), x + 3, u.bbox.top + 12 * devicePixelRatio);
          });
          ctx.restore();
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
    (root || document).querySelectorAll("form.upload").forEach(function (form) {
      if (!form.dataset.ready) { form.dataset.ready = "1"; setupUpload(form); }
    });
    (root || document).querySelectorAll("[data-chart]").forEach(function (holder) {
      if (!holder.dataset.ready) { holder.dataset.ready = "1"; setupChart(holder); }
    });
  }
  document.addEventListener("DOMContentLoaded", function () { init(document); });
  document.addEventListener("htmx:load", function (event) { init(event.detail.elt); });
})();
