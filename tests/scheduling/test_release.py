"""The kube-scheduler release the engine follows where v1.36 and v1.37 differ: ``--compat v1.36`` follows v1.36,
``--compat v1.37`` and phalanx's own mode follow v1.37, and the engine exposes it to the cycles."""

from __future__ import annotations

import pytest

from phalanx.scheduling.config import SchedulerConfig, with_mode
from phalanx.scheduling.release import V1_36, V1_37, release_for
from phalanx.scheduling.scheduler import Scheduler


@pytest.mark.parametrize(("compat", "release"), [(None, V1_37), ("v1.37", V1_37), ("1.37", V1_37), ("v1.36", V1_36)])
def test_each_mode_follows_its_release(compat: str | None, release: object) -> None:
    assert release_for(compat) is release
    assert Scheduler(with_mode(SchedulerConfig(), compat)).release is release


def test_a_version_without_a_compatibility_mode_is_refused() -> None:
    with pytest.raises(KeyError):
        release_for("v1.35")
