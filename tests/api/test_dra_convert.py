"""resource.k8s.io/v1beta1 -> v1 conversion, and the loader reading v1beta1 and v1beta2 files into the v1 models."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import msgspec
import pytest

from phalanx.api import dra
from phalanx.api.dra_convert import convert_v1beta1
from phalanx.api.errors import InputError
from phalanx.api.loader import load
from phalanx.api.validation import validate

V1BETA1 = "resource.k8s.io/v1beta1"


def claim_v1beta1(*requests: dict[str, Any]) -> dict[str, Any]:
    return {
        "apiVersion": V1BETA1,
        "kind": "ResourceClaim",
        "metadata": {"name": "c"},
        "spec": {"devices": {"requests": list(requests)}},
    }


def test_flattened_request_moves_under_exactly() -> None:
    tolerations = [{"key": "k", "operator": "Exists"}]
    selectors = [{"cel": {"expression": "true"}}]
    raw = claim_v1beta1(
        {
            "name": "gpus",
            "deviceClassName": "gpu.nvidia.com",
            "selectors": selectors,
            "allocationMode": "ExactCount",
            "count": 8,
            "adminAccess": True,
            "tolerations": tolerations,
            "capacity": {"requests": {"memory": "10Gi"}},
        }
    )
    out = convert_v1beta1(raw)
    assert out["apiVersion"] == "resource.k8s.io/v1"
    assert out["spec"]["devices"]["requests"] == [
        {
            "name": "gpus",
            "exactly": {
                "deviceClassName": "gpu.nvidia.com",
                "selectors": selectors,
                "allocationMode": "ExactCount",
                "count": 8,
                "adminAccess": True,
                "tolerations": tolerations,
                "capacity": {"requests": {"memory": "10Gi"}},
            },
        }
    ]
    assert raw["spec"]["devices"]["requests"][0]["count"] == 8  # the input is left alone


def test_first_available_stays_and_both_forms_are_kept_for_validation() -> None:
    sub = {"name": "h100", "deviceClassName": "gpu.nvidia.com", "count": 8}
    out = convert_v1beta1(
        claim_v1beta1({"name": "a", "firstAvailable": [sub]}, {"name": "b", "firstAvailable": [sub], "count": 2})
    )
    assert out["spec"]["devices"]["requests"] == [
        {"name": "a", "firstAvailable": [sub]},
        {"name": "b", "firstAvailable": [sub], "exactly": {"count": 2}},
    ]


def test_template_spec_spec_is_converted() -> None:
    raw = {
        "apiVersion": V1BETA1,
        "kind": "ResourceClaimTemplate",
        "metadata": {"name": "t"},
        "spec": {
            "metadata": {"labels": {"a": "b"}},
            "spec": {"devices": {"requests": [{"name": "r", "deviceClassName": "x"}]}},
        },
    }
    out = convert_v1beta1(raw)
    assert out["spec"]["metadata"] == {"labels": {"a": "b"}}
    assert out["spec"]["spec"]["devices"]["requests"] == [{"name": "r", "exactly": {"deviceClassName": "x"}}]


def test_slice_basic_device_and_zero_node_fields() -> None:
    raw = {
        "apiVersion": V1BETA1,
        "kind": "ResourceSlice",
        "metadata": {"name": "s"},
        "spec": {
            "driver": "gpu.nvidia.com",
            "nodeName": "",
            "allNodes": False,
            "nodeSelector": {"nodeSelectorTerms": [{}]},
            "pool": {"name": "p", "resourceSliceCount": 1},
            "devices": [
                {
                    "name": "gpu-0",
                    "basic": {"attributes": {"type": {"string": "gpu"}}, "capacity": {"memory": {"value": "80Gi"}}},
                },
                {"name": "gpu-1"},
            ],
        },
    }
    out = convert_v1beta1(raw)
    assert "nodeName" not in out["spec"] and "allNodes" not in out["spec"]
    assert out["spec"]["devices"] == [
        {"name": "gpu-0", "attributes": {"type": {"string": "gpu"}}, "capacity": {"memory": {"value": "80Gi"}}},
        {"name": "gpu-1"},
    ]
    slice_ = msgspec.convert(out, dra.ResourceSlice)
    assert slice_.spec.devices[0].attributes["type"].string == "gpu"
    assert slice_.spec.node_name is None and slice_.spec.all_nodes is None


def test_a_true_all_nodes_and_a_real_node_name_stay() -> None:
    spec = {"driver": "d", "nodeName": "n1", "allNodes": True}
    out = convert_v1beta1({"apiVersion": V1BETA1, "kind": "ResourceSlice", "spec": spec})
    assert out["spec"] == spec


def test_device_class_only_changes_version() -> None:
    raw = {"apiVersion": V1BETA1, "kind": "DeviceClass", "metadata": {"name": "c"}, "spec": {"selectors": []}}
    assert convert_v1beta1(raw) == {**raw, "apiVersion": "resource.k8s.io/v1"}


@pytest.mark.parametrize(
    ("raw", "message"),
    [
        (
            {"kind": "ResourceSlice", "spec": {"devices": [{"name": "d", "basic": "x"}]}},
            "Expected `object`, got `str` - at `$.spec.devices[0].basic`",
        ),
        (
            {"kind": "ResourceClaim", "spec": {"devices": {"requests": {}}}},
            "Expected `array`, got `object` - at `$.spec.devices.requests`",
        ),
        ({"kind": "ResourceClaim", "spec": []}, "Expected `object`, got `array` - at `$.spec`"),
    ],
)
def test_wrong_types_raise_with_their_path(raw: dict[str, Any], message: str) -> None:
    with pytest.raises(msgspec.ValidationError) as err:
        convert_v1beta1({"apiVersion": V1BETA1, **raw})
    assert str(err.value) == message


LOADER_FILE = """\
apiVersion: resource.k8s.io/v1beta1
kind: ResourceClaim
metadata: {name: old, namespace: ml}
spec:
  devices:
    requests:
    - name: gpus
      deviceClassName: gpu.nvidia.com
      count: 2
---
apiVersion: resource.k8s.io/v1beta2
kind: ResourceClaim
metadata: {name: mid, namespace: ml}
spec:
  devices:
    requests:
    - name: gpus
      exactly: {deviceClassName: gpu.nvidia.com, count: 4}
---
apiVersion: resource.k8s.io/v1beta1
kind: ResourceSlice
metadata: {name: s}
spec:
  driver: gpu.nvidia.com
  nodeName: node-1
  pool: {name: node-1, resourceSliceCount: 1}
  devices:
  - name: gpu-0
    basic:
      attributes:
        productName: {string: NVIDIA H100 80GB HBM3}
"""


def test_loader_reads_v1beta1_and_v1beta2(tmp_path: Path) -> None:
    (tmp_path / "dra.yaml").write_text(LOADER_FILE)
    inv = load([str(tmp_path)])
    counts = {c.metadata.name: c.spec.devices.requests[0].exactly for c in inv.resource_claims}
    assert {name: (e.device_class_name, e.count) for name, e in counts.items() if e} == {
        "old": ("gpu.nvidia.com", 2),
        "mid": ("gpu.nvidia.com", 4),
    }
    (slice_,) = inv.resource_slices
    assert slice_.spec.devices[0].attributes["productName"].string == "NVIDIA H100 80GB HBM3"


def test_loader_reports_a_bad_v1beta1_shape_with_file_and_line(tmp_path: Path) -> None:
    path = tmp_path / "bad.yaml"
    path.write_text(
        LOADER_FILE.replace(
            "    basic:\n      attributes:\n        productName: {string: NVIDIA H100 80GB HBM3}\n", "    basic: [1]\n"
        )
    )
    with pytest.raises(InputError) as err:
        load([str(path)])
    assert err.value.lines == [
        f"{path}:29: ResourceSlice s: spec.devices[0].basic: Invalid value: [1]: must be of type object"
    ]


def test_problems_in_a_v1beta1_claim_name_v1_fields_at_the_request_line(tmp_path: Path) -> None:
    path = tmp_path / "claim.yaml"
    path.write_text(LOADER_FILE.split("---")[0].replace("count: 2", "count: -2"))
    problems = [p.render() for p in validate(load([str(path)]))]
    assert problems == [
        f"{path}:7: ResourceClaim ml/old: spec.devices.requests[0].exactly.count: Invalid value: -2: "
        "must be greater than zero"
    ]
