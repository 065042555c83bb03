#!/usr/bin/env python3
"""Lint and render helm/crawlsieve without the helm binary, and check what it renders.

    scripts/check-chart.py [--toml-dir DIR]

- `helm lint --strict` (kube 1.31), and values.schema.json rejecting bad values;
- renders a default, a full (API, Secret, Kafka mTLS, HPA, KEDA, ServiceMonitor, PrometheusRule)
  and a minimal profile; every manifest of a built-in kind passes
  `kubernetes-validate -k 1.31.0 --strict`; the operator kinds are checked for their shape;
- secure defaults on every pod (non-root, read-only root, no capabilities, RuntimeDefault
  seccomp, no service-account token), /dev/shm and a memory limit for render, the config
  checksum annotation (and that it changes with the config);
- the PrometheusRule carries exactly deploy/prometheus/crawlsieve-rules.yaml, the dashboard
  ConfigMap exactly deploy/grafana/crawlsieve.json;
- with --toml-dir, writes each rendered stage configuration there (PROFILE-COMPONENT.toml) so
  that tests/deploy.rs can load them with the real binary.

Needs `pip install helm-python-sdk==0.2.2 kubernetes-validate`.
"""
import json
import pathlib
import subprocess
import sys
import tomllib
import tempfile

import yaml
from helm_python import Chart, lint

ROOT = pathlib.Path(__file__).resolve().parent.parent
CHART = ROOT / "helm/crawlsieve"
OPERATOR_KINDS = {"ServiceMonitor", "PrometheusRule", "ScaledObject"}

PROFILES = {
    "default": {},
    "full": {
        "api": {"enabled": True, "autoscaling": {"enabled": True}},
        "secrets": {
            "create": True,
            "kafkaSaslUsername": "crawler",
            "kafkaSaslPassword": "pw",
            "redisUrl": "redis://:pw@redis:6379",
            "apiTokens": "t1,t2",
        },
        "kafkaTls": {"enabled": True, "secretName": "kafka-tls", "mutual": True},
        "redisTls": {"enabled": True, "secretName": "redis-tls", "mutual": True},
        "gate": {"autoscaling": {"enabled": True}, "config": {"kafka": {"workers": 2, "client": {"sasl.mechanism": "SCRAM-SHA-512"}}}},
        "render": {"keda": {"enabled": True, "force": True}, "config": {"render": {"allow": ["intranet.example"]}}},
        "metrics": {"serviceMonitor": {"force": True}, "prometheusRule": {"force": True}},
        "networkPolicy": {"metricsFrom": [{"namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": "monitoring"}}}]},
    },
    "minimal": {
        "render": {"enabled": False},
        "networkPolicy": {"enabled": False},
        "metrics": {"dashboard": {"enabled": False}},
        "serviceAccount": {"create": False},
    },
}

BAD_VALUES = [
    ({"gate": {"replicaCount": "two"}}, "replicaCount"),
    ({"gate": {"unknownKey": 1}}, "unknownKey"),
    ({"api": {"enabled": True}}, "api.enabled needs bearer tokens"),
    ({"kafkaTls": {"enabled": True}}, "kafkaTls.secretName is required"),
    ({"redisTls": {"enabled": True}}, "redisTls.secretName is required"),
    ({"metrics": {"port": 70000}}, "port"),
    # Issue 16, item 9: secret values the chart would not put anywhere.
    ({"secrets": {"apiTokens": "t"}}, "secrets.create"),
    # ... and KEDA asked for where its CRD is missing (it ran one replica, silently).
    ({"gate": {"keda": {"enabled": True}}}, "KEDA CRD"),
    # ... and a typo in a configuration key (it installed, then crash-looped).
    ({"config": {"redis": {"capcity": 5}}}, "capcity"),
    ({"gate": {"config": {"kafka": {"batchsize": 5}}}}, "batchsize"),
]

failures = []


def fail(msg):
    failures.append(msg)
    print("check-chart: FAIL " + msg, file=sys.stderr)


def render(values):
    out = Chart.load(str(CHART)).render(values, name="cs", namespace="crawl", is_install=True)
    docs = []
    for path, text in out.items():
        if path.endswith("NOTES.txt"):
            continue
        for d in yaml.safe_load_all(text):
            if d:
                docs.append(d)
    return docs


def check_pod(name, spec, component):
    pod = spec["template"]["spec"]
    psc = pod.get("securityContext", {})
    if not psc.get("runAsNonRoot") or psc.get("seccompProfile", {}).get("type") != "RuntimeDefault":
        fail(f"{name}: pod securityContext {psc}")
    if pod.get("automountServiceAccountToken") is not False:
        fail(f"{name}: the service-account token is mounted")
    for c in pod["containers"]:
        sc = c.get("securityContext", {})
        ok = (
            sc.get("readOnlyRootFilesystem") is True
            and sc.get("allowPrivilegeEscalation") is False
            and sc.get("runAsNonRoot") is True
            and sc.get("capabilities", {}).get("drop") == ["ALL"]
            and sc.get("seccompProfile", {}).get("type") == "RuntimeDefault"
        )
        if not ok:
            fail(f"{name}/{c['name']}: container securityContext {sc}")
        if "memory" not in c.get("resources", {}).get("limits", {}):
            fail(f"{name}/{c['name']}: no memory limit")
        for probe in ("livenessProbe", "readinessProbe", "startupProbe"):
            if probe not in c:
                fail(f"{name}/{c['name']}: no {probe}")
            elif c[probe].get("timeoutSeconds", 1) < 2:
                fail(f"{name}/{c['name']}: {probe} times out after {c[probe].get('timeoutSeconds', 1)} s")
        # Logs are JSON lines for the cluster's log pipeline, filtered by CRAWLSIEVE_LOG.
        args = c.get("args", [])
        if "--log-format" not in args or args[args.index("--log-format") + 1] != "json":
            fail(f"{name}/{c['name']}: logs not JSON: args {args}")
        if not any(e.get("name") == "CRAWLSIEVE_LOG" for e in c.get("env", [])):
            fail(f"{name}/{c['name']}: no CRAWLSIEVE_LOG")
    if "checksum/config" not in spec["template"]["metadata"].get("annotations", {}):
        fail(f"{name}: no checksum/config annotation")
    if component == "render":
        shm = [v for v in pod["volumes"] if v["name"] == "dshm"]
        if not shm or shm[0]["emptyDir"].get("medium") != "Memory":
            fail(f"{name}: no in-memory /dev/shm")
        mounts = {m["mountPath"] for m in pod["containers"][0]["volumeMounts"]}
        if "/dev/shm" not in mounts or "/tmp" not in mounts:
            fail(f"{name}: /dev/shm or /tmp not mounted: {mounts}")


def main():
    toml_dir = None
    if "--toml-dir" in sys.argv:
        toml_dir = pathlib.Path(sys.argv[sys.argv.index("--toml-dir") + 1])
        toml_dir.mkdir(parents=True, exist_ok=True)

    report = lint(str(CHART), strict=True, kube_version="v1.31.0")
    if report["errors"] or any(m["severity"] >= 2 for m in report["messages"]):
        fail(f"helm lint: {report}")
    print(f"check-chart: helm lint --strict: {len(report['messages'])} info message(s), no warnings")

    for values, needle in BAD_VALUES:
        try:
            render(values)
            fail(f"values {values} rendered; expected an error mentioning {needle!r}")
        except Exception as e:  # HelmValuesError / HelmRenderError
            if needle not in str(e):
                fail(f"values {values}: error without {needle!r}: {e}")
    print(f"check-chart: {len(BAD_VALUES)} bad value sets refused with clear errors")

    rules = yaml.safe_load((ROOT / "deploy/prometheus/crawlsieve-rules.yaml").read_text())
    dashboard = json.loads((ROOT / "deploy/grafana/crawlsieve.json").read_text())
    for profile, values in PROFILES.items():
        docs = render(values)
        kinds = sorted(d["kind"] for d in docs)
        builtin = [d for d in docs if d["kind"] not in OPERATOR_KINDS]
        with tempfile.NamedTemporaryFile("w", suffix=".yaml", delete=False) as f:
            yaml.safe_dump_all(builtin, f)
        r = subprocess.run(
            ["kubernetes-validate", "-k", "1.31.0", "--strict", "--quiet", f.name],
            capture_output=True, text=True,
        )
        pathlib.Path(f.name).unlink()
        if r.returncode != 0:
            fail(f"{profile}: kubernetes-validate: {r.stdout}{r.stderr}")
        for d in docs:
            name = f"{profile}:{d['kind']}/{d['metadata']['name']}"
            if d["kind"] == "Deployment":
                comp = d["metadata"]["labels"]["app.kubernetes.io/component"]
                check_pod(name, d["spec"], comp)
            elif d["kind"] == "ConfigMap" and d["metadata"]["name"].endswith("-config"):
                for key, text in d["data"].items():
                    if toml_dir:
                        (toml_dir / f"{profile}-{key}").write_text(text)
            elif d["kind"] == "ConfigMap" and d["metadata"]["name"].endswith("-dashboard"):
                if json.loads(d["data"]["crawlsieve.json"]) != dashboard:
                    fail(f"{name}: not deploy/grafana/crawlsieve.json")
            elif d["kind"] == "PrometheusRule":
                if d["apiVersion"] != "monitoring.coreos.com/v1" or d["spec"]["groups"] != rules["groups"]:
                    fail(f"{name}: not deploy/prometheus/crawlsieve-rules.yaml")
            elif d["kind"] == "ServiceMonitor":
                ports = {e["port"] for e in d["spec"]["endpoints"]}
                if ports != {"metrics", "http"}:
                    fail(f"{name}: endpoints {ports}")
            elif d["kind"] == "ScaledObject":
                t = d["spec"]["triggers"][0]
                if t["type"] != "kafka" or t["metadata"]["topic"] != "fetch":
                    fail(f"{name}: trigger {t}")
            elif d["kind"] == "Secret":
                if d["type"] != "Opaque" or set(d["stringData"]) != {"kafka-sasl-username", "kafka-sasl-password", "redis-url", "api-tokens"}:
                    fail(f"{name}: {sorted(d.get('stringData', {}))}")
        print(f"check-chart: {profile}: {len(docs)} manifests ({', '.join(sorted(set(kinds)))}) valid")
        if profile == "full":
            want = {"ServiceMonitor", "PrometheusRule", "ScaledObject", "HorizontalPodAutoscaler", "Secret"}
            if not want <= set(kinds):
                fail(f"full: missing {want - set(kinds)}")
            if any(d["kind"] == "HorizontalPodAutoscaler" and d["metadata"]["name"].endswith("-render") for d in docs):
                fail("full: an HPA beside the render ScaledObject")
        if profile == "default" and set(kinds) & OPERATOR_KINDS:
            fail("default: operator kinds rendered without their CRDs")

    # Issue 16, item 5: a protocol the user set survives kafkaTls with an existingSecret.
    docs = render({
        "kafkaTls": {"enabled": True, "secretName": "kafka-tls"},
        "secrets": {"existingSecret": "creds"},
        "config": {"kafka": {"client": {"security.protocol": "SASL_SSL", "sasl.mechanism": "SCRAM-SHA-512"}}},
    })
    cm = next(d for d in docs if d["kind"] == "ConfigMap" and d["metadata"]["name"].endswith("-config"))
    for key in ("gate.toml", "render.toml"):
        if '"security.protocol" = "SASL_SSL"' not in cm["data"][key]:
            fail(f"kafkaTls + existingSecret: {key} lost the user's SASL_SSL:\n{cm['data'][key]}")
    docs = render({"kafkaTls": {"enabled": True, "secretName": "kafka-tls"}})
    cm = next(d for d in docs if d["kind"] == "ConfigMap" and d["metadata"]["name"].endswith("-config"))
    if '"security.protocol" = "SSL"' not in cm["data"]["gate.toml"]:
        fail(f"kafkaTls alone: not SSL:\n{cm['data']['gate.toml']}")

    # Issue 45: redisTls mounts the Secret and points redis.tls_* at it (not for a cluster,
    # whose client takes the system store only and would refuse the files).
    docs = render({"redisTls": {"enabled": True, "secretName": "redis-tls", "mutual": True}})
    cm = next(d for d in docs if d["kind"] == "ConfigMap" and d["metadata"]["name"].endswith("-config"))
    for key in ("gate.toml", "render.toml"):
        for want in ('"tls_ca" = "/etc/crawlsieve/redis-tls/ca.crt"', '"tls_key" = "/etc/crawlsieve/redis-tls/tls.key"'):
            if want not in cm["data"][key]:
                fail(f"redisTls: {key} lacks {want}:\n{cm['data'][key]}")
    mounts = [m["mountPath"] for d in docs if d["kind"] == "Deployment"
              for c in d["spec"]["template"]["spec"]["containers"] for m in c.get("volumeMounts", [])]
    if "/etc/crawlsieve/redis-tls" not in mounts:
        fail(f"redisTls: the Secret is not mounted: {mounts}")
    docs = render({"redisTls": {"enabled": True, "secretName": "redis-tls"}, "config": {"redis": {"cluster": True}}})
    cm = next(d for d in docs if d["kind"] == "ConfigMap" and d["metadata"]["name"].endswith("-config"))
    if "tls_ca" in cm["data"]["gate.toml"]:
        fail(f"redisTls with a cluster: tls_ca set, which a cluster refuses:\n{cm['data']['gate.toml']}")

    # Item 7: each pod gets only the credentials it uses (the API has no Kafka client).
    docs = render({"api": {"enabled": True}, "secrets": {"existingSecret": "creds"}})
    for d in docs:
        if d["kind"] != "Deployment":
            continue
        comp = d["metadata"]["labels"]["app.kubernetes.io/component"]
        env = {e["name"] for c in d["spec"]["template"]["spec"]["containers"] for e in c.get("env", [])}
        sasl = {e for e in env if "SASL" in e}
        if comp == "api" and sasl:
            fail(f"api pod receives Kafka credentials: {sorted(sasl)}")
        if comp == "gate" and not sasl:
            fail("gate pod lost its Kafka credentials")
        if comp != "api" and "CRAWLSIEVE_API_TOKENS" in env:
            fail(f"{comp} pod receives the API tokens")

    # Item 6: the render pod's egress: DNS to the resolver only, peers on their ports only,
    # every special-purpose IPv6 range excluded (forms carrying IPv4 included).
    docs = render({})
    pol = next(d for d in docs if d["kind"] == "NetworkPolicy" and d["metadata"]["name"].endswith("-render"))
    for rule in pol["spec"]["egress"]:
        if rule.get("to") and all("ipBlock" in p for p in rule["to"]):
            continue  # public addresses, any port
        if "ports" not in rule:
            fail(f"render egress rule without ports or an ipBlock-only scope: {rule}")
            continue
        if {p["port"] for p in rule["ports"]} == {53} and not rule.get("to"):
            fail(f"render DNS egress open to every address: {rule}")
    blocks = [p["ipBlock"] for r in pol["spec"]["egress"] for p in r.get("to", []) if "ipBlock" in p]
    v6 = next(b for b in blocks if b["cidr"] == "::/0")
    for need in ("64:ff9b::/96", "::ffff:0:0/96", "2002::/16", "100::/64", "::1/128", "fc00::/7", "fe80::/10"):
        if need not in v6["except"]:
            fail(f"render egress allows {need}")
    peers = [r for r in pol["spec"]["egress"] if any("podSelector" in p for p in r.get("to", []) if "namespaceSelector" not in p)]
    if not peers or any(not r.get("ports") for r in peers):
        fail(f"render egress to cluster peers without ports: {peers}")

    # Item 9: pods roll when the chart's own Secret changes; the chart claims the Kubernetes
    # version its PDB field needs.
    def secret_checksum(values):
        for d in render(values):
            if d["kind"] == "Deployment" and d["metadata"]["name"].endswith("-gate"):
                return d["spec"]["template"]["metadata"]["annotations"].get("checksum/secret")
    a = secret_checksum({"secrets": {"create": True, "redisUrl": "redis://:a@r:6379"}})
    b = secret_checksum({"secrets": {"create": True, "redisUrl": "redis://:b@r:6379"}})
    if a is None or a == b:
        fail(f"checksum/secret does not follow the Secret: {a} {b}")
    chart = yaml.safe_load((CHART / "Chart.yaml").read_text())
    if chart["kubeVersion"] != ">=1.27.0-0":
        fail(f"kubeVersion {chart['kubeVersion']}: the PDB's unhealthyPodEvictionPolicy needs 1.27")

    # The checksum follows the configuration.
    def checksum(values):
        for d in render(values):
            if d["kind"] == "Deployment" and d["metadata"]["name"].endswith("-gate"):
                return d["spec"]["template"]["metadata"]["annotations"]["checksum/config"]
    if checksum({}) == checksum({"gate": {"config": {"kafka": {"batch_size": 123}}}}):
        fail("checksum/config does not change with the configuration")

    # Issue 18: [scope] reaches every component's configuration, and scopeFiles are mounted
    # next to it (the ConfigMap is /etc/crawlsieve).
    rules = "-/admin/\n+^https?://docs\\.example\\.org/\n-.\n"
    docs = render({
        "config": {"scope": {"allow_domains": ["docs.example.org"],
                             "files": ["/etc/crawlsieve/regex-urlfilter.txt"]}},
        "scopeFiles": {"regex-urlfilter.txt": rules},
        "api": {"enabled": True},
        "secrets": {"create": True, "apiTokens": "t"},
    })
    cms = [d for d in docs if d["kind"] == "ConfigMap" and d["metadata"]["name"].endswith("-config")]
    if not cms or cms[0]["data"].get("regex-urlfilter.txt", "").strip() != rules.strip():
        fail("scopeFiles are not in the configuration ConfigMap")
    else:
        for comp in ("gate", "render", "api"):
            text = cms[0]["data"].get(f"{comp}.toml", "")
            scope = tomllib.loads(text).get("scope", {})
            if scope.get("allow_domains") != ["docs.example.org"]:
                fail(f"{comp}.toml has no [scope]: {text[:200]}")

    if failures:
        sys.exit(1)
    print("check-chart: ok")


if __name__ == "__main__":
    main()
