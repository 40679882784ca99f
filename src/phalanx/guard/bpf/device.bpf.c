// SPDX-License-Identifier: GPL-2.0
/* cgroup/dev: refuse the run the network device nodes that inject packets below the IP layer, where no other hook
 * sees them: /dev/net/tun (tun and tap, char 10:200). Opening it or making a node for it is refused (EPERM) and
 * reported with the caller; every other device is left to the usual permissions. */
#include "decide.h"

char LICENSE[] SEC("license") = "GPL";

#define TUN_MAJOR 10
#define TUN_MINOR 200

SEC("cgroup/dev")
int guard_device(struct bpf_cgroup_dev_ctx *ctx)
{
	__u32 type = ctx->access_type & 0xffff;
	__u8 verdict = cfg.audit ? VERDICT_AUDIT : VERDICT_DENY;
	struct guard_event *ev;

	if (type != BPF_DEVCG_DEV_CHAR || ctx->major != TUN_MAJOR || ctx->minor != TUN_MINOR)
		return 1;
	ev = reserve_event(verdict);
	if (ev) {
		ev->hook = HOOK_DEVICE;
		ev->rule = RULE_DEVICE;
		ev->dev_major = ctx->major;
		ev->dev_minor = ctx->minor;
		capture_process(ev);
		bpf_ringbuf_submit(ev, 0);
	}
	return verdict == VERDICT_AUDIT;
}
