"""v1.37's alpha DRA fields are accepted and ignored, each with a warning located like a validation error."""

from __future__ import annotations

from pathlib import Path

from click.testing import CliRunner

from phalanx.api.loader import load
from phalanx.api.validation import validate
from phalanx.api.validation.ignored_fields import ignored_field_warnings
from phalanx.cli import cli

SNAPSHOT = """\
apiVersion: resource.k8s.io/v1
kind: ResourceSlice
metadata: {name: cpus}
spec:
  driver: cpu.example.com
  nodeName: n1
  pool: {name: n1, generation: 1, resourceSliceCount: 2}
  partitionTypeAttribute: cpu.example.com/partition
  skipNodeOperations: ["*"]
  devices:
  - name: half-0
    attributes: {partition: {string: half}}
    nodeAllocatableResources: {cpu: {allocationMultiplier: "32"}}
    consumesCounters:
    - counterSet: socket
      counters: {cores: {value: "32"}}
      compatibilityGroups: [halves]
---
apiVersion: resource.k8s.io/v1
kind: ResourceSlice
metadata: {name: cpu-counters}
spec:
  driver: cpu.example.com
  nodeName: n1
  pool: {name: n1, generation: 1, resourceSliceCount: 2}
  sharedCounters:
  - name: socket
    counters: {cores: {value: "64"}}
---
apiVersion: resource.k8s.io/v1
kind: ResourceClaimTemplate
metadata: {name: cores, namespace: default}
spec:
  spec:
    devices:
      requests:
      - name: cpu
        exactly:
          deviceClassName: cpu.example.com
          derivedAttributes: [{name: numa, expression: "1"}]
"""


def test_each_ignored_field_is_one_warning_at_its_line(tmp_path: Path) -> None:
    path = tmp_path / "alpha.yaml"
    path.write_text(SNAPSHOT)
    inv = load([str(path)])
    assert validate(inv) == []  # accepted
    lines = [w.render() for w in ignored_field_warnings(inv)]
    assert [line.split(": ignored: ")[0] for line in lines] == [
        f"{path}:8: ResourceSlice cpus: spec.partitionTypeAttribute",
        f"{path}:9: ResourceSlice cpus: spec.skipNodeOperations",
        f"{path}:13: ResourceSlice cpus: spec.devices[0].nodeAllocatableResources",
        f"{path}:17: ResourceSlice cpus: spec.devices[0].consumesCounters[0].compatibilityGroups",
        f"{path}:40: ResourceClaimTemplate default/cores: spec.spec.devices.requests[0].exactly.derivedAttributes",
    ]
    assert lines[2].endswith(
        "ignored: feature gate DRANodeAllocatableResources is alpha and off by default in v1.37"
        " (with it on, allocation could differ)"
    )
    assert lines[0].endswith("(it does not change allocation)")


def test_validate_prints_the_warnings_and_still_accepts(tmp_path: Path) -> None:
    path = tmp_path / "alpha.yaml"
    path.write_text(SNAPSHOT)
    result = CliRunner().invoke(cli, ["validate", "-f", str(path)])
    assert result.exit_code == 0, result.output
    assert result.stderr.count("warning: ") == 5 and result.stderr.endswith("valid\n")
