/* The address policy, shared by the connect, sendmsg and egress programs: deny rules first (explicit CIDRs and the
 * addresses of denied names), then allow rules, then loopback, then strict mode's learned addresses. */
#pragma once
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_endian.h>
#include <bpf/bpf_core_read.h>
#include "guard.h"
#include "maps.h"

/* Just the fields we read, relocated against the running kernel's BTF (CO-RE), so no kernel headers are needed. */
struct mm_struct {
	unsigned long arg_start;
	unsigned long arg_end;
} __attribute__((preserve_access_index));

struct task_struct {
	int tgid;
	char comm[16];
	struct mm_struct *mm;
	struct task_struct *real_parent;
} __attribute__((preserve_access_index));

static __always_inline int learned_ok(struct learned *l, __u32 *rule)
{
	if (!l || l->expires_ns < bpf_ktime_get_ns())
		return 0;
	*rule = l->rule;
	return 1;
}

static __always_inline __u8 decide4(__u32 ip, __u32 *rule)
{
	struct lpm4_key key = { .prefixlen = 32, .addr = ip };
	__u32 *r;

	r = bpf_map_lookup_elem(&deny4, &key);
	if (r) {
		*rule = *r;
		return VERDICT_DENY;
	}
	r = bpf_map_lookup_elem(&allow4, &key);
	if (r) {
		*rule = *r;
		return VERDICT_ALLOW;
	}
	if (cfg.allow_loopback && (bpf_ntohl(ip) >> 24) == 127) {
		*rule = RULE_LOOPBACK;
		return VERDICT_ALLOW;
	}
	if (!cfg.strict)
		return VERDICT_ALLOW;
	if (learned_ok(bpf_map_lookup_elem(&learned4, &ip), rule))
		return VERDICT_ALLOW;
	*rule = RULE_STRICT;
	return VERDICT_DENY;
}

static __always_inline int is_v4_mapped(const __u32 *a)
{
	return a[0] == 0 && a[1] == 0 && a[2] == bpf_htonl(0xffff);
}

static __always_inline int is_loopback6(const __u32 *a)
{
	return a[0] == 0 && a[1] == 0 && a[2] == 0 && a[3] == bpf_htonl(1);
}

static __always_inline __u8 decide6(const __u32 *a, __u32 *rule)
{
	struct lpm6_key key = { .prefixlen = 128 };
	struct in6_key lk;
	__u32 *r;

	if (is_v4_mapped(a))
		return decide4(a[3], rule);
	__builtin_memcpy(key.addr, a, 16);
	r = bpf_map_lookup_elem(&deny6, &key);
	if (r) {
		*rule = *r;
		return VERDICT_DENY;
	}
	r = bpf_map_lookup_elem(&allow6, &key);
	if (r) {
		*rule = *r;
		return VERDICT_ALLOW;
	}
	if (cfg.allow_loopback && is_loopback6(a)) {
		*rule = RULE_LOOPBACK;
		return VERDICT_ALLOW;
	}
	if (!cfg.strict)
		return VERDICT_ALLOW;
	__builtin_memcpy(lk.addr, a, 16);
	if (learned_ok(bpf_map_lookup_elem(&learned6, &lk), rule))
		return VERDICT_ALLOW;
	*rule = RULE_STRICT;
	return VERDICT_DENY;
}

static __always_inline void count_lost(void)
{
	__u32 zero = 0;
	__u64 *lost = bpf_map_lookup_elem(&lost_events, &zero);

	if (lost)
		__sync_fetch_and_add(lost, 1);
}

/* Remember which process owns the socket, for the egress program and for the proxy's attribution. */
static __always_inline void remember_owner(__u64 cookie, __u32 flags)
{
	struct owner o = { .pid = bpf_get_current_pid_tgid() >> 32, .flags = flags };
	struct owner *old = bpf_map_lookup_elem(&sock_owner, &cookie);

	if (old)
		o.flags |= old->flags;
	bpf_get_current_comm(o.comm, sizeof(o.comm));
	bpf_map_update_elem(&sock_owner, &cookie, &o, BPF_ANY);
}

/* Capture the caller's argv now: a process refused a connection often exits before user space can read /proc. */
static __always_inline void capture_args(struct guard_event *ev)
{
	struct task_struct *task = (struct task_struct *)bpf_get_current_task();
	struct mm_struct *mm = BPF_CORE_READ(task, mm);
	unsigned long start, len;

	struct task_struct *parent = BPF_CORE_READ(task, real_parent);

	ev->ppid = BPF_CORE_READ(parent, tgid);
	bpf_core_read(ev->parent_comm, sizeof(ev->parent_comm), &parent->comm);
	if (!mm)
		return;
	start = BPF_CORE_READ(mm, arg_start);
	len = BPF_CORE_READ(mm, arg_end) - start;
	if (len > GUARD_ARGS_LEN - 1)
		len = GUARD_ARGS_LEN - 1;
	if (len > 0)
		bpf_probe_read_user(ev->args, len & (GUARD_ARGS_LEN - 1), (void *)start);
}

/* Report a decision made in process context (connect or sendmsg). A full ring buffer never changes the verdict. */
static __always_inline void emit_sock_event(__u64 cookie, __u8 hook, __u8 verdict, __u32 rule, __u8 family,
					    __u8 protocol, const __u32 *addr, __u16 port)
{
	struct guard_event *ev = bpf_ringbuf_reserve(&events, sizeof(*ev), 0);

	if (!ev) {
		count_lost();
		return;
	}
	__builtin_memset(ev, 0, sizeof(*ev));
	ev->ts_ns = bpf_ktime_get_ns();
	ev->cookie = cookie;
	ev->pid = bpf_get_current_pid_tgid() >> 32;
	ev->rule = rule;
	ev->port = port;
	ev->family = family;
	ev->protocol = protocol;
	ev->verdict = verdict;
	ev->hook = hook;
	__builtin_memcpy(ev->addr, addr, 16);
	bpf_get_current_comm(ev->comm, sizeof(ev->comm));
	capture_args(ev);
	bpf_ringbuf_submit(ev, 0);
}

/* True the first time this process is allowed to this destination (see struct seen_key). */
static __always_inline int first_allowed(const __u32 *addr, __u16 port)
{
	struct seen_key key = { .pid = bpf_get_current_pid_tgid() >> 32, .port = port };
	__u8 one = 1;

	__builtin_memcpy(key.addr, addr, 16);
	if (bpf_map_lookup_elem(&seen_allowed, &key))
		return 0;
	bpf_map_update_elem(&seen_allowed, &key, &one, BPF_ANY);
	return 1;
}

/* Apply a verdict in process context: emit the event, turn a denial into EPERM (return 0) unless auditing. */
static __always_inline int enforce_sock(__u64 cookie, __u8 hook, __u8 verdict, __u32 rule, __u8 family,
					__u8 protocol, const __u32 *addr, __u16 port)
{
	if (verdict == VERDICT_DENY && cfg.audit)
		verdict = VERDICT_AUDIT;
	if (verdict != VERDICT_ALLOW || (cfg.report_allowed && first_allowed(addr, port)))
		emit_sock_event(cookie, hook, verdict, rule, family, protocol, addr, port);
	if (verdict == VERDICT_DENY)
		return 0;
	/* An audited connect was reported here: the egress program must not report its packets again. */
	remember_owner(cookie, verdict == VERDICT_AUDIT ? OWNER_ALLOWED | OWNER_REPORTED : OWNER_ALLOWED);
	return 1;
}
