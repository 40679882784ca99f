"""Every shipped example is accepted by the real API server of its Kubernetes version: `kubectl apply` (strict
field validation) of the examples' objects to kube-apiserver v1.36.3 or v1.37.2. This is the test that phalanx's
models and examples are the real shapes, and not shapes phalanx merely agrees with itself about.

An example's version follows from what it holds: scheduling.k8s.io/v1alpha2 exists only in v1.36; v1beta1,
v1alpha3, resource.k8s.io/v1 DeviceTaintRules and batch/v1 Jobs with spec.scheduling only in v1.37; anything else
(core, DRA v1) in both. Configuration files that are not API objects (KubeSchedulerConfiguration, phalanx's own
cluster and guard formats) are left out: no server serves them.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml
from realcluster import ROOT, wait_for

from phalanx.testenv import ControlPlane

EXAMPLES = ROOT / "examples"
NOT_API_OBJECTS = ("kubescheduler.config.k8s.io/",)


def _objects(folder: Path) -> list[dict[str, Any]]:
    """The API objects of one example folder (its own files, not its subfolders'), in file order."""
    out: list[dict[str, Any]] = []
    for path in sorted(folder.glob("*.yaml")):
        for doc in yaml.safe_load_all(path.read_text(encoding="utf-8")):
            if not isinstance(doc, dict) or "kind" not in doc or "apiVersion" not in doc:
                continue  # phalanx's own formats (a simulated cluster's pools, the guard's policy)
            items = doc["items"] if doc["kind"] == "List" else [doc]
            out += [o for o in items if not str(o["apiVersion"]).startswith(NOT_API_OBJECTS)]
    return out


def _versions(objects: list[dict[str, Any]]) -> set[str]:
    """The Kubernetes minor versions whose API server serves every object of an example."""
    versions = {"1.36", "1.37"}
    for o in objects:
        api, kind = o["apiVersion"], o["kind"]
        if api == "scheduling.k8s.io/v1alpha2":
            versions.discard("1.37")
        if api in ("scheduling.k8s.io/v1beta1", "scheduling.k8s.io/v1alpha3") or kind == "DeviceTaintRule":
            versions.discard("1.36")
        if kind == "Job" and "scheduling" in o.get("spec", {}):
            versions.discard("1.36")
    return versions


EXAMPLE_DIRS = sorted({p.parent for p in EXAMPLES.rglob("*.yaml") if _objects(p.parent)})


def test_the_examples_cover_both_versions() -> None:
    """The collection above finds the examples (a broken glob would make the real test vacuous)."""
    names = {d.relative_to(EXAMPLES).as_posix(): _versions(_objects(d)) for d in EXAMPLE_DIRS}
    by_version = {v: {name for name, versions in names.items() if v in versions} for v in ("1.36", "1.37")}
    assert {"gang-training", "dra-h100"} <= by_version["1.36"]
    assert {"v1.37/gang-training", "v1.37/device-taint-rule", "job-gang", "dra-h100"} <= by_version["1.37"]
    assert "gang-training" not in by_version["1.37"] and "job-gang" not in by_version["1.36"]


def _namespaces(objects: list[dict[str, Any]]) -> list[str]:
    cluster_scoped = {"Node", "Namespace", "PriorityClass", "DeviceClass", "ResourceSlice", "DeviceTaintRule"}
    cluster_scoped |= {"RuntimeClass"}
    return sorted(
        {o.get("metadata", {}).get("namespace", "default") for o in objects if o["kind"] not in cluster_scoped}
    )


def _ensure_namespace(cp: ControlPlane, ns: str) -> None:
    if not cp.exists(f"/api/v1/namespaces/{ns}"):
        cp.request("POST", "/api/v1/namespaces", {"metadata": {"name": ns}})
    # Pods are refused until the namespace's default ServiceAccount exists (ServiceAccount admission).
    wait_for(f"ServiceAccount {ns}/default", lambda: cp.exists(f"/api/v1/namespaces/{ns}/serviceaccounts/default"))


@pytest.mark.parametrize("folder", EXAMPLE_DIRS, ids=[d.relative_to(EXAMPLES).as_posix() for d in EXAMPLE_DIRS])
def test_kubectl_apply_accepts_the_example(control_plane: ControlPlane, folder: Path) -> None:
    objects = _objects(folder)
    if control_plane.kube.minor not in _versions(objects):
        pytest.skip(f"{folder.relative_to(EXAMPLES)} holds objects v{control_plane.kube.minor} does not serve")
    manifest = yaml.safe_dump_all(objects, sort_keys=False)
    for ns in _namespaces(objects):
        _ensure_namespace(control_plane, ns)
    try:
        out = control_plane.kubectl("apply", "--validate=strict", "-f", "-", stdin=manifest)
        applied = [line for line in out.splitlines() if line.endswith((" created", " configured", " unchanged"))]
        assert len(applied) == len(objects), out
    finally:
        # Leave nothing behind for the next test (the example's nodes would take part in it); namespaces stay, so
        # a later example using the same one does not meet it terminating.
        rest = yaml.safe_dump_all([o for o in objects if o["kind"] != "Namespace"], sort_keys=False)
        delete = ("delete", "--ignore-not-found", "--wait=false", "--grace-period=0", "--force", "-f", "-")
        control_plane.kubectl(*delete, stdin=rest, check=False)
