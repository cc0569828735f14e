// The run loop: signal mask, announcement of readiness, and the sigwait loop.
#include "server/daemon/run_loop.h"

#include <signal.h>

#include <cstdio>

#include "absl/strings/str_cat.h"
#include "server/daemon/ready_file.h"
#include "spdlog/spdlog.h"

namespace vipu::server {
namespace {

sigset_t DaemonSignals() {
  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGTERM);
  sigaddset(&signals, SIGINT);
  sigaddset(&signals, SIGHUP);   // reload the certificates
  sigaddset(&signals, SIGUSR1);  // an HA member steps down
  return signals;
}

}  // namespace

void BlockDaemonSignals() {
  sigset_t signals = DaemonSignals();
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);
  signal(SIGPIPE, SIG_IGN);
}

RunLoopEnd RunUntilSignalled(RunningDaemon& daemon, SystemdNotifier& notifier,
                             const Announcement& announcement, bool restart_on_sigusr1) {
  WriteReadyFile(announcement.ready_file, announcement.address);
  std::printf("%s\n", announcement.ready_line.c_str());
  std::fflush(stdout);
  notifier.Ready(announcement.status);
  notifier.StartWatchdog([&daemon] { return daemon.Healthy(); });

  const sigset_t signals = DaemonSignals();
  for (;;) {
    int sig = 0;
    if (sigwait(&signals, &sig) != 0) continue;
    switch (sig) {
      case SIGHUP:
        daemon.ReloadCertificates();
        break;
      case SIGUSR1:
        if (restart_on_sigusr1) return RunLoopEnd::kRestart;
        spdlog::info(
            "SIGUSR1: ignored (only a member of a highly available control plane "
            "restarts on it)");
        break;
      default:
        spdlog::info("signal {}: stopping", sig);
        notifier.Stopping(absl::StrCat("stopping on signal ", sig));
        return RunLoopEnd::kStop;
    }
  }
}

}  // namespace vipu::server
