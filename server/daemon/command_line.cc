// vipu-server's flags, the configuration file beneath them, and the checks of
// options against each other.
#include "server/daemon/command_line.h"

#include <CLI/CLI.hpp>
#include <cstdio>
#include <string>

#include "absl/strings/str_cat.h"
#include "server/daemon/config_file.h"
#include "server/daemon/security_setup.h"
#include "server/metrics/metrics_http.h"

namespace vipu::server {
namespace {

int ConfigurationError(const std::string& message) {
  std::fprintf(stderr, "vipu-server: %s\n", message.c_str());
  return 2;
}

// The daemon's flags, into `opt`; returns --config's option, to tell
// whether it was given.
CLI::Option* AddServerFlags(CLI::App* app, ServerOptions* opt) {
  AddSecurityFlags(*app, opt);
  app->add_option("--listen", opt->listen, "gRPC listen address host:port")->capture_default_str();
  app->add_option("--db", opt->db, "SQLite database file")->capture_default_str();
  app->add_option("--simulate", opt->simulate,
                  "start a simulated pod: pod4 pod16 pod64 pod128 pod256 and bow- variants");
  app->add_option("--log-level", opt->log_level, "trace|debug|info|warn|error|critical")
      ->check(CLI::IsMember({"trace", "debug", "info", "warn", "error", "critical", "off"}))
      ->capture_default_str();
  app->add_option("--agent-binary", opt->agent_binary, "vipu-agent for --simulate");
  app->add_option("--simulate-machines-per-process", opt->simulate_machines_per_process,
                  "IPU-Machines each vipu-agent process of --simulate serves; 1: one process "
                  "per machine, as on a real pod")
      ->check(CLI::Range(1, 16))
      ->capture_default_str();
  app->add_option("--ready-file", opt->ready_file, "file to write host:port to once ready");
  app->add_flag("--auto-add-agents", opt->auto_add_agents,
                "accept registrations of unknown agents");
  app->add_option("--heartbeat-ms", opt->heartbeat_ms, "agent heartbeat period")
      ->check(CLI::Range(10, 60000))
      ->capture_default_str();
  app->add_option("--agent-deadline-ms", opt->agent_deadline_ms, "deadline of one agent call")
      ->check(CLI::Range(10, 600000))
      ->capture_default_str();
  app->add_option("--reconcile-window-ms", opt->reconcile_window_ms,
                  "how long to wait at start for known agents")
      ->check(CLI::Range(0, 600000))
      ->capture_default_str();
  app->add_option("--workers", opt->workers, "background worker threads")
      ->check(CLI::Range(1, 256))
      ->capture_default_str();
  auto listen_check = [](const std::string& flag) {
    return [flag](const std::string& value) -> std::string {
      if (value.empty() || value == "off") return "";
      auto parsed = ParseListenAddress(value, flag);
      return parsed.ok() ? "" : std::string(parsed.status().message());
    };
  };
  app->add_option("--http-listen", opt->http_listen,
                  "host:port of the HTTP listener: the pod console (GET /) and the OpenMetrics "
                  "endpoint (GET /metrics); HTTPS with --secure; empty or off: none")
      ->check(listen_check("--http-listen"));
  app->add_option("--metrics-listen", opt->metrics_listen, "older name of --http-listen")
      ->check(listen_check("--metrics-listen"));
  app->add_option("--etcd-endpoints", opt->etcd_endpoints,
                  "keep the state in etcd and run as one member of a highly available control "
                  "plane: comma-separated http://HOST:PORT or https://HOST:PORT (docs/ha.md)");
  app->add_option("--etcd-prefix", opt->etcd_prefix, "key prefix of the state in etcd")
      ->capture_default_str();
  app->add_option("--etcd-lease-ms", opt->etcd_lease_ms,
                  "the leader's lease: how long a dead leader blocks the others")
      ->check(CLI::Range(1000, 600000))
      ->capture_default_str();
  app->add_option("--advertise", opt->advertise,
                  "host:port the other members and forwarded calls reach this member at "
                  "(default: --listen unless it is a wildcard)");
  app->add_option("--etcd-ca", opt->etcd_ca, "CA certificate of the etcd members (https)");
  app->add_option("--etcd-cert", opt->etcd_cert, "client certificate for etcd (https)");
  app->add_option("--etcd-key", opt->etcd_key, "key of --etcd-cert");
  return app->add_option("--config", opt->config,
                         "server configuration file: `key = value` with the flags' names "
                         "(default /etc/vipu/vipu-server.hcl when it exists)");
}

}  // namespace

std::variant<CommandLine, int> ParseCommandLine(int argc, char** argv) {
  CommandLine line;
  ServerOptions& opt = line.options;
  CLI::App app{"vipu-server: the V-IPU controller"};
  CLI::Option* config = AddServerFlags(&app, &opt);
  app.set_version_flag("--version", VIPU_VERSION);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    if (e.get_exit_code() == 0) return app.exit(e);
    return ConfigurationError(e.what());
  }
  // Flags given on the command line win over the file.
  const bool config_given = config->count() > 0;
  const bool db_on_command_line = app.get_option("--db")->count() > 0;
  if (absl::Status s =
          ApplyConfigFile(app, config_given ? opt.config : kDefaultConfigPath, config_given);
      !s.ok()) {
    return ConfigurationError(std::string(s.message()));
  }
  if (!opt.http_listen.empty() && !opt.metrics_listen.empty() &&
      opt.http_listen != opt.metrics_listen) {
    return ConfigurationError(
        "--http-listen and --metrics-listen name the same listener; give one of them");
  }
  if (!opt.etcd_endpoints.empty()) {
    // What has no meaning for a member is refused, never ignored.
    // The default file describes the single-machine server the package
    // installs; its `db` does not stop a member started with flags.
    const bool db_in_file = !db_on_command_line && app.get_option("--db")->count() > 0;
    if (db_on_command_line || (db_in_file && config_given)) {
      return ConfigurationError(absl::StrCat(db_on_command_line ? "--db" : "db in " + opt.config,
                                             ": the state is in etcd with --etcd-endpoints"));
    }
    if (!opt.simulate.empty()) {
      return ConfigurationError(
          "--simulate: a member does not start agents; run vipu-agent on its own (docs/ha.md)");
    }
    if (opt.init) {
      return ConfigurationError(
          "--init: a member keeps no database to initialise; the first secure leader creates "
          "the default admin, or migrate a database made with --init (docs/ha.md)");
    }
    // Files that live next to --db on one machine live under /var/lib/vipu.
    opt.db = "/var/lib/vipu/vipu.db";
  }
  ResolveSecurityDefaults(&opt);
  if (opt.simulate.empty() && app.get_option("--simulate-machines-per-process")->count() > 0) {
    return ConfigurationError("--simulate-machines-per-process: only with --simulate");
  }
  if (!opt.simulate.empty()) {
    absl::StatusOr<fabric::PodSpec> preset = fabric::PodPreset(opt.simulate);
    if (!preset.ok()) {
      return ConfigurationError(absl::StrCat("--simulate: ", preset.status().message()));
    }
    line.pod = *preset;
  }
  return line;
}

}  // namespace vipu::server
