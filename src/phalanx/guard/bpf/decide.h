/* The address policy, shared by the connect, sendmsg and egress programs: deny rules first (explicit CIDRs and the
 * addresses of denied names), then allow rules, then loopback, then strict mode's learned addresses. Also the
 * event helpers: who owns a socket, what the calling process is (argv, executable), and how events are sent. */
#pragma once
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_endian.h>
#include <bpf/bpf_core_read.h>
#include "guard.h"
#include "maps.h"

/* Just the fields we read, relocated against the running kernel's BTF (CO-RE), so no kernel headers are needed. */
struct qstr {
	const unsigned char *name;
} __attribute__((preserve_access_index));

struct dentry {
	struct dentry *d_parent;
	struct qstr d_name;
} __attribute__((preserve_access_index));

struct vfsmount {
	struct dentry *mnt_root;
} __attribute__((preserve_access_index));

struct mount {
	struct mount *mnt_parent;
	struct dentry *mnt_mountpoint;
	struct vfsmount mnt;
} __attribute__((preserve_access_index));

struct path {
	struct vfsmount *mnt;
	struct dentry *dentry;
} __attribute__((preserve_access_index));

struct file {
	struct path f_path;
} __attribute__((preserve_access_index));

struct mm_struct {
	unsigned long arg_start;
	unsigned long arg_end;
	struct file *exe_file;
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

static __always_inline void count(__u32 which)
{
	__u64 *n = bpf_map_lookup_elem(&counters, &which);

	if (n)
		*n += 1; /* per-CPU: no atomics needed */
}

/* Remember which process owns the socket, in the socket's own storage. */
static __always_inline void remember_owner(struct bpf_sock *sk, __u32 flags)
{
	struct owner *o;

	if (!sk)
		return;
	o = bpf_sk_storage_get(&sock_owner, sk, 0, BPF_SK_STORAGE_GET_F_CREATE);
	if (!o)
		return;
	o->pid = bpf_get_current_pid_tgid() >> 32;
	o->flags |= flags;
	bpf_get_current_comm(o->comm, sizeof(o->comm));
}

/* Remember where the query was going (for recvmsg's reply source) and who sent it (for the proxy). */
static __always_inline void save_orig(struct bpf_sock *sk, __u8 family, const __u32 *addr, __u16 port)
{
	struct orig_dst *o;

	if (!sk)
		return;
	remember_owner(sk, 0);
	o = bpf_sk_storage_get(&orig_dst, sk, 0, BPF_SK_STORAGE_GET_F_CREATE);
	if (!o)
		return;
	__builtin_memcpy(o->addr, addr, 16);
	o->port = port;
	o->family = family;
}

/* The executable's path, leaf first, crossing mount points like d_path does: argv and comm are the process's to
 * choose, the file it runs is not. */
static __always_inline void capture_exe(struct guard_event *ev, struct task_struct *task)
{
	struct file *exe = BPF_CORE_READ(task, mm, exe_file);
	struct vfsmount *vmnt;
	struct dentry *d, *parent, *root;
	struct mount *mnt, *mparent;
	__u8 n = 0;

	if (!exe)
		return;
	d = BPF_CORE_READ(exe, f_path.dentry);
	vmnt = BPF_CORE_READ(exe, f_path.mnt);
	mnt = (struct mount *)((void *)vmnt - bpf_core_field_offset(struct mount, mnt));
#pragma unroll
	for (int i = 0; i < GUARD_EXE_PARTS + 4; i++) {
		root = BPF_CORE_READ(mnt, mnt.mnt_root);
		if (d == root) {
			/* The root of a mount: continue from where it is mounted, or stop at the root of all. */
			mparent = BPF_CORE_READ(mnt, mnt_parent);
			if (mparent == mnt)
				break;
			d = BPF_CORE_READ(mnt, mnt_mountpoint);
			mnt = mparent;
			continue;
		}
		parent = BPF_CORE_READ(d, d_parent);
		if (parent == d)
			break;
		if (n >= GUARD_EXE_PARTS) {
			n = GUARD_EXE_PARTS + 1; /* longer than we keep: user space marks it truncated */
			break;
		}
		bpf_probe_read_kernel_str(ev->exe[n & (GUARD_EXE_PARTS - 1)], GUARD_EXE_PART_LEN, BPF_CORE_READ(d, d_name.name));
		n++;
		d = parent;
	}
	ev->exe_parts = n;
}

/* Capture the caller's argv and executable now: a process refused a connection often exits before user space can
 * read /proc. */
static __always_inline void capture_process(struct guard_event *ev)
{
	struct task_struct *task = (struct task_struct *)bpf_get_current_task();
	struct mm_struct *mm = BPF_CORE_READ(task, mm);
	struct task_struct *parent = BPF_CORE_READ(task, real_parent);
	unsigned long start, len;

	ev->pid = bpf_get_current_pid_tgid() >> 32;
	bpf_get_current_comm(ev->comm, sizeof(ev->comm));
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
	capture_exe(ev, task);
}

/* Reserve an event, or count why not. Allowed connects are only reported while the ring buffer is less than half
 * full: a flood of them must never take the room a denial needs. */
static __always_inline struct guard_event *reserve_event(__u8 verdict)
{
	struct guard_event *ev;

	if (verdict == VERDICT_ALLOW && bpf_ringbuf_query(&events, BPF_RB_AVAIL_DATA) > GUARD_RINGBUF_SIZE / 2) {
		count(COUNT_HELD_ALLOWED);
		return 0;
	}
	ev = bpf_ringbuf_reserve(&events, sizeof(*ev), 0);
	if (!ev) {
		count(verdict == VERDICT_ALLOW ? COUNT_LOST_ALLOWED : COUNT_LOST_DENIED);
		return 0;
	}
	__builtin_memset(ev, 0, sizeof(*ev));
	ev->ts_ns = bpf_ktime_get_ns();
	ev->verdict = verdict;
	return ev;
}

/* Report a decision made in process context (connect or sendmsg). A full ring buffer never changes the verdict. */
static __always_inline void emit_sock_event(__u64 cookie, __u8 hook, __u8 verdict, __u32 rule, __u8 family,
					    __u8 protocol, const __u32 *addr, __u16 port)
{
	struct guard_event *ev = reserve_event(verdict);

	if (!ev)
		return;
	ev->cookie = cookie;
	ev->rule = rule;
	ev->port = port;
	ev->family = family;
	ev->protocol = protocol;
	ev->hook = hook;
	__builtin_memcpy(ev->addr, addr, 16);
	capture_process(ev);
	bpf_ringbuf_submit(ev, 0);
}

/* True the first time this process meets this verdict for this destination (see struct seen_key). */
static __always_inline int first_seen(const __u32 *addr, __u16 port, __u8 verdict)
{
	struct seen_key key = { .pid = bpf_get_current_pid_tgid() >> 32, .port = port, .verdict = verdict };
	__u8 one = 1;

	__builtin_memcpy(key.addr, addr, 16);
	if (bpf_map_lookup_elem(&seen, &key))
		return 0;
	bpf_map_update_elem(&seen, &key, &one, BPF_ANY);
	return 1;
}

/* Apply a verdict in process context: emit the event, turn a denial into EPERM (return 0) unless auditing. */
static __always_inline int enforce_sock(struct bpf_sock *sk, __u64 cookie, __u8 hook, __u8 verdict, __u32 rule,
					__u8 family, __u8 protocol, const __u32 *addr, __u16 port)
{
	if (verdict == VERDICT_DENY && cfg.audit)
		verdict = VERDICT_AUDIT;
	if (verdict == VERDICT_ALLOW) {
		if (cfg.report_allowed && first_seen(addr, port, verdict))
			emit_sock_event(cookie, hook, verdict, rule, family, protocol, addr, port);
	} else if (first_seen(addr, port, verdict)) {
		emit_sock_event(cookie, hook, verdict, rule, family, protocol, addr, port);
	} else {
		count(COUNT_REPEAT_DENIED);
	}
	if (verdict == VERDICT_DENY)
		return 0;
	/* An audited connect was reported here: the egress program must not report its packets again. */
	remember_owner(sk, verdict == VERDICT_AUDIT ? OWNER_ALLOWED | OWNER_REPORTED : OWNER_ALLOWED);
	return 1;
}
