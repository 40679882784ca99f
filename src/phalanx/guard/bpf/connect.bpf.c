// SPDX-License-Identifier: GPL-2.0
/* cgroup/connect4 and connect6: send every DNS connection (UDP or TCP, port 53, whatever server) to the guard's
 * proxy, and refuse (EPERM) connections to addresses the policy denies. IPv4-mapped IPv6 is judged as IPv4. */
#include "decide.h"

char LICENSE[] SEC("license") = "GPL";

SEC("cgroup/connect4")
int guard_connect4(struct bpf_sock_addr *ctx)
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
	return enforce_sock(ctx->sk, bpf_get_socket_cookie(ctx), HOOK_CONNECT, verdict, rule, 4, ctx->protocol, addr,
			    ctx->user_port);
}

SEC("cgroup/connect6")
int guard_connect6(struct bpf_sock_addr *ctx)
{
	__u32 addr[4] = { ctx->user_ip6[0], ctx->user_ip6[1], ctx->user_ip6[2], ctx->user_ip6[3] };
	__u32 rule = RULE_NONE;
	__u8 verdict;

	if (ctx->user_port == bpf_htons(53)) {
		save_orig(ctx->sk, 6, addr, ctx->user_port);
		if (is_v4_mapped(addr) || !cfg.proxy_v6) {
			/* ::ffff:127.0.0.1 reaches the IPv4 listener from a dual-stack socket. */
			ctx->user_ip6[0] = 0;
			ctx->user_ip6[1] = 0;
			ctx->user_ip6[2] = bpf_htonl(0xffff);
			ctx->user_ip6[3] = cfg.proxy_ip4;
		} else {
			ctx->user_ip6[0] = 0;
			ctx->user_ip6[1] = 0;
			ctx->user_ip6[2] = 0;
			ctx->user_ip6[3] = bpf_htonl(1);
		}
		ctx->user_port = cfg.proxy_port;
		return 1;
	}
	verdict = decide6(addr, &rule);
	return enforce_sock(ctx->sk, bpf_get_socket_cookie(ctx), HOOK_CONNECT, verdict, rule, 6, ctx->protocol, addr,
			    ctx->user_port);
}
