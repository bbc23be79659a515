// contextlab: drag-and-drop upload of several session files, with progress. The page works without this file.
(function () {
  "use strict";

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

  function init(root) {
    (root || document).querySelectorAll("form.upload").forEach(function (el) {
      if (!el.dataset.ready) { el.dataset.ready = "1"; setupUpload(el); }
    });
  }
  document.addEventListener("DOMContentLoaded", function () { init(document); });
  document.addEventListener("htmx:load", function (event) { init(event.detail.elt); });
})();
