// The explorers' engine, shared by both suites (docs/report.md). A suite's script calls
// Explorer.mount(suite) with its element ids, its filters (match), orders, columns (cells) and
// transcript (header, render, renderCase); the engine reads the rows (a JSON block), filters
// them (the filters mirrored in the URL fragment), renders them a page at a time as the list
// scrolls, decompresses a transcript's gzip chunk when one of its rows is opened, and shows a
// case across models (#case=). Record text is only ever written with text nodes.
(function () {
  "use strict";
  var PAGE = 200;

  function el(tag, attrs, children) {
    var e = document.createElement(tag);
    if (attrs) for (var k in attrs) if (attrs[k] !== null && attrs[k] !== undefined) e.setAttribute(k, attrs[k]);
    (children || []).forEach(function (c) {
      if (c === null || c === undefined || c === false) return;
      e.appendChild(typeof c === "string" || typeof c === "number" ? document.createTextNode(String(c)) : c);
    });
    return e;
  }
  // A shell word, as `sage show` takes an id.
  function shellQuote(s) { return "'" + String(s).replace(/'/g, "'\\''") + "'"; }
  function decode(s) { try { return decodeURIComponent(s); } catch (e) { return null; } }

  function mount(suite) {
    // The explorer's div (its section has the same id).
    var root = document.querySelector("div.explorer#" + CSS.escape(suite.root));
    var data = document.getElementById(suite.data);
    if (!root || !data) return;
    var idx;
    try { idx = JSON.parse(data.textContent); } catch (e) { root.setAttribute("data-error", String(e)); return; }
    var rows = idx.rows, tables = idx.tables;
    var key = root.getAttribute("data-key") || "dialogue";
    var chunks = {};
    document.querySelectorAll("script[data-chunk]").forEach(function (s) {
      if (s.getAttribute("data-explorer") === suite.root) chunks[s.getAttribute("data-chunk")] = s;
    });
    var byId = new Map();
    rows.forEach(function (r, i) { byId.set(r[0], i); });
    var tbody = root.querySelector("tbody");
    var scroller = root.querySelector(".explorer-scroll");
    var count = document.getElementById(suite.count);
    var view = document.getElementById(suite.view);
    var filters = Array.prototype.slice.call(root.querySelectorAll("[data-filter]"));
    var sortSel = root.querySelector("select[data-sort-rows]");
    var matching = [], shown = 0;

    function anchor(id) { return "#" + key + "=" + encodeURIComponent(id); }
    // A case's link; `from`: the dialogue it was opened from (shown beside the best and worst).
    function caseAnchor(c, from) { return "#case=" + encodeURIComponent(c) + (from ? ";" + key + ":" + encodeURIComponent(from) : ""); }
    function value(f) { return f.type === "checkbox" ? (f.checked ? "1" : "") : f.value; }
    // The filters set: name -> value (a select's option value, a number, "1").
    function state() {
      var st = {};
      filters.forEach(function (f) { var v = value(f); if (v !== "") st[f.getAttribute("data-filter")] = v; });
      return st;
    }
    var ctx = {
      el: el, anchor: anchor, caseAnchor: caseAnchor, tables: tables, key: key, state: state,
      show: function (id) { return el("code", { "class": "show" }, [idx.show + " " + shellQuote(id)]); },
      // A row's id cell: the id linked (cut with an ellipsis when long) and its tags, whole.
      idCell: function (r, tags) {
        var kids = [el("a", { href: anchor(r[0]) }, [r[0]])].concat(tags || []);
        if (r[1] < 0) kids.push(el("span", { "class": "tag" }, ["not embedded"]));
        return el("td", { "class": "id", title: r[0] }, [el("div", { "class": "id-cell" }, kids)]);
      }
    };

    function apply() {
      var st = state();
      matching = [];
      for (var i = 0; i < rows.length; i++) if (suite.match(rows[i], st, ctx)) matching.push(i);
      var order = sortSel ? sortSel.value : "";
      var by = order && suite.sorts ? suite.sorts[order] : null;
      if (by) {
        var keys = new Map();
        matching.forEach(function (i) { var v = by(rows[i], st, ctx); keys.set(i, v === null || v === undefined ? Infinity : v); });
        matching.sort(function (a, b) { return (keys.get(a) - keys.get(b)) || (a - b); });
      }
      count.textContent = String(matching.length);
      tbody.textContent = "";
      shown = 0;
      more();
    }

    function more() {
      var end = Math.min(matching.length, shown + PAGE);
      var st = state();
      var frag = document.createDocumentFragment();
      for (; shown < end; shown++) {
        var r = rows[matching[shown]];
        var attrs = { "class": r[1] < 0 ? "not-embedded" : null };
        attrs["data-" + key] = r[0];
        frag.appendChild(el("tr", attrs, suite.cells(r, st, ctx)));
      }
      tbody.appendChild(frag);
    }
    scroller.addEventListener("scroll", function () {
      if (shown < matching.length && scroller.scrollTop + scroller.clientHeight > scroller.scrollHeight - 200) more();
    });

    // The filters as `#explore=` pairs (docs/report.md): option texts, numbers, flags, order.
    function fragment() {
      var parts = [];
      filters.forEach(function (f) {
        var v = value(f);
        if (v === "") return;
        var text = f.tagName === "SELECT" ? f.options[f.selectedIndex].text : v;
        parts.push(f.getAttribute("data-filter") + ":" + encodeURIComponent(text));
      });
      if (sortSel && sortSel.value) parts.push("sort:" + encodeURIComponent(sortSel.value));
      return parts.join(";");
    }
    function setHash(h) {
      try { history.replaceState(null, "", h); } catch (e) { /* some file: URLs refuse it */ }
    }
    function changed() {
      apply();
      var s = fragment();
      if (s) setHash("#explore=" + s);
      else if (location.hash.indexOf("#explore=") === 0) setHash("#" + suite.root);
    }
    filters.forEach(function (f) {
      f.addEventListener(f.tagName === "INPUT" && f.type === "number" ? "input" : "change", changed);
    });
    if (sortSel) sortSel.addEventListener("change", changed);
    tbody.addEventListener("click", function (ev) {
      var tr = ev.target.closest("tr[data-" + key + "]");
      if (!tr) return;
      ev.preventDefault();
      // With filters on, the link keeps them: reloading it shows the same list and transcript.
      var id = tr.getAttribute("data-" + key), s = fragment();
      var h = s ? "#explore=" + s + ";" + key + ":" + encodeURIComponent(id) : anchor(id);
      if (location.hash === h) open(id);
      else location.hash = h;
    });

    var cache = new Map();
    function chunk(n) {
      if (cache.has(n)) return cache.get(n);
      var script = chunks[n];
      if (!script) return Promise.reject(new Error("chunk " + n + " is missing"));
      var bin = atob(script.textContent.trim());
      var bytes = new Uint8Array(bin.length);
      for (var i = 0; i < bin.length; i++) bytes[i] = bin.charCodeAt(i);
      var stream = new Blob([bytes]).stream().pipeThrough(new DecompressionStream("gzip"));
      var p = new Response(stream).text().then(function (t) { return t.split("\n"); });
      cache.set(n, p);
      if (cache.size > 8) cache.delete(cache.keys().next().value);
      return p;
    }
    // The transcript of row i (a promise; null when the page does not embed it).
    function load(i) {
      var r = rows[i];
      if (r[1] < 0) return Promise.resolve(null);
      return chunk(String(r[1])).then(function (lines) { return JSON.parse(lines[r[2]]); });
    }
    function reset(attr, value) {
      view.hidden = false;
      view.removeAttribute("data-" + key);
      view.removeAttribute("data-case");
      view.removeAttribute("data-broke");
      view.setAttribute(attr, value);
      view.textContent = "";
      view.scrollTop = 0;
      root.querySelectorAll("tr.open").forEach(function (tr) { tr.classList.remove("open"); });
    }
    function failed(e) { view.appendChild(el("p", { "class": "err" }, ["Could not read the transcript: " + e])); }

    function open(id) {
      root.classList.remove("case-open");
      reset("data-" + key, id);
      var i = byId.get(id);
      if (i === undefined) {
        view.appendChild(el("p", { "class": "err" }, ["No " + suite.noun + " " + id + " in this page. Print it with:"]));
        view.appendChild(ctx.show(id));
        view.scrollIntoView();
        return;
      }
      var r = rows[i];
      suite.header(view, r, ctx);
      var tr = tbody.querySelector("tr[data-" + key + '="' + CSS.escape(id) + '"]');
      if (tr) tr.classList.add("open");
      if (r[1] < 0) {
        view.appendChild(el("p", { "class": "not-embedded" }, ["This page lists this " + suite.noun + " without its transcript (see the note above the filters). Print it with:"]));
        view.appendChild(ctx.show(id));
        view.scrollIntoView();
        return;
      }
      var loading = el("p", { "class": "muted loading" }, ["Decompressing…"]);
      view.appendChild(loading);
      view.scrollIntoView();
      load(i).then(function (d) {
        if (view.getAttribute("data-" + key) !== id) return;
        loading.remove();
        suite.render(view, d, r, state(), ctx);
      }).catch(failed);
    }

    // Every model's dialogue of one case: the suite's overview of them all (caseMatrix, one
    // row per model, in the suite's order: caseOrder), and a few transcripts side by side
    // (renderCase): those the suite picks by default (caseDefault: e.g. the best, the worst
    // and the one it was opened from) or, without a caseDefault, every one; the overview's
    // rows add and remove transcripts.
    function openCase(c, from) {
      root.classList.add("case-open");
      reset("data-case", c);
      var list = [];
      rows.forEach(function (r, i) { if (r[3] === c) list.push(i); });
      if (suite.caseOrder) list.sort(function (a, b) { return (suite.caseOrder(rows[a]) - suite.caseOrder(rows[b])) || (a - b); });
      view.appendChild(el("h3", null, ["Case " + c + ": every model (" + list.length + ")"]));
      if (!list.length) {
        view.appendChild(el("p", { "class": "err" }, ["No " + suite.noun + " of case " + c + " is in this page (see the note above the filters)."]));
        view.scrollIntoView();
        return;
      }
      var caseRows = list.map(function (i) { return rows[i]; });
      var chosen = suite.caseDefault ? suite.caseDefault(caseRows, from, ctx) : caseRows.map(function (r) { return r[0]; });
      var side = el("div", { "class": "case-side" }), drawn = 0;
      function draw() {
        var gen = ++drawn;
        side.textContent = "";
        var pick = list.filter(function (i) { return chosen.indexOf(rows[i][0]) >= 0; });
        var missing = pick.filter(function (i) { return rows[i][1] < 0; });
        var have = pick.filter(function (i) { return rows[i][1] >= 0; });
        if (missing.length) {
          var p = el("p", { "class": "not-embedded" }, ["Not embedded in this page: "]);
          missing.forEach(function (i, n) { if (n) p.appendChild(document.createTextNode(", ")); p.appendChild(ctx.show(rows[i][0])); });
          side.appendChild(p);
        }
        return Promise.all(have.map(load)).then(function (ds) {
          // A later choice (or another case) drew meanwhile: this one is stale.
          if (view.getAttribute("data-case") !== c || gen !== drawn) return;
          suite.renderCase(side, ds, have.map(function (i) { return rows[i]; }), ctx);
          view.setAttribute("data-shown", String(ds.length));
        }).catch(failed);
      }
      if (suite.caseMatrix) {
        view.appendChild(suite.caseMatrix(caseRows, chosen, ctx, function (id) {
          var at = chosen.indexOf(id);
          if (at >= 0) chosen.splice(at, 1); else chosen.push(id);
          draw();
        }));
      }
      view.appendChild(side);
      view.scrollIntoView();
      // Scrolled again once drawn: the page above may have moved meanwhile.
      draw().then(function () { if (view.getAttribute("data-case") === c) view.scrollIntoView(); });
    }

    // Sets the filters from `#explore=` pairs; returns the row to open, if any.
    function fromFragment(text) {
      var want = {}, id = null;
      text.split(";").forEach(function (part) {
        var at = part.indexOf(":");
        if (at < 0) return;
        var k = part.slice(0, at), v = decode(part.slice(at + 1));
        if (v === null) return;
        if (k === key) id = v; else want[k] = v;
      });
      filters.forEach(function (f) {
        var k = f.getAttribute("data-filter"), w = want[k];
        if (f.type === "checkbox") { f.checked = w === "1"; return; }
        if (f.tagName === "SELECT") {
          var v = "";
          if (w !== undefined) for (var i = 0; i < f.options.length; i++) if (f.options[i].text === w) v = f.options[i].value;
          f.value = v;
          return;
        }
        f.value = w !== undefined && !isNaN(Number(w)) ? w : "";
      });
      if (sortSel) {
        sortSel.value = "";
        for (var i = 0; i < sortSel.options.length; i++) if (want.sort && sortSel.options[i].value === want.sort) sortSel.value = want.sort;
      }
      return id;
    }

    function route() {
      var h = location.hash, pre = "#" + key + "=";
      if (h.indexOf(pre) === 0) { var id = decode(h.slice(pre.length)); if (id !== null) open(id); }
      else if (h.indexOf("#case=") === 0) {
        // #case=CASE[;dialogue:ID], each part encoded (`;` and `:` escaped in them).
        var parts = h.slice(6).split(";"), c = decode(parts[0]), from = null;
        parts.slice(1).forEach(function (part) { if (part.indexOf(key + ":") === 0) from = decode(part.slice(key.length + 1)); });
        if (c !== null) openCase(c, from);
      }
      else if (h.indexOf("#explore=") === 0) {
        var before = fragment();
        var row = fromFragment(h.slice(9));
        // Re-filter only when the filters changed (keeps the table's scroll on a row click).
        if (fragment() !== before || !tbody.rows.length) apply();
        if (row !== null) open(row);
        else root.scrollIntoView();
      }
    }
    window.addEventListener("hashchange", route);
    // A link to the fragment already in the address bar changes nothing: apply it again.
    document.addEventListener("click", function (ev) {
      var a = ev.target.closest && ev.target.closest('a[href^="#explore="], a[href^="#' + key + '="], a[href^="#case="]');
      if (!a || tbody.contains(a) || a.getAttribute("href") !== location.hash) return;
      ev.preventDefault();
      route();
    });
    apply();
    route();
    root.setAttribute("data-ready", String(rows.length));
  }

  window.Explorer = { mount: mount, el: el, shellQuote: shellQuote };
})();
