#!/usr/bin/env python3
"""Checks the Grafana dashboards and the alerting rules against docs/metrics.md.

    python3 grafana/check.py [--no-promtool] [--doc PATH] [--rules FILE] [DASHBOARD.json ...]

The list of metrics is the table of docs/metrics.md whose header starts `| metric | type |
labels |`: first column the name in backticks, second counter|gauge|histogram, third the labels
in backticks (or a dash). The doc is the single source; this script has no list of its own.

For every dashboard (default: grafana/dashboards/*.json) it checks:
  * the JSON loads, schemaVersion is 39, the uid is unique across the dashboards, and there is
    a `datasource` template variable of type datasource for prometheus;
  * every panel id is a unique integer (nested row panels included) and panels do not overlap;
  * every panel except rows has a datasource, and its targets have a refId (unique in the panel),
    a non-empty expr and no other datasource than the panel's;
  * every `sage_...` name in an expr or a variable query is a metric of the doc: a counter or
    gauge by its name, a histogram only as <name>_bucket, <name>_sum or <name>_count;
  * every label in a selector of a sage_ metric is one of that metric's labels (plus `le` on
    _bucket), and every label in by/without/on/ignoring/group_left/group_right and in
    label_values(..., label) is a label of a metric of that expression, `le` when a _bucket is
    queried, or a Prometheus target label (instance, job, namespace, pod);
  * with the default dashboards (no file named), every metric of the doc is queried by at least
    one of them (a note only when files are named);
  * every `expr` of the alerting rules (default deploy/alerts.yml; --rules FILE) passes the same
    metric and label checks as a panel query, and each alert has an expression;
  * when `promtool` is on the PATH (and --no-promtool is not given): every expression parses,
    by writing them as recording rules to a temporary file and running `promtool check rules`;
  * with --prometheus URL (a Prometheus that scraped a run, as tests/monitoring.rs does): every
    panel query, as an instant query with $__range and $__rate_interval set to --window seconds
    and the other variables as the dashboard opens (All: .*), returns at least one series, and
    every label_values variable at least one value. Queries that read only 0 or only NaN are
    listed, not failed.
Exit status 0 when all pass, 1 otherwise (each problem on a line naming the file and the panel).
"""

import argparse
import glob
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import urllib.error
import urllib.parse
import urllib.request

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TYPES = ("counter", "gauge", "histogram")
HIST_SUFFIXES = ("_bucket", "_sum", "_count")
TARGET_LABELS = {"instance", "job", "namespace", "pod"}
NAME_RE = re.compile(r"(?<![A-Za-z0-9_:])sage_[A-Za-z0-9_:]*")
SELECTOR_RE = re.compile(r"(?<![A-Za-z0-9_:])(sage_[A-Za-z0-9_:]*)?\s*\{([^{}]*)\}")
MATCHER_RE = re.compile(r"([A-Za-z_][A-Za-z0-9_]*)\s*(?:=~|!~|!=|=)\s*(?:\"(?:[^\"\\]|\\.)*\"|'(?:[^'\\]|\\.)*'|`[^`]*`)")
GROUPING_RE = re.compile(r"\b(?:by|without|on|ignoring|group_left|group_right)\s*\(([^()]*)\)")
LABEL_VALUES_RE = re.compile(r"^\s*label_values\s*\((.*),\s*([A-Za-z_][A-Za-z0-9_]*)\s*\)\s*$", re.S)
LABEL_VALUES_1_RE = re.compile(r"^\s*label_values\s*\(\s*([A-Za-z_][A-Za-z0-9_]*)\s*\)\s*$")
QUERY_FN_RE = re.compile(r"^\s*(?:query_result|metrics|label_names)\s*\((.*)\)\s*$", re.S)
VARIABLE_RE = re.compile(r"\$\{([A-Za-z0-9_]+)(?::[^}]*)?\}|\$([A-Za-z0-9_]+)|\[\[([A-Za-z0-9_]+)\]\]")
# Grafana's interval variables, replaced by a duration for promtool.
DURATION_VARS = {"__rate_interval": "5m", "__interval": "1m", "__range": "1h", "__range_s": "3600",
                 "__range_ms": "3600000", "__interval_ms": "60000"}


def split_row(line):
    """Cells of a Markdown table row (splits on unescaped pipes)."""
    cells = re.split(r"(?<!\\)\|", line.strip())
    if cells and cells[0] == "":
        cells = cells[1:]
    if cells and cells[-1] == "":
        cells = cells[:-1]
    return [c.strip() for c in cells]


def load_metrics(doc):
    """name -> (type, set of labels), from the metrics table of the doc."""
    with open(doc, encoding="utf-8") as f:
        lines = f.read().splitlines()
    metrics, errors = {}, []
    start = None
    for i, line in enumerate(lines):
        cells = [c.lower() for c in split_row(line)] if line.lstrip().startswith("|") else []
        if cells[:3] == ["metric", "type", "labels"]:
            start = i
            break
    if start is None:
        return {}, [f"{doc}: no table with the header | metric | type | labels | ..."]
    for n, line in enumerate(lines[start + 2:], start + 3):
        if not line.lstrip().startswith("|"):
            break
        cells = split_row(line)
        m = re.fullmatch(r"`(sage_[a-z_]+)`", cells[0]) if cells else None
        if not m or len(cells) < 3:
            errors.append(f"{doc}:{n}: first cell is not a `sage_...` metric name in backticks: {line.strip()}")
            continue
        name, kind = m.group(1), cells[1].lower()
        if kind not in TYPES:
            errors.append(f"{doc}:{n}: `{name}`: type `{cells[1]}` is not one of {', '.join(TYPES)}")
            continue
        if name in metrics:
            errors.append(f"{doc}:{n}: `{name}` is listed twice")
        labels = set(re.findall(r"`([A-Za-z_][A-Za-z0-9_]*)`", cells[2]))
        metrics[name] = (kind, labels)
    if not metrics and not errors:
        errors.append(f"{doc}: the metrics table is empty")
    return metrics, errors


def resolve(token, metrics):
    """(base metric, is_bucket) for a sage_ token, or (None, message)."""
    if token in metrics:
        if metrics[token][0] == "histogram":
            return None, f"histogram `{token}` queried without _bucket, _sum or _count"
        return token, False
    for suffix in HIST_SUFFIXES:
        if token.endswith(suffix):
            base = token[: -len(suffix)]
            if base in metrics and metrics[base][0] == "histogram":
                return base, suffix == "_bucket"
            if base in metrics:
                return None, f"`{token}`: `{base}` is a {metrics[base][0]}, not a histogram"
    return None, f"unknown metric `{token}`"


def strip_strings(expr):
    return re.sub(r"\"(?:[^\"\\]|\\.)*\"|'(?:[^'\\]|\\.)*'|`[^`]*`", '""', expr)


def check_expr(expr, metrics, extra_label=None):
    """Problems of one expression (metric names and label names)."""
    problems = []
    bases, bucket = set(), False
    for token in NAME_RE.findall(expr):
        base, info = resolve(token, metrics)
        if base is None:
            problems.append(info)
        else:
            bases.add(base)
            bucket = bucket or info
    if not NAME_RE.search(expr):
        problems.append("the expression queries no sage_ metric")
    known = set().union(*(metrics[b][1] for b in bases)) if bases else set()
    allowed = known | TARGET_LABELS | ({"le"} if bucket else set())
    for m in SELECTOR_RE.finditer(expr):
        name, body = m.group(1), m.group(2)
        if name:
            base, is_bucket = resolve(name, metrics)
            if base is None:
                continue  # already reported
            ok = metrics[base][1] | TARGET_LABELS | ({"le"} if is_bucket else set())
        else:
            ok = allowed | {"__name__"}
        for label in MATCHER_RE.findall(body):
            if label not in ok:
                problems.append(f"label `{label}` is not a label of `{name or 'the metrics queried'}`")
    for m in GROUPING_RE.finditer(strip_strings(expr)):
        for label in filter(None, (s.strip() for s in m.group(1).split(","))):
            if label not in allowed:
                problems.append(f"grouping label `{label}` is not a label of the metrics queried")
    if extra_label and extra_label not in allowed:
        problems.append(f"label_values label `{extra_label}` is not a label of the metrics queried")
    return problems


def substitute(expr, value):
    """The expression with each Grafana variable ($name, ${name}, ${name:format}, [[name]])
    replaced by value(name)."""
    return VARIABLE_RE.sub(lambda m: value(m.group(1) or m.group(2) or m.group(3)), expr)


def for_promtool(expr):
    """The expression with Grafana variables replaced so that promtool can parse it."""
    return substitute(expr, lambda name: DURATION_VARS.get(name, ".*"))


def walk_panels(panels):
    for p in panels:
        yield p
        yield from walk_panels(p.get("panels", []) or [])


def variable_query(v):
    q = v.get("query")
    if isinstance(q, dict):
        q = q.get("query", "")
    return q or ""


def check_dashboard(path, metrics, uids, exprs):
    problems = []
    rel = os.path.relpath(path, os.getcwd())
    rel = path if rel.startswith("..") else rel
    try:
        with open(path, encoding="utf-8") as f:
            d = json.load(f)
    except (OSError, ValueError) as e:
        return [f"{rel}: cannot load: {e}"], 0
    if d.get("schemaVersion") != 39:
        problems.append(f"{rel}: schemaVersion is {d.get('schemaVersion')!r}, expected 39")
    uid = d.get("uid")
    if not uid:
        problems.append(f"{rel}: no uid")
    elif uid in uids:
        problems.append(f"{rel}: uid `{uid}` also used by {uids[uid]}")
    else:
        uids[uid] = rel
    variables = d.get("templating", {}).get("list", [])
    if not any(v.get("name") == "datasource" and v.get("type") == "datasource"
               and v.get("query") == "prometheus" for v in variables):
        problems.append(f"{rel}: no `datasource` template variable of type datasource for prometheus")
    for v in variables:
        if v.get("type") != "query":
            continue
        q = variable_query(v)
        where = f"{rel}: variable `{v.get('name')}`"
        if not v.get("datasource"):
            problems.append(f"{where}: no datasource")
        m, m1, mq = LABEL_VALUES_RE.match(q), LABEL_VALUES_1_RE.match(q), QUERY_FN_RE.match(q)
        if m:
            sel, label = m.group(1), m.group(2)
        elif m1:
            problems.append(f"{where}: label_values({m1.group(1)}) without a metric queries every series")
            continue
        elif mq:
            sel, label = mq.group(1), None
        else:
            problems.append(f"{where}: cannot read the query {q!r}")
            continue
        problems += [f"{where}: {p}" for p in check_expr(sel, metrics, label)]
        exprs.append((f"{rel} variable {v.get('name')}", sel))

    panels = list(walk_panels(d.get("panels", [])))
    ids = {}
    cells = {}
    for p in panels:
        pid, title = p.get("id"), p.get("title", "")
        where = f"{rel}: panel {pid} \"{title}\""
        if not isinstance(pid, int) or isinstance(pid, bool):
            problems.append(f"{where}: id is not an integer")
        elif pid in ids:
            problems.append(f"{where}: id {pid} also used by panel \"{ids[pid]}\"")
        else:
            ids[pid] = title
        g = p.get("gridPos") or {}
        if not all(isinstance(g.get(k), int) for k in ("h", "w", "x", "y")):
            problems.append(f"{where}: no complete gridPos")
        elif g["x"] + g["w"] > 24:
            problems.append(f"{where}: wider than the 24-column grid")
        elif p in d.get("panels", []):
            for x in range(g["x"], g["x"] + g["w"]):
                for y in range(g["y"], g["y"] + g["h"]):
                    if (x, y) in cells:
                        problems.append(f"{where}: overlaps panel {cells[(x, y)]}")
                        break
                    cells[(x, y)] = pid
                else:
                    continue
                break
        if p.get("type") == "row":
            if p.get("targets"):
                problems.append(f"{where}: a row with queries")
            continue
        ds = p.get("datasource")
        if not ds or (isinstance(ds, dict) and not ds.get("uid")):
            problems.append(f"{where}: no datasource")
        targets = p.get("targets") or []
        if not targets:
            problems.append(f"{where}: no query")
        refs = set()
        for t in targets:
            ref = t.get("refId")
            tw = f"{where} (query {ref})"
            if not ref or ref in refs:
                problems.append(f"{tw}: missing or repeated refId")
            refs.add(ref)
            if t.get("datasource") and ds and t["datasource"] != ds:
                problems.append(f"{tw}: datasource {t['datasource']} differs from the panel's {ds}")
            expr = t.get("expr", "")
            if not expr.strip():
                problems.append(f"{tw}: empty expr")
                continue
            problems += [f"{tw}: {msg}" for msg in check_expr(expr, metrics)]
            exprs.append((f"{rel} panel {pid} \"{title}\" query {ref}", expr))
    return problems, len([p for p in panels if p.get("type") != "row"])


def rule_exprs(path):
    """(alert or record name, expr) of every rule of a Prometheus rule file. Standard library
    only: reads the `- alert:`/`- record:` lines and each `expr:` (one line, or a `|`/`>` block
    scalar), which is the shape of deploy/alerts.yml."""
    with open(path, encoding="utf-8") as f:
        lines = f.read().splitlines()
    rules, name, i = [], None, 0
    while i < len(lines):
        line = lines[i]
        m = re.match(r"^\s*-\s*(?:alert|record):\s*(\S+)", line)
        if m:
            name = m.group(1)
            rules.append([name, None])
        m = re.match(r"^(\s*)expr:\s*(.*?)\s*$", line)
        if m and rules:
            indent, value = len(m.group(1)), m.group(2)
            if value[:1] in ("|", ">"):
                body = []
                while i + 1 < len(lines) and (not lines[i + 1].strip()
                                              or len(lines[i + 1]) - len(lines[i + 1].lstrip()) > indent):
                    i += 1
                    body.append(lines[i].strip())
                value = "\n".join(body).strip()
            elif value[:1] in ("'", '"'):
                value = value[1:-1]
            rules[-1][1] = value
        i += 1
    return [(n, e) for n, e in rules]


def check_rules(path, metrics, exprs):
    """Problems of the rules of a rule file; their expressions are added to `exprs`."""
    rel = os.path.relpath(path, os.getcwd())
    rel = path if rel.startswith("..") else rel
    try:
        rules = rule_exprs(path)
    except OSError as e:
        return [f"{rel}: cannot read: {e}"], 0
    problems = [] if rules else [f"{rel}: no rule found"]
    for name, expr in rules:
        if not expr:
            problems.append(f"{rel}: rule {name}: no expr")
            continue
        problems += [f"{rel}: rule {name}: {p}" for p in check_expr(expr, metrics)]
        exprs.append((f"{rel} rule {name}", expr))
    return problems, len(rules)


def run_promtool(exprs):
    """(ok, message) from promtool check rules on every expression as a recording rule."""
    groups = [{"name": where, "rules": [{"record": f"grafana_check:expr_{i}", "expr": for_promtool(e)}]}
              for i, (where, e) in enumerate(exprs)]
    version = subprocess.run(["promtool", "--version"], capture_output=True, text=True)
    version = (version.stdout or version.stderr).splitlines()[0] if (version.stdout or version.stderr) else "promtool"
    with tempfile.TemporaryDirectory() as tmp:
        rules = os.path.join(tmp, "grafana-exprs.rules.yml")
        with open(rules, "w", encoding="utf-8") as f:
            json.dump({"groups": groups}, f, indent=1)  # JSON is YAML
        r = subprocess.run(["promtool", "check", "rules", rules], capture_output=True, text=True)
    out = (r.stdout + r.stderr).strip().replace(rules, "<exprs>")
    if r.returncode != 0:
        return False, f"promtool check rules failed ({version}):\n{out}"
    return True, f"promtool: all {len(exprs)} expressions parse (promtool check rules; {version})"


def selections(d):
    """name -> value of each variable of a dashboard as it opens (datasource aside): its current
    value; `All` becomes the variable's allValue (or .*), several values a|b."""
    out = {}
    for v in d.get("templating", {}).get("list", []):
        if v.get("type") == "datasource":
            continue
        cur = (v.get("current") or {}).get("value")
        values = cur if isinstance(cur, list) else [cur]
        if "$__all" in values or not any(values):
            out[v["name"]] = v.get("allValue") or ".*"
        else:
            out[v["name"]] = "|".join(values)
    return out


def prometheus_get(url, path, params):
    """The `data` of a Prometheus HTTP API answer (raises ValueError with its error)."""
    full = f"{url.rstrip('/')}{path}?{urllib.parse.urlencode(params)}"
    try:
        with urllib.request.urlopen(full, timeout=30) as r:
            answer = json.load(r)
    except urllib.error.HTTPError as e:
        answer = json.load(e)
    if answer.get("status") != "success":
        raise ValueError(f"{answer.get('errorType')}: {answer.get('error')}")
    return answer["data"]


def live_check(url, files, window):
    """Evaluates every panel query (an instant query, now) and every variable query of the
    dashboards through the Prometheus HTTP API at `url`, with $__range and $__rate_interval set
    to `window` seconds and the other variables as the dashboard opens. Returns (problems,
    notes): a problem per query that fails or returns no series."""
    durations = {"__rate_interval": f"{window}s", "__range": f"{window}s",
                 "__range_s": str(window), "__range_ms": str(window * 1000),
                 "__interval": "15s", "__interval_ms": "15000"}
    problems, nan_only, zero_only = [], [], []
    panels = variables = 0
    for path in files:
        rel = os.path.relpath(path, os.getcwd())
        rel = path if rel.startswith("..") else rel
        with open(path, encoding="utf-8") as f:
            d = json.load(f)
        chosen = selections(d)

        def value(name):
            return durations.get(name) or chosen[name]

        for v in d.get("templating", {}).get("list", []):
            if v.get("type") != "query":
                continue
            where = f"{rel} variable `{v.get('name')}`"
            m = LABEL_VALUES_RE.match(variable_query(v))
            if not m:
                problems.append(f"{where}: not a label_values(selector, label) query")
                continue
            try:
                found = prometheus_get(url, f"/api/v1/label/{m.group(2)}/values",
                                       {"match[]": substitute(m.group(1), value)})
            except (OSError, ValueError, KeyError) as e:
                problems.append(f"{where}: {e}")
                continue
            variables += 1
            if not found:
                problems.append(f"{where}: no value")
        for p in walk_panels(d.get("panels", [])):
            for t in p.get("targets") or []:
                expr = t.get("expr", "")
                if not expr.strip():
                    continue
                where = f"{rel} panel {p.get('id')} \"{p.get('title', '')}\" query {t.get('refId')}"
                try:
                    query = substitute(expr, value)
                    data = prometheus_get(url, "/api/v1/query", {"query": query})
                except KeyError as e:
                    problems.append(f"{where}: variable {e} has no value")
                    continue
                except (OSError, ValueError) as e:
                    problems.append(f"{where}: {e}")
                    continue
                panels += 1
                if data["resultType"] in ("scalar", "string"):
                    values = [data["result"][1]]
                else:
                    values = [s["value"][1] for s in data["result"]]
                if not values:
                    problems.append(f"{where}: no data: {query}")
                elif all(v == "NaN" for v in values):
                    nan_only.append(where)
                elif all(float(v) == 0 for v in values):
                    zero_only.append(where)
    notes = [f"live: {panels} panel queries and {variables} variable queries evaluated at {url} "
             f"over the last {window}s: "
             + ("none empty" if not problems else f"{len(problems)} failed or empty")
             + f"; {len(zero_only)} read only 0, {len(nan_only)} only NaN (no observation to "
               "take a quantile or a mean of)"]
    notes += [f"  only 0:   {w}" for w in zero_only] + [f"  only NaN: {w}" for w in nan_only]
    return problems, notes


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("dashboards", nargs="*", help="dashboard JSON files (default: grafana/dashboards/*.json)")
    ap.add_argument("--doc", default=os.path.join(ROOT, "docs", "metrics.md"), help="the metrics doc")
    ap.add_argument("--no-promtool", action="store_true", help="skip the promtool parse check")
    ap.add_argument("--rules", default=os.path.join(ROOT, "deploy", "alerts.yml"),
                    help="the alerting rules (default deploy/alerts.yml)")
    ap.add_argument("--prometheus", metavar="URL",
                    help="also evaluate every panel and variable query through this Prometheus; "
                         "a query that returns no series fails")
    ap.add_argument("--window", type=int, default=300, metavar="SECONDS",
                    help="with --prometheus: $__range and $__rate_interval (default 300)")
    args = ap.parse_args()

    metrics, problems = load_metrics(args.doc)
    files = args.dashboards or sorted(glob.glob(os.path.join(ROOT, "grafana", "dashboards", "*.json")))
    if not files:
        problems.append("no dashboard found in grafana/dashboards/")
    uids, exprs, n_panels = {}, [], 0
    if metrics:
        for path in files:
            p, n = check_dashboard(path, metrics, uids, exprs)
            problems += p
            n_panels += n
    notes = []
    if metrics:
        used = set()
        for _, e in exprs:
            for token in NAME_RE.findall(e):
                used.add(resolve(token, metrics)[0])
        unused = sorted(set(metrics) - used)
        if unused and not args.dashboards:
            problems.append("metrics of the doc no dashboard queries: " + ", ".join(unused))
        elif unused:
            notes.append("note: metrics of the doc these dashboards do not query: " + ", ".join(unused))
    n_rules = 0
    if metrics:
        rule_problems, n_rules = check_rules(args.rules, metrics, exprs)
        problems += rule_problems
    if exprs:
        if args.no_promtool:
            notes.append("promtool: skipped (--no-promtool)")
        elif shutil.which("promtool"):
            ok, msg = run_promtool(exprs)
            (notes if ok else problems).append(msg)
        else:
            # A check that cannot run fails (`--no-promtool` skips it on purpose).
            problems.append("promtool: not on the PATH, expressions not parsed (apt-get install prometheus, or --no-promtool)")
    if args.prometheus:
        live_problems, live_notes = live_check(args.prometheus, files, args.window)
        problems += live_problems
        notes += live_notes
    for p in problems:
        print("error:", p)
    for n in notes:
        print(n)
    doc = os.path.relpath(args.doc, os.getcwd())
    doc = args.doc if doc.startswith("..") else doc
    if problems:
        print(f"FAILED: {len(problems)} problem(s)")
        return 1
    print(f"ok: {len(files)} dashboards, {n_panels} panels, {n_rules} alerting rules, {len(exprs)} "
          f"expressions; every sage_ "
          f"metric and label is in {doc} ({len(metrics)} metrics"
          f"{'' if args.dashboards else ', each queried by a dashboard'})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
