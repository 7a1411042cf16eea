#!/usr/bin/env python3
"""Does the prompt layout let a server's prefix cache hit across dialogues? (docs/benchmarks.md)

Sends the Telecom agent's system prompt of dialogue A, then of dialogue B (other system values),
to a real OpenAI-compatible server with max_tokens 1, and times B: once with the job's values in
the last section (SAGE-RS's layout) and once with them before the SOP flow (the layout before),
alternating. llama.cpp keeps the last prompt's KV cache and reads only what follows the common
prefix, so B costs what differs from A.

  cargo test --test prompts -- --ignored --nocapture render_telecom > /tmp/render.txt
  SAGE_LOCAL_MODEL=smollm2-135m-instruct ../shared/tools/local-model-server start   # prints URL
  python3 benches/prefix_cache.py URL /tmp/render.txt
  ../shared/tools/local-model-server stop
"""
import json
import sys
import time
import urllib.request

base, render = sys.argv[1], open(sys.argv[2]).read()
agent = render[render.index("You are a professional"):render.index("=====")].rstrip("\n") + "\n"
cut = agent.index("\n[Current System Information]\n")
stable, values_a = agent[: cut + 1], agent[cut + 1 :]
values_b = values_a.replace("Contracted", "NoContract").replace("Penalty: 200", "Penalty: 0")


def layouts(values):
    sop = stable.index("[SOP Flow Introduction]")
    return stable + values, stable[:sop] + values + "\n" + stable[sop:]


(new_a, old_a), (new_b, old_b) = layouts(values_a), layouts(values_b)


def call(system):
    body = json.dumps({
        "model": "smollm2-135m-instruct", "max_tokens": 1, "temperature": 0,
        "messages": [{"role": "system", "content": system},
                     {"role": "user", "content": "I want to change my package."}],
    }).encode()
    start = time.time()
    request = urllib.request.Request(base + "/chat/completions", body,
                                     {"Content-Type": "application/json"})
    usage = json.load(urllib.request.urlopen(request, timeout=300))["usage"]
    return time.time() - start, usage["prompt_tokens"]


call(new_a)  # warm-up
for rep in range(3):
    for name, a, b in [("values last (now)", new_a, new_b),
                       ("values before the SOP (before)", old_a, old_b)]:
        time_a, _ = call(a)
        time_b, tokens = call(b)
        print(f"rep {rep} {name}: dialogue A {time_a:.2f} s, then dialogue B {time_b:.2f} s "
              f"({tokens} prompt tokens)", flush=True)
