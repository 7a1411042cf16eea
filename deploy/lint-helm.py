#!/usr/bin/env python3
"""Lint and render the Helm chart helm/sage offline: no helm binary, no cluster, no network.

    python3 deploy/lint-helm.py            # from anywhere; exit 0 when everything passes
    python3 deploy/lint-helm.py --out DIR  # also write each variant's rendered manifests to DIR

What it does:
  1. `helm lint` of the chart with its default values, through helm-sdkpy (Helm's Go library
     bundled in a Python package): errors fail, warnings fail, INFO lines are shown only.
  2. The same lint, and a render (`helm template`), for several sets of values (VARIANTS below:
     defaults, autoscaling on, everything on, one all-role group), through helm-python-sdk
     (also Helm's library, v4). Every rendered manifest must parse as YAML and hold together:
     Services select a Deployment, HPAs target one, the probes/ports/grace period are as the
     sage interface needs, exactly one aggregator with strategy Recreate, etc. The
     PrometheusRule, when rendered, must hold exactly the rules of deploy/alerts.yml.
  3. Each rendered object (but the Prometheus Operator's) is checked against the Kubernetes
     OpenAPI schema, strictly (unknown fields fail), by kubernetes-validate, when installed.
  4. Values the chart must refuse (unknown role, a bad env var name, ...) must fail.
The last line is "N passed, N failed".

Install (PyPI only):
  pip install pyyaml helm-python-sdk kubernetes-validate
  pip install helm-sdkpy     # declares Python >= 3.12; it loads on 3.11 with:
  pip install --ignore-requires-python helm-sdkpy
"""

from __future__ import annotations

import argparse
import asyncio
import copy
import json
import os
import secrets
import sys
import tempfile
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parent.parent
CHART = ROOT / "helm" / "sage"
ALERTS = ROOT / "deploy" / "alerts.yml"
RELEASE, NAMESPACE = "sage", "sage"
SEVERITY = {0: "UNKNOWN", 1: "INFO", 2: "WARNING", 3: "ERROR"}
ROLES = ["dialogue", "user", "service", "judge", "rule"]

# Credentials for the rendered Secrets: made up on each run, so no value that reads as a
# password or an API key is ever committed.
LINT_PASSWORD = "lint-" + secrets.token_hex(8)
LINT_API_KEY = "lint-" + secrets.token_hex(16)

# Values variants rendered and checked. "workers" = the worker Deployments expected
# (component -> args after `worker`), "hpa" = components with an HPA.
VARIANTS: dict[str, dict] = {
    "defaults": {
        "values": {},
        "workers": {r: ["--roles", r] + (["--concurrency", "256"] if r == "dialogue" else []) for r in ROLES},
        "hpa": [],
    },
    "autoscaling": {
        "values": {"roles": {r: {"autoscaling": {"enabled": True, "maxReplicas": 20}} for r in ROLES}},
        "workers": {r: ["--roles", r] + (["--concurrency", "256"] if r == "dialogue" else []) for r in ROLES},
        "hpa": ROLES,
    },
    "everything": {
        "values": {
            "image": {"repository": "registry.example.com/sage", "tag": "1.2.3"},
            "nats": {
                "url": "nats://nats.messaging:4222",
                "auth": {"user": "sage", "password": LINT_PASSWORD},
                "filesSecret": "sage-nats-files",
                "credsFile": "/etc/sage/nats/nats.creds",
                "tls": {"required": True, "caFile": "/etc/sage/nats/ca.crt"},
            },
            "models": {"apiKeys": {"OPENAI_API_KEY": LINT_API_KEY, "ANTHROPIC_API_KEY": LINT_API_KEY}},
            "roles": {
                "service": {
                    "models": [
                        "local-llm",
                        {
                            "name": "GPT-4o/mini",
                            "replicas": 4,
                            "autoscaling": {"enabled": True, "maxReplicas": 8},
                        },
                    ],
                    "deploymentPerModel": True,
                },
                "judge": {
                    "autoscaling": {
                        "enabled": True,
                        "maxReplicas": 6,
                        "targetMemoryUtilizationPercentage": 80,
                    },
                    "extraArgs": ["--log-format", "json"],
                },
            },
            "serviceMonitor": {"enabled": True, "labels": {"release": "prometheus"}},
            "prometheusRule": {"enabled": True, "labels": {"release": "prometheus"}},
            "otlp": {"endpoint": "http://otel-collector:4318"},
            "extraEnv": [{"name": "SAGE_CONCURRENCY", "value": "128"}],
            "metrics": {"port": 9464, "podAnnotations": True},
            "serviceAccount": {"create": True},
            "aggregator": {"persistence": {"existingClaim": "my-results"}},
            "nodeSelector": {"pool": "cpu"},
        },
        "workers": {
            "dialogue": ["--roles", "dialogue", "--concurrency", "256"],
            "user": ["--roles", "user"],
            "service-local-llm": ["--roles", "service", "--model", "local-llm"],
            "service-gpt-4o-mini": ["--roles", "service", "--model", "GPT-4o/mini"],
            "judge": ["--roles", "judge", "--log-format", "json"],
            "rule": ["--roles", "rule"],
        },
        "hpa": ["service-gpt-4o-mini", "judge"],
    },
    "all-in-one": {
        "values": {
            "roles": {
                **{r: {"enabled": False} for r in ROLES},
                "all": {
                    "roles": ROLES,
                    "replicas": 3,
                    "concurrency": 64,
                    "models": ["a", "b"],
                    "resources": {"requests": {"cpu": "1"}},
                },
            },
            "aggregator": {"persistence": {"enabled": False}},
        },
        "workers": {
            "all": ["--roles", ",".join(ROLES), "--model", "a", "--model", "b", "--concurrency", "64"]
        },
        "hpa": [],
    },
}

# Values the chart must refuse, with a piece of the expected message.
MUST_FAIL = {
    "unknown role": ({"roles": {"x": {"roles": ["dialog"]}}}, "dialog"),
    "models on a group without the service role": ({"roles": {"user": {"models": ["m"]}}}, "models"),
    "bad env var name in models.apiKeys": ({"models": {"apiKeys": {"OPENAI-KEY": "k"}}}, "OPENAI-KEY"),
    "negative replicas": ({"roles": {"rule": {"replicas": -1}}}, "replicas"),
    "log format not json|text": ({"logging": {"format": "yaml"}}, "format"),
}


class Report:
    def __init__(self) -> None:
        self.passed = 0
        self.failed = 0

    def check(self, ok: bool, what: str, detail: str = "") -> bool:
        if ok:
            self.passed += 1
            print(f"ok    {what}")
        else:
            self.failed += 1
            print(f"FAIL  {what}" + (f"\n      {detail}" if detail else ""))
        return ok


def lint_with_helm_sdkpy(rep: Report) -> None:
    """Step 1: Helm's own lint through helm-sdkpy, default values."""
    try:
        import helm_sdkpy
    except ImportError:
        rep.check(
            False,
            "helm-sdkpy lint",
            "helm-sdkpy is not installed: pip install --ignore-requires-python helm-sdkpy",
        )
        return
    with tempfile.TemporaryDirectory() as home:
        # Keep Helm's config/cache out of the user's home; no kubeconfig is needed for lint.
        os.environ.setdefault("HELM_CONFIG_HOME", os.path.join(home, "config"))
        os.environ.setdefault("HELM_CACHE_HOME", os.path.join(home, "cache"))
        os.environ.setdefault("HELM_DATA_HOME", os.path.join(home, "data"))
        cfg = helm_sdkpy.Configuration(namespace=NAMESPACE)
        result = asyncio.run(helm_sdkpy.Lint(cfg).run(str(CHART)))
    print(f"helm-sdkpy {helm_sdkpy.__version__} lint {CHART.relative_to(ROOT)}:")
    print("  " + json.dumps(result))
    msgs = result.get("Messages") or []
    if any(m.get("Err") == {} for m in msgs):
        print('  (helm-sdkpy\'s JSON drops the message texts, "Err": {}; the same lint through')
        print("  helm-python-sdk below prints them)")
    worst = max((m.get("Severity", 0) for m in msgs), default=0)
    errors = result.get("Errors") or []
    rep.check(
        worst < 2 and not errors,
        f"helm-sdkpy lint: {len(msgs)} message(s), worst severity {SEVERITY.get(worst, worst)}, {len(errors)} error(s)",
    )


def load_helm_python(rep: Report):
    try:
        import helm_python

        return helm_python
    except ImportError:
        rep.check(False, "helm-python-sdk available", "pip install helm-python-sdk")
        return None


def lint_variant(helm, rep: Report, name: str, values: dict) -> None:
    r = helm.lint(str(CHART), values, namespace=NAMESPACE)
    msgs = r.get("messages") or []
    for m in msgs:
        print(
            f"      [{SEVERITY.get(m.get('severity'), m.get('severity'))}] {m.get('path')}: {m.get('error')}"
        )
    worst = max((m.get("severity", 0) for m in msgs), default=0)
    rep.check(
        worst < 2 and not r.get("errors"),
        f"[{name}] helm lint (helm-python-sdk): worst severity {SEVERITY.get(worst, worst)}",
    )


def render(helm, values: dict) -> dict[str, str]:
    chart = helm.Chart.load(str(CHART))
    return chart.render(values, name=RELEASE, namespace=NAMESPACE, is_install=True)


def objects_of(rendered: dict[str, str]) -> list[dict]:
    objs = []
    for path, text in sorted(rendered.items()):
        if path.endswith("NOTES.txt"):
            continue
        for doc in yaml.safe_load_all(text):
            if doc:
                doc["__source"] = path
                objs.append(doc)
    return objs


def matches(selector: dict, labels: dict) -> bool:
    return all(labels.get(k) == v for k, v in selector.items())


def check_variant(helm, rep: Report, name: str, spec: dict, out_dir: Path | None, kv) -> None:
    values = copy.deepcopy(spec["values"])
    lint_variant(helm, rep, name, values)
    try:
        rendered = render(helm, values)
    except Exception as e:  # noqa: BLE001 - report any render failure
        rep.check(False, f"[{name}] renders", str(e))
        return
    try:
        objs = objects_of(rendered)
    except yaml.YAMLError as e:
        rep.check(False, f"[{name}] rendered manifests parse as YAML", str(e))
        return
    rep.check(True, f"[{name}] renders; {len(objs)} objects parse as YAML")
    if out_dir:
        d = out_dir / name
        d.mkdir(parents=True, exist_ok=True)
        for path, text in rendered.items():
            (d / Path(path).name).write_text(text)

    by_kind: dict[str, list[dict]] = {}
    for o in objs:
        by_kind.setdefault(o["kind"], []).append(o)
        rep_ok = o.get("apiVersion") and o.get("metadata", {}).get("name")
        if not rep_ok:
            rep.check(False, f"[{name}] {o['__source']}: apiVersion and metadata.name", repr(o)[:200])
    deps = {d["metadata"]["name"]: d for d in by_kind.get("Deployment", [])}

    def comp(o: dict) -> str | None:
        return o["metadata"]["labels"].get("app.kubernetes.io/component")

    # Workers: the expected Deployments with the expected args.
    workers = {comp(d): d for d in deps.values() if comp(d) != "aggregator"}
    rep.check(
        sorted(workers) == sorted(spec["workers"]),
        f"[{name}] worker Deployments {sorted(spec['workers'])}",
        f"got {sorted(workers)}",
    )
    for c, want in spec["workers"].items():
        d = workers.get(c)
        if not d:
            continue
        ctr = d["spec"]["template"]["spec"]["containers"][0]
        rep.check(
            ctr["args"] == ["worker"] + want,
            f"[{name}] {c}: args worker {' '.join(want)}",
            f"got {ctr['args']}",
        )

    # Every sage pod: port, probes, grace period, security, env sources.
    for d in deps.values():
        n = d["metadata"]["name"]
        pod = d["spec"]["template"]["spec"]
        ctr = pod["containers"][0]
        problems = []
        if pod.get("terminationGracePeriodSeconds") != 60:
            problems.append("terminationGracePeriodSeconds != 60")
        if {"name": "metrics", "containerPort": 9464, "protocol": "TCP"} not in ctr.get("ports", []):
            problems.append("no containerPort 9464 named metrics")
        if ctr.get("livenessProbe", {}).get("httpGet") != {"path": "/healthz", "port": "metrics"}:
            problems.append("liveness is not GET /healthz on metrics")
        if ctr.get("readinessProbe", {}).get("httpGet") != {"path": "/readyz", "port": "metrics"}:
            problems.append("readiness is not GET /readyz on metrics")
        if not pod.get("securityContext", {}).get("runAsNonRoot"):
            problems.append("not runAsNonRoot")
        if not ctr.get("envFrom") or "configMapRef" not in ctr["envFrom"][0]:
            problems.append("envFrom does not start with the ConfigMap")
        roles = ctr["args"][ctr["args"].index("--roles") + 1].split(",") if "--roles" in ctr["args"] else []
        has_keys = any(
            "secretRef" in e and e["secretRef"]["name"].endswith("model-keys") for e in ctr.get("envFrom", [])
        )
        wants_keys = bool(set(roles) & {"user", "service", "judge"}) and bool(
            values.get("models", {}).get("apiKeys") or values.get("models", {}).get("existingSecret")
        )
        if has_keys != wants_keys:
            problems.append(f"model keys attached={has_keys}, expected {wants_keys}")
        if name == "autoscaling" and comp(d) != "aggregator" and "replicas" in d["spec"]:
            problems.append("replicas set although an HPA scales it")
        rep.check(not problems, f"[{name}] {n}: port, probes, grace 60s, non-root, env", "; ".join(problems))

    # The aggregator.
    aggs = [d for d in deps.values() if comp(d) == "aggregator"]
    rep.check(
        len(aggs) == 1
        and aggs[0]["spec"]["replicas"] == 1
        and aggs[0]["spec"]["strategy"] == {"type": "Recreate"}
        and aggs[0]["spec"]["template"]["spec"]["containers"][0]["args"][:3]
        == ["aggregator", "--out", "/results"],
        f"[{name}] one aggregator, replicas 1, Recreate, --out /results",
    )
    claims = {p["metadata"]["name"] for p in by_kind.get("PersistentVolumeClaim", [])}
    vol = next(v for v in aggs[0]["spec"]["template"]["spec"]["volumes"] if v["name"] == "results")
    if "persistentVolumeClaim" in vol:
        cn = vol["persistentVolumeClaim"]["claimName"]
        ext = values.get("aggregator", {}).get("persistence", {}).get("existingClaim")
        rep.check(cn in claims or cn == ext, f"[{name}] results claim {cn} exists or is the existingClaim")
    else:
        rep.check("emptyDir" in vol, f"[{name}] results on an emptyDir (persistence off)")

    # Services select exactly one Deployment's pods and expose port `metrics`.
    for s in by_kind.get("Service", []):
        sel = s["spec"]["selector"]
        hits = [d for d in deps.values() if matches(sel, d["spec"]["template"]["metadata"]["labels"])]
        port_ok = any(p["name"] == "metrics" and p["targetPort"] == "metrics" for p in s["spec"]["ports"])
        job_ok = s["metadata"]["labels"].get("sage-job") in ("sage-worker", "sage-aggregator")
        rep.check(
            len(hits) == 1 and port_ok and job_ok,
            f"[{name}] Service {s['metadata']['name']}: selects 1 Deployment, port metrics, sage-job label",
        )
    rep.check(len(by_kind.get("Service", [])) == len(deps), f"[{name}] one Service per Deployment")

    # HPAs target an existing Deployment, only where enabled.
    hpas = by_kind.get("HorizontalPodAutoscaler", [])
    got = sorted(comp(h) for h in hpas)
    rep.check(got == sorted(spec["hpa"]), f"[{name}] HPAs for {sorted(spec['hpa'])}", f"got {got}")
    for h in hpas:
        t = h["spec"]["scaleTargetRef"]
        rep.check(
            h["apiVersion"] == "autoscaling/v2"
            and t["kind"] == "Deployment"
            and t["name"] in deps
            and h["spec"]["minReplicas"] <= h["spec"]["maxReplicas"],
            f"[{name}] HPA {h['metadata']['name']} targets Deployment {t['name']}",
        )

    # Secrets referenced by envFrom exist, unless they are existingSecret names.
    secrets = {s["metadata"]["name"] for s in by_kind.get("Secret", [])}
    refs = set()
    for d in deps.values():
        for e in d["spec"]["template"]["spec"]["containers"][0].get("envFrom", []):
            if "secretRef" in e:
                refs.add(e["secretRef"]["name"])
    external = {values.get("nats", {}).get("existingSecret"), values.get("models", {}).get("existingSecret")}
    rep.check(
        refs - external <= secrets,
        f"[{name}] envFrom Secrets {sorted(refs)} are rendered",
        f"missing {sorted(refs - external - secrets)}",
    )
    for s in by_kind.get("Secret", []):
        rep.check(
            all(isinstance(v, str) for v in (s.get("data") or {}).values()),
            f"[{name}] Secret {s['metadata']['name']} data are base64 strings",
        )

    # ServiceMonitor selects the Services.
    sms = by_kind.get("ServiceMonitor", [])
    want_sm = bool(values.get("serviceMonitor", {}).get("enabled"))
    rep.check(len(sms) == (1 if want_sm else 0), f"[{name}] ServiceMonitor rendered: {want_sm}")
    for sm in sms:
        sel = sm["spec"]["selector"]["matchLabels"]
        n_svc = sum(matches(sel, s["metadata"]["labels"]) for s in by_kind.get("Service", []))
        rep.check(
            n_svc == len(by_kind.get("Service", []))
            and sm["spec"]["jobLabel"] == "sage-job"
            and sm["spec"]["endpoints"][0]["port"] == "metrics",
            f"[{name}] ServiceMonitor selects all {n_svc} Services, jobLabel sage-job, port metrics",
        )

    # PrometheusRule: the rules of deploy/alerts.yml, unchanged.
    prs = by_kind.get("PrometheusRule", [])
    want_pr = bool(values.get("prometheusRule", {}).get("enabled"))
    rep.check(len(prs) == (1 if want_pr else 0), f"[{name}] PrometheusRule rendered: {want_pr}")
    for pr in prs:
        rep.check(
            pr["spec"] == yaml.safe_load(ALERTS.read_text()),
            f"[{name}] PrometheusRule {pr['metadata']['name']}: spec is deploy/alerts.yml",
            "the chart's rules differ from deploy/alerts.yml (helm/sage/files/alerts.yml must link to it)",
        )

    # Kubernetes schema, strict.
    if kv is not None:
        bad = []
        n = 0
        for o in objs:
            if o["apiVersion"].startswith("monitoring.coreos.com/"):
                continue
            clean = {k: v for k, v in o.items() if k != "__source"}
            n += 1
            try:
                kv.validate(clean, kv.latest_version(), strict=True)
            except Exception as e:  # noqa: BLE001
                bad.append(f"{o['kind']}/{o['metadata']['name']}: {e}")
        rep.check(
            not bad,
            f"[{name}] {n} objects valid against the Kubernetes {kv.latest_version()} schema (strict)",
            "\n      ".join(bad),
        )


def check_must_fail(helm, rep: Report) -> None:
    for what, (values, needle) in MUST_FAIL.items():
        try:
            render(helm, values)
            rendered_ok = True
            msg = "rendered without an error"
        except Exception as e:  # noqa: BLE001
            rendered_ok = False
            msg = str(e)
        if not rendered_ok:
            # The schema or the template refused it; make sure it is for the right reason.
            rep.check(needle in msg, f"refused: {what}", msg)
            continue
        # Render does not apply values.schema.json; lint does.
        r = helm.lint(str(CHART), values, namespace=NAMESPACE)
        errs = [m["error"] for m in r.get("messages") or [] if m.get("severity") == 3] + list(
            r.get("errors") or []
        )
        rep.check(any(needle in e for e in errs), f"refused: {what}", msg + "; lint: " + " | ".join(errs))


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", type=Path, help="write the rendered manifests of each variant here")
    args = ap.parse_args()

    rep = Report()
    print(f"== helm lint (helm-sdkpy), chart {CHART.relative_to(ROOT)}")
    lint_with_helm_sdkpy(rep)

    helm = load_helm_python(rep)
    if helm is not None:
        try:
            import kubernetes_validate as kv
        except ImportError:
            # A check that cannot run fails: nothing is skipped.
            kv = None
            rep.check(
                False,
                "Kubernetes schema checks",
                "kubernetes-validate is not installed: pip install kubernetes-validate",
            )
        print(f"== lint + render per values variant (helm-python-sdk, Helm {helm.helm_sdk_version()})")
        for name, spec in VARIANTS.items():
            check_variant(helm, rep, name, spec, args.out, kv)
        print("== values the chart must refuse")
        check_must_fail(helm, rep)

    print(f"\n{rep.passed} passed, {rep.failed} failed")
    return 1 if rep.failed else 0


if __name__ == "__main__":
    sys.exit(main())
