/* Structs shared by the guard's eBPF programs and user space (mirrored in phalanx/guard/abi.py, checked by a
 * layout test). All addresses and ports are kept in network byte order, as the kernel hands them to us. */
#pragma once

#define GUARD_ARGS_LEN 256
#define GUARD_EXE_PARTS 8  /* path components of the executable captured in the kernel */
#define GUARD_EXE_PART_LEN 32

#define GUARD_IPPROTO_TCP 6
#define GUARD_IPPROTO_UDP 17

enum guard_verdict { VERDICT_ALLOW = 0, VERDICT_DENY = 1, VERDICT_AUDIT = 2 };
enum guard_hook { HOOK_CONNECT = 1, HOOK_SENDMSG = 2, HOOK_EGRESS = 3, HOOK_DEVICE = 4, HOOK_CGROUP = 5 };

/* Rule ids below 16 are built in; user space numbers the policy's own rules from 16. */
enum guard_rule {
	RULE_NONE = 0,
	RULE_LOOPBACK = 1,
	RULE_STRICT = 2,
	RULE_LEARNED = 3,
	RULE_DEVICE = 4, /* a network device node (tun/tap) */
	RULE_CGROUP = 5, /* a process moved to another cgroup */
};

/* Owner flags on a socket. */
#define OWNER_ALLOWED 1  /* passed the policy at connect time: keep long-lived flows alive after expiry */
#define OWNER_REPORTED 2 /* a packet-level denial was already reported for this socket */

/* Counters of what the kernel side could not report, so the summary never loses anything silently. */
enum guard_counter {
	COUNT_LOST_DENIED = 0,     /* a denial's event found the ring buffer full */
	COUNT_LOST_ALLOWED = 1,    /* an allowed connect's event found the ring buffer full */
	COUNT_HELD_ALLOWED = 2,    /* allowed connects not reported to keep room for denials (ring buffer half full) */
	COUNT_REPEAT_DENIED = 3,   /* denials not reported again: same process, address and port as a reported one */
	COUNT_MAX = 4,
};

/* Knobs set in .rodata before load. */
struct guard_config {
	__u32 proxy_ip4;     /* 127.0.0.1 */
	__u16 proxy_port;    /* UDP and TCP, on 127.0.0.1 and ::1 */
	__u8 audit;          /* record, never block */
	__u8 strict;         /* only addresses learned from allowed answers (or allowed CIDRs) */
	__u8 allow_loopback; /* loopback is allowed unless a deny rule says otherwise */
	__u8 report_allowed; /* emit an event for every allowed connect too (audit trail of destinations) */
	__u8 proxy_v6;       /* the proxy also listens on ::1 */
	__u8 pad;
	/* Field offsets of the cgroup:cgroup_attach_task tracepoint, read from its format file at start. */
	__u16 tp_pid_off;
	__u16 tp_dst_id_off;
	__u16 tp_dst_level_off;
	__u16 tp_dst_path_off;
	__u16 tp_dst_root_off;
	__u16 pad2[3];
};

struct lpm4_key {
	__u32 prefixlen;
	__u32 addr;
};

struct lpm6_key {
	__u32 prefixlen;
	__u32 addr[4];
};

struct in6_key {
	__u32 addr[4];
};

/* An address learned from an allowed DNS answer; expires so that stale answers stop opening the door. */
struct learned {
	__u64 expires_ns; /* CLOCK_MONOTONIC (bpf_ktime_get_ns) */
	__u32 rule;
	__u32 pad;
};

/* Who owns a socket: kept in the socket's own storage (it lives and dies with the socket, so no flood of sockets
 * can evict it), written by sock_create and the sock_addr hooks, read by the egress program and, copied into
 * client_ports, by the proxy. */
struct owner {
	__u32 pid;
	__u32 flags;
	char comm[16];
};

/* The destination a DNS query was aimed at before we redirected it, restored as the reply's source. */
struct orig_dst {
	__u32 addr[4]; /* addr[0] only for IPv4 */
	__u16 port;
	__u8 family; /* 4 or 6 */
	__u8 pad;
};

struct port_key {
	__u16 port; /* client's source port, network byte order */
	__u8 protocol;
	__u8 pad;
};

/* A destination already reported for a process: allowed connects are reported once per (pid, address, port), so
 * a client that connects in a loop costs one event, not thousands; repeated denials are counted, not re-sent, so a
 * flood of one denial cannot crowd the ring buffer and hide a different attempt made during it. */
struct seen_key {
	__u32 pid;
	__u16 port;
	__u8 verdict;
	__u8 pad;
	__u32 addr[4];
};

struct guard_event {
	__u64 ts_ns;
	__u64 cookie; /* socket cookie (HOOK_CGROUP: the destination cgroup's id) */
	__u32 pid;
	__u32 ppid;   /* parent (HOOK_CGROUP: the process that made the move; parent_comm is its comm) */
	__u32 rule;
	__u16 port;   /* network byte order (HOOK_CGROUP: the destination's hierarchy id) */
	__u8 family;  /* 4 or 6 (HOOK_CGROUP: the destination cgroup's level) */
	__u8 protocol;
	__u8 verdict;
	__u8 hook;
	__u16 dev_major; /* HOOK_DEVICE */
	__u16 dev_minor;
	__u8 exe_parts;  /* components in exe[], leaf first; GUARD_EXE_PARTS + 1 when the path was longer */
	__u8 pad[5];
	__u32 addr[4];
	char comm[16];
	char parent_comm[16];
	char args[GUARD_ARGS_LEN]; /* argv, NUL separated, captured at decision time (HOOK_CGROUP: the destination) */
	char exe[GUARD_EXE_PARTS][GUARD_EXE_PART_LEN]; /* the executable's path, leaf first */
};
