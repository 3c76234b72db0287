// kubetrain dashboard: live updates and log following. Pages work without this script;
// with it, a change the server streams (Server-Sent Events) re-fetches the page and swaps the
// parts marked data-live, and "Follow" streams a pod's log. No inline script (strict CSP).
"use strict";

(function () {
  var status = document.getElementById("live-status");
  var refreshing = false;
  var again = false;
  var lastRefresh = 0;

  function swap(html) {
    var doc = new DOMParser().parseFromString(html, "text/html");
    document.querySelectorAll("[data-live]").forEach(function (el) {
      var fresh = doc.getElementById(el.id);
      if (!fresh) return;
      var open = Array.prototype.map.call(el.querySelectorAll("details"), function (d) { return d.open; });
      el.innerHTML = fresh.innerHTML;
      el.querySelectorAll("details").forEach(function (d, i) { if (open[i]) d.open = true; });
    });
    document.dispatchEvent(new CustomEvent("kubetrain:refreshed"));
  }

  function refresh() {
    if (refreshing) { again = true; return; }
    var wait = Math.max(0, 500 - (Date.now() - lastRefresh));
    refreshing = true;
    setTimeout(function () {
      lastRefresh = Date.now();
      fetch(window.location.href, { headers: { Accept: "text/html" }, credentials: "same-origin" })
        .then(function (r) { return r.ok ? r.text() : null; })
        .then(function (html) { if (html) swap(html); })
        .catch(function () {})
        .finally(function () {
          refreshing = false;
          if (again) { again = false; refresh(); }
        });
    }, wait);
  }

  var stream = document.body.getAttribute("data-stream");
  if (stream && window.EventSource) {
    var source = new EventSource(stream);
    source.addEventListener("open", function () { if (status) status.hidden = false; });
    source.addEventListener("error", function () { if (status) status.hidden = true; });
    source.addEventListener("job", refresh);
    source.addEventListener("resync", refresh);
  }

  function setupFollow() {
    var button = document.getElementById("follow");
    var log = document.getElementById("log");
    if (!button || !log || button.dataset.ready) return;
    button.dataset.ready = "1";
    button.hidden = false;
    var follower = null;
    button.addEventListener("click", function () {
      if (follower) {
        follower.close();
        follower = null;
        button.textContent = "Follow";
        return;
      }
      log.textContent = "";
      follower = new EventSource(button.dataset.url);
      button.textContent = "Stop following";
      follower.addEventListener("line", function (e) {
        var stick = log.scrollTop + log.clientHeight >= log.scrollHeight - 4;
        log.textContent += JSON.parse(e.data) + "\n";
        if (stick) log.scrollTop = log.scrollHeight;
      });
      follower.addEventListener("end", function (e) {
        log.textContent += "-- " + JSON.parse(e.data) + " --\n";
        follower.close();
        follower = null;
        button.textContent = "Follow";
      });
    });
  }
  setupFollow();
})();
