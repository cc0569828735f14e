// vipu-server: parses the flags and the configuration file, runs the
// security commands or starts a VipuServer, and reports what happened.
#include <grpc/support/log.h>
#include <malloc.h>
#include <signal.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <cstdio>
#include <optional>
#include <string>

#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/clock.h"
#include "fabric/pods.h"
#include "server/config_file.h"
#include "server/ha_member.h"
#include "server/metrics/metrics_http.h"
#include "server/ready_file.h"
#include "server/security_setup.h"
#include "server/server_options.h"
#include "server/systemd_notify.h"
#include "server/vipu_server.h"
#include "spdlog/spdlog.h"

namespace vipu::server {
namespace {

// gRPC's own log lines, at debug level in ours. A failure they describe
// (a port already in use prints a multi-line chttp2_server dump) reaches the
// operator as the one-line error the server prints; the dump stays for
// --log-level debug.
void GrpcLogToDebug(gpr_log_func_args* args) {
  spdlog::debug("grpc: {}:{}: {}", args->file, args->line, args->message);
}

// Runs the daemon until SIGTERM or SIGINT; SIGHUP reloads the certificates.
// Returns the process's exit code.
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

int Run(const ServerOptions& opt, const std::optional<fabric::PodSpec>& pod) {
  // Signals are taken by sigwait() below; block them before any thread starts.
  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGTERM);
  sigaddset(&signals, SIGINT);
  sigaddset(&signals, SIGHUP);  // reload the certificates
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);
  signal(SIGPIPE, SIG_IGN);
  SystemdNotifier notifier;
  const absl::Time started = absl::Now();

  auto server = VipuServer::Start(opt, pod, &notifier);
  if (!server.ok()) {
    // On stderr as well as in the log: this is what an operator sees when
    // the unit fails.
    spdlog::critical("{}", std::string(server.status().message()));
    std::fprintf(stderr, "vipu-server: %s\n", std::string(server.status().message()).c_str());
    return 1;
  }
  notifier.StartWatchdog([s = server->get()] { return s->DatabaseAnswers(); });
  const std::string address = (*server)->address();
  WriteReadyFile(opt.ready_file, address);
  std::printf("vipu-server %s ready on %s\n", VIPU_VERSION, address.c_str());
  std::fflush(stdout);
  spdlog::info("ready {} ms after start ({} agents registered)",
               absl::ToInt64Milliseconds(absl::Now() - started), (*server)->registered_agents());
  notifier.Ready(absl::StrCat("serving on ", address, ", ", (*server)->registered_agents(),
                              " agents registered"));

  int sig = 0;
  for (;;) {
    sigwait(&signals, &sig);
    if (sig != SIGHUP) break;
    // Running partitions and open connections are not touched: only new
    // handshakes see the reloaded certificates. Security logs the outcome.
    if (opt.secure) {
      (void)(*server)->ReloadCertificates();
    } else {
      spdlog::info("SIGHUP: no certificates to reload without --secure");
    }
  }
  spdlog::info("signal {}: stopping", sig);
  notifier.Stopping(absl::StrCat("stopping on signal ", sig));
  server->reset();
  spdlog::info("stopped");
  return 0;
}

}  // namespace
}  // namespace vipu::server

int main(int argc, char** argv) {
  // Free memory at the top of a thread's heap is kept up to this size
  // instead of being handed back after each SQLite transaction: each
  // hand-back (madvise) interrupts every core the process runs on.
  mallopt(M_TRIM_THRESHOLD, 64 << 20);
  // Debian's abseil checks every Mutex acquisition for lock-order cycles (a
  // debug default it was built with). gRPC takes many locks per call and the
  // check is a measurable share of it; TSan runs catch lock-order bugs.
  absl::SetMutexDeadlockDetectionMode(absl::OnDeadlockCycle::kIgnore);
  // Before the first gRPC call, so that none of its lines reach stderr.
  gpr_set_log_function(vipu::server::GrpcLogToDebug);
  vipu::server::ServerOptions opt;
  CLI::App app{"vipu-server: the V-IPU controller"};
  CLI::Option* config = vipu::server::AddServerFlags(&app, &opt);
  app.set_version_flag("--version", VIPU_VERSION);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    if (e.get_exit_code() == 0) return app.exit(e);
    std::fprintf(stderr, "vipu-server: %s\n", e.what());
    return 2;
  }
  // Flags given on the command line win over the file.
  const bool config_given = config->count() > 0;
  const bool db_on_command_line = app.get_option("--db")->count() > 0;
  if (absl::Status s = vipu::server::ApplyConfigFile(
          app, config_given ? opt.config : vipu::server::kDefaultConfigPath, config_given);
      !s.ok()) {
    std::fprintf(stderr, "vipu-server: %s\n", std::string(s.message()).c_str());
    return 2;
  }
  spdlog::set_level(spdlog::level::from_str(opt.log_level));
  spdlog::set_pattern("%Y-%m-%dT%H:%M:%S.%e %^%l%$ vipu-server %v");
  if (!opt.http_listen.empty() && !opt.metrics_listen.empty() &&
      opt.http_listen != opt.metrics_listen) {
    std::fprintf(stderr,
                 "vipu-server: --http-listen and --metrics-listen name the same listener; give "
                 "one of them\n");
    return 2;
  }
  if (!opt.etcd_endpoints.empty()) {
    // What has no meaning for a member is refused, never ignored.
    std::string refused;
    // The default file describes the single-machine server the package
    // installs; its `db` does not stop a member started with flags.
    const bool db_in_file = !db_on_command_line && app.get_option("--db")->count() > 0;
    if (db_on_command_line || (db_in_file && config_given)) {
      refused = absl::StrCat(db_on_command_line ? "--db" : "db in " + opt.config,
                             ": the state is in etcd with --etcd-endpoints");
    } else if (!opt.simulate.empty()) {
      refused =
          "--simulate: a member does not start agents; run vipu-agent on its own (docs/ha.md)";
    } else if (opt.init) {
      refused =
          "--init: a member keeps no database to initialise; the first secure leader creates "
          "the default admin, or migrate a database made with --init (docs/ha.md)";
    }
    if (!refused.empty()) {
      std::fprintf(stderr, "vipu-server: %s\n", refused.c_str());
      return 2;
    }
    // Files that live next to --db on one machine live under /var/lib/vipu.
    opt.db = "/var/lib/vipu/vipu.db";
  }
  vipu::server::ResolveSecurityDefaults(&opt);
  if (int code = vipu::server::RunSecurityCommands(opt); code >= 0) return code;
  if (!opt.etcd_endpoints.empty()) return vipu::server::RunMember(opt, argv);
  std::optional<vipu::fabric::PodSpec> pod;
  if (!opt.simulate.empty()) {
    auto preset = vipu::fabric::PodPreset(opt.simulate);
    if (!preset.ok()) {
      std::fprintf(stderr, "vipu-server: --simulate: %s\n",
                   std::string(preset.status().message()).c_str());
      return 2;
    }
    pod = *preset;
  }
  return vipu::server::Run(opt, pod);
}
