#!/usr/bin/env python3
"""Lint and render the Helm chart helm/sage offline: no helm binary, no cluster, no network.

    python3 deploy/lint-helm.py            # from anywhere; exit 0 when everything passes
    python3 deploy/lint-helm.py --out DIR  # also write each variant's rendered manifests to DIR

What it does:
  1. `helm lint` of the chart with its default values, through helm-sdkpy (Helm's Go library
     bundled in a Python package): errors fail, warnings fail, INFO lines are shown only.
  2. The same lint, and a render (`helm template`), for several sets of values (VARIANTS below:
     defaults, autoscaling on CPU, everything on, one all-role group, the work-based autoscaling
     modes keda and metrics), through helm-python-sdk (also Helm's library, v4). Every rendered
     manifest must parse as YAML and hold together: Services select a Deployment, HPAs and KEDA
     ScaledObjects target one (and never both the same one), the probes/ports/grace period are as
     the sage interface needs, exactly one aggregator with strategy Recreate, etc. The
     PrometheusRule, when rendered, must hold exactly the rules of deploy/alerts.yml.
  3. Each rendered object (but the Prometheus Operator's and KEDA's) is checked against the
     Kubernetes OpenAPI schema, strictly (unknown fields fail), by kubernetes-validate, when
     installed. A ScaledObject is checked against KEDA_SCALEDOBJECT_SCHEMA below (the fields and
     types of KEDA's CRD, keda.sh/v1alpha1, written out here: kubernetes-validate has no CRDs)
     and the required metadata of its triggers; its nats-jetstream trigger must name the jobs
     stream and consumer of crates/ports/src/transport/nats.rs, and its PromQL is run by
     `promtool test rules` on made-up series (the limit-wait gate opens and closes as documented).
  4. Values the chart must refuse (unknown role, a bad env var name, a bad autoscaling mode, ...)
     must fail.
The last line is "N passed, N failed".

Install (PyPI only):
  pip install pyyaml helm-python-sdk kubernetes-validate
  pip install helm-sdkpy     # declares Python >= 3.12; it loads on 3.11 with:
  pip install --ignore-requires-python helm-sdkpy
and promtool (Debian/Ubuntu: apt-get install prometheus) for the PromQL of the ScaledObjects.
"""

from __future__ import annotations

import argparse
import asyncio
import copy
import json
import os
import re
import secrets
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parent.parent
CHART = ROOT / "helm" / "sage"
ALERTS = ROOT / "deploy" / "alerts.yml"
NATS_RS = ROOT / "crates" / "ports" / "src" / "transport" / "nats.rs"
RELEASE, NAMESPACE = "sage", "sage"
SEVERITY = {0: "UNKNOWN", 1: "INFO", 2: "WARNING", 3: "ERROR"}
ROLES = ["dialogue", "user", "service", "judge", "rule"]

# Credentials for the rendered Secrets: made up on each run, so no value that reads as a
# password or an API key is ever committed.
LINT_PASSWORD = "lint-" + secrets.token_hex(8)
LINT_API_KEY = "lint-" + secrets.token_hex(16)

PROMETHEUS = "http://prometheus-operated.monitoring.svc:9090"

# Values variants rendered and checked. "workers" = the worker Deployments expected
# (component -> args after `worker`), "hpa" = components with an HPA, "keda" = components with
# a KEDA ScaledObject, "metrics_hpa" = the HPAs on the Prometheus adapter's metrics (mode
# metrics; the other HPAs are on CPU), "lag" = the jobs per worker the backlog triggers aim at.
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
    # The dialogue group on KEDA (backlog + saturation), the user group still on CPU.
    "keda": {
        "values": {
            "roles": {
                "dialogue": {
                    "autoscaling": {"enabled": True, "mode": "keda", "minReplicas": 1, "maxReplicas": 12}
                },
                "user": {"autoscaling": {"enabled": True, "maxReplicas": 20}},
            },
            "autoscaling": {"prometheus": {"serverAddress": PROMETHEUS}},
            "serviceMonitor": {"enabled": True},
        },
        "workers": {r: ["--roles", r] + (["--concurrency", "256"] if r == "dialogue" else []) for r in ROLES},
        "hpa": ["user"],
        "keda": ["dialogue"],
        "lag": 256,
    },
    # One all-role group on KEDA from zero, holding while the providers make callers wait.
    "keda-limit-wait": {
        "values": {
            "roles": {
                **{r: {"enabled": False} for r in ROLES},
                "all": {
                    "roles": ROLES,
                    "concurrency": 64,
                    "autoscaling": {
                        "enabled": True,
                        "mode": "keda",
                        "minReplicas": 0,
                        "maxReplicas": 8,
                        "activationLagThreshold": 10,
                        "maxLimitWaitSeconds": 2,
                        "pollingInterval": 10,
                        "cooldownPeriod": 600,
                        "behavior": {
                            "scaleDown": {
                                "stabilizationWindowSeconds": 600,
                                "policies": [{"type": "Pods", "value": 1, "periodSeconds": 120}],
                            }
                        },
                    },
                },
            },
            "autoscaling": {
                "keda": {"natsServerMonitoringEndpoint": "nats.messaging.svc:8222"},
                "prometheus": {"serverAddress": PROMETHEUS},
            },
            "aggregator": {"persistence": {"enabled": False}},
        },
        "workers": {"all": ["--roles", ",".join(ROLES), "--concurrency", "64"]},
        "hpa": [],
        "keda": ["all"],
        "lag": 64,
    },
    # The dialogue group on the Prometheus adapter's metrics, the judge group on CPU.
    "metrics": {
        "values": {
            "roles": {
                "dialogue": {
                    "autoscaling": {
                        "enabled": True,
                        "mode": "metrics",
                        "maxReplicas": 16,
                        "lagThreshold": 200,
                        "targetSaturation": 0.75,
                    }
                },
                "judge": {"autoscaling": {"enabled": True, "maxReplicas": 6}},
            },
        },
        "workers": {r: ["--roles", r] + (["--concurrency", "256"] if r == "dialogue" else []) for r in ROLES},
        "hpa": ["dialogue", "judge"],
        "metrics_hpa": ["dialogue"],
        "lag": 200,
    },
}

# The fields and types of KEDA's ScaledObject CRD (keda.sh/v1alpha1, KEDA 2.x
# config/crd/bases/keda.sh_scaledobjects.yaml), written out for the parts this chart renders:
# unknown fields fail, as the API server's structural schema would prune or refuse them.
_INT32 = {"type": "integer", "minimum": -(2**31), "maximum": 2**31 - 1}
_STR = {"type": "string"}
KEDA_SCALEDOBJECT_SCHEMA = {
    "type": "object",
    "additionalProperties": False,
    "required": ["apiVersion", "kind", "metadata", "spec"],
    "properties": {
        "apiVersion": {"const": "keda.sh/v1alpha1"},
        "kind": {"const": "ScaledObject"},
        "metadata": {
            "type": "object",
            "required": ["name", "namespace"],
            "properties": {"name": _STR, "namespace": _STR, "labels": {"type": "object"}},
        },
        "spec": {
            "type": "object",
            "additionalProperties": False,
            "required": ["scaleTargetRef", "triggers"],
            "properties": {
                "scaleTargetRef": {
                    "type": "object",
                    "additionalProperties": False,
                    "required": ["name"],
                    "properties": {
                        "apiVersion": _STR,
                        "kind": _STR,
                        "name": _STR,
                        "envSourceContainerName": _STR,
                    },
                },
                "pollingInterval": _INT32,
                "cooldownPeriod": _INT32,
                "initialCooldownPeriod": _INT32,
                "idleReplicaCount": _INT32,
                "minReplicaCount": _INT32,
                "maxReplicaCount": _INT32,
                "advanced": {
                    "type": "object",
                    "additionalProperties": False,
                    "properties": {
                        "horizontalPodAutoscalerConfig": {
                            "type": "object",
                            "additionalProperties": False,
                            "properties": {"name": _STR, "behavior": {"type": "object"}},
                        },
                        "restoreToOriginalReplicaCount": {"type": "boolean"},
                        "scalingModifiers": {"type": "object"},
                    },
                },
                "fallback": {
                    "type": "object",
                    "required": ["failureThreshold", "replicas"],
                    "properties": {"failureThreshold": _INT32, "replicas": _INT32},
                },
                "triggers": {
                    "type": "array",
                    "minItems": 1,
                    "items": {
                        "type": "object",
                        "additionalProperties": False,
                        "required": ["type", "metadata"],
                        "properties": {
                            "type": _STR,
                            "name": _STR,
                            "metadata": {"type": "object", "additionalProperties": _STR},
                            "metricType": {"enum": ["AverageValue", "Value", "Utilization"]},
                            "useCachedMetrics": {"type": "boolean"},
                            "authenticationRef": {
                                "type": "object",
                                "required": ["name"],
                                "properties": {"name": _STR, "kind": _STR},
                            },
                        },
                    },
                },
            },
        },
    },
}

# Metadata KEDA's scalers require (their docs and parse functions): name -> how it must parse.
_INT_RE = r"-?[0-9]+"
_FLOAT_RE = r"-?([0-9]+(\.[0-9]*)?|\.[0-9]+)([eE][-+]?[0-9]+)?"
TRIGGER_METADATA = {
    "nats-jetstream": {
        "required": {
            "natsServerMonitoringEndpoint": r"[^:/ ]+:[0-9]+",
            "account": r".+",
            "stream": r".+",
            "consumer": r".+",
        },
        "optional": {"lagThreshold": _INT_RE, "activationLagThreshold": _INT_RE, "useHttps": r"true|false"},
    },
    "prometheus": {
        "required": {"serverAddress": r"https?://.+", "query": r"(?s).+", "threshold": _FLOAT_RE},
        "optional": {"activationThreshold": _FLOAT_RE, "ignoreNullValues": r"true|false"},
    },
}

# Values the chart must refuse, with a piece of the expected message.
MUST_FAIL = {
    "unknown role": ({"roles": {"x": {"roles": ["dialog"]}}}, "dialog"),
    "models on a group without the service role": ({"roles": {"user": {"models": ["m"]}}}, "models"),
    "bad env var name in models.apiKeys": ({"models": {"apiKeys": {"OPENAI-KEY": "k"}}}, "OPENAI-KEY"),
    "negative replicas": ({"roles": {"rule": {"replicas": -1}}}, "replicas"),
    "log format not json|text": ({"logging": {"format": "yaml"}}, "format"),
    "autoscaling mode not cpu|keda|metrics": (
        {"roles": {"dialogue": {"autoscaling": {"enabled": True, "mode": "queue"}}}},
        "value must be one of 'cpu', 'keda', 'metrics'",
    ),
    "mode keda on a group without the dialogue role": (
        {"roles": {"judge": {"autoscaling": {"enabled": True, "mode": "keda"}}}},
        "does not serve the dialogue role",
    ),
    "mode keda with a saturation trigger and no Prometheus address": (
        {"roles": {"dialogue": {"autoscaling": {"enabled": True, "mode": "keda"}}}},
        "set autoscaling.prometheus.serverAddress",
    ),
    "minReplicas 0 outside mode keda": (
        {"roles": {"dialogue": {"autoscaling": {"enabled": True, "mode": "metrics", "minReplicas": 0}}}},
        "0 needs mode keda",
    ),
    "maxLimitWaitSeconds outside mode keda": (
        {"roles": {"dialogue": {"autoscaling": {"enabled": True, "mode": "metrics", "maxLimitWaitSeconds": 2}}}},
        "maxLimitWaitSeconds needs mode keda",
    ),
}


# The same refused by the templates themselves, rendered from a copy of the chart without
# values.schema.json (as with helm --skip-schema-validation; lint cannot tell, since `fail` only
# logs in lint mode): the message names the value and the modes.
TEMPLATE_MUST_FAIL = {
    "autoscaling mode not cpu|keda|metrics": (
        {"roles": {"dialogue": {"autoscaling": {"enabled": True, "mode": "queue"}}}},
        "roles.dialogue.autoscaling.mode: queue is not a mode; use cpu (an HPA on CPU), keda",
    ),
    "autoscaling mode not cpu|keda|metrics, autoscaling off": (
        {"roles": {"all": {"roles": ROLES, "autoscaling": {"mode": "hpa"}}}},
        "roles.all.autoscaling.mode: hpa is not a mode",
    ),
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
        scaled = comp(d) in spec["hpa"] or comp(d) in spec.get("keda", [])
        if comp(d) != "aggregator" and scaled and "replicas" in d["spec"]:
            problems.append("replicas set although an HPA or KEDA scales it")
        if comp(d) != "aggregator" and not scaled and "replicas" not in d["spec"]:
            problems.append("no replicas although nothing scales it")
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
        if comp(h) in spec.get("metrics_hpa", []):
            check_metrics_hpa(rep, name, h, spec)
        else:
            # Mode cpu, as before the work-based modes: CPU utilization first, only resources.
            ms = h["spec"]["metrics"]
            rep.check(
                ms[0]["type"] == "Resource"
                and ms[0]["resource"]["name"] == "cpu"
                and ms[0]["resource"]["target"]["type"] == "Utilization"
                and all(m["type"] == "Resource" for m in ms)
                and (name != "autoscaling" or ms == [CPU_70]),
                f"[{name}] HPA {h['metadata']['name']}: mode cpu, on CPU utilization only",
                json.dumps(ms),
            )

    # KEDA ScaledObjects: where mode keda, never together with an HPA of the chart.
    sos = by_kind.get("ScaledObject", [])
    got = sorted(comp(o) for o in sos)
    want = sorted(spec.get("keda", []))
    rep.check(got == want, f"[{name}] KEDA ScaledObjects for {want}", f"got {got}")
    both = set(got) & {comp(h) for h in hpas}
    rep.check(not both, f"[{name}] no Deployment has both an HPA and a ScaledObject", f"both: {sorted(both)}")
    for o in sos:
        check_scaled_object(rep, name, o, deps, spec)

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
            and sm["spec"]["endpoints"][0]["port"] == "metrics"
            and {"action": "labeldrop", "regex": "endpoint"} in sm["spec"]["endpoints"][0]["relabelings"],
            f"[{name}] ServiceMonitor selects all {n_svc} Services, jobLabel sage-job, port metrics, "
            "no target label endpoint (sage_limit_* have their own)",
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
            if o["apiVersion"].startswith(("monitoring.coreos.com/", "keda.sh/")):
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


CPU_70 = {"type": "Resource", "resource": {"name": "cpu", "target": {"type": "Utilization", "averageUtilization": 70}}}


def jobs_stream_and_consumer() -> tuple[str | None, str | None]:
    """The jobs stream and the dialogue workers' durable consumer, as the code names them."""
    text = NATS_RS.read_text()
    stream = re.search(r'pub const JOBS_STREAM: &str = "([^"]+)";', text)
    consumer = re.search(r'pub const JOBS_CONSUMER: &str = "([^"]+)";', text)
    return (stream and stream.group(1), consumer and consumer.group(1))


def check_metrics_hpa(rep: Report, name: str, h: dict, spec: dict) -> None:
    """Mode metrics: the backlog as an External metric, saturation as a Pods metric."""
    stream, consumer = jobs_stream_and_consumer()
    by_type = {m["type"]: m for m in h["spec"]["metrics"]}
    ext = by_type.get("External", {}).get("external", {})
    pods = by_type.get("Pods", {}).get("pods", {})
    rep.check(
        sorted(by_type) == ["External", "Pods"]
        and ext.get("metric", {}).get("name") == "sage_jobs_backlog"
        and ext["metric"].get("selector") == {"matchLabels": {"stream_name": stream, "consumer_name": consumer}}
        and ext.get("target") == {"type": "AverageValue", "averageValue": str(spec["lag"])},
        f"[{name}] HPA {h['metadata']['name']}: External sage_jobs_backlog of {stream}/{consumer}, "
        f"{spec['lag']} jobs per worker",
        json.dumps(h["spec"]["metrics"]),
    )
    rep.check(
        pods.get("metric", {}).get("name") == "sage_dialogues_in_flight_saturation"
        and pods.get("target", {}).get("type") == "AverageValue",
        f"[{name}] HPA {h['metadata']['name']}: Pods sage_dialogues_in_flight_saturation",
        json.dumps(pods),
    )


def check_scaled_object(rep: Report, name: str, o: dict, deps: dict, spec: dict) -> None:
    """A ScaledObject against KEDA's CRD fields, its triggers' metadata and the jobs' names."""
    n = o["metadata"]["name"]
    clean = {k: v for k, v in o.items() if k != "__source"}
    try:
        import jsonschema
    except ImportError:
        rep.check(False, f"[{name}] ScaledObject {n} schema", "jsonschema is not installed: pip install jsonschema")
        return
    errors = [
        f"{'/'.join(map(str, e.absolute_path))}: {e.message}"
        for e in jsonschema.Draft7Validator(KEDA_SCALEDOBJECT_SCHEMA).iter_errors(clean)
    ]
    for i, t in enumerate(o["spec"].get("triggers") or []):
        want = TRIGGER_METADATA.get(t.get("type"))
        if want is None:
            errors.append(f"triggers/{i}: unexpected trigger type {t.get('type')}")
            continue
        md = t.get("metadata") or {}
        for key, pattern in {**want["required"], **want["optional"]}.items():
            if key in md and not re.fullmatch(pattern, str(md[key])):
                errors.append(f"triggers/{i}/metadata/{key}: {md[key]!r} does not parse ({pattern})")
        for key in want["required"]:
            if key not in md:
                errors.append(f"triggers/{i}/metadata: {key} is required")
        for key in md:
            if key not in want["required"] and key not in want["optional"]:
                errors.append(f"triggers/{i}/metadata: unknown key {key}")
    rep.check(
        not errors,
        f"[{name}] ScaledObject {n}: valid against KEDA's CRD fields and its triggers' metadata",
        "\n      ".join(errors),
    )
    s = o["spec"]
    t = s["scaleTargetRef"]
    rep.check(
        t.get("kind") == "Deployment"
        and t.get("apiVersion") == "apps/v1"
        and t["name"] in deps
        and "dialogue" in deps[t["name"]]["spec"]["template"]["spec"]["containers"][0]["args"][2].split(",")
        and 0 <= s.get("minReplicaCount", 0) <= s["maxReplicaCount"],
        f"[{name}] ScaledObject {n} targets the dialogue-role Deployment {t['name']}, min <= max",
    )
    triggers = {tr.get("name"): tr for tr in s["triggers"]}
    stream, consumer = jobs_stream_and_consumer()
    rep.check(
        stream is not None and consumer is not None,
        f"[{name}] the jobs stream and consumer read from {NATS_RS.relative_to(ROOT)}: {stream}, {consumer}",
    )
    backlog = triggers.get("jobs-backlog", {})
    gated = "provider-limits-hold" in triggers
    if not gated:
        md = backlog.get("metadata", {})
        rep.check(
            backlog.get("type") == "nats-jetstream"
            and md.get("stream") == stream
            and md.get("consumer") == consumer
            and md.get("account") == "$G"
            and md.get("natsServerMonitoringEndpoint", "").endswith(":8222")
            and md.get("lagThreshold") == str(spec["lag"]),
            f"[{name}] ScaledObject {n}: nats-jetstream trigger on {stream}/{consumer}, "
            f"monitoring port 8222, {spec['lag']} jobs per worker",
            json.dumps(backlog),
        )
    else:
        q = backlog.get("metadata", {}).get("query", "")
        rep.check(
            backlog.get("type") == "prometheus"
            and f'stream_name="{stream}",consumer_name="{consumer}"' in q
            and backlog["metadata"].get("threshold") == str(spec["lag"]),
            f"[{name}] ScaledObject {n}: gated backlog trigger on {stream}/{consumer} (NATS exporter)",
            json.dumps(backlog),
        )
    sat = triggers.get("in-flight-saturation", {})
    q = sat.get("metadata", {}).get("query", "")
    rep.check(
        sat.get("type") == "prometheus"
        and sat.get("metricType") == "Value"
        and "sage_dialogues_in_flight{" in q
        and "sage_dialogues_in_flight_limit{" in q
        and f'pod=~"{t["name"]}-' in q
        and sat["metadata"].get("serverAddress") == PROMETHEUS,
        f"[{name}] ScaledObject {n}: prometheus trigger on in-flight saturation of {t['name']}'s pods (Value)",
        json.dumps(sat),
    )
    if gated:
        check_limit_gate(rep, name, n, t["name"], triggers, stream, consumer)


def check_limit_gate(
    rep: Report, name: str, n: str, deployment: str, triggers: dict, stream: str, consumer: str
) -> None:
    """Runs the gated triggers' PromQL through `promtool test rules` on made-up series: a grant
    wait of 0.1 s per call (below maxLimitWaitSeconds 2) lets the backlog and the saturation
    through and does not hold; 5 s per call zeroes them and holds; no limit series at all (no
    model called yet) counts as no wait."""
    promtool = shutil.which("promtool")
    if not promtool:
        rep.check(False, f"[{name}] {n}: PromQL under promtool", "promtool not found (apt-get install prometheus)")
        return
    pod = f"{deployment}-5d9c7b8f4-x2k4p"
    jobs = f'stream_name="{stream}",consumer_name="{consumer}"'
    base = [
        # The Deployment's pod, and pods the query must not count.
        {"series": f'sage_dialogues_in_flight{{namespace="{NAMESPACE}",pod="{pod}"}}', "values": "200x10"},
        {"series": f'sage_dialogues_in_flight_limit{{namespace="{NAMESPACE}",pod="{pod}"}}', "values": "256x10"},
        {"series": f'sage_dialogues_in_flight{{namespace="{NAMESPACE}",pod="{deployment}-extra-5d9c7b8f4-x2k4p"}}', "values": "999x10"},
        {"series": f'sage_dialogues_in_flight_limit{{namespace="{NAMESPACE}",pod="{deployment}-extra-5d9c7b8f4-x2k4p"}}', "values": "1000x10"},
        {"series": f'sage_dialogues_in_flight{{namespace="elsewhere",pod="{pod}"}}', "values": "999x10"},
        # The consumer on two NATS servers (a replicated consumer), and another consumer.
        {"series": f'nats_consumer_num_pending{{{jobs},server_name="nats-0"}}', "values": "1000x10"},
        {"series": f'nats_consumer_num_pending{{{jobs},server_name="nats-1"}}', "values": "990x10"},
        {"series": f'nats_consumer_num_ack_pending{{{jobs},server_name="nats-0"}}', "values": "200x10"},
        {"series": f'nats_consumer_num_pending{{stream_name="SAGE_RECORDS",consumer_name="aggregator",server_name="nats-0"}}', "values": "50000x10"},
    ]

    def limits(wait_per_min: int) -> list[dict]:
        # 60 calls a minute; `wait_per_min` seconds of waiting for a grant a minute.
        return [
            {"series": f'sage_limit_calls_total{{namespace="{NAMESPACE}",endpoint="gpt-4o",pod="{pod}"}}', "values": "0+60x10"},
            {"series": f'sage_limit_wait_seconds_total{{namespace="{NAMESPACE}",endpoint="gpt-4o",pod="{pod}"}}', "values": f"0+{wait_per_min}x10"},
            {"series": f'sage_limit_calls_total{{namespace="{NAMESPACE}",endpoint="cheap",pod="{pod}"}}', "values": "0+600x10"},
            {"series": f'sage_limit_wait_seconds_total{{namespace="{NAMESPACE}",endpoint="cheap",pod="{pod}"}}', "values": "0+0x10"},
        ]

    def case(series: list[dict], backlog: float, saturation: float, hold: float) -> dict:
        exprs = {"jobs-backlog": backlog, "in-flight-saturation": saturation, "provider-limits-hold": hold}
        return {
            "interval": "1m",
            "input_series": series,
            "promql_expr_test": [
                {
                    "expr": triggers[k]["metadata"]["query"],
                    "eval_time": "5m",
                    "exp_samples": [{"labels": "{}", "value": v}],
                }
                for k, v in exprs.items()
            ],
        }

    tests = {
        "rule_files": [],
        "tests": [
            case(base + limits(6), 1200, 200 / 256, 0),  # 0.1 s per call: open
            case(base + limits(300), 0, 0, 1),  # 5 s per call: hold
            case(base, 1200, 200 / 256, 0),  # no limit series yet: open
        ],
    }
    with tempfile.TemporaryDirectory() as d:
        f = Path(d) / "gate.test.yml"
        f.write_text(yaml.safe_dump(tests, sort_keys=False))
        r = subprocess.run([promtool, "test", "rules", str(f)], capture_output=True, text=True)
    rep.check(
        r.returncode == 0,
        f"[{name}] {n}: promtool runs the triggers' PromQL; the limit-wait gate opens at 0.1 s "
        "and holds at 5 s per call",
        (r.stdout + r.stderr).strip().replace("\n", "\n      "),
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
    with tempfile.TemporaryDirectory() as d:
        bare = Path(d) / "sage"
        shutil.copytree(CHART, bare)  # follows files/alerts.yml's link
        (bare / "values.schema.json").unlink()
        chart = helm.Chart.load(str(bare))
        for what, (values, needle) in TEMPLATE_MUST_FAIL.items():
            try:
                chart.render(values, name=RELEASE, namespace=NAMESPACE, is_install=True)
                msg = "rendered without an error"
            except Exception as e:  # noqa: BLE001
                msg = str(e)
            rep.check(needle in msg, f"refused by the templates (schema skipped): {what}", msg)


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
