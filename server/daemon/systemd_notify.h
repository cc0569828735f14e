// Tells systemd about the server's life (Type=notify units): STATUS= lines
// while starting, READY=1 once the database is open, the agents reconciled
// and the ports listen, STOPPING=1 on shutdown, and WATCHDOG=1 pings when the
// unit sets WatchdogSec. Without $NOTIFY_SOCKET every call does nothing, so
// the server runs the same by hand, in tests and under systemd.
#ifndef VIPU_SERVER_DAEMON_SYSTEMD_NOTIFY_H_
#define VIPU_SERVER_DAEMON_SYSTEMD_NOTIFY_H_

#include <functional>
#include <string>
#include <thread>

#include "absl/base/thread_annotations.h"
#include "base/mutex.h"

namespace vipu::server {

// Owns the watchdog thread. Status and Ready may be called from any thread
// (each is one datagram); StartWatchdog and Stopping are called by the owner,
// never from the watchdog's `alive`.
class SystemdNotifier {
 public:
  SystemdNotifier() = default;
  ~SystemdNotifier();  // stops the watchdog thread

  SystemdNotifier(const SystemdNotifier&) = delete;
  SystemdNotifier& operator=(const SystemdNotifier&) = delete;

  // True when $NOTIFY_SOCKET is set.
  static bool Enabled();

  void Status(const std::string& text);
  void Ready(const std::string& status);
  // Also stops the watchdog: once it returns, `alive` is not called again,
  // so the daemon it asks about may be taken apart.
  void Stopping(const std::string& status);

  // With WatchdogSec set ($WATCHDOG_USEC), pings at half the period while
  // `alive()` returns true; a hung server (alive() stuck or false) is then
  // restarted by systemd. Does nothing otherwise.
  void StartWatchdog(std::function<bool()> alive);

 private:
  void Send(const std::string& message);
  void StopWatchdog();

  vipu::Mutex mu_;
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  std::thread watchdog_;
};

}  // namespace vipu::server

#endif  // VIPU_SERVER_DAEMON_SYSTEMD_NOTIFY_H_
