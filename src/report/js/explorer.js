// The dialogue explorer (docs/report.md): filters over the embedded index, rows rendered in
// pages as the table scrolls, transcripts decompressed from their gzip chunk on demand.
(function () {
  "use strict";
  var root = document.getElementById("explorer");
  var data = document.getElementById("explorer-data");
  if (!root || !data) return;
  var idx = JSON.parse(data.textContent);
  var rows = idx.rows;
  var LEVELS = ["zero", "weak", "strong"];
  var SELECTS = ["model", "scenario", "route", "reached", "adversarial", "persona", "end"];
  var sortSel = root.querySelector("select[data-sort-rows]");
  var PAGE = 200;
  var chunks = {};
  document.querySelectorAll("script[data-chunk]").forEach(function (s) {
    chunks[s.getAttribute("data-chunk")] = s;
  });
  var byId = new Map();
  rows.forEach(function (r, i) { byId.set(r[0], i); });
  var tbody = root.querySelector("#explorer-table tbody");
  var scroller = root.querySelector(".explorer-scroll");
  var count = document.getElementById("explorer-count");
  var view = document.getElementById("dialogue-view");
  var matching = [];
  var shown = 0;

  function el(tag, attrs, children) {
    var e = document.createElement(tag);
    if (attrs) for (var k in attrs) if (attrs[k] !== null && attrs[k] !== undefined) e.setAttribute(k, attrs[k]);
    (children || []).forEach(function (c) {
      if (c === null || c === undefined) return;
      e.appendChild(typeof c === "string" || typeof c === "number" ? document.createTextNode(String(c)) : c);
    });
    return e;
  }
  function filter(key) { return root.querySelector('[data-filter="' + key + '"]'); }
  function anchor(id) { return "#dialogue=" + encodeURIComponent(id); }
  function fmt(x) { return x === null || x === undefined ? "—" : (Math.round(x * 100) / 100).toString(); }

  // The Logic of row r's turns on reached route `reached` (an index), or null.
  function routeLogic(r, reached) {
    if (reached === null) return null;
    var list = r[12] || [];
    for (var i = 0; i < list.length; i++) if (list[i][0] === reached) return list[i][1];
    return null;
  }
  function reachedSel() { var v = filter("reached").value; return v === "" ? null : Number(v); }

  function apply() {
    var sel = {};
    SELECTS.forEach(function (k) {
      var v = filter(k).value;
      sel[k] = v === "" ? null : Number(v);
    });
    var lo = filter("min-score").value, hi = filter("max-score").value;
    lo = lo === "" ? null : Number(lo);
    hi = hi === "" ? null : Number(hi);
    var fe = filter("format-error").checked, ie = filter("infra-error").checked;
    matching = [];
    for (var i = 0; i < rows.length; i++) {
      var r = rows[i];
      if (sel.model !== null && r[1] !== sel.model) continue;
      if (sel.scenario !== null && r[2] !== sel.scenario) continue;
      if (sel.route !== null && r[3] !== sel.route) continue;
      if (sel.reached !== null && routeLogic(r, sel.reached) === null) continue;
      if (sel.adversarial !== null && r[4] !== sel.adversarial) continue;
      if (sel.persona !== null && r[5] !== sel.persona) continue;
      if (sel.end !== null && r[6] !== sel.end) continue;
      if (lo !== null && (r[7] === null || r[7] < lo)) continue;
      if (hi !== null && (r[7] === null || r[7] > hi)) continue;
      if (fe && !(r[8] & 1)) continue;
      if (ie && !(r[8] & 2)) continue;
      matching.push(i);
    }
    if (sortSel.value === "worst") {
      // Worst first: by the Logic on the reached route filtered to, else by the overall score;
      // dialogues without a score last, ties in run order.
      var key = function (i) {
        var v = sel.reached !== null ? routeLogic(rows[i], sel.reached) : rows[i][7];
        return v === null || v === undefined ? Infinity : v;
      };
      matching.sort(function (a, b) { return (key(a) - key(b)) || (a - b); });
    }
    count.textContent = String(matching.length);
    tbody.textContent = "";
    shown = 0;
    more();
  }

  function more() {
    var end = Math.min(matching.length, shown + PAGE);
    var reached = reachedSel();
    var frag = document.createDocumentFragment();
    for (; shown < end; shown++) {
      var r = rows[matching[shown]];
      var flags = (r[8] & 1 ? " format error" : "") + (r[8] & 2 ? " infra error" : "");
      frag.appendChild(el("tr", { "data-dialogue": r[0] }, [
        el("td", null, [el("a", { href: anchor(r[0]) }, [r[0]]), flags ? el("span", { "class": "tag" }, [flags.trim()]) : null]),
        el("td", null, [idx.models[r[1]]]),
        el("td", null, [idx.scenarios[r[2]]]),
        el("td", null, [idx.routes[r[3]].slice(idx.scenarios[r[2]].length + 2)]),
        el("td", null, [LEVELS[r[4]]]),
        el("td", null, [idx.personas[r[5]]]),
        el("td", null, [idx.ends[r[6]]]),
        el("td", { "class": "num" }, [r[9]]),
        el("td", { "class": "num" }, [fmt(r[7])]),
        el("td", { "class": "num", "data-route-logic": reached === null ? null : String(routeLogic(r, reached)) }, [reached === null ? "" : fmt(routeLogic(r, reached))])
      ]));
    }
    tbody.appendChild(frag);
  }

  scroller.addEventListener("scroll", function () {
    if (shown < matching.length && scroller.scrollTop + scroller.clientHeight > scroller.scrollHeight - 200) more();
  });
  // The filters as `#explore=` pairs (docs/report.md): option texts, numbers, flags, order.
  function state() {
    var parts = [];
    SELECTS.forEach(function (k) {
      var f = filter(k);
      if (f.value !== "") parts.push(k + ":" + encodeURIComponent(f.options[f.selectedIndex].text));
    });
    ["min-score", "max-score"].forEach(function (k) {
      if (filter(k).value !== "") parts.push(k + ":" + encodeURIComponent(filter(k).value));
    });
    ["format-error", "infra-error"].forEach(function (k) { if (filter(k).checked) parts.push(k + ":1"); });
    if (sortSel.value) parts.push("sort:" + encodeURIComponent(sortSel.value));
    return parts.join(";");
  }
  function setHash(h) {
    try { history.replaceState(null, "", h); } catch (e) { /* some file: URLs refuse it */ }
  }
  function changed() {
    apply();
    var s = state();
    if (s) setHash("#explore=" + s);
    else if (location.hash.indexOf("#explore=") === 0) setHash("#explorer");
  }
  root.querySelectorAll("[data-filter]").forEach(function (f) {
    f.addEventListener(f.tagName === "INPUT" && f.type === "number" ? "input" : "change", changed);
  });
  sortSel.addEventListener("change", changed);
  tbody.addEventListener("click", function (ev) {
    var tr = ev.target.closest("tr[data-dialogue]");
    if (!tr) return;
    ev.preventDefault();
    // With filters on, the link keeps them: reloading it shows the same list and transcript.
    var id = tr.getAttribute("data-dialogue"), s = state();
    var h = s ? "#explore=" + s + ";dialogue:" + encodeURIComponent(id) : anchor(id);
    if (location.hash === h) open(id);
    else location.hash = h;
  });

  var cache = new Map();
  function chunk(n) {
    if (cache.has(n)) return cache.get(n);
    var bin = atob(chunks[n].textContent.trim());
    var bytes = new Uint8Array(bin.length);
    for (var i = 0; i < bin.length; i++) bytes[i] = bin.charCodeAt(i);
    var stream = new Blob([bytes]).stream().pipeThrough(new DecompressionStream("gzip"));
    var p = new Response(stream).text().then(function (t) { return t.split("\n"); });
    cache.set(n, p);
    if (cache.size > 8) cache.delete(cache.keys().next().value);
    return p;
  }

  function turnView(d, t) {
    var kids = [];
    var head = "Turn " + t.n + (t.k === 1 ? " · format error" : t.k === 2 ? " · infrastructure error" : "");
    kids.push(el("h4", null, [head]));
    kids.push(el("div", { "class": "msg customer" }, [el("b", null, ["Customer: "]), t.u]));
    kids.push(el("div", { "class": "msg agent" }, [el("b", null, ["Agent: "]), t.c || ""]));
    if (t.e) kids.push(el("p", { "class": "err" }, [t.e]));
    var judges = t.j || [];
    var consensus = t.q ? (t.q.length ? t.q : null) : (judges.length ? d.g : null);
    var head2 = ["", "Agent", "Reference"];
    judges.forEach(function (_, i) { head2.push("Judge " + (i + 1)); });
    head2.push("Customer's truth");
    var trs = [el("tr", null, head2.map(function (h) { return el("th", null, [h]); }))];
    d.f.forEach(function (name, i) {
      var agent = t.a ? t.a[i] : null, ref = consensus ? consensus[i] : null;
      var cells = [el("th", null, [name]),
        el("td", { "class": t.a && agent !== ref ? "diff" : null }, [agent === null || agent === undefined ? "—" : agent]),
        el("td", null, [ref === null || ref === undefined ? "—" : ref])];
      judges.forEach(function (j) {
        var c = j.e ? null : (j.c || consensus);
        var v = c ? c[i] : null;
        cells.push(el("td", { "class": c && v !== ref ? "diff" : null }, [j.e ? "error" : v === null || v === undefined ? "—" : v]));
      });
      cells.push(el("td", { "class": d.g[i] !== ref ? "diff" : null }, [d.g[i] === null ? "—" : d.g[i]]));
      trs.push(el("tr", { "data-field": name }, cells));
    });
    var r = t.r || {};
    var rp = r.p || [];
    var pathCell = el("td", null, []);
    (t.p || []).forEach(function (s, i) {
      if (i) pathCell.appendChild(document.createTextNode(" > "));
      pathCell.appendChild(el("span", { "class": rp.indexOf(s) < 0 ? "diff" : null }, [s]));
    });
    if (t.p && t.p.join(">") !== rp.join(">") && !pathCell.querySelector(".diff")) pathCell.className = "diff";
    var pad = judges.length + 1;
    trs.push(el("tr", { "data-field": "path" }, [el("th", null, ["Path"]), pathCell, el("td", { colspan: pad }, [r.e ? "no reference: " + r.e : rp.join(" > ")])]));
    trs.push(el("tr", { "data-field": "action" }, [el("th", null, ["Action"]),
      el("td", { "class": t.x && t.x !== r.x ? "diff" : null }, [t.x || "—"]),
      el("td", { colspan: pad }, [r.x || "—"])]));
    if ((t.o && t.o.length) || (r.o && r.o.length)) {
      trs.push(el("tr", { "data-field": "outputs" }, [el("th", null, ["Outputs"]),
        el("td", { "class": (t.o || []).join(",") !== (r.o || []).join(",") ? "diff" : null }, [(t.o || []).join(", ") || "—"]),
        el("td", { colspan: pad }, [(r.o || []).join(", ") || "—"])]));
    }
    if (judges.length) {
      var dims = ["Linguistic", "Anthropomorphism", "Utility", "Satisfaction", "Compliance"];
      dims.forEach(function (name, k) {
        var cells = [el("th", null, ["Chat: " + name]), el("td", null, []), el("td", null, [])];
        judges.forEach(function (j) { cells.push(el("td", { "class": "num" }, [j.d ? j.d[k] : "—"])); });
        cells.push(el("td", null, []));
        trs.push(el("tr", null, cells));
      });
    }
    kids.push(el("table", { "class": "data compare" }, trs));
    if (t.s) {
      var s = t.s, logic = s.length > 4 ? s[4] : 0.4 * s[0] + 0.4 * s[1] + 0.2 * s[2];
      var overall = s.length > 5 ? s[5] : 0.8 * logic + 0.2 * s[3];
      var shown = [["Acc_cls", s[0]], ["Sim_path", s[1]], ["Acc_action", s[2]], ["Logic", logic], ["Chat", s[3]], ["Overall", overall]];
      kids.push(el("p", { "class": "scores" }, shown.map(function (p) {
        return el("span", { "class": "tag", "data-score": p[0].toLowerCase(), "data-value": String(p[1]) }, [p[0] + " " + fmt(p[1])]);
      })));
    }
    return el("div", { "class": "turn", "data-turn": String(t.n) }, kids);
  }

  // The key of a turn's reference route, as the report writes it (`PATH -> ACTION [OUTPUTS]`).
  function refKey(r) {
    if (!r || r.e) return null;
    return (r.p || []).join(">") + " -> " + r.x + (r.o && r.o.length ? " [" + r.o.join(", ") + "]" : "");
  }
  // A turn where the agent left the reference: a format error, or a path or action that differ.
  function differs(t) {
    if (t.k === 1) return !!t.r;
    if (t.k !== 0 || !t.r || t.r.e) return false;
    return (t.p || []).join(">") !== (t.r.p || []).join(">") || t.x !== t.r.x;
  }

  function open(id) {
    var i = byId.get(id);
    view.hidden = false;
    view.setAttribute("data-dialogue", id);
    view.textContent = "";
    root.querySelectorAll("tr.open").forEach(function (tr) { tr.classList.remove("open"); });
    if (i === undefined) {
      view.appendChild(el("p", { "class": "err" }, ["No dialogue " + id + " in this report."]));
      return;
    }
    var r = rows[i];
    view.appendChild(el("h3", null, [id]));
    view.appendChild(el("p", null, [
      idx.models[r[1]] + " · " + idx.routes[r[3]] + " · " + LEVELS[r[4]] + " · " + idx.personas[r[5]] + " · ended: " + idx.ends[r[6]] + " · overall " + fmt(r[7]) + " · ",
      el("a", { href: anchor(id) }, ["link"])
    ]));
    view.appendChild(el("p", { "class": "muted loading" }, ["Decompressing…"]));
    chunk(String(r[10])).then(function (lines) {
      if (view.getAttribute("data-dialogue") !== id) return;
      var d = JSON.parse(lines[r[11]]);
      var loading = view.querySelector(".loading");
      if (loading) loading.remove();
      var reached = reachedSel();
      var routeName = reached === null ? null : idx.reached[reached];
      var scenario = idx.scenarios[r[2]];
      var broke = null, target = null;
      d.t.forEach(function (t) {
        var v = turnView(d, t);
        var onRoute = routeName !== null && refKey(t.r) !== null && scenario + ": " + refKey(t.r) === routeName;
        if (onRoute) v.classList.add("on-route");
        if (differs(t)) {
          v.classList.add("differs");
          if (!broke) broke = v;
          if (onRoute && !target) target = v;
        }
        view.appendChild(v);
      });
      if (broke) {
        broke.classList.add("broke");
        var h4 = broke.querySelector("h4");
        h4.appendChild(el("span", { "class": "tag bad" }, ["where it broke: the first turn off the reference"]));
        view.setAttribute("data-broke", broke.getAttribute("data-turn"));
        var note = el("p", { "class": "broke-note" }, ["The agent first left the reference at ",
          el("a", { href: "#", "data-goto-turn": broke.getAttribute("data-turn") }, ["turn " + broke.getAttribute("data-turn")]),
          target && target !== broke ? "; on the filtered route at turn " + target.getAttribute("data-turn") : "", "."]);
        view.insertBefore(note, view.querySelector(".turn"));
        note.querySelector("a").addEventListener("click", function (ev) { ev.preventDefault(); broke.scrollIntoView(); });
      } else {
        view.removeAttribute("data-broke");
        view.insertBefore(el("p", { "class": "broke-note good" }, ["The agent followed the reference path and action in every turn."]), view.querySelector(".turn"));
      }
      (target || broke || view).scrollIntoView();
    }).catch(function (e) {
      view.appendChild(el("p", { "class": "err" }, ["Could not read the transcript: " + e]));
    });
    var tr = tbody.querySelector('tr[data-dialogue="' + CSS.escape(id) + '"]');
    if (tr) tr.classList.add("open");
    view.scrollIntoView();
  }

  // Sets the filters from `#explore=` pairs; returns the dialogue to open, if any.
  function fromFragment(text) {
    var want = {}, dialogue = null;
    text.split(";").forEach(function (part) {
      var at = part.indexOf(":");
      if (at < 0) return;
      var k = part.slice(0, at), v;
      try { v = decodeURIComponent(part.slice(at + 1)); } catch (e) { return; }
      if (k === "dialogue") dialogue = v; else want[k] = v;
    });
    SELECTS.forEach(function (k) {
      var f = filter(k), value = "";
      if (want[k] !== undefined) {
        for (var i = 0; i < f.options.length; i++) if (f.options[i].text === want[k]) value = f.options[i].value;
      }
      f.value = value;
    });
    ["min-score", "max-score"].forEach(function (k) { filter(k).value = want[k] !== undefined && !isNaN(Number(want[k])) ? want[k] : ""; });
    ["format-error", "infra-error"].forEach(function (k) { filter(k).checked = want[k] === "1"; });
    sortSel.value = want.sort === "worst" ? "worst" : "";
    return dialogue;
  }

  function route() {
    var h = location.hash;
    if (h.indexOf("#dialogue=") === 0) open(decodeURIComponent(h.slice(10)));
    else if (h.indexOf("#explore=") === 0) {
      var before = state();
      var dialogue = fromFragment(h.slice(9));
      // Re-filter only when the filters changed (keeps the table's scroll on a row click).
      if (state() !== before || !tbody.rows.length) apply();
      if (dialogue !== null) open(dialogue);
      else root.scrollIntoView();
    }
  }
  window.addEventListener("hashchange", route);
  // A link to the fragment already in the address bar changes nothing: apply it again.
  document.addEventListener("click", function (ev) {
    var a = ev.target.closest && ev.target.closest('a[href^="#explore="], a[href^="#dialogue="]');
    if (!a || tbody.contains(a) || a.getAttribute("href") !== location.hash) return;
    ev.preventDefault();
    route();
  });
  apply();
  route();
  root.setAttribute("data-ready", "");
})();
