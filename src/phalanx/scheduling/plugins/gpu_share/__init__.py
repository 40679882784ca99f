"""GpuShare: GPU-sharing-aware scoring. ``policy`` is the pure core (the policies the openb experiment compares,
over node arrays); ``plugin`` is the Score plugin that feeds it the cluster's shared DRA GPUs."""

from phalanx.scheduling.plugins.gpu_share.plugin import NAME, PLUGIN, GpuShare, GpuShareArgs, parse_args

__all__ = ["NAME", "PLUGIN", "GpuShare", "GpuShareArgs", "parse_args"]
