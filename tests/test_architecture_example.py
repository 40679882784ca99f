"""The worked example of docs/architecture.md runs: its plugin module, added to the registry, is enabled and
configured by a KubeSchedulerConfiguration, validates its own args, and decides where a pod goes."""

from __future__ import annotations

import re
import sys
import types
from pathlib import Path
from typing import Any

import pytest

from phalanx.api.errors import InputError
from phalanx.scheduling import config
from phalanx.scheduling.config import parse_config
from phalanx.scheduling.plugins.registry import REGISTRY
from phalanx.scheduling.scheduler import Scheduler

from builders import make_node, make_pod

DOC = Path(__file__).resolve().parent.parent / "docs" / "architecture.md"
LABEL = "node.kubernetes.io/lifecycle"


@pytest.fixture
def registered(monkeypatch: pytest.MonkeyPatch) -> types.ModuleType:
    """The example module, plus "one registry line"."""
    code = re.findall(r"```python\n(.*?)```", DOC.read_text(), flags=re.S)[0]
    module = types.ModuleType("node_label_preference")
    monkeypatch.setitem(sys.modules, module.__name__, module)  # dataclasses resolve annotations through it
    exec(compile(code, str(DOC), "exec"), module.__dict__)
    monkeypatch.setattr(config, "REGISTRY", {**REGISTRY, module.NAME: module.PLUGIN})
    return module


def _config(args: Any) -> dict[str, Any]:
    return {
        "kind": "KubeSchedulerConfiguration",
        "profiles": [
            {
                "plugins": {"score": {"enabled": [{"name": "NodeLabelPreference", "weight": 3}]}},
                "pluginConfig": [{"name": "NodeLabelPreference", "args": args}],
            }
        ],
    }


def test_the_example_plugin_places_pods_on_preferred_nodes(registered: types.ModuleType) -> None:
    cfg = parse_config(_config({"key": LABEL, "values": ["on-demand"]}))
    # "a-spot" comes first in name order and is emptier (LeastAllocated prefers it); the preference wins.
    nodes = [
        make_node("a-spot").label(LABEL, "spot").allocatable(cpu="8").obj(),
        make_node("b-ondemand").label(LABEL, "on-demand").allocatable(cpu="4").obj(),
    ]
    s = Scheduler(cfg)
    s.load(nodes, [make_pod("p").requests(cpu="1").obj()])
    s.run()
    assert s.bound_node("default/p") == "b-ondemand"


def test_the_example_plugin_validates_its_args(registered: types.ModuleType) -> None:
    with pytest.raises(InputError) as info:
        parse_config(_config({"values": []}), "cfg.yaml")
    assert info.value.lines == [
        "cfg.yaml: KubeSchedulerConfiguration: profiles[0].pluginConfig[0].args.values: Required value: "
        "at least one label value"
    ]
    assert registered.parse_args(None) == registered.NodeLabelPreferenceArgs()
