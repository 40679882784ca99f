// SPDX-License-Identifier: GPL-2.0
/* cgroup/sock_create: note the creating process of every socket made in the run, so that packets of sockets that
 * never pass connect() or sendmsg() (raw sockets, ICMP, listeners) are still attributed to a process. */
#include "decide.h"

char LICENSE[] SEC("license") = "GPL";

SEC("cgroup/sock_create")
int guard_sock_create(struct bpf_sock *sk)
{
	remember_owner(bpf_get_socket_cookie(sk), 0);
	return 1;
}
