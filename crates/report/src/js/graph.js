// The SOP graphs' model view (docs/report.md): `select[data-graph-model]` recolours every
// graph's stages and actions and the routes tables by one model's mean Logic, read from the
// `data-*-by-model` attributes the report wrote; `#graph-model=NAME` selects one on load.
// Colours are the classes `logic-N` of the scale's bins, read from the legend the report drew
// (`svg.logic-legend rect.bin[data-from][data-to]`), so the scale is defined once, in Rust.
(function () {
  "use strict";
  var section = document.getElementById("sop-graphs");
  var select = section && section.querySelector("select[data-graph-model]");
  if (!select) return;
  var bins = Array.prototype.map.call(section.querySelectorAll("svg.logic-legend rect.bin"), function (r) {
    var cls = "";
    r.classList.forEach(function (c) { if (c.indexOf("logic-") === 0) cls = c; });
    return { to: Number(r.getAttribute("data-to")), cls: cls };
  });
  // Colours `el` by mean Logic `l`: the class of the first bin whose upper end is above it (the
  // last takes 100 and above); no bin class for null.
  function paint(el, l) {
    bins.forEach(function (b) { el.classList.remove(b.cls); });
    if (l === null || !bins.length) return;
    var i = 0;
    while (i < bins.length - 1 && l >= bins[i].to) i++;
    el.classList.add(bins[i].cls);
  }
  function fmt(x) { return (Math.round(x * 100) / 100).toString(); }
  function byModel(el, name) {
    try { return JSON.parse(el.getAttribute(name) || "{}"); } catch (e) { return {}; }
  }
  // The value of `el` for model `m` ("" = all models): `all` attribute or the `by` JSON's entry.
  function value(el, m, all, by) {
    if (!m) {
      var v = el.getAttribute(all);
      return v === null || v === "" ? null : Number(v);
    }
    var o = byModel(el, by);
    return Object.prototype.hasOwnProperty.call(o, m) ? o[m] : null;
  }
  function show(m) {
    section.setAttribute("data-model-view", m);
    section.querySelectorAll("svg.sop-graph g.node, svg.sop-graph g.action").forEach(function (g) {
      var l = value(g, m, "data-logic", "data-logic-by-model");
      var n = value(g, m, "data-turns", "data-turns-by-model") || 0;
      g.classList.toggle("untested", l === null);
      paint(g, l);
      var stat = g.querySelector(".stat");
      if (stat) stat.textContent = l === null ? "untested" : "Logic " + fmt(l) + " · " + n + " turns";
    });
    section.querySelectorAll("table.routes tr[data-route]").forEach(function (tr) {
      var l = value(tr, m, "data-logic", "data-logic-by-model");
      var d = value(tr, m, "data-dialogues", "data-dialogues-by-model") || 0;
      var t = value(tr, m, "data-turns", "data-turns-by-model") || 0;
      tr.classList.toggle("model-untested", !!m && d === 0);
      var cell = tr.querySelector('[data-col="logic"]');
      cell.textContent = l === null ? "—" : fmt(l);
      paint(cell, l);
      tr.querySelector('[data-col="turns"]').textContent = String(t);
      var dc = tr.querySelector('[data-col="dialogues"]'), a = dc.querySelector("a.explore");
      var base = a ? a.getAttribute("data-explore") : null;
      if (!base) return;
      a.setAttribute("href", base + (m ? ";model:" + encodeURIComponent(m) : ""));
      a.textContent = String(d);
      a.hidden = d === 0;
      var zero = dc.querySelector(".zero");
      if (d === 0 && !zero) { zero = document.createElement("span"); zero.className = "zero"; zero.textContent = "0"; dc.appendChild(zero); }
      if (zero) zero.hidden = d !== 0;
    });
    section.querySelectorAll("table.route-models [data-model]").forEach(function (c) {
      c.classList.toggle("selected", !!m && c.getAttribute("data-model") === m);
    });
  }
  function fromHash() {
    var h = location.hash;
    if (h.indexOf("#graph-model=") !== 0) return;
    var m;
    try { m = decodeURIComponent(h.slice(13)); } catch (e) { return; }
    for (var i = 0; i < select.options.length; i++) {
      if (select.options[i].value === m) {
        select.value = m;
        show(m);
        section.scrollIntoView();
      }
    }
  }
  select.addEventListener("change", function () {
    show(select.value);
    try {
      history.replaceState(null, "", select.value ? "#graph-model=" + encodeURIComponent(select.value) : "#sop-graphs");
    } catch (e) { /* some file: URLs refuse it */ }
  });
  window.addEventListener("hashchange", fromHash);
  fromHash();
})();
