# vipu-server-member.hcl: configuration of one member of a highly available
# vipu-server whose state is in etcd (/usr/share/doc/vipu/ha.md).
#
# Copy it over /etc/vipu/vipu-server.hcl on each machine that runs a member
# and change `listen` and `advertise` to that machine's address; every other
# line is the same on all members. The syntax is that of vipu-server.hcl:
# one `key = value` per line, the keys being the command-line flags without
# `--` (vipu-server --help lists them); a flag given on the command line wins
# over this file. A member refuses `db`, `simulate` and `init`, so this file
# has none of them.
#
# The example: three machines 10.0.0.1, 10.0.0.2 and 10.0.0.3, each running
# an etcd member (client URLs on port 2379); this file is the first one's.

# etcd's client URLs, every member of the etcd cluster. https:// URLs use
# TLS with the files below.
etcd-endpoints = "http://10.0.0.1:2379,http://10.0.0.2:2379,http://10.0.0.3:2379"

# Where the state lives in etcd: every member of one control plane uses the
# same prefix; another control plane on the same etcd needs its own.
etcd-prefix = "/vipu/"

# The leader's lease (ms, 1000..600000): a leader that dies blocks the
# others this long before one of them takes over.
etcd-lease-ms = 2000

# gRPC address of the user, admin and agent APIs on this machine, and the
# address the other members, the forwarded calls and the clients reach it
# at. `advertise` may be a name that resolves to this machine; it is needed
# when `listen` is a wildcard (0.0.0.0:8090).
listen = "10.0.0.1:8090"
advertise = "10.0.0.1:8090"

# Without secure mode a member authenticates nobody, and serving beyond
# loopback must be accepted explicitly: keep the port on a management
# network that only trusted hosts reach. For mutual TLS and users with
# access keys, replace `insecure` with the two secure lines below, the
# same certificates on every member (ha.md, "Secure mode").
insecure = true
# secure = true
# tls-dir = "/etc/vipu/tls"

# TLS to etcd, for https:// endpoints: the CA of the etcd members, and a
# client certificate with its key when etcd asks for one
# (--client-cert-auth). Readable by the vipu user.
# etcd-ca = "/etc/vipu/etcd/ca.pem"
# etcd-cert = "/etc/vipu/etcd/client.pem"
# etcd-key = "/etc/vipu/etcd/client-key.pem"

# The pod console and OpenMetrics endpoint (GET /, GET /metrics). Only the
# leader serves the console; a standby answers GET /metrics with its role
# and the leader, and 503 naming the leader otherwise. "off" to disable.
http-listen = "127.0.0.1:2113"

# trace, debug, info, warn, error, critical, off
log-level = "info"

# Accept registrations of agents nobody created with vipu-admin.
auto-add-agents = false

# Agent heartbeat period; an agent is down after three missed periods.
heartbeat-ms = 1000

# Deadline of one call to an agent.
agent-deadline-ms = 5000

# After each election, how long the new leader waits for the known agents
# to register and be reconciled before it takes changes (they get
# UNAVAILABLE + retry-after-ms meanwhile).
reconcile-window-ms = 10000

# Threads configuring agents in the background.
workers = 8
