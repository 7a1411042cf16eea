#!/usr/bin/env python3
"""Checks the plain Kubernetes manifests in deploy/k8s/ offline (no cluster):

* every file parses as YAML; kustomization.yaml lists files that exist;
* with `kubectl kustomize` (if kubectl is on PATH) the kustomization builds;
* every object (but the ServiceMonitor CRD) is valid against the Kubernetes OpenAPI schema,
  strictly (unknown fields fail), with kubernetes-validate (pip install kubernetes-validate);
* the sage pods have what the interface needs: port 9464 named metrics, GET /healthz liveness
  and /readyz readiness on it, terminationGracePeriodSeconds 60, non-root; one aggregator with
  replicas 1 and strategy Recreate; each Service selects one Deployment.

  python3 deploy/testing/validate-k8s.py      # last line "N passed, N failed"
"""

import shutil
import subprocess
import sys
from pathlib import Path

import yaml

K8S = Path(__file__).resolve().parent.parent / "k8s"
passed = failed = 0


def check(ok, what, detail=""):
    global passed, failed
    if ok:
        passed += 1
        print(f"ok    {what}")
    else:
        failed += 1
        print(f"FAIL  {what}" + (f"\n      {detail}" if detail else ""))


objs = []
for f in sorted(K8S.glob("*.yaml")):
    try:
        docs = [d for d in yaml.safe_load_all(f.read_text()) if d]
        check(True, f"{f.name}: {len(docs)} document(s) parse")
        objs += [(f.name, d) for d in docs]
    except yaml.YAMLError as e:
        check(False, f"{f.name} parses", str(e))

kust = yaml.safe_load((K8S / "kustomization.yaml").read_text())
missing = [r for r in kust["resources"] if not (K8S / r).exists()]
check(not missing, "kustomization.yaml resources exist", f"missing {missing}")
if shutil.which("kubectl"):
    r = subprocess.run(["kubectl", "kustomize", str(K8S)], check=False, capture_output=True, text=True)
    built = [d for d in yaml.safe_load_all(r.stdout) if d] if r.returncode == 0 else []
    check(
        r.returncode == 0
        and all(d["metadata"].get("namespace") == "sage" for d in built if d["kind"] != "Namespace"),
        f"kubectl kustomize builds ({len(built)} objects, all in namespace sage)",
        r.stderr.strip(),
    )
else:
    print("skip  kubectl kustomize (kubectl not on PATH)")

try:
    import kubernetes_validate as kv

    for name, d in objs:
        if d.get("kind") in ("Kustomization", "ServiceMonitor"):
            continue
        try:
            kv.validate(d, kv.latest_version(), strict=True)
            check(
                True,
                f"{name}: {d['kind']}/{d['metadata']['name']} valid (Kubernetes {kv.latest_version()}, strict)",
            )
        except Exception as e:  # noqa: BLE001
            check(False, f"{name}: {d['kind']}/{d['metadata']['name']} valid", str(e))
except ImportError:
    print("skip  schema checks (pip install kubernetes-validate)")

deps = [d for _, d in objs if d.get("kind") == "Deployment"]
for d in deps:
    pod = d["spec"]["template"]["spec"]
    c = pod["containers"][0]
    problems = []
    if pod.get("terminationGracePeriodSeconds") != 60:
        problems.append("grace != 60")
    if {"name": "metrics", "containerPort": 9464} not in c.get("ports", []):
        problems.append("no port 9464 named metrics")
    if c.get("livenessProbe", {}).get("httpGet") != {"path": "/healthz", "port": "metrics"}:
        problems.append("liveness")
    if c.get("readinessProbe", {}).get("httpGet") != {"path": "/readyz", "port": "metrics"}:
        problems.append("readiness")
    if not pod.get("securityContext", {}).get("runAsNonRoot"):
        problems.append("not runAsNonRoot")
    check(
        not problems,
        f"{d['metadata']['name']}: metrics port, probes, grace 60s, non-root",
        ", ".join(problems),
    )

aggs = [d for d in deps if d["spec"]["template"]["spec"]["containers"][0]["args"][0] == "aggregator"]
check(
    len(aggs) == 1 and aggs[0]["spec"]["replicas"] == 1 and aggs[0]["spec"]["strategy"]["type"] == "Recreate",
    "one aggregator, replicas 1, Recreate",
)
roles = sorted(d["spec"]["template"]["spec"]["containers"][0]["args"][2] for d in deps if d not in aggs)
check(
    roles == sorted(["dialogue", "user", "service", "judge", "rule"]),
    f"one worker Deployment per role: {roles}",
)
for s in (d for _, d in objs if d.get("kind") == "Service" and d["metadata"]["name"].startswith("sage-")):
    sel = s["spec"]["selector"]
    hits = [
        d
        for d in deps
        if all(d["spec"]["template"]["metadata"]["labels"].get(k) == v for k, v in sel.items())
    ]
    check(
        len(hits) == 1 and s["spec"]["ports"][0]["name"] == "metrics",
        f"Service {s['metadata']['name']} selects one Deployment, port metrics",
    )

print(f"\n{passed} passed, {failed} failed")
sys.exit(1 if failed else 0)
