// SPDX-License-Identifier: GPL-2.0
/* cgroup/sendmsg4|6 and recvmsg4|6: unconnected UDP (sendto) never passes connect(), so redirect its DNS queries
 * here, and restore the reply's source to the server the process aimed at, or its resolver would drop the reply. */
#include "decide.h"

char LICENSE[] SEC("license") = "GPL";

SEC("cgroup/sendmsg4")
int guard_sendmsg4(struct bpf_sock_addr *ctx)
{
	__u32 addr[4] = { ctx->user_ip4, 0, 0, 0 };
	__u32 rule = RULE_NONE;
	__u8 verdict;

	if (ctx->user_port == bpf_htons(53)) {
		save_orig(ctx->sk, 4, addr, ctx->user_port);
		ctx->user_ip4 = cfg.proxy_ip4;
		ctx->user_port = cfg.proxy_port;
		return 1;
	}
	verdict = decide4(ctx->user_ip4, &rule);
	return enforce_sock(ctx->sk, bpf_get_socket_cookie(ctx), HOOK_SENDMSG, verdict, rule, 4, GUARD_IPPROTO_UDP,
			    addr, ctx->user_port);
}

SEC("cgroup/sendmsg6")
int guard_sendmsg6(struct bpf_sock_addr *ctx)
{
	__u32 addr[4] = { ctx->user_ip6[0], ctx->user_ip6[1], ctx->user_ip6[2], ctx->user_ip6[3] };
	__u32 rule = RULE_NONE;
	__u8 verdict;

	if (ctx->user_port == bpf_htons(53)) {
		save_orig(ctx->sk, 6, addr, ctx->user_port);
		ctx->user_ip6[0] = 0;
		ctx->user_ip6[1] = 0;
		if (is_v4_mapped(addr) || !cfg.proxy_v6) {
			ctx->user_ip6[2] = bpf_htonl(0xffff);
			ctx->user_ip6[3] = cfg.proxy_ip4;
		} else {
			ctx->user_ip6[2] = 0;
			ctx->user_ip6[3] = bpf_htonl(1);
		}
		ctx->user_port = cfg.proxy_port;
		return 1;
	}
	verdict = decide6(addr, &rule);
	return enforce_sock(ctx->sk, bpf_get_socket_cookie(ctx), HOOK_SENDMSG, verdict, rule, 6, GUARD_IPPROTO_UDP,
			    addr, ctx->user_port);
}

SEC("cgroup/recvmsg4")
int guard_recvmsg4(struct bpf_sock_addr *ctx)
{
	struct orig_dst *o;

	if (ctx->user_ip4 != cfg.proxy_ip4 || ctx->user_port != cfg.proxy_port || !ctx->sk)
		return 1;
	o = bpf_sk_storage_get(&orig_dst, ctx->sk, 0, 0);
	if (o && o->family == 4) {
		ctx->user_ip4 = o->addr[0];
		ctx->user_port = o->port;
	}
	return 1;
}

SEC("cgroup/recvmsg6")
int guard_recvmsg6(struct bpf_sock_addr *ctx)
{
	__u32 a[4] = { ctx->user_ip6[0], ctx->user_ip6[1], ctx->user_ip6[2], ctx->user_ip6[3] };
	struct orig_dst *o;

	if (ctx->user_port != cfg.proxy_port || !ctx->sk)
		return 1;
	if (!is_loopback6(a) && !(is_v4_mapped(a) && a[3] == cfg.proxy_ip4))
		return 1;
	o = bpf_sk_storage_get(&orig_dst, ctx->sk, 0, 0);
	if (!o || o->family != 6)
		return 1;
	ctx->user_ip6[0] = o->addr[0];
	ctx->user_ip6[1] = o->addr[1];
	ctx->user_ip6[2] = o->addr[2];
	ctx->user_ip6[3] = o->addr[3];
	ctx->user_port = o->port;
	return 1;
}
