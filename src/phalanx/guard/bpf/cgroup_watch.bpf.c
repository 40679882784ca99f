// SPDX-License-Identifier: GPL-2.0
/* tracepoint cgroup:cgroup_attach_task: report every move of a process between cgroups (rare: service starts and
 * the like), so that user space notices a process of the run being moved out, by itself or by a daemon such as
 * systemd (`systemd-run --scope`). The tracepoint fires after the move, so this detects; it cannot refuse. Field
 * offsets come from the tracepoint's format file, read at start (they differ between kernel versions). */
#include "decide.h"

char LICENSE[] SEC("license") = "GPL";

SEC("tracepoint/cgroup/cgroup_attach_task")
int guard_cgroup_watch(void *ctx)
{
	struct guard_event *ev = reserve_event(VERDICT_DENY);
	__u32 loc = 0;

	if (!ev)
		return 0;
	ev->hook = HOOK_CGROUP;
	ev->rule = RULE_CGROUP;
	bpf_probe_read_kernel(&ev->pid, sizeof(ev->pid), ctx + cfg.tp_pid_off);
	bpf_probe_read_kernel(&ev->cookie, sizeof(ev->cookie), ctx + cfg.tp_dst_id_off);
	bpf_probe_read_kernel(&ev->family, sizeof(ev->family), ctx + cfg.tp_dst_level_off); /* level < 256 */
	bpf_probe_read_kernel(&ev->port, sizeof(ev->port), ctx + cfg.tp_dst_root_off);    /* hierarchy id */
	bpf_probe_read_kernel(&loc, sizeof(loc), ctx + cfg.tp_dst_path_off);
	/* __data_loc: low 16 bits the offset of the string from the record's start, high 16 bits its length. */
	bpf_probe_read_kernel_str(ev->args, sizeof(ev->args), ctx + (loc & 0xffff));
	ev->ppid = bpf_get_current_pid_tgid() >> 32; /* who moved it */
	bpf_get_current_comm(ev->parent_comm, sizeof(ev->parent_comm));
	bpf_ringbuf_submit(ev, 0);
	return 0;
}
