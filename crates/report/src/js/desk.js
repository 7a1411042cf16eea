// The support-desk conversation explorer (docs/report.md): its filters, columns and
// conversation view, mounted on the shared engine (explorer.js). A row: [id, chunk, position,
// case id, model, case, bucket, repeat, turns, tool calls, [outcomes]] (names as indexes into
// the tables). Record text is only ever written with text nodes.
(function () {
  "use strict";
  if (!window.Explorer) return;
  var el = window.Explorer.el;
  var BAD = { "unsafe": 1, "false_closure": 1, "infra_error": 1 };

  function match(r, st, ctx) {
    var t = ctx.tables;
    if (st.model !== undefined && t.models[r[4]] !== st.model) return false;
    if (st["case"] !== undefined && t.cases[r[5]] !== st["case"]) return false;
    if (st.bucket !== undefined && t.buckets[r[6]] !== st.bucket) return false;
    if (st.outcome !== undefined && r[10].map(function (o) { return t.outcomes[o]; }).indexOf(st.outcome) < 0) return false;
    return true;
  }

  function tags(r, t) {
    var o = el("td", { "class": "outcome" }, []);
    r[10].forEach(function (i) {
      var name = t.outcomes[i];
      o.appendChild(el("span", { "class": "tag " + (BAD[name] ? "bad" : name === "resolved" ? "good" : "") }, [name.replace("_", " ")]));
      o.appendChild(document.createTextNode(" "));
    });
    return o;
  }

  function cells(r, st, ctx) {
    var t = ctx.tables;
    return [
      ctx.idCell(r),
      tags(r, t),
      el("td", { "class": "cut", title: t.models[r[4]] }, [t.models[r[4]]]),
      el("td", { "class": "cut", title: t.cases[r[5]] }, [t.cases[r[5]]]),
      el("td", null, [t.buckets[r[6]]]),
      el("td", { "class": "num" }, [r[7] + 1]),
      el("td", { "class": "num" }, [r[8]]),
      el("td", { "class": "num" }, [r[9]])
    ];
  }

  function header(view, r, ctx) {
    view.appendChild(el("h3", null, [r[0]]));
    view.appendChild(el("p", null, [el("a", { href: ctx.anchor(r[0]) }, ["link"]), " · ",
      el("a", { href: ctx.caseAnchor(r[3]), "class": "case-link" }, ["this case, every model"])]));
  }

  function compact(s) { try { return JSON.stringify(JSON.parse(s)); } catch (e) { return s; } }
  function pretty(s) { try { return JSON.stringify(JSON.parse(s), null, 1); } catch (e) { return s; } }

  function lineView(c, l, i) {
    var d = el("div", { "class": "line " + l.speaker + (i === c.marked ? " marked" : ""), "data-turn": String(l.turn) }, [
      el("span", { "class": "who" }, ["turn " + l.turn + " · " + l.speaker])]);
    if (l.tool !== undefined && l.tool !== null) {
      d.classList.add("tool-call");
      d.setAttribute("data-tool", l.tool);
      d.appendChild(el("code", { "class": "tool" }, [l.tool]));
      d.appendChild(el("pre", { "class": "args" }, [compact(l.args)]));
      var r = compact(l.result);
      if (r.length > 200) d.appendChild(el("details", { "class": "result" }, [el("summary", null, ["→ " + r.slice(0, 160) + "…"]), el("pre", null, [pretty(l.result)])]));
      else d.appendChild(el("pre", { "class": "result" }, ["→ " + r]));
    } else d.appendChild(el("div", { "class": "text" }, [l.text]));
    return d;
  }

  function facts(c) {
    var out = [el("p", { "class": "muted" }, [c.model + " · case " + c["case"] + " (" + c.bucket + ", order " + c.order + ") · run " + (c.repeat + 1) + " · owed: " + c.required + (c.forbidden ? " · trap: " + c.forbidden : "") + " · " + c.outcome.join(", ")])];
    var j = function (x) { return x ? "resolution " + x.resolution_quality.toFixed(2) + ", policy " + x.policy_adherence.toFixed(2) : "-"; };
    if (c.judged || c.rejudged) out.push(el("p", { "class": "muted" }, ["judge: " + j(c.judged) + " · second judge: " + j(c.rejudged)]));
    if (c.infra_error) out.push(el("p", { "class": "bad" }, ["infrastructure error: " + c.infra_error]));
    return out;
  }

  function render(view, c) {
    facts(c).forEach(function (p) { view.appendChild(p); });
    c.lines.forEach(function (l, i) { view.appendChild(lineView(c, l, i)); });
    var marked = view.querySelector(".line.marked");
    (marked || view).scrollIntoView({ block: "start" });
  }

  // Every model's conversation of one case: a column per conversation, a row per turn.
  function renderCase(view, cs, rs, ctx) {
    var n = 0;
    cs.forEach(function (c) { c.lines.forEach(function (l) { n = Math.max(n, l.turn); }); });
    var head = el("tr", null, [el("th", null, ["Turn"])].concat(cs.map(function (c, k) {
      return el("th", { "data-model": c.model }, [el("a", { href: ctx.anchor(rs[k][0]) }, [c.model]), " · " + c.outcome.join(", ")]);
    })));
    var trs = [head];
    for (var turn = 0; turn <= n; turn++) {
      var cells = [el("th", null, [String(turn)])], any = false;
      cs.forEach(function (c) {
        var td = el("td", null, []);
        c.lines.forEach(function (l, i) { if (l.turn === turn) { td.appendChild(lineView(c, l, i)); any = true; } });
        cells.push(td);
      });
      if (any) trs.push(el("tr", { "data-turn": String(turn) }, cells));
    }
    view.appendChild(el("table", { "class": "data case-turns" }, trs));
  }

  window.Explorer.mount({
    root: "desk-explorer", data: "desk-data", count: "desk-explorer-count", view: "conversation-view", noun: "conversation",
    match: match, cells: cells, header: header, render: function (view, c) { render(view, c); }, renderCase: renderCase
  });
})();
