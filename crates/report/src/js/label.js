// The labelling page (labels.html, docs/report.md "Human labels"): the labels a person sets are
// kept in localStorage under the run's id (so the page can be closed and opened again), a
// counter shows the turns labelled, and "Download labels.jsonl" writes one JSON object per
// labelled turn: {"run_id", "dialogue_id", "turn", "labeller", "classification", "chat"}, each
// classification value typed as the scenario's field is (a boolean, an integer or the option's
// text), each chat score 3, 6 or 9; only what the person set.
(function () {
  "use strict";
  var bar = document.getElementById("label-bar");
  if (!bar) return;
  var run = bar.getAttribute("data-run");
  var KEY = "sage-labels:" + run;
  var items = Array.prototype.slice.call(document.querySelectorAll("article.label-item"));
  var nameInput = document.getElementById("labeller");
  var countEl = document.getElementById("label-count");
  var statusEl = document.getElementById("label-status");
  var fileLink = document.getElementById("label-file");
  var state = { labeller: "", items: {} };
  var stored = true;

  function say(text, bad) {
    statusEl.textContent = text;
    statusEl.className = bad ? "bad" : "";
  }
  function keyOf(item) { return item.getAttribute("data-dialogue") + "#" + item.getAttribute("data-turn"); }
  function isEmpty(o) { for (var k in o) if (Object.prototype.hasOwnProperty.call(o, k)) return false; return true; }

  function load() {
    try {
      var text = window.localStorage.getItem(KEY);
      if (!text) return;
      var saved = JSON.parse(text);
      if (saved && typeof saved === "object") {
        state.labeller = typeof saved.labeller === "string" ? saved.labeller : "";
        state.items = saved.items && typeof saved.items === "object" ? saved.items : {};
      }
    } catch (e) {
      stored = false;
    }
  }
  function save() {
    try {
      window.localStorage.setItem(KEY, JSON.stringify(state));
      stored = true;
    } catch (e) {
      if (stored) say("This browser does not keep the labels of this page: download them before you close it.", true);
      stored = false;
    }
  }

  // A control's value as its JSON type, or undefined when it is not set (or not valid).
  function valueOf(control) {
    var v = control.value;
    if (v === "") return undefined;
    switch (control.getAttribute("data-type")) {
      case "bool": return v === "true";
      case "int":
        var n = Number(v);
        if (!Number.isInteger(n) || (control.checkValidity && !control.checkValidity())) return undefined;
        return n;
      default: return v;
    }
  }

  // What the controls of `item` hold.
  function read(item) {
    var entry = { classification: {}, chat: {} };
    item.querySelectorAll("[data-field]").forEach(function (c) {
      var v = valueOf(c);
      if (v !== undefined) entry.classification[c.getAttribute("data-field")] = v;
    });
    item.querySelectorAll("input[type=radio][data-dim]").forEach(function (r) {
      if (r.checked) entry.chat[r.getAttribute("data-dim")] = Number(r.value);
    });
    return entry;
  }

  // Sets the controls of `item` to `entry` (a saved one).
  function apply(item, entry) {
    var cls = (entry && entry.classification) || {}, chat = (entry && entry.chat) || {};
    item.querySelectorAll("[data-field]").forEach(function (c) {
      var name = c.getAttribute("data-field");
      c.value = Object.prototype.hasOwnProperty.call(cls, name) ? String(cls[name]) : "";
    });
    item.querySelectorAll("input[type=radio][data-dim]").forEach(function (r) {
      r.checked = Number(r.value) === chat[r.getAttribute("data-dim")];
    });
  }

  function labelled(entry) { return entry && !(isEmpty(entry.classification) && isEmpty(entry.chat)); }

  function show(item) {
    var done = labelled(state.items[keyOf(item)]);
    if (done) item.setAttribute("data-labelled", ""); else item.removeAttribute("data-labelled");
    var tag = item.querySelector(".label-state");
    if (tag) tag.textContent = done ? "labelled" : "not labelled";
  }

  function count() {
    var n = items.filter(function (i) { return i.hasAttribute("data-labelled"); }).length;
    countEl.setAttribute("data-labelled", String(n));
    countEl.textContent = "";
    countEl.appendChild(document.createTextNode(n + " of " + items.length + " "));
    var wide = document.createElement("span");
    wide.className = "wide";
    wide.textContent = "turns ";
    countEl.appendChild(wide);
    countEl.appendChild(document.createTextNode("labelled"));
    countEl.className = n === items.length && n > 0 ? "done" : "";
  }

  function changed(item) {
    var entry = read(item), key = keyOf(item);
    if (labelled(entry)) state.items[key] = entry; else delete state.items[key];
    save();
    show(item);
    count();
  }

  // The lines of labels.jsonl, in the page's order.
  function lines() {
    var labeller = state.labeller.trim();
    var out = [];
    items.forEach(function (item) {
      var entry = state.items[keyOf(item)];
      if (!labelled(entry)) return;
      out.push(JSON.stringify({
        run_id: run,
        dialogue_id: item.getAttribute("data-dialogue"),
        turn: Number(item.getAttribute("data-turn")),
        labeller: labeller,
        classification: entry.classification || {},
        chat: entry.chat || {}
      }));
    });
    return out;
  }

  var url = null;
  function download() {
    if (!state.labeller.trim()) {
      say("Enter your name as labeller first.", true);
      nameInput.focus();
      return;
    }
    var out = lines();
    if (!out.length) {
      say("Nothing is labelled yet.", true);
      return;
    }
    if (url) URL.revokeObjectURL(url);
    url = URL.createObjectURL(new Blob([out.join("\n") + "\n"], { type: "application/x-ndjson" }));
    fileLink.href = url;
    fileLink.textContent = "labels.jsonl (" + out.length + (out.length === 1 ? " turn)" : " turns)");
    fileLink.hidden = false;
    fileLink.click();
    say("Saved " + out.length + (out.length === 1 ? " turn" : " turns") + " (again: click the file's link).");
  }

  // The first unlabelled turn after the one at the top of the window (from the top again).
  function next() {
    var top = bar.getBoundingClientRect().bottom + 4, at = 0;
    for (var i = 0; i < items.length; i++) {
      if (items[i].getBoundingClientRect().bottom > top) { at = i; break; }
    }
    for (var k = 1; k <= items.length; k++) {
      var item = items[(at + k) % items.length];
      if (!item.hasAttribute("data-labelled")) { item.scrollIntoView(); return; }
    }
    say("Every turn is labelled.");
  }

  function place() {
    var toc = document.getElementById("toc");
    if (toc) document.documentElement.style.setProperty("--bar-top", toc.offsetHeight + "px");
  }

  load();
  nameInput.value = state.labeller;
  items.forEach(function (item) {
    apply(item, state.items[keyOf(item)]);
    show(item);
    item.addEventListener("change", function () { changed(item); });
    item.addEventListener("input", function (e) { if (e.target.getAttribute("data-type") === "int") changed(item); });
    item.querySelector(".label-clear").addEventListener("click", function () {
      apply(item, null);
      changed(item);
    });
    var history = item.querySelector(".history");
    if (history) history.scrollTop = history.scrollHeight;
  });
  nameInput.addEventListener("input", function () {
    state.labeller = nameInput.value;
    save();
    if (statusEl.className === "bad") say("");
  });
  document.getElementById("label-download").addEventListener("click", download);
  document.getElementById("label-next").addEventListener("click", next);
  count();
  place();
  window.addEventListener("resize", place);
  bar.setAttribute("data-ready", "");
})();
