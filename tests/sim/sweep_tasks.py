"""Tasks for the sweep tests. A module of its own (not the test file) so that spawned workers and Ray workers
import it by name: PYTHONPATH carries tests/ to them."""

from __future__ import annotations

import os
import random
import signal
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from phalanx.api.errors import InputError


@dataclass(frozen=True)
class Draw:
    """A seeded draw: the same seed gives the same numbers in any process."""

    seed: int
    count: int = 5

    @property
    def label(self) -> str:
        return f"draw/seed={self.seed}"

    @property
    def weight(self) -> int:
        return self.count

    def run(self, progress: Callable[[int], None]) -> list[float]:
        rnd = random.Random(self.seed)
        out = []
        for _ in range(self.count):
            out.append(rnd.random())
            progress(1)
        return out


@dataclass(frozen=True)
class DieOnce:
    """Kills its own worker the first time (leaving a marker), succeeds the second time."""

    marker: str

    @property
    def label(self) -> str:
        return "die-once"

    @property
    def weight(self) -> int:
        return 1

    def run(self, progress: Callable[[int], None]) -> str:
        marker = Path(self.marker)
        if not marker.exists():
            marker.write_text(str(os.getpid()))
            os.kill(os.getpid(), signal.SIGKILL)
        return f"second attempt after {marker.read_text()}"


@dataclass(frozen=True)
class AlwaysDie:
    @property
    def label(self) -> str:
        return "always-die"

    @property
    def weight(self) -> int:
        return 1

    def run(self, progress: Callable[[int], None]) -> str:
        os.kill(os.getpid(), signal.SIGKILL)
        return "unreachable"


@dataclass(frozen=True)
class Raises:
    @property
    def label(self) -> str:
        return "raises"

    @property
    def weight(self) -> int:
        return 1

    def run(self, progress: Callable[[int], None]) -> str:
        raise RuntimeError("boom\nsecond line")


@dataclass(frozen=True)
class BadInput:
    @property
    def label(self) -> str:
        return "bad-input"

    @property
    def weight(self) -> int:
        return 1

    def run(self, progress: Callable[[int], None]) -> str:
        raise InputError(["trace.csv: row 3: duration: not a number"])
