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

  // The Gantt chart's one tooltip (views/ganttsvg.py): the row under the pointer is its
  // text.row (by y), the bar is the one of its data-bars under x; the line shown is that bar's
  // line of the row's <title>. Delegated, so a chart swapped in by a live update needs nothing.
  var tip = null;
  var hover = null;
  var SVG = "http://www.w3.org/2000/svg";

  function hideTip() {
    if (tip) tip.hidden = true;
    if (hover && hover.parentNode) hover.parentNode.removeChild(hover);
  }

  function barAt(svg, x, y) {
    var chart = svg.closest(".gantt");
    var rowHeight = Number(chart && chart.dataset.rowHeight) || 20;
    var rows = svg.querySelectorAll("text.row");
    var row = rows[Math.floor(y / rowHeight)];
    if (!row) return null;
    var bars = (row.dataset.bars || "").split(";");
    var lines = ((row.querySelector("title") || {}).textContent || "").split("\n");
    for (var i = bars.length - 1; i >= 0; i--) {
      var part = bars[i].split(" ");
      var bx = Number(part[0]);
      var bw = Number(part[1]);
      if (x >= bx - 1 && x <= bx + bw + 1) {
        return { x: bx, w: bw, y: Math.floor(y / rowHeight) * rowHeight, h: rowHeight, text: lines[i] || "" };
      }
    }
    return null;
  }

  document.addEventListener("mousemove", function (e) {
    var svg = e.target instanceof Element ? e.target.closest(".gantt-chunk svg") : null;
    if (!svg) { hideTip(); return; }
    var box = svg.getBoundingClientRect();
    var bar = barAt(svg, e.clientX - box.left, e.clientY - box.top);
    if (!bar) { hideTip(); return; }
    if (!tip) {
      tip = document.createElement("div");
      tip.className = "gantt-tip";
      tip.setAttribute("role", "tooltip");
      document.body.appendChild(tip);
    }
    if (!hover) {
      hover = document.createElementNS(SVG, "rect");
      hover.setAttribute("class", "gantt-hover");
    }
    hover.setAttribute("x", bar.x);
    hover.setAttribute("y", bar.y + 2.5);
    hover.setAttribute("width", bar.w);
    hover.setAttribute("height", bar.h - 5);
    if (hover.parentNode !== svg) svg.appendChild(hover);
    tip.textContent = bar.text;
    tip.hidden = false;
    var left = Math.min(e.clientX + 12, window.innerWidth - tip.offsetWidth - 8);
    tip.style.left = Math.max(0, left) + "px";
    tip.style.top = (e.clientY + 16) + "px";
  });
  document.addEventListener("kubetrain:refreshed", hideTip);
})();
