"""Scale test: load and index the Kubernetes scalability envelope, 5,000 nodes and 150,000 pods.

    python benchmarks/scale_load.py [--nodes 5000] [--pods 150000] [--format json|yaml]

Writes the snapshot as a `kind: List` file (as `kubectl get -o json` prints), then times the same path
`phalanx schedule` takes: parse + decode, validate, and index (node table, pod accounting, queue). Prints the
phase times and the peak RSS of the process.
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import tempfile
import time
from pathlib import Path

import yaml

from phalanx.api.loader import load
from phalanx.api.validation import validate
from phalanx.scheduling.scheduler import Scheduler
from phalanx.snapshot.schedule import peak_rss_bytes


def snapshot(nodes: int, pods: int) -> dict[str, object]:
    items: list[dict[str, object]] = []
    for i in range(nodes):
        items.append(
            {
                "apiVersion": "v1",
                "kind": "Node",
                "metadata": {
                    "name": f"node-{i:05d}",
                    "labels": {"kubernetes.io/hostname": f"node-{i:05d}", "topology.kubernetes.io/zone": f"z{i % 3}"},
                },
                "status": {"allocatable": {"cpu": "64", "memory": "256Gi", "pods": "110"}},
            }
        )
    for j in range(pods):
        items.append(
            {
                "apiVersion": "v1",
                "kind": "Pod",
                "metadata": {"name": f"pod-{j:06d}", "namespace": f"ns-{j % 100}", "labels": {"app": f"app-{j % 500}"}},
                "spec": {
                    "nodeName": f"node-{j % nodes:05d}",
                    "containers": [
                        {
                            "name": "main",
                            "image": "registry.example/app:1",
                            "resources": {
                                "requests": {"cpu": "100m", "memory": "256Mi"},
                                "limits": {"memory": "512Mi"},
                            },
                        }
                    ],
                },
                "status": {"phase": "Running"},
            }
        )
    return {"apiVersion": "v1", "kind": "List", "items": items}


def write(path: str, nodes: int, pods: int, fmt: str) -> None:
    doc = snapshot(nodes, pods)
    if fmt == "json":
        Path(path).write_text(json.dumps(doc))
    else:
        Path(path).write_text(yaml.dump(doc, Dumper=getattr(yaml, "CSafeDumper", yaml.SafeDumper)))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--nodes", type=int, default=5000)
    parser.add_argument("--pods", type=int, default=150000)
    parser.add_argument("--format", choices=["json", "yaml"], default="json")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / f"snapshot.{args.format}"
        # Written by a child process, so the peak RSS printed below is the loader's alone.
        writer = multiprocessing.get_context("spawn").Process(
            target=write, args=(str(path), args.nodes, args.pods, args.format)
        )
        writer.start()
        writer.join()
        size = path.stat().st_size
        t0 = time.perf_counter()
        inv = load([str(path)])
        t1 = time.perf_counter()
        problems = validate(inv)
        t2 = time.perf_counter()
        sched = Scheduler()
        sched.load(inv.nodes, inv.pods, inv.pod_groups, inv.priority_classes)
        t3 = time.perf_counter()
    assert not problems, problems[:3]
    print(f"snapshot: {args.nodes} nodes, {args.pods} pods, {args.format}, {size / 2**20:.0f} MiB")
    print(f"{'parse+decode':<14} {t1 - t0:8.2f} s")
    print(f"{'validate':<14} {t2 - t1:8.2f} s")
    print(f"{'index':<14} {t3 - t2:8.2f} s")
    print(f"{'total':<14} {t3 - t0:8.2f} s")
    print(f"{'peak RSS':<14} {peak_rss_bytes() / 2**20:8.0f} MiB")
    print(f"accounted pods: {len(sched.state.placement)}")


if __name__ == "__main__":
    main()
