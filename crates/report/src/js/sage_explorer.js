// The SAGE dialogue explorer (docs/report.md): its filters, columns and transcript, mounted on
// the shared engine (explorer.js). A row: [id, chunk, position, case, model, scenario, target
// route, adversarial level, persona, end, mean Overall, flags, turns, [[reached route, Logic]],
// verdicts] (names as indexes into the tables; the models in the leaderboard's order; verdicts:
// a letter per turn, o followed the reference, x left it, f format error, i infrastructure
// error, - not judged, n no reference). Every score is shown on the 0-100 scale.
(function () {
  "use strict";
  if (!window.Explorer) return;
  var el = window.Explorer.el;
  var SELECTS = { model: 4, scenario: 5, route: 6, adversarial: 7, persona: 8, end: 9 };
  var DIMS = [["Linguistic quality", "20%", "Lang."], ["Anthropomorphism and emotion", "25%", "Empathy"], ["Content utility", "25%", "Utility"], ["User satisfaction", "15%", "Satisf."], ["Instruction compliance", "15%", "Compl."]];
  var ROLES = ["agent", "customer", "judges", "other"];
  // What each verdict letter says: its mark, its class and its words.
  var VERDICTS = {
    "o": ["✓", "followed", "followed the reference path and action"],
    "x": ["✗", "left", "left the reference path or action"],
    "f": ["F", "format", "format error: the answer did not parse"],
    "i": ["!", "infra", "infrastructure error: not scored"],
    "-": ["·", "unjudged", "not judged (judge_turns): no reference"],
    "n": ["?", "noref", "no reference route for the judges' classification"]
  };
  // Whether the agent left the reference at the k-th turn of row r (a path or an action other
  // than the reference's, or a format error where there was a reference).
  function left(r, k) { var v = (r[14] || "")[k]; return v === "x" || v === "f"; }

  function fmt(x) { return x === null || x === undefined ? "—" : (Math.round(x * 100) / 100).toString(); }
  function show(v) { return v === null || v === undefined ? "—" : v; }
  // The Logic of row r's turns on reached route `reached` (an index), or null.
  function routeLogic(r, reached) {
    var list = r[13] || [];
    for (var i = 0; i < list.length; i++) if (list[i][0] === reached) return list[i][1];
    return null;
  }
  function reachedOf(st) { return st.reached === undefined ? null : Number(st.reached); }

  function match(r, st) {
    for (var k in SELECTS) if (st[k] !== undefined && r[SELECTS[k]] !== Number(st[k])) return false;
    if (st.reached !== undefined && routeLogic(r, Number(st.reached)) === null) return false;
    if (st["min-score"] !== undefined && (r[10] === null || r[10] < Number(st["min-score"]))) return false;
    if (st["max-score"] !== undefined && (r[10] === null || r[10] > Number(st["max-score"]))) return false;
    if (st["format-error"] && !(r[11] & 1)) return false;
    if (st["infra-error"] && !(r[11] & 2)) return false;
    if (st["off-case"] && !(r[11] & 4)) return false;
    return true;
  }

  function cells(r, st, ctx) {
    var t = ctx.tables, reached = reachedOf(st);
    var flags = (r[11] & 1 ? " format error" : "") + (r[11] & 2 ? " infra error" : "") + (r[11] & 4 ? " off-case customer" : "");
    var scenario = t.scenarios[r[5]], route = t.routes[r[6]].slice(scenario.length + 2);
    var logic = reached === null ? null : routeLogic(r, reached);
    return [
      ctx.idCell(r, flags ? [el("span", { "class": "tag" }, [flags.trim()])] : []),
      el("td", { "class": "num", "data-col": "overall" }, [fmt(r[10])]),
      el("td", { "class": "num", "data-route-logic": reached === null ? null : String(logic) }, [reached === null ? "" : fmt(logic)]),
      el("td", { "class": "num" }, [r[12]]),
      el("td", { "class": "cut", title: t.models[r[4]] }, [t.models[r[4]]]),
      el("td", { "class": "cut", title: scenario }, [scenario]),
      el("td", { "class": "cut", title: route }, [route]),
      el("td", null, [t.levels[r[7]]]),
      el("td", { "class": "cut", title: t.personas[r[8]] }, [t.personas[r[8]]]),
      el("td", null, [t.ends[r[9]]])
    ];
  }

  function header(view, r, ctx) {
    var t = ctx.tables;
    view.appendChild(el("h3", null, [r[0]]));
    view.appendChild(el("p", null, [
      t.models[r[4]] + " · " + t.routes[r[6]] + " · " + t.levels[r[7]] + " · " + t.personas[r[8]] + " · ended: " + t.ends[r[9]] + " · Overall " + fmt(r[10]) + " · ",
      el("a", { href: ctx.anchor(r[0]) }, ["link"]), " · ",
      el("a", { href: ctx.caseAnchor(r[3], r[0]), "class": "case-link" }, ["this case, every model"])
    ]));
  }

  // Each judge's five chat scores (3/6/9 scale, with each dimension's weight) and their
  // weighted Chat (0-100).
  function chatTable(d, judges) {
    var head = el("tr", null, [el("th", null, ["Chat scores (3/6/9)"])].concat(DIMS.map(function (dim) {
      return el("th", { "class": "num", title: dim[0] + ", weight " + dim[1] }, [dim[2] + " " + dim[1]]);
    })).concat([el("th", { "class": "num", title: "the weighted score on 0-100" }, ["Chat 0-100"])]));
    var trs = [head];
    judges.forEach(function (j, i) {
      var name = d.jm && d.jm[i] ? d.jm[i] : "judge " + (i + 1);
      var cells = [el("th", null, [name])];
      DIMS.forEach(function (_, k) { cells.push(el("td", { "class": "num", "data-dimension": String(k) }, [j.d ? String(j.d[k]) : "—"])); });
      cells.push(el("td", { "class": "num", "data-judge-chat": j.w === undefined ? null : String(j.w) }, [j.e ? "error" : fmt(j.w)]));
      trs.push(el("tr", { "data-judge": String(i) }, cells));
    });
    return el("table", { "class": "data judge-chat" }, trs);
  }

  // The turn's model calls: per role, calls, tokens in/out, latency, cost.
  function callsTable(t) {
    var m = t.m || {}, trs = [];
    ROLES.forEach(function (role) {
      var v = m[role];
      if (!v) return;
      trs.push(el("tr", { "data-role": role }, [el("th", null, [role]), el("td", { "class": "num" }, [v[0]]),
        el("td", { "class": "num" }, [v[1]]), el("td", { "class": "num" }, [v[2]]),
        el("td", { "class": "num" }, [v[3] + " ms"]), el("td", { "class": "num" }, ["$" + v[4].toFixed(4)])]));
    });
    if (!trs.length) return null;
    var head = el("tr", null, ["Calls", "n", "tokens in", "tokens out", "latency", "cost"].map(function (h) { return el("th", null, [h]); }));
    return el("table", { "class": "data calls" }, [head].concat(trs));
  }

  // The audit's marks: an off-case customer line, and a failure after one.
  function offCase(kids, t) {
    if (t.v) kids.push(el("p", { "class": "tag off-case", "data-off-case": "1" }, ["Off-case customer line: " + t.v]));
    if (t.y) kids.push(el("p", { "class": "tag off-case", "data-simulator-failure": "1" }, ["Failed after an off-case customer line: possibly the simulator's doing"]));
  }

  function turnView(d, t) {
    var kids = [];
    var head = "Turn " + t.n + (t.k === 1 ? " · format error" : "") + (t.k === 2 || t.i ? " · infrastructure error" : "");
    kids.push(el("h4", null, [head, t.z ? el("span", { "class": "tag not-judged" }, ["not judged"]) : null]));
    kids.push(el("div", { "class": "msg customer" }, [el("b", null, ["Customer: "]), t.u]));
    offCase(kids, t);
    kids.push(el("div", { "class": "msg agent" }, [el("b", null, ["Agent: "]), t.c || ""]));
    if (t.h) kids.push(el("div", { "class": "msg cot" }, [el("b", null, ["Agent's reasoning (cot): "]), t.h]));
    if (t.w !== undefined) {
      kids.push(el("details", { "class": "raw" }, [el("summary", null, ["Raw model output (" + t.w.length + " characters)"]), el("pre", null, [t.w])]));
    }
    if (t.e) kids.push(el("p", { "class": "err" }, [t.e]));
    if (t.i) kids.push(el("p", { "class": "err" }, ["Infrastructure error: " + t.i]));
    var judges = t.j || [];
    var judged = !t.z;
    // The reference classification: the judges' consensus (the customer's truth when equal).
    var consensus = !judged ? null : t.q ? (t.q.length ? t.q : null) : (judges.length ? d.g : null);
    var head2 = [["", null], ["Agent", "what the agent answered"]];
    var judgeName = function (i) { return "judge " + (i + 1) + (d.jm && d.jm[i] ? " (" + d.jm[i] + ")" : ""); };
    if (judged) {
      head2.push(["Reference", "the judges' consensus, and the route the rule engine derives from it"]);
      head2.push(["Judges", "each judge's value where it differs from the consensus (" + judges.map(function (_, i) { return judgeName(i); }).join(", ") + ")"]);
      head2.push(["Truth", "the customer's true values (the job's)"]);
    }
    var trs = [el("tr", null, head2.map(function (h) { return el("th", { title: h[1] }, [h[0]]); }))];
    d.f.forEach(function (name, i) {
      var agent = t.a ? t.a[i] : null, ref = consensus ? consensus[i] : null;
      var cells = [el("th", null, [name]), el("td", { "class": consensus && t.a && agent !== ref ? "diff" : null }, [show(agent)])];
      if (judged) {
        cells.push(el("td", null, [show(ref)]));
        // The judges in one cell: "all agree", or each one that gave another value (or none).
        var votes = el("td", { "class": "votes" }, []);
        judges.forEach(function (j, n) {
          var c = j.e ? null : (j.c || consensus);
          var v = c ? c[i] : null;
          if (!j.e && consensus && v === ref) return;
          if (votes.childNodes.length) votes.appendChild(document.createTextNode(", "));
          votes.appendChild(el("span", { "class": j.e || !consensus ? null : "diff", "data-judge": String(n), title: judgeName(n) }, ["J" + (n + 1) + " " + (j.e ? "error" : show(v))]));
        });
        if (!votes.childNodes.length) votes.appendChild(el("span", { "class": "muted" }, [judges.length ? "all " + judges.length + " agree" : "—"]));
        cells.push(votes);
        cells.push(el("td", { "class": consensus && d.g[i] !== ref ? "diff" : null }, [show(d.g[i])]));
      }
      trs.push(el("tr", { "data-field": name }, cells));
    });
    var r = t.r || {}, rp = r.p || [], hasRef = !!t.r && !r.e;
    var pathCell = el("td", null, []);
    (t.p || []).forEach(function (s, i) {
      if (i) { pathCell.appendChild(document.createTextNode(">")); pathCell.appendChild(el("wbr")); }
      pathCell.appendChild(el("span", { "class": hasRef && rp.indexOf(s) < 0 ? "diff" : null }, [s]));
    });
    if (hasRef && t.p && t.p.join(">") !== rp.join(">") && !pathCell.querySelector(".diff")) pathCell.className = "diff";
    var pad = 3;
    var refCell = function (text) { return judged ? el("td", { colspan: pad }, [text]) : null; };
    trs.push(el("tr", { "data-field": "path" }, [el("th", null, ["Path"]), pathCell, refCell(r.e ? "no reference: " + r.e : rp.join(">"))]));
    trs.push(el("tr", { "data-field": "action" }, [el("th", null, ["Action"]),
      el("td", { "class": hasRef && t.x && t.x !== r.x ? "diff" : null }, [t.x || "—"]), refCell(r.x || "—")]));
    if ((t.o && t.o.length) || (r.o && r.o.length)) {
      trs.push(el("tr", { "data-field": "outputs" }, [el("th", null, ["Outputs"]),
        el("td", { "class": hasRef && (t.o || []).join(",") !== (r.o || []).join(",") ? "diff" : null }, [(t.o || []).join(", ") || "—"]),
        refCell((r.o || []).join(", ") || "—")]));
    }
    kids.push(el("table", { "class": "data compare" }, trs));
    if (judged && judges.length) kids.push(chatTable(d, judges));
    if (!judged) {
      kids.push(el("p", { "class": "not-judged" }, ["Not judged: the run's judge_turns did not ask the judges about this turn, so it has no reference and no scores."]));
    } else if (t.s) {
      var s = t.s;
      var names = [["Acc_cls", s[0]], ["Sim_path", s[1]], ["Acc_action", s[2]], ["Logic", s[3]], ["Chat", s[4]], ["Overall", s[5]]];
      kids.push(el("p", { "class": "scores", title: "every score on the 0-100 scale" }, ["Scores (0-100): "].concat(names.map(function (p) {
        return el("span", { "class": "tag", "data-score": p[0].toLowerCase(), "data-value": String(p[1]) }, [p[0] + " " + fmt(p[1])]);
      }))));
    }
    var calls = callsTable(t);
    if (calls) kids.push(calls);
    return el("div", { "class": "turn" + (t.z ? " not-judged" : ""), "data-turn": String(t.n) }, kids);
  }

  // The key of a turn's reference route, as the report writes it (`PATH -> ACTION [OUTPUTS]`).
  function refKey(r) {
    if (!r || r.e) return null;
    return (r.p || []).join(">") + " -> " + r.x + (r.o && r.o.length ? " [" + r.o.join(", ") + "]" : "");
  }

  function render(view, d, r, st, ctx) {
    var reached = reachedOf(st);
    var routeName = reached === null ? null : ctx.tables.reached[reached];
    var scenario = ctx.tables.scenarios[r[5]];
    var broke = null, target = null;
    d.t.forEach(function (t, k) {
      var v = turnView(d, t);
      var onRoute = routeName !== null && routeName !== undefined && refKey(t.r) !== null && scenario + ": " + refKey(t.r) === routeName;
      if (onRoute) v.classList.add("on-route");
      if (left(r, k)) {
        v.classList.add("differs");
        if (!broke) broke = v;
        if (onRoute && !target) target = v;
      }
      view.appendChild(v);
    });
    var first = view.querySelector(".turn");
    if (broke) {
      broke.classList.add("broke");
      broke.querySelector("h4").appendChild(el("span", { "class": "tag bad" }, ["where it broke: the first turn off the reference"]));
      view.setAttribute("data-broke", broke.getAttribute("data-turn"));
      var note = el("p", { "class": "broke-note" }, ["The agent first left the reference at ",
        el("a", { href: "#", "data-goto-turn": broke.getAttribute("data-turn") }, ["turn " + broke.getAttribute("data-turn")]),
        target && target !== broke ? "; on the filtered route at turn " + target.getAttribute("data-turn") : "", "."]);
      view.insertBefore(note, first);
      note.querySelector("a").addEventListener("click", function (ev) { ev.preventDefault(); broke.scrollIntoView(); });
    } else {
      view.insertBefore(el("p", { "class": "broke-note good" }, ["The agent followed the reference path and action in every judged turn."]), first);
    }
    (target || broke || view).scrollIntoView();
  }

  // One turn in the case view: what was said and chosen, against the reference, its Overall.
  function caseCell(t, off) {
    var r = t.r || {}, hasRef = !!t.r && !r.e;
    var kids = [
      el("div", { "class": "msg customer" }, [el("b", null, ["Customer: "]), t.u])
    ];
    offCase(kids, t);
    kids.push(el("div", { "class": "msg agent" }, [el("b", null, ["Agent: "]), t.c || ""]));
    if (t.e) kids.push(el("p", { "class": "err" }, [t.e]));
    var facts = el("p", { "class": "facts" }, ["Path ", el("span", { "class": hasRef && (t.p || []).join(">") !== (r.p || []).join(">") ? "diff" : null }, [(t.p || []).join(">") || "—"]),
      " · action ", el("span", { "class": hasRef && t.x !== r.x ? "diff" : null }, [t.x || "—"])]);
    if (hasRef) facts.appendChild(document.createTextNode(" (reference: " + (r.p || []).join(">") + " -> " + r.x + ")"));
    kids.push(facts);
    if (t.z) kids.push(el("span", { "class": "tag not-judged" }, ["not judged"]));
    else if (t.s) kids.push(el("span", { "class": "tag", "data-score": "overall", "data-value": String(t.s[5]) }, ["Overall " + fmt(t.s[5])]));
    return el("div", { "class": "turn" + (off ? " differs" : "") + (t.z ? " not-judged" : ""), "data-turn": String(t.n) }, kids);
  }

  // The case's dialogues shown side by side by default: the best and the worst by Overall, and
  // the one the case was opened from.
  function caseDefault(rs, from) {
    var scored = rs.filter(function (r) { return r[10] !== null; });
    var pick = [];
    function add(r) { if (r && pick.indexOf(r[0]) < 0) pick.push(r[0]); }
    var best = null, worst = null;
    scored.forEach(function (r) {
      if (!best || r[10] > best[10]) best = r;
      if (!worst || r[10] < worst[10]) worst = r;
    });
    add(best);
    add(worst);
    rs.forEach(function (r) { if (r[0] === from) add(r); });
    if (!pick.length && rs.length) add(rs[0]);
    return pick;
  }

  // One row per model (the leaderboard's order): its Overall, how it ended, and each turn's
  // verdict against the reference; a row's box adds or removes its transcript beside the others.
  function caseMatrix(rs, chosen, ctx, toggle) {
    var t = ctx.tables, n = 0;
    rs.forEach(function (r) { n = Math.max(n, (r[14] || "").length); });
    var head = [el("th", null, ["Model (leaderboard order)"]), el("th", { "class": "num" }, ["Overall"]), el("th", null, ["End"])];
    for (var i = 1; i <= n; i++) head.push(el("th", { "class": "num turn-n", title: "turn " + i }, [String(i)]));
    var trs = [el("tr", null, head)];
    rs.forEach(function (r) {
      var box = el("input", { type: "checkbox", "aria-label": "show " + t.models[r[4]] + " side by side" });
      box.checked = chosen.indexOf(r[0]) >= 0;
      box.addEventListener("change", function () { toggle(r[0]); });
      var cells = [
        el("td", { "class": "model" }, [el("label", { title: t.models[r[4]] }, [box, " ", t.models[r[4]]]),
          " ", el("a", { href: ctx.anchor(r[0]), title: "its transcript" }, ["open"])]),
        el("td", { "class": "num" }, [fmt(r[10])]),
        el("td", null, [t.ends[r[9]]])
      ];
      var v = r[14] || "";
      for (var k = 0; k < n; k++) {
        var w = VERDICTS[v[k]];
        cells.push(w ? el("td", { "class": "verdict v-" + w[1], "data-verdict": v[k], title: "turn " + (k + 1) + ": " + w[2] }, [w[0]])
          : el("td", { "class": "verdict" }, []));
      }
      trs.push(el("tr", { "data-model": t.models[r[4]], "data-dialogue": r[0] }, cells));
    });
    var key = el("p", { "class": "note case-key" }, ["Each turn against the reference: "]);
    ["o", "x", "f", "-", "i", "n"].forEach(function (k, i) {
      if (i) key.appendChild(document.createTextNode("; "));
      key.appendChild(el("span", { "class": "verdict v-" + VERDICTS[k][1] }, [VERDICTS[k][0]]));
      key.appendChild(document.createTextNode(" " + VERDICTS[k][2]));
    });
    key.appendChild(document.createTextNode(". Tick a model to read its transcript side by side below (shown: the best, the worst and the one you came from)."));
    return el("div", { "class": "case-overview" }, [key, el("div", { "class": "table-box" }, [el("table", { "class": "data case-verdicts" }, trs)])]);
  }

  // The chosen dialogues of one case side by side: a column per dialogue, a row per turn.
  function renderCase(view, ds, rs, ctx) {
    var n = 0;
    ds.forEach(function (d) { d.t.forEach(function (t) { n = Math.max(n, t.n); }); });
    var head = el("tr", null, [el("th", { "class": "turn-n" }, ["Turn"])].concat(ds.map(function (d, k) {
      var r = rs[k];
      return el("th", { "data-model": d.m }, [el("a", { href: ctx.anchor(r[0]) }, [d.m]), " · Overall " + fmt(r[10]) + " · " + ctx.tables.ends[r[9]]]);
    })));
    var trs = [head];
    for (var i = 1; i <= n; i++) {
      var cells = [el("th", { "class": "turn-n" }, [String(i)])];
      ds.forEach(function (d, c) {
        var v = null;
        d.t.forEach(function (x, k) { if (x.n === i) v = caseCell(x, left(rs[c], k)); });
        cells.push(el("td", null, [v || el("span", { "class": "muted" }, ["—"])]));
      });
      trs.push(el("tr", { "data-turn": String(i) }, cells));
    }
    var table = el("table", { "class": "data case-turns", "data-columns": String(ds.length) }, trs);
    // Every transcript at least 260 px wide: more of them scroll sideways in their box.
    table.style.minWidth = (60 + 260 * ds.length) + "px";
    view.appendChild(el("div", { "class": "case-scroll" }, [table]));
  }

  window.Explorer.mount({
    root: "explorer", data: "explorer-data", count: "explorer-count", view: "dialogue-view", noun: "dialogue",
    match: match,
    sorts: {
      worst: function (r, st) {
        // Worst first: by the Logic on the reached route filtered to, else by the Overall.
        var reached = reachedOf(st);
        return reached !== null ? routeLogic(r, reached) : r[10];
      }
    },
    cells: cells, header: header, render: render, renderCase: renderCase,
    caseOrder: function (r) { return r[4]; }, caseDefault: caseDefault, caseMatrix: caseMatrix
  });
})();
