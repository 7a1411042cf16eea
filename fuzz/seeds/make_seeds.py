#!/usr/bin/env python3
"""Writes the seed corpora of the fuzz targets (docs/fuzzing.md) from the project's real inputs.

    python3 fuzz/seeds/make_seeds.py SAGE_RESULTS DESK_RESULTS

SAGE_RESULTS and DESK_RESULTS are results folders of `sage run --dialogues 1` and
`sage run --suite support-desk` (simulated models, seed 42). Besides them it reads the
bundled scenarios, the malformed-scenario corpus (tests/malformed), examples/run.yaml and the
Northline store, and writes fuzz/seeds/mini_store.yaml and mini_cases.yaml (a consistent
slice of Northline: the desk_yaml target's partner file) and fuzz/corpus/<target>/ files named
by their SHA-1, as libFuzzer names them. Hand-written seeds (LLM bodies, headers, command
lines, tool calls, customer answers) are kept as they are. Minimize afterwards with
`cargo fuzz cmin`.
"""

import hashlib
import json
import os
import sys

import yaml

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
CORPUS = os.path.join(ROOT, "fuzz", "corpus")
SEEDS = os.path.join(ROOT, "fuzz", "seeds")
# The bundled scenarios in the order of sage::scenario::bundled::BUNDLED (file names sorted):
# a target's first byte picks one by this index.
BUNDLED = sorted(f for f in os.listdir(os.path.join(ROOT, "scenarios")) if f.endswith(".yaml"))
# nats_message's first byte: the message kind.
KINDS = [
    "DialogueJob", "DeskJob", "UserRequest", "UserReply", "ServiceRequest", "ServiceReply",
    "JudgeRequest", "JudgeReply", "RuleRequest", "RuleReply", "DeskAgentRequest",
    "DeskAgentReply", "DeskCustomerRequest", "DeskCustomerReply", "DeskJudgeRequest",
    "DeskJudgeReply", "RunSpec", "RunStatus", "RecordHead",
]


def put(target, data):
    if isinstance(data, str):
        data = data.encode()
    folder = os.path.join(CORPUS, target)
    os.makedirs(folder, exist_ok=True)
    with open(os.path.join(folder, hashlib.sha1(data).hexdigest()), "wb") as f:
        f.write(data)


def compact(value):
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False)


def message(kind, value):
    put("nats_message", bytes([KINDS.index(kind)]) + compact(value).encode())


def lines(path):
    with open(path, encoding="utf-8") as f:
        return [line for line in f if line.strip()]


def scenario_index(scenario_id):
    for i, name in enumerate(BUNDLED):
        if name == scenario_id + ".yaml":
            return i
    raise SystemExit(f"scenario {scenario_id} is not bundled")


def mini_desk():
    """Three cases (one per bucket) and their orders, from Northline."""
    with open(os.path.join(ROOT, "scenarios", "northline", "store.yaml"), encoding="utf-8") as f:
        store = yaml.safe_load(f)
    with open(os.path.join(ROOT, "scenarios", "northline", "cases.yaml"), encoding="utf-8") as f:
        cases = yaml.safe_load(f)["cases"]
    picked = [next(c for c in cases if c["bucket"] == b)
              for b in ("resolvable", "must_escalate", "adversarial")]
    numbers = {c["order"] for c in picked}
    store["orders"] = [o for o in store["orders"] if o["number"] in numbers]
    store["policy"] = store["policy"][:3]
    texts = (yaml.safe_dump(store, sort_keys=False, allow_unicode=True),
             yaml.safe_dump({"cases": picked}, sort_keys=False, allow_unicode=True))
    for name, text in zip(("mini_store.yaml", "mini_cases.yaml"), texts):
        with open(os.path.join(SEEDS, name), "w", encoding="utf-8") as f:
            f.write(text)
    return texts


def smallest(records, n):
    return sorted(records, key=len)[:n]


def main(sage_dir, desk_dir):
    # Files as they are.
    for name in BUNDLED:
        with open(os.path.join(ROOT, "scenarios", name), encoding="utf-8") as f:
            put("scenario_yaml", f.read())
    malformed = os.path.join(ROOT, "tests", "malformed")
    for name in sorted(os.listdir(malformed)):
        with open(os.path.join(malformed, name), encoding="utf-8") as f:
            put("scenario_yaml", f.read())
    with open(os.path.join(ROOT, "examples", "run.yaml"), encoding="utf-8") as f:
        put("run_config", f.read())
    store, cases = mini_desk()
    put("desk_yaml", b"\x00" + store.encode())
    put("desk_yaml", b"\x01" + cases.encode())
    put("desk_yaml", b"\x02" + store.encode() + b"\x00" + cases.encode())

    # The SAGE run.
    with open(os.path.join(sage_dir, "manifest.json"), encoding="utf-8") as f:
        manifest = json.load(f)
    put("run_config", yaml.safe_dump(manifest["config"], sort_keys=False))
    raw = lines(os.path.join(sage_dir, "dialogues.jsonl"))
    for line in smallest(raw, 3):
        put("dialogue_record", line.rstrip("\n"))
        message("RecordHead", json.loads(line))
    records = [json.loads(line) for line in smallest(raw, 60)]
    seen = set()
    for r in records:
        job, sc = r["job"], r["job"]["scenario"]
        selector = scenario_index(sc)
        history = []
        for t in r["turns"][:3]:
            kind = t["outcome"]["kind"]
            if t.get("raw_output") and (sc, kind) not in seen:
                seen.add((sc, kind))
                put("agent_answer", bytes([selector]) + t["raw_output"].encode())
            put("customer_answer", t["user_message"]) if len(seen) < 8 else None
            for j in (t.get("judges") or {}).get("judgments", [])[:1]:
                if "Ok" in j and (sc, "judge") not in seen:
                    seen.add((sc, "judge"))
                    verdict = {
                        "classification": j["Ok"]["classification"],
                        "classification_reasoning": "From the customer's words.",
                        "chat_quality_dimensions": j["Ok"]["chat"],
                    }
                    put("judge_answer", bytes([selector]) + json.dumps(verdict, indent=2).encode())
            if sc not in seen:
                seen.add(sc)
                message("DialogueJob", job)
                base = {"job": job, "turn": t["turn"], "history": history}
                message("UserRequest", dict(base, last_action=None))
                message("ServiceRequest", dict(base, user_message=t["user_message"]))
                chat = t["outcome"].get("turn", {}).get("chat", "Hello, how can I help?")
                message("JudgeRequest", dict(base, user_message=t["user_message"], agent_chat=chat))
                message("UserReply", {"message": t["user_message"], "calls": t["calls"][:1], "infra_error": None})
                message("ServiceReply", {"outcome": t["outcome"], "raw": t["raw_output"], "calls": t["calls"][1:2]})
                if t.get("judges"):
                    message("JudgeReply", t["judges"])
                message("RuleRequest", {"scenario": sc, "fields": job["fields"], "variables": job["variables"]})
                message("RuleReply", {"route": {"Ok": job["target"]}})
            history = history + [{"speaker": "user", "text": t["user_message"]},
                                 {"speaker": "agent", "text": "Noted."}]
    with open(os.path.join(ROOT, "scenarios", "telecom_package.yaml"), encoding="utf-8") as f:
        telecom = f.read()
    message("RunSpec", {"suite": "sage", "manifest": manifest, "scenarios": [["telecom_package.yaml", telecom]]})
    legacy = {"manifest": manifest, "scenarios": []}
    message("RunSpec", legacy)
    status = {"run_id": manifest["run_id"], "state": "running", "jobs": manifest["jobs"], "stored": 3,
              "turns": 17, "infra_errors": 0, "submitted_at": manifest["created_at"],
              "updated_at": manifest["created_at"], "leaderboard": None, "results": None}
    message("RunStatus", status)
    message("RunStatus", dict(status, state="complete", leaderboard="| model |", results="results/x"))

    # The support-desk run.
    with open(os.path.join(desk_dir, "manifest.json"), encoding="utf-8") as f:
        desk_manifest = json.load(f)
    put("desk_config", yaml.safe_dump(desk_manifest["config"], sort_keys=False))
    message("RunSpec", {"suite": "support-desk", "manifest": desk_manifest, "store": store, "cases": cases})
    raw = lines(os.path.join(desk_dir, "desk.jsonl"))
    for line in smallest(raw, 3):
        put("desk_record", line.rstrip("\n"))
        message("RecordHead", json.loads(line))
    for line in smallest(raw, 2):
        r = json.loads(line)
        job = r["job"]
        calls = r["run"]["calls"]
        email = r["transcript"][0]["text"]
        messages = [{"role": "user", "content": email}]
        message("DeskJob", job)
        message("DeskAgentRequest", {"job": job, "turn": 1, "messages": messages, "calls": []})
        message("DeskAgentReply", {"messages": [{"role": "assistant", "content": "Let me look."}],
                                   "answer": "Let me look.", "tool_calls": calls,
                                   "lines": r["transcript"][1:2], "ended": False, "truncated": False,
                                   "calls": r["calls"][:1], "infra_error": None})
        message("DeskCustomerRequest", {"job": job, "turn": 2, "messages": messages, "calls": calls})
        message("DeskCustomerReply", {"message": "Thanks. [END]", "done": True, "calls": [], "infra_error": None})
        transcript = "\n".join(f"{l['speaker']}: {l['text']}" for l in r["transcript"])
        message("DeskJudgeRequest", {"job": job, "transcript": transcript, "verdict": r["verdict"], "calls": calls})
        message("DeskJudgeReply", {"judged": r["run"]["judged"], "rejudged": r["run"]["rejudged"],
                                   "calls": [], "infra_error": None})
        if r["run"]["judged"]:
            put("judge_answer", b"\x80" + compact(r["run"]["judged"]).encode())
            put("judge_answer", b"\x80Scores:\n```json\n" + json.dumps(r["run"]["rejudged"]).encode() + b"\n```")


if __name__ == "__main__":
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    main(sys.argv[1], sys.argv[2])
