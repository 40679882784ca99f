"""The deploy guard: runs a command in its own cgroup v2 under eBPF programs that send its DNS to a policy proxy
and filter its egress. Stands alone: shares nothing with the scheduler but the CLI."""

__all__: list[str] = []
