// Command-line options of vipu-server.
#ifndef VIPU_SERVER_SERVER_OPTIONS_H_
#define VIPU_SERVER_SERVER_OPTIONS_H_

#include <string>

namespace vipu::server {

struct ServerOptions {
  std::string listen = "127.0.0.1:8090";
  std::string db = "/var/lib/vipu/vipu.db";
  std::string simulate;  // pod preset name, empty: none
  std::string log_level = "info";
  std::string agent_binary;  // default: vipu-agent next to vipu-server
  std::string ready_file;    // written with "host:port" once ready
  bool auto_add_agents = false;
  int heartbeat_ms = 1000;
  int agent_deadline_ms = 5000;
  int reconcile_window_ms = 3000;
  int workers = 8;
};

}  // namespace vipu::server

#endif  // VIPU_SERVER_SERVER_OPTIONS_H_
