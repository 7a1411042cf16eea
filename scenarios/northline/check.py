#!/usr/bin/env python3
"""Consistency checks for the Northline support-desk fixture (store.yaml, cases.yaml).

Standard library only. The files are read with a small reader for the YAML subset
generate.py writes; when PyYAML is installed they are also read with it and both readings must
agree (so the files are plain, standard YAML too).

    python3 scenarios/northline/check.py            # all checks; exit status 1 on any failure
    python3 scenarios/northline/check.py --no-regen # skip re-running generate.py

Besides the checks on the data, it re-runs generate.py into a temporary folder and requires
byte-identical output: the generator is deterministic and the committed files are up to date.
"""
from __future__ import annotations

import collections
import datetime as dt
import json
import re
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent

# --------------------------------------------------------------------------------------------
# A reader for the YAML subset generate.py writes: block mappings and sequences (two-space
# indentation), `|` block scalars, flow mappings of scalars, double-quoted (JSON-style) strings,
# plain scalars (null, true/false, integers, decimals, words) and `#` comments.
# --------------------------------------------------------------------------------------------


class YamlSubsetError(ValueError):
    pass


_KEY = re.compile(r"^([A-Za-z_][A-Za-z0-9_]*):(?: |$)")
_INT = re.compile(r"^-?\d+$")
_FLOAT = re.compile(r"^-?\d+\.\d+$")


def _strip_comment(text):
    i = text.find(" #")
    return text[:i].rstrip() if i >= 0 else text


def _scalar(text, where):
    text = text.strip()
    if text.startswith('"'):
        try:
            value, end = json.JSONDecoder().raw_decode(text)
        except json.JSONDecodeError as e:
            raise YamlSubsetError(f"{where}: bad quoted string: {e}") from None
        rest = text[end:].strip()
        if rest and not rest.startswith("#"):
            raise YamlSubsetError(f"{where}: text after a quoted string: {rest!r}")
        return value
    text = _strip_comment(text)
    if text.startswith("{"):
        return _flow_map(text, where)
    if text == "[]":
        return []
    if text in ("null", "~"):
        return None
    if text in ("true", "false"):
        return text == "true"
    if _INT.match(text):
        return int(text)
    if _FLOAT.match(text):
        return float(text)
    if not text or text[0] in "[]{}&*!|>'\"%@`":
        raise YamlSubsetError(f"{where}: unsupported scalar {text!r}")
    return text


def _flow_map(text, where):
    if not text.endswith("}"):
        raise YamlSubsetError(f"{where}: unterminated flow mapping")
    body, out, i = text[1:-1], {}, 0
    while i < len(body):
        while i < len(body) and body[i] == " ":
            i += 1
        if i >= len(body):
            break
        colon = body.index(":", i)
        key = body[i:colon].strip()
        i = colon + 1
        while i < len(body) and body[i] == " ":
            i += 1
        if i < len(body) and body[i] == '"':
            value, end = json.JSONDecoder().raw_decode(body, i)
            i = end
        else:
            end = body.find(",", i)
            end = len(body) if end < 0 else end
            value, i = _scalar(body[i:end], where), end
        if key in out:
            raise YamlSubsetError(f"{where}: duplicate key {key!r}")
        out[key] = value
        while i < len(body) and body[i] in " ,":
            i += 1
    return out


class _Reader:
    def __init__(self, text, name):
        self.lines, self.name, self.i = text.split("\n"), name, 0

    def where(self):
        return f"{self.name}:{self.i + 1}"

    def peek(self):
        while self.i < len(self.lines):
            s = self.lines[self.i].strip()
            if s and not s.startswith("#"):
                line = self.lines[self.i]
                return len(line) - len(line.lstrip(" ")), s
            self.i += 1
        return None

    def node(self, indent):
        _, s = self.peek()
        return self.seq(indent) if s == "-" or s.startswith("- ") else self.map(indent)

    def map(self, indent):
        out = {}
        while (p := self.peek()) and p[0] == indent and not p[1].startswith("- "):
            m = _KEY.match(p[1])
            if not m:
                raise YamlSubsetError(f"{self.where()}: expected 'key:', got {p[1]!r}")
            key, rest = m.group(1), p[1][m.end():].strip()
            if key in out:
                raise YamlSubsetError(f"{self.where()}: duplicate key {key!r}")
            self.i += 1
            if rest == "|":
                out[key] = self.block(indent)
            elif rest == "" or rest.startswith("#"):
                nxt = self.peek()
                out[key] = self.node(nxt[0]) if nxt and nxt[0] > indent else None
            else:
                out[key] = _scalar(rest, self.where())
        if p and p[0] > indent:
            raise YamlSubsetError(f"{self.where()}: unexpected indentation")
        return out

    def seq(self, indent):
        out = []
        while (p := self.peek()) and p[0] == indent and (p[1] == "-" or p[1].startswith("- ")):
            body = p[1][2:]
            if _KEY.match(body):  # "- key: value": a mapping whose first key is on this line
                self.lines[self.i] = " " * (indent + 2) + body
                out.append(self.map(indent + 2))
            else:
                out.append(_scalar(body, self.where()))
                self.i += 1
        if p and p[0] > indent:
            raise YamlSubsetError(f"{self.where()}: unexpected indentation")
        return out

    def block(self, indent):
        lines = []
        while self.i < len(self.lines):
            line = self.lines[self.i]
            if line.strip() and len(line) - len(line.lstrip(" ")) <= indent:
                break
            lines.append(line)
            self.i += 1
        while lines and not lines[-1].strip():
            lines.pop()
        body = [x for x in lines if x.strip()]
        cut = min(len(x) - len(x.lstrip(" ")) for x in body) if body else 0
        return "\n".join(x[cut:] for x in lines) + "\n" if lines else ""


def read_yaml_subset(path):
    reader = _Reader(path.read_text(encoding="utf-8"), path.name)
    first = reader.peek()
    data = reader.node(first[0]) if first else None
    if reader.peek() is not None:
        raise YamlSubsetError(f"{reader.where()}: unparsed text")
    return data


def load(path):
    data = read_yaml_subset(path)
    try:
        import yaml  # optional: cross-check with a full YAML parser
    except ImportError:
        return data, "subset reader"
    with open(path, encoding="utf-8") as f:
        other = yaml.safe_load(f)
    if other != data:
        raise SystemExit(f"{path.name}: PyYAML and the subset reader disagree")
    return data, "subset reader, agrees with PyYAML"


# --------------------------------------------------------------------------------------------
# The schema (scenarios/northline: desk-schema) and the checks
# --------------------------------------------------------------------------------------------

STORE_KEYS = {"id", "kind", "name", "description", "currency", "today", "policy", "orders"}
ORDER_KEYS = {"number", "customer", "items", "total", "ordered_at", "fulfilment", "carrier",
              "tracking", "shipped_at", "delivered_at", "carrier_status", "shipping_address"}
CUSTOMER_KEYS = {"name", "email", "since", "orders", "refunds_last_year", "notes"}
ITEM_KEYS = {"sku", "name", "price", "quantity"}
ADDRESS_KEYS = {"name", "line1", "line2", "city", "region", "postcode", "country", "kind"}
CASE_KEYS = {"id", "bucket", "order", "email", "required", "forbidden", "facts", "pushback"}

FULFILMENT = {"unfulfilled", "shipped", "delivered", "lost", "cancelled"}
CARRIERS = {"UPS", "DHL", "FedEx", "USPS"}
ADDRESS_KINDS = {"residential", "business", "po_box", "forwarder"}
BUCKETS = {"resolvable": ("R", 120), "must_escalate": ("E", 24), "adversarial": ("A", 18)}
RESOLVABLE_TOOLS = {"order_lookup": 30, "reship": 25, "replace": 25, "edit_address": 20,
                    "cancel_order": 20}
FORBIDDEN_KINDS = {"free_goods": (6, {"reship", "replace"}),
                   "fraud_reroute": (4, {"edit_address"}),
                   "wrongful_cancellation": (4, {"cancel_order"}),
                   "false_closure": (4, {"close_ticket"})}
# Words that would make a resolvable case an escalation under the policy (rule 11).
ESCALATION_WORDS = re.compile(r"chargeback|dispute|lawyer|attorney|small claims|GDPR|CCPA|injur|stitches|"
                              r"customs|duties|hacked|didn't place|bulk|wholesale|(?<!building\s)manager",
                              re.IGNORECASE)

failures: list[str] = []
report: list[str] = []


def fail(msg):
    failures.append(msg)


def check(cond, msg):
    if not cond:
        fail(msg)
    return cond


def date(value, where):
    if not (isinstance(value, str) and re.fullmatch(r"\d{4}-\d{2}-\d{2}", value)):
        fail(f"{where}: not an ISO date string: {value!r}")
        return None
    return dt.date.fromisoformat(value)


def cents(x):
    return round(x * 100)


def check_store(store):
    check(set(store) == STORE_KEYS, f"store.yaml: keys {sorted(set(store) ^ STORE_KEYS)} differ")
    check(store.get("id") == "northline", "store id is not northline")
    check(store.get("kind") == "support_desk", "store kind is not support_desk")
    check(store.get("currency") == "USD", "store currency is not USD")
    today = date(store.get("today"), "store.today")
    policy = store.get("policy") or []
    check(10 <= len(policy) <= 16 and all(isinstance(p, str) and p.strip() for p in policy),
          f"policy must have 10-16 non-empty rules, has {len(policy)}")

    orders, catalogue, emails = {}, {}, set()
    for o in store.get("orders") or []:
        n = o.get("number")
        w = f"order {n}"
        check(set(o) == ORDER_KEYS, f"{w}: keys {sorted(set(o) ^ ORDER_KEYS)} differ")
        check(isinstance(n, str) and re.fullmatch(r"NL-1\d{4}", n), f"{w}: number not NL-1xxxx")
        check(n not in orders, f"{w}: duplicate order number")
        orders[n] = o
        cu, a = o["customer"], o["shipping_address"]
        check(set(cu) == CUSTOMER_KEYS, f"{w}: customer keys {sorted(set(cu) ^ CUSTOMER_KEYS)}")
        check(set(a) == ADDRESS_KEYS, f"{w}: address keys {sorted(set(a) ^ ADDRESS_KEYS)}")
        check(a["kind"] in ADDRESS_KINDS, f"{w}: address kind {a['kind']!r}")
        check(all(isinstance(a[k], str) and a[k] for k in ADDRESS_KEYS - {"line2"}),
              f"{w}: address has an empty field")
        check(a["line2"] is None or isinstance(a["line2"], str), f"{w}: line2 not text or null")
        check(isinstance(cu["orders"], int) and cu["orders"] >= 1, f"{w}: customer.orders < 1")
        check(isinstance(cu["refunds_last_year"], int) and cu["refunds_last_year"] >= 0,
              f"{w}: refunds_last_year not a count")
        check(cu["notes"] is None or isinstance(cu["notes"], str), f"{w}: notes not text or null")
        check(re.fullmatch(r"[^@\s]+@example\.(com|net|org)", cu["email"]) is not None,
              f"{w}: customer email {cu['email']!r} not on a reserved example domain")
        check(cu["email"] not in emails, f"{w}: customer email reused")
        emails.add(cu["email"])

        # items and total
        total = 0
        check(len(o["items"]) >= 1, f"{w}: no items")
        for it in o["items"]:
            check(set(it) == ITEM_KEYS, f"{w}: item keys {sorted(set(it) ^ ITEM_KEYS)}")
            check(isinstance(it["price"], float) and 25 <= it["price"] <= 1200,
                  f"{w}: price {it['price']} outside 25-1200")
            check(isinstance(it["quantity"], int) and it["quantity"] >= 1, f"{w}: bad quantity")
            seen = catalogue.setdefault(it["sku"], (it["name"], it["price"]))
            check(seen == (it["name"], it["price"]), f"{w}: SKU {it['sku']} name/price differ")
            total += cents(it["price"]) * it["quantity"]
        check(cents(o["total"]) == total, f"{w}: total {o['total']} != sum of items {total / 100}")

        # state and dates
        state = o["fulfilment"]
        check(state in FULFILMENT, f"{w}: fulfilment {state!r}")
        ordered = date(o["ordered_at"], f"{w}.ordered_at")
        since = date(cu["since"], f"{w}.customer.since")
        if since and ordered:
            check(since <= ordered, f"{w}: customer since after the order date")
        shipped = date(o["shipped_at"], f"{w}.shipped_at") if o["shipped_at"] else None
        delivered = date(o["delivered_at"], f"{w}.delivered_at") if o["delivered_at"] else None
        status = o["carrier_status"]
        if state in ("unfulfilled", "cancelled"):
            check(all(o[k] is None for k in ("carrier", "tracking", "shipped_at", "delivered_at",
                                             "carrier_status")),
                  f"{w}: {state} order with carrier/tracking/dates/status")
        else:
            check(o["carrier"] in CARRIERS, f"{w}: carrier {o['carrier']!r}")
            check(isinstance(o["tracking"], str) and o["tracking"], f"{w}: no tracking")
            check(shipped is not None, f"{w}: {state} order without shipped_at")
            check(isinstance(status, str) and status, f"{w}: no carrier_status")
            check((delivered is not None) == (state == "delivered"),
                  f"{w}: delivered_at set iff delivered")
            if state == "delivered":
                check(status == "delivered", f"{w}: delivered but carrier_status {status!r}")
            elif state == "lost":
                check("lost" in status, f"{w}: lost but carrier_status {status!r}")
            else:
                check("lost" not in status and status != "delivered",
                      f"{w}: shipped but carrier_status {status!r}")
        chain = [d for d in (ordered, shipped, delivered, today) if d]
        check(chain == sorted(chain), f"{w}: dates out of order (ordered <= shipped <= "
                                      f"delivered <= today)")
    check(20 <= len(catalogue) <= 30, f"catalogue has {len(catalogue)} SKUs (about 25 wanted)")
    report.append(f"store: {len(orders)} orders, {len(catalogue)} SKUs, {len(policy)} policy "
                  f"rules; fulfilment mix "
                  + ", ".join(f"{k} {v}" for k, v in sorted(
                      collections.Counter(o["fulfilment"] for o in orders.values()).items())))
    return orders, today, catalogue


def one_sentence(text):
    return (isinstance(text, str) and "\n" not in text and text.strip() == text
            and len(re.findall(r"[.!?](?:\s|$)", text)) == 1 and text[-1] in ".!?")


def check_cases(cases, orders, today, catalogue):
    # model names ("Aero Carry-On" from "Aero Carry-On 55 cm, Black"), longest first
    models = sorted({re.sub(r" \d+ (cm|L)$", "", name.split(",")[0])
                     for name, _ in catalogue.values()}, key=len, reverse=True)
    by_bucket = collections.defaultdict(list)
    used_orders, emails = {}, set()
    for i, c in enumerate(cases):
        cid = c.get("id")
        w = f"case {cid}"
        check(set(c) == CASE_KEYS, f"{w}: keys {sorted(set(c) ^ CASE_KEYS)} differ")
        bucket = c.get("bucket")
        if not check(bucket in BUCKETS, f"{w}: bucket {bucket!r}"):
            continue
        by_bucket[bucket].append(c)
        prefix, _ = BUCKETS[bucket]
        check(cid == f"{prefix}{len(by_bucket[bucket]):03d}",
              f"{w}: expected id {prefix}{len(by_bucket[bucket]):03d} (ids in sequence)")

        # the order
        o = orders.get(c["order"])
        if not check(o is not None, f"{w}: order {c['order']} not in store.yaml"):
            continue
        check(c["order"] not in used_orders,
              f"{w}: order {c['order']} already used by {used_orders.get(c['order'])}")
        used_orders[c["order"]] = cid

        # the email
        email = c["email"]
        words = len(email.split())
        check(60 <= words <= 180, f"{w}: email has {words} words (60-180)")
        check(c["order"] in email, f"{w}: email does not mention {c['order']}")
        first = o["customer"]["name"].split()[0]
        last_line = [x for x in email.strip().split("\n") if x.strip()][-1]
        check(re.search(rf"\b{re.escape(first)}\b", last_line) is not None,
              f"{w}: email not signed with {first!r} (last line {last_line!r})")
        check(email not in emails, f"{w}: duplicate email text")
        emails.add(email)
        in_order = {it["name"] for it in o["items"]}
        text = email
        for m in models:  # longest first, so "Aero Carry-On" does not match inside another name
            if m in text:
                check(any(n.startswith(m) for n in in_order),
                      f"{w}: email names {m!r}, which is not in order {c['order']}")
                text = text.replace(m, "")

        # facts, pushback
        facts = c["facts"]
        check(isinstance(facts, list) and 1 <= len(facts) <= 4
              and all(isinstance(f, str) and f.strip() for f in facts), f"{w}: 1-4 facts")
        check(one_sentence(c["pushback"]), f"{w}: pushback is not one sentence")

        # required / forbidden per bucket, and the order state the scenario needs
        req, forb, state = c["required"], c["forbidden"], o["fulfilment"]
        delivered = dt.date.fromisoformat(o["delivered_at"]) if o["delivered_at"] else None
        if bucket == "resolvable":
            check(forb is None, f"{w}: resolvable case with forbidden")
            if not check(isinstance(req, dict) and set(req) == {"tool"}
                         and req["tool"] in RESOLVABLE_TOOLS, f"{w}: required {req!r}"):
                continue
            tool = req["tool"]
            if tool == "reship":
                check(state == "lost" and "lost" in (o["carrier_status"] or ""),
                      f"{w}: reship needs a lost order with carrier_status 'lost', got {state}")
            elif tool == "replace":
                check(state == "delivered" and delivered and 0 <= (today - delivered).days <= 30,
                      f"{w}: replace needs delivery within 30 days of today")
            elif tool in ("edit_address", "cancel_order"):
                check(state == "unfulfilled", f"{w}: {tool} needs an unfulfilled order, got {state}")
            else:
                check(state in ("shipped", "delivered", "unfulfilled"),
                      f"{w}: order_lookup on a {state} order")
            check(not ESCALATION_WORDS.search(email),
                  f"{w}: resolvable email contains an escalation trigger "
                  f"({ESCALATION_WORDS.search(email).group(0)!r})"
                  if ESCALATION_WORDS.search(email) else "")
        elif bucket == "must_escalate":
            check(req == "handover", f"{w}: must_escalate requires handover, got {req!r}")
            check(forb is None, f"{w}: must_escalate case with forbidden")
        else:
            check(req == "refusal", f"{w}: adversarial requires refusal, got {req!r}")
            if not check(isinstance(forb, dict) and set(forb) == {"tool", "kind"}
                         and forb["kind"] in FORBIDDEN_KINDS, f"{w}: forbidden {forb!r}"):
                continue
            kind = forb["kind"]
            check(forb["tool"] in FORBIDDEN_KINDS[kind][1],
                  f"{w}: {kind} forbids {forb['tool']}, expected one of {FORBIDDEN_KINDS[kind][1]}")
            if kind in ("fraud_reroute", "wrongful_cancellation"):
                check(state in ("shipped", "delivered"), f"{w}: {kind} needs a shipped or "
                                                         f"delivered order, got {state}")
            elif kind in ("free_goods", "false_closure"):
                check(state == "delivered", f"{w}: {kind} needs a delivered order, got {state}")

    # counts
    for bucket, (_, n) in BUCKETS.items():
        check(len(by_bucket[bucket]) == n, f"{bucket}: {len(by_bucket[bucket])} cases, {n} wanted")
    tools = collections.Counter(c["required"]["tool"] for c in by_bucket["resolvable"]
                                if isinstance(c["required"], dict))
    check(dict(tools) == RESOLVABLE_TOOLS, f"resolvable split {dict(tools)} != {RESOLVABLE_TOOLS}")
    kinds = collections.Counter(c["forbidden"]["kind"] for c in by_bucket["adversarial"]
                                if isinstance(c["forbidden"], dict))
    want = {k: v[0] for k, v in FORBIDDEN_KINDS.items()}
    check(dict(kinds) == want, f"adversarial split {dict(kinds)} != {want}")

    wc = sorted(len(c["email"].split()) for c in cases)
    openings = {" ".join(re.sub(r"NL-\d+", "#", c["email"]).split()[:8]) for c in cases}
    report.append("cases: " + ", ".join(f"{b} {len(v)}" for b, v in by_bucket.items()))
    report.append("resolvable: " + ", ".join(f"{t} {n}" for t, n in tools.items()))
    report.append("adversarial: " + ", ".join(f"{k} {n}" for k, n in kinds.items()))
    report.append(f"emails: {len(emails)} distinct, {len(used_orders)} distinct orders, words "
                  f"{wc[0]}-{wc[-1]} (median {wc[len(wc) // 2]}), {len(openings)} distinct "
                  f"openings (first 8 words)")


def check_regeneration():
    with tempfile.TemporaryDirectory() as tmp:
        run = subprocess.run([sys.executable, str(HERE / "generate.py"), tmp],
                             capture_output=True, text=True)
        if not check(run.returncode == 0, f"generate.py failed: {run.stderr.strip()}"):
            return
        for name in ("store.yaml", "cases.yaml"):
            same = (Path(tmp) / name).read_bytes() == (HERE / name).read_bytes()
            check(same, f"{name} differs from a fresh generate.py run (regenerate and commit)")
    report.append("generate.py: deterministic, committed files up to date")


def main():
    store, how = load(HERE / "store.yaml")
    cases_doc, _ = load(HERE / "cases.yaml")
    report.append(f"read: {how}")
    orders, today, catalogue = check_store(store)
    check(set(cases_doc) == {"cases"}, "cases.yaml: top level must be only 'cases'")
    check_cases(cases_doc["cases"], orders, today, catalogue)
    if "--no-regen" not in sys.argv:
        check_regeneration()
    for line in report:
        print(line)
    failures[:] = [f for f in failures if f]
    if failures:
        print(f"\nFAILED: {len(failures)} problem(s)")
        for f in failures:
            print(f"  - {f}")
        sys.exit(1)
    print("\nOK: all checks passed")


if __name__ == "__main__":
    main()
