// thinkprobe trace page: draws the typed arcs beside the text, and links units, arcs and checkpoints on hover.
// Self-contained (no library, no network). The arcs exist in the page as <path class="arc"> with their
// endpoints in data-s/data-t; this script gives them their shape from where the units were laid out.
(function () {
  "use strict";
  var t0 = performance.now();
  var units = Array.prototype.slice.call(document.querySelectorAll("#units .tu"));
  var svg = document.getElementById("arcs");
  var arcs = Array.prototype.slice.call(document.querySelectorAll("#arcs .arc"));
  var tip = document.getElementById("tip");
  var byUnit = {};
  arcs.forEach(function (a) {
    [a.getAttribute("data-s"), a.getAttribute("data-t")].forEach(function (k) {
      (byUnit[k] = byUnit[k] || []).push(a);
    });
  });

  function layout() {
    if (!svg || !units.length) return;
    var host = document.getElementById("units");
    var width = svg.clientWidth || 150;
    var mids = units.map(function (u) { return u.offsetTop + Math.min(u.offsetHeight / 2, 14); });
    svg.setAttribute("height", host.offsetHeight);
    svg.style.height = host.offsetHeight + "px";
    var paths = arcs.map(function (a) {
      var y1 = mids[+a.getAttribute("data-s")], y2 = mids[+a.getAttribute("data-t")];
      var reach = Math.min(width - 6, 10 + 1.8 * Math.sqrt(Math.abs(y2 - y1)) * 2.2);
      var x = width - 2;
      return "M" + x + "," + y1 + " C" + (x - reach) + "," + y1 + " " + (x - reach) + "," + y2 + " " + x + "," + y2;
    });
    arcs.forEach(function (a, i) { a.setAttribute("d", paths[i]); });
  }

  function show(text, ev) {
    tip.textContent = text;
    tip.style.display = "block";
    tip.style.left = Math.min(ev.clientX + 14, window.innerWidth - 320) + "px";
    tip.style.top = ev.clientY + 14 + "px";
  }
  function hide() { tip.style.display = "none"; }
  function mark(list, on) { (list || []).forEach(function (a) { a.classList.toggle("hl", on); }); }

  units.forEach(function (u) {
    u.addEventListener("mouseenter", function (ev) {
      show(u.getAttribute("data-tip"), ev);
      mark(byUnit[u.getAttribute("data-i")], true);
    });
    u.addEventListener("mousemove", function (ev) { show(u.getAttribute("data-tip"), ev); });
    u.addEventListener("mouseleave", function () { hide(); mark(byUnit[u.getAttribute("data-i")], false); });
  });
  arcs.forEach(function (a) {
    a.addEventListener("mouseenter", function (ev) {
      a.classList.add("hl");
      show(a.getAttribute("data-type") + ": unit " + a.getAttribute("data-s") + " \u2192 unit " + a.getAttribute("data-t"), ev);
      [a.getAttribute("data-s"), a.getAttribute("data-t")].forEach(function (k) { units[+k].classList.add("hl"); });
    });
    a.addEventListener("mouseleave", function () {
      a.classList.remove("hl"); hide();
      [a.getAttribute("data-s"), a.getAttribute("data-t")].forEach(function (k) { units[+k].classList.remove("hl"); });
    });
  });

  // checkpoints: a marker in the text and a column of the distribution chart light up together
  function pair(k, on) {
    Array.prototype.forEach.call(document.querySelectorAll('[data-cp="' + k + '"]'), function (e) {
      e.classList.toggle("hl", on);
    });
  }
  Array.prototype.forEach.call(document.querySelectorAll("[data-cp]"), function (e) {
    e.addEventListener("mouseenter", function (ev) { pair(e.getAttribute("data-cp"), true); if (e.getAttribute("data-tip")) show(e.getAttribute("data-tip"), ev); });
    e.addEventListener("mouseleave", function () { pair(e.getAttribute("data-cp"), false); hide(); });
    e.addEventListener("click", function () {
      var m = document.querySelector('.cp[data-cp="' + e.getAttribute("data-cp") + '"]');
      if (m && e.tagName.toLowerCase() !== "span") m.scrollIntoView({block: "center"});
    });
  });

  // sortable tables (metrics table of the page)
  Array.prototype.forEach.call(document.querySelectorAll("table.sortable th"), function (th, col) {
    th.addEventListener("click", function () {
      var body = th.closest("table").tBodies[0];
      var rows = Array.prototype.slice.call(body.rows);
      var dir = th.getAttribute("data-dir") === "asc" ? -1 : 1;
      th.setAttribute("data-dir", dir > 0 ? "asc" : "desc");
      rows.sort(function (a, b) {
        var x = a.cells[th.cellIndex].getAttribute("data-v") || a.cells[th.cellIndex].textContent;
        var y = b.cells[th.cellIndex].getAttribute("data-v") || b.cells[th.cellIndex].textContent;
        var nx = parseFloat(x), ny = parseFloat(y);
        return dir * (isNaN(nx) || isNaN(ny) ? x.localeCompare(y) : nx - ny);
      });
      rows.forEach(function (r) { body.appendChild(r); });
    });
  });

  layout();
  var pending = null;
  window.addEventListener("resize", function () { clearTimeout(pending); pending = setTimeout(layout, 80); });
  window.thinkprobePage = {units: units.length, arcs: arcs.length, renderMs: performance.now() - t0};
  document.documentElement.setAttribute("data-rendered", "1");
})();
