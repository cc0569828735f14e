// Command-line options of vipu-server.
#ifndef VIPU_SERVER_DAEMON_SERVER_OPTIONS_H_
#define VIPU_SERVER_DAEMON_SERVER_OPTIONS_H_

#include <cstdint>
#include <string>
#include <vector>

namespace vipu::server {

struct ServerOptions {
  std::string listen = "127.0.0.1:8090";
  std::string db = "/var/lib/vipu/vipu.db";
  std::string simulate;  // pod preset name, empty: none
  std::string log_level = "info";
  std::string agent_binary;  // default: vipu-agent next to vipu-server
  // Machines of a simulated pod served by one vipu-agent process; 1: one
  // process per machine, as on a real pod.
  int simulate_machines_per_process = 16;
  std::string ready_file;  // written with "host:port" once ready
  bool auto_add_agents = false;
  int heartbeat_ms = 1000;
  int agent_deadline_ms = 5000;
  int reconcile_window_ms = 3000;
  int workers = 8;
  std::string config;  // --config; default /etc/vipu/vipu-server.hcl when it exists
  // host:port of the HTTP listener (console and /metrics); empty or "off":
  // none. --metrics-listen is the older name of --http-listen.
  std::string http_listen;
  std::string metrics_listen;

  // Secure mode and end-points (server/daemon/security_setup.h, docs/security.md).
  bool secure = false;                 // mutual TLS + users
  bool insecure = false;               // consent to serve beyond loopback without --secure
  bool init = false;                   // initialise storage (and the default admin), then exit
  std::string tls_dir;                 // default: "tls" next to --db
  std::string tls_init;                // --tls-init DIR: write certificates, then exit
  std::vector<std::string> tls_hosts;  // extra server names for --tls-init
  std::string tls_agents;              // --tls-agents ID[+ID][@HOST[+HOST]],... for --tls-init
  int tls_validity_days = 825;
  std::string default_user_id;       // default: the current user
  std::string user_api_listen;       // default: --listen
  std::string admin_api_listen;      // default: the user API's address
  std::string agent_api_listen;      // default: the user API's
  double rate_limit_per_second = 0;  // mutating calls per caller; 0: off
  double rate_limit_burst = 0;       // 0: same as the rate
  int key_hash_iterations = 100000;
  // Audit log of mutating calls (server/security/audit_log.h). Empty: audit.log next
  // to --db with --secure, none without; "off": none.
  std::string audit_log;
  int64_t audit_log_max_bytes = int64_t{10} << 20;  // rotate beyond this size
  int audit_log_keep = 5;                           // rotated files kept

  // A member of a highly available control plane (docs/ha.md): the state in
  // etcd instead of --db, and a leader election among the members.
  std::string etcd_endpoints;  // http(s)://HOST:PORT,...; empty: SQLite
  std::string etcd_prefix = "/vipu/";
  int etcd_lease_ms = 2000;                  // the leader's lease
  std::string advertise;                     // host:port the other members reach this one at
  std::string etcd_ca, etcd_cert, etcd_key;  // TLS to etcd (https endpoints)
};

}  // namespace vipu::server

#endif  // VIPU_SERVER_DAEMON_SERVER_OPTIONS_H_
