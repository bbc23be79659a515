// contextlab: the session page's keyboard and copy buttons, what htmx cannot do. Every page works
// without this file. The upload (upload.js) and the chart (chart.js) load on their own pages.
(function () {
  "use strict";

  // --- Session page --------------------------------------------------------------------------
  // htmx does the requests, the swaps and the history (see inspector/session.html). This adds
  // what htmx cannot: the keyboard map over the tree's rows, and the row marked the moment it is
  // chosen, before the inspector follows. `chosen` is the entry the user is on.
  var KEY_PAUSE = 100;  // ms: key moves closer together than this make one request
  var chosen = null, keyTimer = null, pendingSteps = 0, treeScroll = null;
  var keyRun = false;  // the current run of key moves has its one history entry already

  function tree() { return document.getElementById("tree"); }
  function treePane() { return document.querySelector(".tree-pane"); }
  function treeRows() { return Array.prototype.slice.call(document.querySelectorAll("#tree a.trow")); }
  function shownEntry() {
    var inspector = document.getElementById("inspector");
    return inspector && inspector.getAttribute("data-entry-id");
  }

  function rowFor(entryId) {
    var items = document.querySelectorAll("#tree li[data-entry-id]");
    for (var i = 0; i < items.length; i++) {
      if (items[i].getAttribute("data-entry-id") === entryId) return items[i];
    }
    return null;
  }

  function scrollRowIntoView(li, block) {
    var link = li && li.querySelector("a.trow");
    if (!link) return;
    // The tree's search bar is sticky: a row scrolled to the top must land below it.
    var pane = treePane();
    var tools = document.querySelector("#tree .tree-tools");
    if (pane && tools) pane.style.scrollPaddingTop = (tools.offsetHeight + 4) + "px";
    link.scrollIntoView({ block: block || "nearest" });
  }

  // Mark `entryId`'s row as the selection (if the tree shows it) and remember it as chosen.
  function follow(entryId, block) {
    if (!entryId) return;
    chosen = entryId;
    var li = rowFor(entryId);
    if (!li) return;
    if (li.getAttribute("aria-selected") !== "true") {
      document.querySelectorAll("#tree li[aria-selected=true]").forEach(function (el) {
        el.removeAttribute("aria-selected");
        var old = el.querySelector("a.trow");
        if (old) { old.classList.remove("selected"); old.removeAttribute("aria-current"); }
      });
      li.setAttribute("aria-selected", "true");
      var link = li.querySelector("a.trow");
      if (link) { link.classList.add("selected"); link.setAttribute("aria-current", "true"); }
    }
    if (block) scrollRowIntoView(li, block);
  }

  // A key move: the row is marked now, the inspector is asked for once the keys pause (a held
  // key makes one request). The first move after a click or a load adds one history entry; the
  // moves after it replace it, so one Back leaves the whole run.
  function choose(li) {
    follow(li.getAttribute("data-entry-id"), "nearest");
    clearTimeout(keyTimer);
    keyTimer = setTimeout(function () {
      keyTimer = null;
      var row = rowFor(chosen);
      var link = row && row.querySelector("a.trow");
      if (!link || !window.htmx) return;
      var first = !keyRun;
      keyRun = true;
      window.htmx.ajax("GET", link.getAttribute("href"), {
        source: link, target: "#inspector", swap: "outerHTML show:none",
        push: first ? "true" : undefined, replace: first ? undefined : "true",
      });
    }, KEY_PAUSE);
  }

  function setParam(url, detail, name, value) {
    detail.parameters.delete(name);
    url.searchParams.delete(name);
    if (value) url.searchParams.set(name, value);
  }

  // What a link or the search form sends, made to agree with the page as it is now: a fold, a
  // mode or the search keeps the chosen entry and the tab; rows keep the tab; entry links in the
  // inspector keep the tree's mode, search and folds.
  document.addEventListener("htmx:configRequest", function (event) {
    var detail = event.detail;
    var target = detail.target && detail.target.id;
    if (!tree() || (target !== "tree" && target !== "inspector")) return;
    var url = new URL(detail.path, location.href);
    var here = new URLSearchParams(location.search);
    var fromTree = detail.elt.closest && detail.elt.closest("#tree");
    if (fromTree && target === "tree") setParam(url, detail, "entry", chosen);
    if (fromTree) setParam(url, detail, "tab", here.get("tab"));
    if (!fromTree) {
      ["mode", "q", "fold"].forEach(function (name) {
        if (!url.searchParams.has(name)) setParam(url, detail, name, here.get(name));
      });
    }
    // `entry` last, as the server writes it.
    var entry = url.searchParams.get("entry");
    if (entry !== null) { url.searchParams.delete("entry"); url.searchParams.append("entry", entry); }
    detail.path = url.pathname + url.search;
  });

  // Clicks: a row is marked at once; an entry link in the inspector whose row the tree does not
  // show (folded away, filtered out, not loaded yet) fetches the tree, which picks the row.
  document.addEventListener("click", function (event) {
    if (event.button !== 0 || event.altKey || event.ctrlKey || event.metaKey || event.shiftKey) return;
    var link = event.target.closest && event.target.closest("a[href]");
    if (!link || !tree() || !link.closest("#tree, #inspector")) return;
    keyRun = false;
    if (link.classList.contains("trow")) { follow(link.closest("li").getAttribute("data-entry-id"), null); return; }
    if (!link.closest(".inspector-nav, .tab-body") || link.getAttribute("hx-boost") === "false") return;
    var href = new URL(link.href, location.href);
    var entry = href.searchParams.get("entry");
    if (href.pathname !== tree().getAttribute("data-page-url") || !entry || rowFor(entry)) return;
    event.preventDefault();
    event.stopPropagation();
    window.htmx.ajax("GET", href.pathname + href.search, { source: link, target: "#tree", swap: "outerHTML show:none" });
  }, true);

  // After a response: the tree marks the inspector's entry (unless a newer key move is on its
  // way); a poll or a run of lazily loaded rows keeps the chosen row and the tree's scroll.
  document.addEventListener("htmx:oobBeforeSwap", function (event) {
    if (event.detail.target.id === "tree" && treePane()) treeScroll = treePane().scrollTop;
  });
  // The search box is kept across tree swaps (hx-preserve), but moving it blurs it: focus and
  // caret go back in the same task. A letter typed before htmx settles the new form starts no
  // request: once settled, the box asks for what it holds if that is not what was sent.
  var searchFocus = null, searchSent = null, search = function () { return document.getElementById("tree-search"); };
  document.addEventListener("htmx:beforeSwap", function () {
    searchFocus = search() && document.activeElement === search() ? [search().selectionStart, search().selectionEnd] : null;
  });
  document.addEventListener("htmx:afterSwap", function () {
    if (searchFocus && search() && document.activeElement !== search()) { search().focus(); search().setSelectionRange(searchFocus[0], searchFocus[1]); }
    searchFocus = null;
  });
  // A poll (`data-poll`: the live poll, a job's card) rests while the tab is hidden; its
  // hx-trigger asks again at once when the tab is shown (visibilitychange).
  document.addEventListener("htmx:beforeRequest", function (event) {
    if (document.hidden && event.detail.elt.hasAttribute("data-poll")) event.preventDefault();
    else if (search() && event.detail.elt === search().form) searchSent = search().value;
  });
  document.addEventListener("htmx:afterSettle", function (event) {
    var box = search();
    if (box && box.form && event.detail.target.id === "tree" && searchSent !== null && box.value !== searchSent) window.htmx.trigger(box.form, "input");
  });
  document.addEventListener("htmx:afterOnLoad", function (event) {
    var target = event.detail.target;
    if (!target || !tree()) return;
    if (target.id === "live") {
      follow(chosen, null);
      if (treeScroll !== null && treePane()) treePane().scrollTop = treeScroll;
      treeScroll = null;
    } else if (target.classList.contains("run-fold")) {
      follow(chosen, null);
      if (pendingSteps) {
        var steps = pendingSteps;
        pendingSteps = 0;
        move(steps);
      }
    } else if ((target.id === "tree" || target.id === "inspector") && !keyTimer) {
      follow(shownEntry(), "nearest");
      var pane = document.querySelector(".inspector-pane");
      if (target.id === "inspector" && pane) pane.scrollTop = 0;
    }
  });

  // The keys move the selection row by row. A run of rows not loaded yet (a placeholder) is
  // loaded first; the steps asked for meanwhile are taken once its rows are in.
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

  function move(delta) {
    var current = rowFor(chosen);
    if (!current) {
      var rows = treeRows();
      if (!rows.length) return;
      current = rows[delta > 0 ? 0 : rows.length - 1].closest("li");
      delta -= delta > 0 ? 1 : -1;
    }
    var li = current;
    while (delta !== 0) {
      var next = neighbour(li, delta > 0);
      if (!next) break;
      if (next.classList.contains("run-fold")) {
        pendingSteps += delta;
        if (!next.getAttribute("data-loading")) {
          next.setAttribute("data-loading", "1");
          next.querySelector("a[hx-get]").click();
        }
        break;
      }
      li = next;
      delta += delta > 0 ? -1 : 1;
    }
    if (li !== current || li.getAttribute("aria-selected") !== "true") choose(li);
  }

  document.addEventListener("keydown", function (event) {
    if (event.defaultPrevented || event.altKey || event.ctrlKey || event.metaKey || !tree()) return;
    var target = event.target;
    if (target && target.id === "tree-search" && event.key === "Escape") {
      target.blur();  // the next `j` moves the selection instead of typing
      event.preventDefault();
      return;
    }
    if (target && (target.tagName === "INPUT" || target.tagName === "TEXTAREA" || target.tagName === "SELECT" || target.isContentEditable)) return;
    var rows = treeRows();
    if (!rows.length) return;
    var current = rowFor(chosen);
    var key = event.key;
    if (key === "ArrowDown" || key === "j") {
      move(1);
    } else if (key === "ArrowUp" || key === "k") {
      move(-1);
    } else if (key === "Home" || key === "g") {
      choose(rows[0].closest("li"));
    } else if (key === "End" || key === "G") {
      choose(rows[rows.length - 1].closest("li"));
    } else if (key === "ArrowLeft" || key === "h") {
      // Pi: fold the selected segment if it can be folded, else go up to its visible parent.
      var fold = current && current.querySelector("a.fold-toggle[data-action=fold]");
      var parent = current && rowFor(current.getAttribute("data-parent"));
      if (fold) fold.click();
      else if (parent) choose(parent);
    } else if (key === "ArrowRight" || key === "l") {
      // Pi: unfold the selected entry if it is folded, else go down.
      var unfold = current && current.querySelector("a.fold-toggle[data-action=unfold]");
      if (unfold) unfold.click();
      else move(1);
    } else if (key === "/") {
      if (search()) search().focus();
    } else {
      return;
    }
    event.preventDefault();
  });

  // A page opened without `entry` (the leaf): the URL names what the inspector shows, so that
  // it can be shared. A permalink, a search hit or a chart click opens on a row far down: show it.
  function startSession() {
    if (!tree()) return;
    keyRun = false;
    var shown = shownEntry();
    var url = new URL(location.href);
    if (shown && url.searchParams.get("entry") !== shown) {
      url.searchParams.delete("entry");
      url.searchParams.append("entry", shown);
      history.replaceState(history.state, "", url.href);
    }
    follow(shown, "center");
  }
  document.addEventListener("htmx:historyRestore", startSession);

  // --- Copy buttons: data-copy-from="#id" copies that element's text --------------------------
  document.addEventListener("click", function (event) {
    var button = event.target.closest && event.target.closest("[data-copy-from]");
    if (!button) return;
    event.preventDefault();
    var source = document.querySelector(button.getAttribute("data-copy-from"));
    if (!source) return;
    var text = source.value !== undefined && source.tagName === "TEXTAREA" ? source.value : source.textContent;
    var old = button.textContent;
    var done = function () { button.textContent = "Copied"; setTimeout(function () { button.textContent = old; }, 1200); };
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
    area.style.cssText = "position: fixed; opacity: 0";
    document.body.appendChild(area);
    area.select();
    try { document.execCommand("copy"); } catch (e) { /* nothing else to try */ }
    document.body.removeChild(area);
  }

  document.addEventListener("DOMContentLoaded", startSession);
})();
