// vipu-server under Type=notify: READY=1 only once it serves (database open,
// agents registered and reconciled, ports listening), STATUS= lines while it
// starts, STOPPING=1 on SIGTERM. The test plays systemd's side of
// $NOTIFY_SOCKET with a unix datagram socket of its own.
#include <poll.h>
#include <sys/socket.h>
#include <sys/un.h>

#include <filesystem>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/integration/daemon_process.h"
#include "tests/integration/harness.h"

namespace vipu::testing {
namespace {

using ::testing::HasSubstr;

class NotifySocket {
 public:
  explicit NotifySocket(const std::string& path) : path_(path) {
    fd_ = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    sockaddr_un addr{};
    addr.sun_family = AF_UNIX;
    std::snprintf(addr.sun_path, sizeof addr.sun_path, "%s", path.c_str());
    if (bind(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) {
      throw std::runtime_error("bind " + path);
    }
  }
  ~NotifySocket() {
    close(fd_);
    unlink(path_.c_str());
  }
  // The next datagram, or "" after `timeout`.
  std::string Receive(absl::Duration timeout) {
    pollfd p{fd_, POLLIN, 0};
    if (poll(&p, 1, static_cast<int>(absl::ToInt64Milliseconds(timeout))) != 1) return "";
    char buf[4096];
    ssize_t n = recv(fd_, buf, sizeof buf, 0);
    return n > 0 ? std::string(buf, static_cast<size_t>(n)) : "";
  }
  // Messages until one contains `needle` (returned last), or until timeout.
  std::vector<std::string> ReceiveUntil(const std::string& needle, absl::Duration timeout) {
    std::vector<std::string> out;
    const absl::Time deadline = absl::Now() + timeout;
    while (absl::Now() < deadline) {
      std::string m = Receive(deadline - absl::Now());
      if (m.empty()) continue;
      out.push_back(m);
      if (absl::StrContains(m, needle)) break;
    }
    return out;
  }

 private:
  std::string path_;
  int fd_ = -1;
};

TEST(SystemdNotifyTest, ReadyOnlyOnceServingAndStoppingOnSigterm) {
  const std::string dir = MakeTempDir();
  NotifySocket notify(dir + "/notify.sock");
  const int port = FreePort();
  const std::string address = absl::StrCat("127.0.0.1:", port);
  Daemon server({VIPU_SERVER_BIN, "--simulate", "pod16", "--listen", address, "--db",
                 dir + "/vipu.db", "--log-level", "warn", "--heartbeat-ms", "200"},
                dir + "/server.log", {{"NOTIFY_SOCKET", dir + "/notify.sock"}});

  std::vector<std::string> messages = notify.ReceiveUntil("READY=1", absl::Seconds(60));
  ASSERT_FALSE(messages.empty()) << ReadFile(dir + "/server.log");
  ASSERT_THAT(messages.back(), HasSubstr("READY=1")) << ReadFile(dir + "/server.log");
  // Progress was reported before readiness.
  ASSERT_GE(messages.size(), 2u);
  EXPECT_THAT(messages.front(), HasSubstr("STATUS="));
  EXPECT_THAT(messages.back(), HasSubstr("STATUS=serving on "));

  // At READY=1 everything is there: health SERVING, agents up, changes taken.
  EXPECT_EQ(HealthCheck(address), 1);
  CommandResult agents = RunCommand({VIPU_ADMIN_BIN, "--api-host", "127.0.0.1", "--api-port",
                                     std::to_string(port), "list", "agents"},
                                    {{"HOME", dir}});
  EXPECT_EQ(agents.exit_code, 0) << agents.err;
  EXPECT_THAT(agents.out, ::testing::Not(HasSubstr("Down")));
  CommandResult create =
      RunCommand({VIPU_CLI_BIN, "--api-host", "127.0.0.1", "--api-port", std::to_string(port),
                  "create", "partition", "p", "--size", "4"},
                 {{"HOME", dir}});
  EXPECT_EQ(create.exit_code, 0) << create.err;

  kill(server.pid(), SIGTERM);
  std::vector<std::string> stopping = notify.ReceiveUntil("STOPPING=1", absl::Seconds(30));
  ASSERT_FALSE(stopping.empty());
  EXPECT_THAT(stopping.back(), HasSubstr("STOPPING=1"));
  const int status = server.Terminate();
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << status;
  RemoveTree(dir);
}

TEST(SystemdNotifyTest, NotReadyWhileKnownAgentsAreAwaited) {
  const std::string dir = MakeTempDir();
  const int port = FreePort();
  const std::string address = absl::StrCat("127.0.0.1:", port);
  // First run: make an agent known, then stop.
  {
    Daemon server({VIPU_SERVER_BIN, "--listen", address, "--db", dir + "/vipu.db", "--ready-file",
                   dir + "/ready"},
                  dir + "/server.log");
    ASSERT_TRUE(
        WaitFor([&] { return std::filesystem::exists(dir + "/ready"); }, absl::Seconds(30)));
    CommandResult r =
        RunCommand({VIPU_ADMIN_BIN, "--api-host", "127.0.0.1", "--api-port", std::to_string(port),
                    "create", "agent", "m1", "--host", "127.0.0.1", "--port", "1"},
                   {{"HOME", dir}});
    ASSERT_EQ(r.exit_code, 0) << r.err;
  }
  NotifySocket notify(dir + "/notify.sock");
  const absl::Time start = absl::Now();
  Daemon server({VIPU_SERVER_BIN, "--listen", address, "--db", dir + "/vipu.db",
                 "--reconcile-window-ms", "1500"},
                dir + "/server2.log", {{"NOTIFY_SOCKET", dir + "/notify.sock"}});
  std::vector<std::string> messages = notify.ReceiveUntil("READY=1", absl::Seconds(30));
  ASSERT_FALSE(messages.empty());
  ASSERT_THAT(messages.back(), HasSubstr("READY=1"));
  // The agent never came: READY waited for the whole window.
  EXPECT_GE(absl::Now() - start, absl::Milliseconds(1500));
  bool saw_waiting = false;
  for (const std::string& m : messages) {
    saw_waiting = saw_waiting || absl::StrContains(m, "STATUS=waiting for agents");
  }
  EXPECT_TRUE(saw_waiting);
  RemoveTree(dir);
}

}  // namespace
}  // namespace vipu::testing
