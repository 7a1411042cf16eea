#!/bin/sh
# Calls per dialogue and per turn of the default simulated run, per judge_turns and panel size.
# (docs/benchmarks.md, "Model calls per dialogue"). usage: sh benches/judge_calls.sh target/debug/sage
set -e
SAGE=$1; D=$(mktemp -d)
for jt in paper every; do for panel in 1 3; do
  judges=$(seq -s, 1 $panel | sed 's/\([0-9]\)/sim-judge-\1/g')
  cat > $D/run.yaml <<Y
models:
  - {name: sim-strong, provider: simulated, sim: {kind: agent, profile: strong}}
  - {name: sim-balanced, provider: simulated, sim: {kind: agent, profile: balanced}}
  - {name: sim-weak, provider: simulated, sim: {kind: agent, profile: weak}}
  - {name: sim-user, provider: simulated, sim: {kind: user}}
  - {name: sim-judge-1, provider: simulated, sim: {kind: judge}}
  - {name: sim-judge-2, provider: simulated, sim: {kind: judge, noise: 0.03}}
  - {name: sim-judge-3, provider: simulated, sim: {kind: judge, noise: 0.06}}
service_models: [sim-strong, sim-balanced, sim-weak]
user_model: sim-user
judge_models: [$judges]
judge_turns: $jt
Y
  $SAGE run --quiet --config $D/run.yaml --out $D/out --run-id $jt-$panel > /dev/null
  python3 - $D/out/$jt-$panel/dialogues.jsonl $jt $panel <<'P'
import json, sys
d = t = c = j = 0
for line in open(sys.argv[1]):
    r = json.loads(line)
    d += 1; t += len(r["turns"])
    calls = [x for tr in r["turns"] for x in tr["calls"]] + r.get("closing_calls", [])
    c += len(calls); j += sum(1 for x in calls if x["model"].startswith("sim-judge"))
print(f"| {sys.argv[2]} | {sys.argv[3]} | {d} | {t} | {c} | {c/d:.2f} | {c/t:.3f} | {j/d:.2f} |")
P
done; done
rm -rf $D
