// SPDX-License-Identifier: GPL-2.0
/* cgroup/sock_create: note the creating process of every IP socket made in the run, so that packets of sockets
 * that never pass connect() or sendmsg() (raw sockets, ICMP, listeners) are still attributed to a process. The
 * kernel runs this hook for AF_INET and AF_INET6 only; other families are refused before this (seccomp, see
 * phalanx/guard/seccomp.py). */
#include "decide.h"

char LICENSE[] SEC("license") = "GPL";

SEC("cgroup/sock_create")
int guard_sock_create(struct bpf_sock *sk)
{
	remember_owner(sk, 0);
	return 1;
}
