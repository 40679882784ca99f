/* Maps shared by all the guard's programs. Each object declares them; the loader creates them once (with the
 * first object) and hands the same fds to the others, so every program of one run sees one set of maps. */
#pragma once
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>
#include "guard.h"

/* 16 MiB: about 28,000 events, so a burst of denials is buffered while the guard catches up. */
#define GUARD_RINGBUF_SIZE (16 << 20)

struct {
	__uint(type, BPF_MAP_TYPE_LPM_TRIE);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__uint(max_entries, 65536);
	__type(key, struct lpm4_key);
	__type(value, __u32); /* rule id */
} deny4 SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_LPM_TRIE);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__uint(max_entries, 65536);
	__type(key, struct lpm6_key);
	__type(value, __u32);
} deny6 SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_LPM_TRIE);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__uint(max_entries, 16384);
	__type(key, struct lpm4_key);
	__type(value, __u32);
} allow4 SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_LPM_TRIE);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__uint(max_entries, 16384);
	__type(key, struct lpm6_key);
	__type(value, __u32);
} allow6 SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 65536);
	__type(key, __u32);
	__type(value, struct learned);
} learned4 SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 65536);
	__type(key, struct in6_key);
	__type(value, struct learned);
} learned6 SEC(".maps");

/* Per-socket storage: freed with the socket, never evicted, so no number of sockets makes an event lose its pid. */
struct {
	__uint(type, BPF_MAP_TYPE_SK_STORAGE);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, int);
	__type(value, struct owner);
} sock_owner SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_SK_STORAGE);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, int);
	__type(value, struct orig_dst);
} orig_dst SEC(".maps");

/* Every (protocol, port) pair fits: an entry is overwritten by the next query from that port, never evicted. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__uint(max_entries, 2 * 65536);
	__type(key, struct port_key);
	__type(value, struct owner);
} client_ports SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 65536);
	__type(key, struct seen_key);
	__type(value, __u8);
} seen SEC(".maps");

/* What the kernel side could not report (enum guard_counter), so the summary can say the record is incomplete. */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, COUNT_MAX);
	__type(key, __u32);
	__type(value, __u64);
} counters SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, GUARD_RINGBUF_SIZE);
} events SEC(".maps");

const volatile struct guard_config cfg = {};
