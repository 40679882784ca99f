"""``python -m phalanx.testenv``: build the binaries, or run a control plane by hand until Ctrl-C.

python -m phalanx.testenv up [--version 1.36.3] [--scheduler] [--dir DIR]
python -m phalanx.testenv assets [--version 1.36.3]
"""

from __future__ import annotations

import argparse
import signal
import sys
import threading
from pathlib import Path

from phalanx.testenv.assets import AssetsError, find_assets
from phalanx.testenv.controlplane import ControlPlane, ControlPlaneError
from phalanx.testenv.versions import SUPPORTED


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m phalanx.testenv", description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    up = sub.add_parser("up", help="start etcd, kube-apiserver and kube-controller-manager; Ctrl-C stops them")
    assets = sub.add_parser("assets", help="build (or find) the binaries and print their folder")
    for p in (up, assets):
        p.add_argument("--version", default=next(iter(SUPPORTED)), choices=sorted(SUPPORTED))
    up.add_argument("--scheduler", action="store_true", help="also start kube-scheduler")
    up.add_argument("--dir", type=Path, help="work directory (certificates, kubeconfigs, logs, etcd data)")
    args = parser.parse_args(argv)
    try:
        if args.command == "assets":
            print(find_assets(args.version).dir)
            return 0
        with ControlPlane(args.version, workdir=args.dir) as cp:
            if args.scheduler:
                cp.start_scheduler()
            print(f"kube-apiserver v{cp.kube.version} at {cp.url}")
            print(f"  export KUBECONFIG={cp.kubeconfig()}")
            print(f"  logs: {cp.log_dir()} (each log starts with the component's command line)")
            print(f"  kubectl: {cp.assets.path('kubectl')}")
            done = threading.Event()
            signal.signal(signal.SIGINT, lambda *_: done.set())
            signal.signal(signal.SIGTERM, lambda *_: done.set())
            done.wait()
    except (AssetsError, ControlPlaneError) as exc:
        print(f"phalanx.testenv: {exc}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
