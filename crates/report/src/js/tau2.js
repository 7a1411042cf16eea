// The tau2 retail simulation explorer (docs/report.md): its filters, columns and transcript
// view, mounted on the shared engine (explorer.js). A row: [id, chunk, position, case id,
// agent, task, trial, [outcomes], tool calls, turns] (names as indexes into the tables).
// Record text is only ever written with text nodes (Explorer.el) or setAttribute.
(function () {
  "use strict";
  if (!window.Explorer) return;
  var el = window.Explorer.el;
  var BAD = { "db_miss": 1, "nl_miss": 1, "max_steps": 1, "fail": 1, "infra_error": 1 };

  function outcomeNames(r, t) { return r[7].map(function (o) { return t.outcomes[o]; }); }

  function match(r, st, ctx) {
    var t = ctx.tables;
    if (st.agent !== undefined && t.agents[r[4]] !== st.agent) return false;
    if (st.task !== undefined && t.tasks[r[5]] !== st.task) return false;
    if (st.outcome !== undefined && outcomeNames(r, t).indexOf(st.outcome) < 0) return false;
    return true;
  }

  function tag(name) {
    return el("span", { "class": "tag " + (BAD[name] ? "bad" : name === "pass" ? "good" : "") }, [name]);
  }

  function tags(r, t) {
    var o = el("td", { "class": "outcome" }, []);
    outcomeNames(r, t).forEach(function (name) {
      o.appendChild(tag(name));
      o.appendChild(document.createTextNode(" "));
    });
    return o;
  }

  function cells(r, st, ctx) {
    var t = ctx.tables;
    return [
      ctx.idCell(r),
      tags(r, t),
      el("td", { "class": "cut", title: t.agents[r[4]] }, [t.agents[r[4]]]),
      el("td", null, [t.tasks[r[5]]]),
      el("td", { "class": "num" }, [r[6] + 1]),
      el("td", { "class": "num" }, [r[8]]),
      el("td", { "class": "num" }, [r[9]])
    ];
  }

  function header(view, r, ctx) {
    view.appendChild(el("h3", null, [r[0]]));
    view.appendChild(el("p", null, [el("a", { href: ctx.anchor(r[0]) }, ["link"]), " · ",
      el("a", { href: ctx.caseAnchor(r[3], r[0]), "class": "case-link" }, ["this task and trial, every agent"])]));
  }

  // Arguments as one line of JSON (a string argument: what the model wrote, as is).
  function args(a) {
    if (typeof a === "string") return a;
    try { return JSON.stringify(a); } catch (e) { return String(a); }
  }
  function pretty(s) { try { return JSON.stringify(JSON.parse(s), null, 1); } catch (e) { return s; } }

  function messageView(m) {
    var role = m.role === "assistant" || m.role === "user" ? m.role : "tool";
    var who = m.role === "assistant" ? "agent" : m.role === "user" ? "user" : "tool" + (m.tool ? " " + m.tool : "");
    var d = el("div", { "class": "msg " + role + (m.error ? " error" : ""), "data-turn": String(m.turn) }, [
      el("span", { "class": "who" }, ["turn " + m.turn + " · " + who + (m.error ? " · error" : "")])]);
    if (role === "tool") {
      var text = m.text === undefined || m.text === null ? "" : String(m.text);
      if (m.tool) d.setAttribute("data-tool", m.tool);
      if (text.length > 240) {
        d.appendChild(el("details", { "class": "result" }, [
          el("summary", null, ["→ " + text.slice(0, 200) + "…"]), el("pre", null, [pretty(text)])]));
      } else d.appendChild(el("pre", { "class": "result" }, ["→ " + text]));
    } else if (m.text !== undefined && m.text !== null && m.text !== "") {
      d.appendChild(el("div", { "class": "text" }, [String(m.text)]));
    }
    (m.calls || []).forEach(function (c) {
      d.appendChild(el("div", { "class": "call", "data-tool": c.name }, [
        "calls ", el("code", { "class": "tool" }, [c.name]), el("pre", { "class": "args" }, [args(c.arguments)])]));
    });
    return d;
  }

  function facts(c) {
    var out = [el("p", { "class": "muted" }, [c.agent + " · task " + c.task + " · trial " + (c.trial + 1) +
      " · " + c.turns + " agent turns · ended: " + c.termination + " · cost $" + Number(c.cost_usd).toFixed(4)])];
    var p = el("p", null, []);
    c.outcome.forEach(function (o) { p.appendChild(tag(o)); p.appendChild(document.createTextNode(" ")); });
    if (c.reward !== null && c.reward !== undefined) {
      p.appendChild(document.createTextNode("reward " + c.reward + " · database check: " +
        (c.db_match === true ? "pass" : c.db_match === false ? "FAIL" : "not run")));
    }
    out.push(p);
    if (c.infra_error) out.push(el("p", { "class": "bad" }, ["infrastructure error: " + c.infra_error]));
    if (c.breakdown) {
      out.push(el("p", { "class": "muted" }, ["reward parts: " + Object.keys(c.breakdown).map(function (k) { return k + " " + c.breakdown[k]; }).join(", ")]));
    }
    if (c.nl_assertions && c.nl_assertions.length) {
      var met = c.nl_assertions.filter(function (a) { return a.met; }).length;
      out.push(el("h4", null, ["NL assertions: " + met + " of " + c.nl_assertions.length + " met"]));
      out.push(el("ul", { "class": "assertions" }, c.nl_assertions.map(function (a) {
        return el("li", { "class": a.met ? "met" : "unmet" }, [(a.met ? "met: " : "NOT met: ") + a.assertion,
          a.justification ? el("span", { "class": "why" }, [a.justification]) : null]);
      })));
    }
    return out;
  }

  function render(view, c) {
    facts(c).forEach(function (p) { view.appendChild(p); });
    c.messages.forEach(function (m) { view.appendChild(messageView(m)); });
    view.scrollIntoView({ block: "start" });
  }

  // Every agent's simulation of one task and trial: a column per simulation, a row per turn.
  function renderCase(view, cs, rs, ctx) {
    var n = 0;
    cs.forEach(function (c) { c.messages.forEach(function (m) { n = Math.max(n, m.turn); }); });
    var head = el("tr", null, [el("th", null, ["Turn"])].concat(cs.map(function (c, k) {
      return el("th", { "data-agent": c.agent }, [el("a", { href: ctx.anchor(rs[k][0]) }, [c.agent]), " · " + c.outcome.join(", ")]);
    })));
    var trs = [head];
    for (var turn = 0; turn <= n; turn++) {
      var row = [el("th", null, [String(turn)])], any = false;
      cs.forEach(function (c) {
        var td = el("td", null, []);
        c.messages.forEach(function (m) { if (m.turn === turn) { td.appendChild(messageView(m)); any = true; } });
        row.push(td);
      });
      if (any) trs.push(el("tr", { "data-turn": String(turn) }, row));
    }
    view.appendChild(el("table", { "class": "data case-turns" }, trs));
  }

  window.Explorer.mount({
    root: "tau2-explorer", data: "tau2-data", count: "tau2-explorer-count", view: "simulation-view", noun: "simulation",
    match: match, cells: cells, header: header, render: function (view, c) { render(view, c); }, renderCase: renderCase
  });
})();
