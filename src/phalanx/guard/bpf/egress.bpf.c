// SPDX-License-Identifier: GPL-2.0
/* cgroup_skb/egress: the last line. Enforces the address policy on every packet the guarded sockets send (raw
 * sockets, passed fds, whatever slipped past connect), and tells the proxy which process sent each DNS query by
 * recording client port -> owner for packets addressed to the proxy. Returns 1 to pass, 0 to drop. */
#include "decide.h"

char LICENSE[] SEC("license") = "GPL";

#define ETH_P_IP 0x0800
#define ETH_P_IPV6 0x86DD

/* Only the fields we read; the layouts are fixed by the IP RFCs. */
struct ip4_hdr {
	__u8 ver_ihl;
	__u8 tos;
	__u16 tot_len;
	__u16 id;
	__u16 frag_off;
	__u8 ttl;
	__u8 protocol;
	__u16 check;
	__u32 saddr;
	__u32 daddr;
};

struct ip6_hdr {
	__u32 ver_tc_flow;
	__u16 payload_len;
	__u8 nexthdr;
	__u8 hop_limit;
	__u32 saddr[4];
	__u32 daddr[4];
};

struct ports {
	__u16 source;
	__u16 dest;
};

static __always_inline struct owner *owner_of(struct __sk_buff *skb)
{
	struct bpf_sock *sk = skb->sk;

	if (!sk)
		return 0;
	sk = bpf_sk_fullsock(sk);
	return sk ? bpf_sk_storage_get(&sock_owner, sk, 0, 0) : 0;
}

static __always_inline void record_client(struct __sk_buff *skb, __u8 protocol, __u16 sport)
{
	struct port_key key = { .port = sport, .protocol = protocol };
	struct owner *o = owner_of(skb);

	if (o)
		bpf_map_update_elem(&client_ports, &key, o, BPF_ANY);
}

static __always_inline int judge(struct __sk_buff *skb, __u8 family, __u8 protocol, __u32 *daddr, __u16 dport,
				 __u8 verdict, __u32 rule)
{
	struct owner *o;
	struct guard_event *ev;

	if (verdict == VERDICT_ALLOW)
		return 1;
	o = owner_of(skb);
	/* Long-lived flows that passed at connect time survive the expiry of the learned address they used. */
	if (o && (o->flags & OWNER_ALLOWED) && rule == RULE_STRICT)
		return 1;
	if (cfg.audit)
		verdict = VERDICT_AUDIT;
	/* One event per socket: a blocked flow retransmits, and the process was already told at connect. */
	if (!o || !(o->flags & OWNER_REPORTED)) {
		if (o)
			o->flags |= OWNER_REPORTED;
		ev = reserve_event(verdict);
		if (ev) {
			/* Softirq or a retransmit may run this for another task: the socket's owner is who sent it. */
			ev->cookie = bpf_get_socket_cookie(skb);
			ev->pid = o ? o->pid : 0;
			if (o)
				__builtin_memcpy(ev->comm, o->comm, sizeof(ev->comm));
			ev->rule = rule;
			ev->port = dport;
			ev->family = family;
			ev->protocol = protocol;
			ev->hook = HOOK_EGRESS;
			__builtin_memcpy(ev->addr, daddr, 16);
			bpf_ringbuf_submit(ev, 0);
		}
	} else {
		count(COUNT_REPEAT_DENIED);
	}
	return verdict == VERDICT_AUDIT ? 1 : 0;
}

static __always_inline int egress4(struct __sk_buff *skb)
{
	struct ip4_hdr ip;
	struct ports p = {};
	__u32 daddr[4] = {};
	__u32 rule = RULE_NONE;

	if (bpf_skb_load_bytes(skb, 0, &ip, sizeof(ip)) < 0)
		return 1;
	if (ip.protocol == GUARD_IPPROTO_TCP || ip.protocol == GUARD_IPPROTO_UDP)
		bpf_skb_load_bytes(skb, (ip.ver_ihl & 0xf) * 4, &p, sizeof(p));
	if (ip.daddr == cfg.proxy_ip4 && p.dest == cfg.proxy_port && p.dest) {
		record_client(skb, ip.protocol, p.source);
		return 1;
	}
	daddr[0] = ip.daddr;
	return judge(skb, 4, ip.protocol, daddr, p.dest, decide4(ip.daddr, &rule), rule);
}

static __always_inline int egress6(struct __sk_buff *skb)
{
	struct ip6_hdr ip;
	struct ports p = {};
	__u32 rule = RULE_NONE;

	if (bpf_skb_load_bytes(skb, 0, &ip, sizeof(ip)) < 0)
		return 1;
	/* Extension headers are rare on egress; without them the transport header follows directly. */
	if (ip.nexthdr == GUARD_IPPROTO_TCP || ip.nexthdr == GUARD_IPPROTO_UDP)
		bpf_skb_load_bytes(skb, sizeof(ip), &p, sizeof(p));
	if (is_loopback6(ip.daddr) && p.dest == cfg.proxy_port && p.dest) {
		record_client(skb, ip.nexthdr, p.source);
		return 1;
	}
	return judge(skb, 6, ip.nexthdr, ip.daddr, p.dest, decide6(ip.daddr, &rule), rule);
}

SEC("cgroup_skb/egress")
int guard_egress(struct __sk_buff *skb)
{
	if (skb->protocol == bpf_htons(ETH_P_IP))
		return egress4(skb);
	if (skb->protocol == bpf_htons(ETH_P_IPV6))
		return egress6(skb);
	return 1;
}
