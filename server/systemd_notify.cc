// SystemdNotifier: sd_notify STATUS, READY, STOPPING and watchdog pings.
#include "server/systemd_notify.h"

#include <systemd/sd-daemon.h>

#include <chrono>
#include <cstdlib>
#include <cstring>

#include "spdlog/spdlog.h"

namespace vipu::server {

SystemdNotifier::~SystemdNotifier() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopping_ = true;
  }
  cv_.notify_all();
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

void SystemdNotifier::Stopping(const std::string& status) { Send("STOPPING=1\nSTATUS=" + status); }

void SystemdNotifier::StartWatchdog(std::function<bool()> alive) {
  uint64_t usec = 0;
  if (!Enabled() || sd_watchdog_enabled(0, &usec) <= 0 || usec == 0) return;
  const auto period = std::chrono::microseconds(usec / 2);
  spdlog::info("systemd watchdog: pinging every {} ms", usec / 2000);
  watchdog_ = std::thread([this, period, alive = std::move(alive)] {
    std::unique_lock<std::mutex> lock(mu_);
    while (!stopping_) {
      lock.unlock();
      if (alive()) Send("WATCHDOG=1");
      lock.lock();
      cv_.wait_for(lock, period, [this] { return stopping_; });
    }
  });
}

}  // namespace vipu::server
