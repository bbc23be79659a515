// contextlab: small progressive enhancements. Every page works without this file; it adds
// keyboard navigation in the tree, copy buttons, drag-and-drop upload with progress, the chart.
(function () {
  "use strict";

  // --- Session page: one selection, held in the URL -----------------------------------------
  // The page URL's `entry` parameter is the selection. Every way of selecting (a click, the
  // keys, a link in the inspector, the tree search, a fold, Back/Forward) goes through
  // `navigate`: the URL changes first, the tree marks the row, and one request fetches what
  // must change. A newer selection aborts the older request, and a response is applied only if
  // the URL still asks for it, so the tree, the URL and the inspector never disagree.
  var TREE_PARAMS = ["mode", "q", "fold"];
  var inflight = null;

  function tree() { return document.getElementById("tree"); }

  function treeRows() {
    return Array.prototype.slice.call(document.querySelectorAll("#tree a.trow"));
  }

  function rowFor(entryId) {
    var items = document.querySelectorAll("#tree li[data-entry-id]");
    for (var i = 0; i < items.length; i++) {
      if (items[i].getAttribute("data-entry-id") === entryId) return items[i];
    }
    return null;
  }

  function treeParam(params, name) {
    var value = params.get(name) || "";
    return name === "mode" && value === "default" ? "" : value;
  }

  // Whether the tree on the page shows the mode, search and folds that `params` ask for.
  function sameTree(params) {
    var holder = tree();
    if (!holder) return false;
    var shown = new URLSearchParams(holder.getAttribute("data-state") || "");
    return TREE_PARAMS.every(function (name) { return treeParam(shown, name) === treeParam(params, name); });
  }

  function scrollRowIntoView(li, block) {
    var link = li && li.querySelector("a.trow");
    if (!link) return;
    // The tree's search bar is sticky: a row scrolled to the top must land below it.
    var pane = document.querySelector(".tree-pane");
    var tools = document.querySelector("#tree .tree-tools");
    if (pane && tools) pane.style.scrollPaddingTop = (tools.offsetHeight + 4) + "px";
    link.scrollIntoView({ block: block || "nearest" });
  }

  function markSelected(li) {
    document.querySelectorAll("#tree li[aria-selected=true]").forEach(function (el) {
      el.removeAttribute("aria-selected");
    });
    document.querySelectorAll("#tree a.trow.selected").forEach(function (el) {
      el.classList.remove("selected");
      el.removeAttribute("aria-current");
    });
    if (!li) return;
    li.setAttribute("aria-selected", "true");
    var link = li.querySelector("a.trow");
    if (link) {
      link.classList.add("selected");
      link.setAttribute("aria-current", "true");
    }
  }

  // Mark the row the URL selects (after a swap, or a lazily loaded run of rows).
  function syncTree(block) {
    var entry = new URLSearchParams(location.search).get("entry");
    var li = entry ? rowFor(entry) : document.querySelector("#tree li[aria-selected=true]");
    if (!li) return;
    if (li.getAttribute("aria-selected") !== "true") markSelected(li);
    if (block) scrollRowIntoView(li, block);
  }

  function urlWith(changes) {
    var url = new URL(location.href);
    Object.keys(changes).forEach(function (name) {
      var value = changes[name];
      if (value === null || value === undefined || value === "") url.searchParams.delete(name);
      else url.searchParams.set(name, value);
    });
    // `entry` last, as the server writes it (permalinks read well with the entry at the end).
    var entry = url.searchParams.get("entry");
    if (entry !== null) { url.searchParams.delete("entry"); url.searchParams.append("entry", entry); }
    return url;
  }

  function setHistory(url, how) {
    if (url.href === location.href) return;
    if (how === "push") history.pushState({ contextlab: true }, "", url.href);
    else history.replaceState({ contextlab: true }, "", url.href);
  }

  function navigate(url, how) {
    if (!tree()) { location.assign(url.href); return; }
    setHistory(url, how);
    var entry = url.searchParams.get("entry");
    var li = entry && sameTree(url.searchParams) ? rowFor(entry) : null;
    if (li) {
      markSelected(li);
      scrollRowIntoView(li);
      var shown = document.getElementById("inspector");
      var tab = url.searchParams.get("tab") || "context";
      if (shown && shown.getAttribute("data-entry-id") === entry && shown.getAttribute("data-tab") === tab) {
        if (inflight) { inflight.abort(); inflight = null; }
        document.documentElement.classList.remove("loading");
        return;
      }
      fetchParts(url, "inspector");
    } else {
      fetchParts(url, "panes");
    }
  }

  function fetchParts(url, target) {
    if (inflight) inflight.abort();
    var controller = new AbortController();
    inflight = controller;
    document.documentElement.classList.add("loading");
    fetch(url.href, {
      headers: { "HX-Request": "true", "HX-Target": target, "HX-Current-URL": location.href },
      credentials: "same-origin",
      signal: controller.signal,
    }).then(function (response) {
      if (!response.ok) throw new Error("HTTP " + response.status);
      return response.text();
    }).then(function (html) {
      // A response for a selection the user has left is dropped.
      if (inflight !== controller || location.href !== url.href) return;
      inflight = null;
      document.documentElement.classList.remove("loading");
      applyParts(html, target);
    }).catch(function (error) {
      if (error.name === "AbortError") return;
      if (inflight === controller) inflight = null;
      // An unknown entry, a session gone: let the server say it as a whole page.
      if (location.href === url.href) location.assign(url.href);
    });
  }

  function swapIn(old, fresh) {
    if (!old || !fresh) return null;
    old.replaceWith(fresh);
    if (window.htmx) window.htmx.process(fresh);
    init(fresh);
    return fresh;
  }

  // Replace the tree; the search box being typed in stays (its focus, caret and the letters
  // typed since the request left), so filtering as one types never eats keystrokes.
  function swapTree(fresh) {
    var old = tree();
    var typing = document.activeElement && document.activeElement.id === "tree-search" ? document.activeElement : null;
    var swapped = swapIn(old, fresh);
    if (swapped && typing) {
      var input = swapped.querySelector("#tree-search");
      if (input) {
        input.replaceWith(typing);
        typing.focus();
      }
    }
    return swapped;
  }

  // A tree fetched for a selection carries no live version: the page's stays what it was.
  function keepVersion(old, fresh) {
    if (old && fresh && !fresh.getAttribute("data-version")) {
      fresh.setAttribute("data-version", old.getAttribute("data-version") || "");
      fresh.liveVersion = old.liveVersion;
    }
    return fresh;
  }

  function parse(html) {
    return new DOMParser().parseFromString(html, "text/html");
  }

  function applyParts(html, target) {
    var doc = parse(html);
    if (target === "inspector") {
      swapIn(document.getElementById("inspector"), doc.getElementById("inspector"));
      var pane = document.querySelector(".inspector-pane");
      if (pane) pane.scrollTop = 0;
      return;
    }
    swapIn(document.getElementById("facts"), doc.getElementById("facts"));
    var old = tree();
    var fresh = swapTree(keepVersion(old, doc.getElementById("tree")));
    swapIn(document.getElementById("inspector"), doc.getElementById("inspector"));
    // The server decides which entry a fold or a search leaves selected (the nearest visible
    // one, as Pi's /tree); the URL follows it.
    var inspector = document.getElementById("inspector");
    var shown = inspector && inspector.getAttribute("data-entry-id");
    if (shown && new URLSearchParams(location.search).get("entry") !== shown) {
      setHistory(urlWith({ entry: shown }), "replace");
    }
    if (fresh) syncTree("center");
  }

  // Clicks on links that select: tree rows, fold toggles, filter modes, the inspector's tabs
  // and its links to other entries of this session. Links with htmx of their own are left alone.
  document.addEventListener("click", function (event) {
    if (event.defaultPrevented || event.button !== 0 || event.altKey || event.ctrlKey || event.metaKey || event.shiftKey) return;
    var link = event.target.closest && event.target.closest("a[href]");
    var holder = tree();
    if (!link || !holder || link.hasAttribute("hx-get") || link.target || link.hasAttribute("download")) return;
    if (!link.closest("#tree, #inspector")) return;
    var href = new URL(link.href, location.href);
    if (href.origin !== location.origin || href.pathname !== holder.getAttribute("data-page-url")) return;
    var params = href.searchParams;
    var changes;
    if (link.classList.contains("fold-toggle")) {
      changes = { fold: params.get("fold") };
    } else if (link.classList.contains("mode")) {
      changes = { mode: params.get("mode"), fold: params.get("fold") };
    } else if (link.closest("li.run-fold")) {
      return;
    } else {
      changes = { entry: params.get("entry"), tab: params.get("tab") };
      if (link.classList.contains("trow")) changes.tab = new URLSearchParams(location.search).get("tab");
      if (!changes.entry) delete changes.entry;
    }
    event.preventDefault();
    navigate(urlWith(changes), "push");
  });

  // The tree search: filters as one types (the URL is replaced, not pushed, per keystroke).
  var searchTimer = null;
  function searchNow(input) {
    clearTimeout(searchTimer);
    var value = input.value.trim();
    if (value === (new URLSearchParams(location.search).get("q") || "")) return;
    navigate(urlWith({ q: value }), "replace");
  }
  document.addEventListener("input", function (event) {
    if (event.target.id !== "tree-search") return;
    clearTimeout(searchTimer);
    var input = event.target;
    searchTimer = setTimeout(function () { searchNow(input); }, 300);
  });
  document.addEventListener("submit", function (event) {
    var form = event.target;
    if (!form.classList || !form.classList.contains("tree-tools") || !tree()) return;
    event.preventDefault();
    searchNow(form.querySelector("#tree-search"));
  });

  window.addEventListener("popstate", function () {
    if (!tree()) return;
    navigate(new URL(location.href), "none");
  });

  // The keys move the selection row by row. A run of rows not loaded yet (a placeholder) is
  // loaded first; the steps asked for meanwhile are kept and taken once its rows are in.
  var pendingSteps = 0;

  function neighbour(li, down) {
    var next = li;
    while (next) {
      next = down ? next.nextElementSibling : next.previousElementSibling;
      if (!next) return null;
      if (next.classList.contains("run-fold")) return next;
      if (next.hasAttribute("data-entry-id") && next.querySelector("a.trow")) return next;
    }
    return null;
  }

  function loadGap(li) {
    if (li.getAttribute("data-loading")) return;
    li.setAttribute("data-loading", "1");
    var link = li.querySelector("a[hx-get]");
    if (link) link.click();
  }

  function move(delta, how) {
    var current = document.querySelector("#tree li[aria-selected=true]");
    if (!current) {
      var rows = treeRows();
      if (!rows.length) return;
      current = rows[delta > 0 ? 0 : rows.length - 1].closest("li");
      delta -= delta > 0 ? 1 : -1;
    }
    var li = current;
    var left = delta;
    while (left !== 0) {
      var next = neighbour(li, left > 0);
      if (!next) break;
      if (next.classList.contains("run-fold")) { pendingSteps += left; loadGap(next); break; }
      li = next;
      left += left > 0 ? -1 : 1;
    }
    if (li !== current || li.getAttribute("aria-selected") !== "true") {
      select(li.getAttribute("data-entry-id"), how);
    }
  }

  function select(entryId, how) {
    if (entryId) navigate(urlWith({ entry: entryId }), how);
  }

  function treeKey(event) {
    if (event.defaultPrevented || event.altKey || event.ctrlKey || event.metaKey) return;
    var target = event.target;
    if (target && (target.tagName === "INPUT" || target.tagName === "TEXTAREA" || target.tagName === "SELECT" || target.isContentEditable)) return;
    if (!tree()) return;
    var rows = treeRows();
    if (!rows.length) return;
    var current = document.querySelector("#tree li[aria-selected=true]");
    // Repeats of a held key replace the history entry: Back leaves the whole run at once.
    var how = event.repeat ? "replace" : "push";
    var key = event.key;
    if (key === "ArrowDown" || key === "j") {
      move(1, how);
    } else if (key === "ArrowUp" || key === "k") {
      move(-1, how);
    } else if (key === "Home" || key === "g") {
      select(rows[0].closest("li").getAttribute("data-entry-id"), how);
    } else if (key === "End" || key === "G") {
      select(rows[rows.length - 1].closest("li").getAttribute("data-entry-id"), how);
    } else if (key === "ArrowLeft" || key === "h") {
      // Pi: fold the selected segment if it can be folded, else go up to its visible parent.
      var fold = current && current.querySelector("a.fold-toggle[data-action=fold]");
      if (fold) { fold.click(); }
      else if (current && current.getAttribute("data-parent")) { select(current.getAttribute("data-parent"), how); }
    } else if (key === "ArrowRight" || key === "l") {
      // Pi: unfold the selected entry if it is folded, else go down.
      var unfold = current && current.querySelector("a.fold-toggle[data-action=unfold]");
      if (unfold) { unfold.click(); }
      else { move(1, how); }
    } else if (key === "/") {
      var search = document.getElementById("tree-search");
      if (search) search.focus();
    } else {
      return;
    }
    event.preventDefault();
  }
  document.addEventListener("keydown", treeKey);

  // Lazily loaded rows (htmx) carry the selection they were rendered with: mark the URL's.
  document.addEventListener("htmx:afterSwap", function (event) {
    var swapped = event.detail && event.detail.target;
    if (!swapped || !tree() || (swapped.isConnected && !swapped.closest("#tree"))) return;
    syncTree(null);
    if (pendingSteps) {
      var steps = pendingSteps;
      pendingSteps = 0;
      move(steps, "replace");
    }
  });

  // --- Live: the page follows its session ----------------------------------------------------
  // Every few seconds a conditional request (If-None-Match) asks whether the session or its jobs
  // changed; nothing is rendered while nothing changed. On a change only the changed parts are
  // fetched: the head's figures and the tree (keeping the selection, which is in the URL, and
  // the tree's scroll), or the job history.
  var LIVE_EVERY = 2000;
  var liveBusy = false;
  // The tree holds the version the page shows (`data-version`, the ETag the poll sends) and
  // its parts (`liveVersion`). Both move on only once a refresh has been applied: a refresh
  // dropped because the user moved meanwhile leaves them behind, so the next poll sees the
  // change again and fetches what was dropped, instead of hearing "not modified" for good.
  function liveTick() {
    var holder = tree();
    if (!holder || liveBusy || document.hidden || inflight) return;
    liveBusy = true;
    var known = holder.getAttribute("data-version");
    fetch(holder.getAttribute("data-live"), {
      headers: { "If-None-Match": known },
      credentials: "same-origin",
      cache: "no-store",
    }).then(function (response) {
      if (response.status === 304 || !response.ok) return null;
      var etag = response.headers.get("ETag");
      return response.json().then(function (version) { return { etag: etag, version: version }; });
    }).then(function (change) {
      if (!change || change.etag === known) return null;
      var before = holder.liveVersion || {};
      var applied = { session: before.session, jobs: before.jobs };
      var work = [];
      if (before.jobs !== change.version.jobs) {
        work.push(refreshJobs(holder.getAttribute("data-jobs")).then(function (done) {
          if (done) applied.jobs = change.version.jobs;
        }));
      }
      if (!holder.liveVersion || before.session !== change.version.session) {
        work.push(refreshLive().then(function (done) {
          if (done) applied.session = change.version.session;
        }));
      } else {
        applied.session = change.version.session;
      }
      return Promise.all(work).then(function () {
        var current = tree();  // the tree may have been replaced meanwhile
        if (!current) return;
        current.liveVersion = applied;
        if (applied.session === change.version.session && applied.jobs === change.version.jobs) {
          current.setAttribute("data-version", change.etag);
        }
      });
    }).catch(function () { /* the next tick tries again */ }).then(function () { liveBusy = false; });
  }

  // Fetch the head's figures and the tree for the page's URL; resolves to whether they were
  // applied (not when the user moved, or a selection was being fetched, meanwhile).
  function refreshLive() {
    var url = location.href;
    return fetch(url, {
      headers: { "HX-Request": "true", "HX-Target": "live", "HX-Current-URL": url },
      credentials: "same-origin",
    }).then(function (response) { return response.ok ? response.text() : null; }).then(function (html) {
      if (!html || location.href !== url || inflight) return false;
      var doc = parse(html);
      var pane = document.querySelector(".tree-pane");
      var top = pane ? pane.scrollTop : 0;
      swapIn(document.getElementById("facts"), doc.getElementById("facts"));
      // The tree rendered now may name a newer version than this change: it keeps the page's
      // until the caller has seen every part of the change applied.
      var incoming = doc.getElementById("tree");
      if (incoming) incoming.removeAttribute("data-version");
      var fresh = swapTree(keepVersion(tree(), incoming));
      if (pane) pane.scrollTop = top;
      if (!fresh) return false;
      syncTree(null);
      return true;
    });
  }

  function refreshJobs(url) {
    var panel = document.getElementById("jobs-panel");
    if (!panel || !url) return Promise.resolve(true);
    return fetch(url, { headers: { "HX-Request": "true", "HX-Target": "job-history" }, credentials: "same-origin" })
      .then(function (response) { return response.ok ? response.text() : null; })
      .then(function (html) {
        var fresh = html && parse(html).getElementById("job-history");
        if (!fresh) return false;
        swapIn(document.getElementById("job-history"), fresh);
        return true;
      });
  }

  function startLive() {
    var holder = tree();
    if (!holder || !holder.getAttribute("data-live") || !window.fetch) return;
    setInterval(liveTick, LIVE_EVERY);
  }

  function startSession() {
    var holder = tree();
    if (!holder) return;
    // A page opened without `entry` (the leaf) or redirected to the nearest visible entry: the
    // URL names what the inspector shows, so that it can be shared and Back returns to it.
    var inspector = document.getElementById("inspector");
    var shown = inspector && inspector.getAttribute("data-entry-id");
    if (shown && new URLSearchParams(location.search).get("entry") !== shown) {
      setHistory(urlWith({ entry: shown }), "replace");
    }
    // A permalink, a search hit or a chart click opens the page on a row far down: show it.
    syncTree("center");
    startLive();
  }

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
    var resultsId = form.getAttribute("data-results") || "upload-results";
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
        // Looked up each time: the list of the upload before was replaced by this one's.
        var results = document.getElementById(resultsId);
        if (results) {
          results.outerHTML = xhr.responseText;
          var fresh = document.getElementById(resultsId);
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
    var width = Math.max(260, holder.clientWidth - 8);
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
  document.addEventListener("DOMContentLoaded", function () { init(document); startSession(); });
  document.addEventListener("htmx:load", function (event) { init(event.detail.elt); });
})();
