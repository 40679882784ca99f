"""deploy/: manifests parse, the ConfigMap holds a configuration `--config` accepts, RBAC grants what serve uses."""

from __future__ import annotations

from pathlib import Path

import yaml

from phalanx.scheduling.config import parse_config

DEPLOY = Path(__file__).resolve().parents[2] / "deploy"


def _objects() -> list[dict]:
    return [d for p in sorted(DEPLOY.glob("*.yaml")) for d in yaml.safe_load_all(p.read_text()) if d]


def test_config_map_holds_a_valid_scheduler_configuration() -> None:
    cm = next(o for o in _objects() if o["kind"] == "ConfigMap")
    config = parse_config(yaml.safe_load(cm["data"]["config.yaml"]))
    assert [p.scheduler_name for p in config.profiles] == ["phalanx"]


def test_cluster_role_grants_exactly_what_serve_calls() -> None:
    role = next(o for o in _objects() if o["kind"] == "ClusterRole")
    granted = {
        (g, r, v) for rule in role["rules"] for g in rule["apiGroups"] for r in rule["resources"] for v in rule["verbs"]
    }
    needed = {
        ("", "pods/binding", "create"),
        ("", "pods/status", "patch"),
        ("", "pods", "watch"),
        ("", "nodes", "list"),
        ("scheduling.k8s.io", "podgroups/status", "patch"),
        ("scheduling.k8s.io", "podgroups", "watch"),
        ("events.k8s.io", "events", "create"),
        ("resource.k8s.io", "resourceslices", "watch"),
        ("resource.k8s.io", "deviceclasses", "watch"),
        ("resource.k8s.io", "resourceclaimtemplates", "watch"),
        ("resource.k8s.io", "resourceclaims", "watch"),
        ("resource.k8s.io", "resourceclaims", "create"),
        ("resource.k8s.io", "resourceclaims", "patch"),
        ("resource.k8s.io", "resourceclaims/status", "patch"),
    }
    assert needed <= granted
    assert ("", "pods/eviction", "create") in granted  # preemption victims (eviction, the default)
    assert ("", "pods", "delete") in granted  # preemption victims with --victim-removal=deletion
    assert not any(v in ("*", "update") or (v == "delete" and r != "pods") for (_, r, v) in granted)
    assert not any(r in ("pods", "nodes") and v in ("patch", "create") for (_, r, v) in granted)


def test_two_replicas_with_leader_election() -> None:
    dep = next(o for o in _objects() if o["kind"] == "Deployment")
    assert dep["spec"]["replicas"] == 2
    args = dep["spec"]["template"]["spec"]["containers"][0]["args"]
    assert "--leader-elect" in args and args[0] == "serve"


def test_crds_serve_the_workload_api_under_the_phalanx_group() -> None:
    crds = [yaml.safe_load(p.read_text()) for p in sorted((DEPLOY / "crds").glob("*.yaml"))]
    assert {c["metadata"]["name"] for c in crds} == {
        "podgroups.scheduling.phalanx.dev",
        "workloads.scheduling.phalanx.dev",
    }
    pg = next(c for c in crds if c["spec"]["names"]["kind"] == "PodGroup")
    version = pg["spec"]["versions"][0]
    assert version["name"] == "v1alpha2" and "status" in version["subresources"]
