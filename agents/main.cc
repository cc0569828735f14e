// vipu-agent: parses the command line, starts an AgentProcess, and serves
// until SIGTERM or SIGINT; SIGHUP reloads the certificates.
#include <grpc/support/log.h>
#include <signal.h>
#include <sys/prctl.h>
#include <unistd.h>

#include <iostream>
#include <memory>
#include <string>

#include "absl/status/status.h"
#include "absl/synchronization/mutex.h"
#include "agents/agent_options.h"
#include "agents/agent_process.h"
#include "spdlog/sinks/stdout_sinks.h"
#include "spdlog/spdlog.h"

namespace {

// What SIGHUP does: reload, and say what came of it.
void Reload(vipu::agents::AgentProcess& process, const vipu::agents::AgentOptions& options) {
  if (!options.tls()) {
    spdlog::info("SIGHUP: no certificates to reload without --tls-ca");
    return;
  }
  if (absl::Status s = process.ReloadCertificates(); !s.ok()) {
    spdlog::error("SIGHUP: certificates not reloaded, keeping the old ones: {}",
                  std::string(s.message()));
    return;
  }
  spdlog::info("SIGHUP: reloaded {}; new connections use it", options.tls_cert);
  if (process.CertificateExpired()) {
    spdlog::warn("{} has expired: the server and other agents will refuse it", options.tls_cert);
  }
}

// gRPC's own log lines, at debug level in ours: a port already in use is
// reported as the agent's one-line error, not as gRPC's multi-line dump on
// the terminal the server shares with its agents.
void GrpcLogToDebug(gpr_log_func_args* args) {
  spdlog::debug("grpc: {}:{}: {}", args->file, args->line, args->message);
}

}  // namespace

int main(int argc, char** argv) {
  // Debian's abseil checks every Mutex acquisition for lock-order cycles (a
  // debug default it was built with). gRPC takes many locks per call and the
  // check is a measurable share of it; TSan runs catch lock-order bugs.
  absl::SetMutexDeadlockDetectionMode(absl::OnDeadlockCycle::kIgnore);
  gpr_set_log_function(GrpcLogToDebug);

  vipu::agents::ParsedCommandLine parsed =
      vipu::agents::ParseAgentCommandLine(argc, argv, std::cout, std::cerr);
  if (!parsed.options) return parsed.exit_code;
  const vipu::agents::AgentOptions& options = *parsed.options;

  if (options.exit_with_parent) {
    // Agents started by `vipu-server --simulate` must not outlive a crashed server.
    prctl(PR_SET_PDEATHSIG, SIGTERM);
    if (getppid() == 1) return 0;  // the parent died before prctl took effect
  }

  // Blocked before any thread starts, so every thread inherits the mask and
  // only sigwait below sees the signals: no work happens in a handler.
  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGTERM);
  sigaddset(&signals, SIGINT);
  sigaddset(&signals, SIGHUP);  // reload the certificates
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);

  // stdout carries only the "listening" lines a parent process reads.
  auto logger = spdlog::stderr_logger_mt("vipu-agent");
  spdlog::set_default_logger(logger);
  spdlog::set_level(options.log_level);
  spdlog::flush_on(spdlog::level::info);

  auto process = vipu::agents::AgentProcess::Start(options, std::cout);
  if (!process.ok()) {
    std::cerr << "vipu-agent: " << process.status().message() << "\n";
    return absl::IsInvalidArgument(process.status()) ? 2 : 1;
  }

  int signal_number = 0;
  for (;;) {
    sigwait(&signals, &signal_number);
    if (signal_number != SIGHUP) break;
    Reload(**process, options);
  }
  spdlog::info("signal {} received: shutting down {} machine(s)", signal_number,
               (*process)->machines());
  process->reset();
  spdlog::info("stopped");
  return 0;
}
