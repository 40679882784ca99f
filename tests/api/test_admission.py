"""RuntimeClass admission: overhead and scheduling constraints copied onto pods that name the class."""

from __future__ import annotations

import msgspec
import pytest

from phalanx.api.admission import AdmissionError, RuntimeClasses
from phalanx.api.models import Pod, RuntimeClass
from phalanx.api.validation import validate_runtime_class

GVISOR = msgspec.convert(
    {
        "metadata": {"name": "gvisor"},
        "handler": "runsc",
        "overhead": {"podFixed": {"cpu": "250m"}},
        "scheduling": {
            "nodeSelector": {"runtime": "gvisor"},
            "tolerations": [{"key": "sandbox", "operator": "Exists"}],
        },
    },
    RuntimeClass,
)


def pod(**spec: object) -> Pod:
    return msgspec.convert(
        {"metadata": {"name": "p", "namespace": "d"}, "spec": {"containers": [{"name": "c"}], **spec}}, Pod
    )


def test_admission_copies_overhead_selector_and_tolerations() -> None:
    admitted = RuntimeClasses([GVISOR]).admit(pod(runtimeClassName="gvisor", nodeSelector={"zone": "a"}))
    assert admitted.spec.overhead == {"cpu": "250m"}
    assert admitted.spec.node_selector == {"zone": "a", "runtime": "gvisor"}
    assert [t.key for t in admitted.spec.tolerations] == ["sandbox"]


def test_pods_without_a_known_class_are_unchanged() -> None:
    p = pod(runtimeClassName="missing")
    assert RuntimeClasses([GVISOR]).admit(p) is p


@pytest.mark.parametrize(
    ("spec", "fragment"),
    [
        ({"nodeSelector": {"runtime": "kata"}}, "conflict: runtimeClass.scheduling.nodeSelector[runtime] = gvisor"),
        ({"overhead": {"cpu": "1"}}, "Pod's Overhead doesn't match RuntimeClass's defined Overhead"),
    ],
)
def test_admission_conflicts_are_rejected(spec: dict[str, object], fragment: str) -> None:
    with pytest.raises(AdmissionError, match="pod d/p: "):
        try:
            RuntimeClasses([GVISOR]).admit(pod(runtimeClassName="gvisor", **spec))
        except AdmissionError as exc:
            assert fragment in str(exc)
            raise


def test_runtime_class_validation() -> None:
    bad = msgspec.convert({"metadata": {"name": "x"}, "handler": "Bad_Handler"}, RuntimeClass)
    errs = validate_runtime_class(bad)
    assert [e.path for e in errs] == ["handler"]
    assert validate_runtime_class(GVISOR) == []
