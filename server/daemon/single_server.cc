// RunSingleServer: a VipuServer on SQLite in the run loop.
#include "server/daemon/single_server.h"

#include <cstdio>
#include <memory>
#include <string>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "server/daemon/run_loop.h"
#include "server/daemon/systemd_notify.h"
#include "server/daemon/vipu_server.h"
#include "spdlog/spdlog.h"

namespace vipu::server {
namespace {

class SingleServer : public RunningDaemon {
 public:
  SingleServer(std::unique_ptr<VipuServer> server, bool secure)
      : server_(std::move(server)), secure_(secure) {}

  void ReloadCertificates() override {
    // Running partitions and open connections are not touched: only new
    // handshakes see the reloaded certificates. Security logs the outcome.
    if (secure_) {
      server_->ReloadCertificates().IgnoreError();
    } else {
      spdlog::info("SIGHUP: no certificates to reload without --secure");
    }
  }
  bool Healthy() override { return server_->DatabaseAnswers(); }

  VipuServer& server() { return *server_; }
  void Stop() { server_.reset(); }

 private:
  std::unique_ptr<VipuServer> server_;
  const bool secure_;
};

}  // namespace

int RunSingleServer(const ServerOptions& options, const std::optional<fabric::PodSpec>& pod) {
  SystemdNotifier notifier;
  const absl::Time started = absl::Now();
  absl::StatusOr<std::unique_ptr<VipuServer>> server = VipuServer::Start(options, pod, &notifier);
  if (!server.ok()) {
    // On stderr as well as in the log: this is what an operator sees when
    // the unit fails.
    spdlog::critical("{}", std::string(server.status().message()));
    std::fprintf(stderr, "vipu-server: %s\n", std::string(server.status().message()).c_str());
    return 1;
  }
  SingleServer daemon(std::move(*server), options.secure);
  const std::string address = daemon.server().address();
  const size_t agents = daemon.server().registered_agents();
  spdlog::info("ready {} ms after start ({} agents registered)",
               absl::ToInt64Milliseconds(absl::Now() - started), agents);
  Announcement announcement;
  announcement.ready_file = options.ready_file;
  announcement.address = address;
  announcement.ready_line = absl::StrCat("vipu-server ", VIPU_VERSION, " ready on ", address);
  announcement.status = absl::StrCat("serving on ", address, ", ", agents, " agents registered");
  RunUntilSignalled(daemon, notifier, announcement, /*restart_on_sigusr1=*/false);
  daemon.Stop();
  spdlog::info("stopped");
  return 0;
}

}  // namespace vipu::server
