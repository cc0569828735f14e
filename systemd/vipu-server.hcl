# /etc/vipu/vipu-server.hcl: configuration of vipu-server.
#
# One `key = value` per line; the keys are the command-line flags without
# `--` (vipu-server --help lists them). Values are "quoted" or one bare word;
# flags take true/false. `#` and `//` start comments. A flag given on the
# command line wins over this file; an unknown key stops the server with
# the file name and line. Another file: vipu-server --config FILE.

# gRPC address of the user, admin and agent APIs. Without `secure`, the
# server serves loopback only: it authenticates nobody.
listen = "127.0.0.1:8090"

# To serve beyond loopback, use mutual TLS and access keys
# (/usr/share/doc/vipu/security.md). Make the certificates once:
#   vipu-server --tls-init /etc/vipu/tls --tls-hosts "$(hostname -f)" \
#     --tls-agents ipum1+ipum2+ipum3+ipum4@127.0.0.1
#   chown -R root:vipu /etc/vipu/tls && chmod -R g+rX /etc/vipu/tls
# (--tls-agents: one certificate per agent process, copied to the agent
# host; agents then speak mutual TLS too.) `systemctl reload vipu-server`
# loads renewed certificates without a restart.
# then replace the line above with:
# listen = "0.0.0.0:8090"
# secure = true
# tls-dir = "/etc/vipu/tls"

# The SQLite database (WAL; keep it on a local disk). systemd's
# StateDirectory makes /var/lib/vipu writable for the vipu user.
db = "/var/lib/vipu/vipu.db"

# Audit log: one JSON line per mutating call, allowed or refused. With
# `secure` it defaults to audit.log next to `db`; "off" turns it off.
# Rotated beyond audit-log-max-bytes into .1 .. .N (audit-log-keep).
# audit-log = "/var/lib/vipu/audit.log"
# audit-log-max-bytes = 10485760
# audit-log-keep = 5

# OpenMetrics endpoint (GET /metrics); "off" to disable.
metrics-listen = "127.0.0.1:2113"

# trace, debug, info, warn, error, critical, off
log-level = "info"

# Accept registrations of agents nobody created with vipu-admin.
auto-add-agents = false

# Agent heartbeat period; an agent is down after three missed periods.
heartbeat-ms = 1000

# Deadline of one call to an agent.
agent-deadline-ms = 5000

# At start, how long to wait for the known agents to register and be
# reconciled before serving changes (they get UNAVAILABLE + retry-after-ms
# meanwhile).
reconcile-window-ms = 10000

# Threads configuring agents in the background.
workers = 8

# A self-contained sandbox instead of real agents: the server starts the
# simulated IPU-Machines of a pod as its own children (they stop with it).
# simulate = "pod16"
