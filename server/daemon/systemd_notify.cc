// SystemdNotifier: sd_notify STATUS, READY, STOPPING and watchdog pings.
#include "server/daemon/systemd_notify.h"

#include <systemd/sd-daemon.h>

#include <cstdlib>
#include <cstring>

#include "absl/time/time.h"
#include "base/thread_name.h"
#include "spdlog/spdlog.h"

namespace vipu::server {

SystemdNotifier::~SystemdNotifier() { StopWatchdog(); }

void SystemdNotifier::StopWatchdog() {
  {
    vipu::MutexLock lock(&mu_);
    stopping_ = true;
  }
  if (watchdog_.joinable()) watchdog_.join();
}

bool SystemdNotifier::Enabled() {
  const char* socket = std::getenv("NOTIFY_SOCKET");
  return socket != nullptr && socket[0] != '\0';
}

void SystemdNotifier::Send(const std::string& message) {
  if (!Enabled()) return;
  // unset_environment=0: the variable is needed for every later message.
  int r = sd_notify(0, message.c_str());
  if (r < 0) spdlog::warn("sd_notify: {}", std::strerror(-r));
}

void SystemdNotifier::Status(const std::string& text) { Send("STATUS=" + text); }

void SystemdNotifier::Ready(const std::string& status) { Send("READY=1\nSTATUS=" + status); }

void SystemdNotifier::Stopping(const std::string& status) {
  // No ping after this: what the watchdog asks is being taken apart.
  StopWatchdog();
  Send("STOPPING=1\nSTATUS=" + status);
}

void SystemdNotifier::StartWatchdog(std::function<bool()> alive) {
  uint64_t usec = 0;
  if (!Enabled() || sd_watchdog_enabled(0, &usec) <= 0 || usec == 0) return;
  const absl::Duration period = absl::Microseconds(usec / 2);
  spdlog::info("systemd watchdog: pinging every {} ms", usec / 2000);
  watchdog_ = std::thread([this, period, alive = std::move(alive)] {
    for (;;) {
      {
        vipu::MutexLock lock(&mu_);
        if (stopping_) return;
      }
      if (alive()) Send("WATCHDOG=1");
      // Half a period between pings; the destructor ends the wait at once.
      vipu::MutexLock lock(&mu_);
      mu_.AwaitWithTimeout(absl::Condition(&stopping_), period);
    }
  });
  NameThread(watchdog_, "vipu-watchdog");
}

}  // namespace vipu::server
