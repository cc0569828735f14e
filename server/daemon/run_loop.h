// The one run loop of vipu-server, for a single server and an HA member
// alike: the signals it answers, the ready file, the ready line and systemd's
// notifications.
#ifndef VIPU_SERVER_DAEMON_RUN_LOOP_H_
#define VIPU_SERVER_DAEMON_RUN_LOOP_H_

#include <string>

#include "server/daemon/systemd_notify.h"

namespace vipu::server {

// What the run loop drives: a started single server or HA member. Both
// methods are called from the run loop's thread (the main thread) while the
// daemon's own threads run, so an implementation must be thread-safe with
// respect to them.
class RunningDaemon {
 public:
  virtual ~RunningDaemon() = default;
  // SIGHUP: take the certificates of --tls-dir again where they pass their
  // checks; open connections and partitions are left alone. Logs the
  // outcome, also that there is nothing to reload without --secure.
  virtual void ReloadCertificates() = 0;
  // The systemd watchdog's question: whether the daemon can still serve.
  virtual bool Healthy() = 0;
};

// How the run loop ended.
enum class RunLoopEnd {
  kStop,     // SIGTERM or SIGINT: the caller stops the daemon and exits 0
  kRestart,  // SIGUSR1, which an HA member raises to step down: start afresh
};

// Blocks the signals the run loop takes (SIGTERM, SIGINT, SIGHUP, SIGUSR1)
// and ignores SIGPIPE. Call it on the main thread before any other thread
// starts, so that every thread inherits the mask and sigwait() alone sees
// them.
void BlockDaemonSignals();

// What the run loop announces once the daemon serves.
struct Announcement {
  // --ready-file's path (nothing is written when empty) and the host:port
  // written to it.
  std::string ready_file;
  std::string address;
  // The line printed on stdout ("vipu-server 1.18.0 ready on ...").
  std::string ready_line;
  // systemd's STATUS= with READY=1.
  std::string status;
};

// Announces that `daemon` serves (ready file, stdout, READY=1, the watchdog
// on Healthy()), then waits for signals until one ends the loop: SIGHUP
// reloads the certificates and waits on; SIGUSR1 ends it with kRestart when
// `restart_on_sigusr1` (an HA member), and is otherwise logged and ignored;
// SIGTERM and SIGINT tell systemd STOPPING=1 and end it with kStop.
// BlockDaemonSignals() must have been called first.
RunLoopEnd RunUntilSignalled(RunningDaemon& daemon, SystemdNotifier& notifier,
                             const Announcement& announcement, bool restart_on_sigusr1);

}  // namespace vipu::server

#endif  // VIPU_SERVER_DAEMON_RUN_LOOP_H_
