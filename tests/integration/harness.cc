// Spawning and waiting for child processes, temp dirs, ServerProcess and the CLI and TLS helpers of
// integration tests.
#include "tests/integration/harness.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>
#include <stdexcept>

#include "absl/strings/numbers.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "absl/time/clock.h"

namespace vipu::testing {
namespace {

// fork + exec with the child dying when this process dies.
pid_t Spawn(const std::vector<std::string>& argv, const std::map<std::string, std::string>& env,
            int out_fd, int err_fd) {
  pid_t parent = getpid();
  pid_t pid = fork();
  if (pid < 0) throw std::runtime_error(std::string("fork: ") + std::strerror(errno));
  if (pid == 0) {
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (getppid() != parent) _exit(127);
    int devnull = open("/dev/null", O_RDONLY);
    dup2(devnull, 0);
    if (out_fd >= 0) dup2(out_fd, 1);
    if (err_fd >= 0) dup2(err_fd, 2);
    for (const auto& [k, v] : env) setenv(k.c_str(), v.c_str(), 1);
    std::vector<char*> args;
    for (const std::string& a : argv) args.push_back(const_cast<char*>(a.c_str()));
    args.push_back(nullptr);
    execv(args[0], args.data());
    _exit(127);
  }
  return pid;
}

int WaitExit(pid_t pid) {
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  return status;
}

}  // namespace

CommandResult RunCommand(const std::vector<std::string>& argv,
                         const std::map<std::string, std::string>& env) {
  int out_pipe[2], err_pipe[2];
  if (pipe2(out_pipe, O_CLOEXEC) != 0 || pipe2(err_pipe, O_CLOEXEC) != 0) {
    throw std::runtime_error("pipe failed");
  }
  pid_t pid = Spawn(argv, env, out_pipe[1], err_pipe[1]);
  close(out_pipe[1]);
  close(err_pipe[1]);
  CommandResult result;
  pollfd fds[2] = {{out_pipe[0], POLLIN, 0}, {err_pipe[0], POLLIN, 0}};
  std::string* sinks[2] = {&result.out, &result.err};
  int open_fds = 2;
  const absl::Time deadline = absl::Now() + absl::Seconds(120);
  while (open_fds > 0) {
    int timeout_ms = static_cast<int>(absl::ToInt64Milliseconds(deadline - absl::Now()));
    if (timeout_ms <= 0) {
      kill(pid, SIGKILL);
      break;
    }
    if (poll(fds, 2, timeout_ms) < 0 && errno != EINTR) break;
    for (int i = 0; i < 2; ++i) {
      if (fds[i].fd < 0 || !(fds[i].revents & (POLLIN | POLLHUP | POLLERR))) continue;
      char buf[4096];
      ssize_t n = read(fds[i].fd, buf, sizeof buf);
      if (n > 0) {
        sinks[i]->append(buf, static_cast<size_t>(n));
      } else {
        close(fds[i].fd);
        fds[i].fd = -1;
        --open_fds;
      }
    }
  }
  for (auto& f : fds) {
    if (f.fd >= 0) close(f.fd);
  }
  int status = WaitExit(pid);
  result.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  return result;
}

int TestHeartbeatMs() {
  const char* env = std::getenv("VIPU_TEST_HEARTBEAT_MS");
  int ms = 0;
  if (env != nullptr && absl::SimpleAtoi(env, &ms) && ms > 0) return ms;
  return 200;
}

bool WaitFor(const std::function<bool()>& condition, absl::Duration timeout) {
  const absl::Time deadline = absl::Now() + timeout;
  absl::Duration pause = absl::Milliseconds(1);
  for (;;) {
    if (condition()) return true;
    if (absl::Now() > deadline) return false;
    absl::SleepFor(pause);
    pause = std::min(pause * 2, absl::Milliseconds(50));
  }
}

std::string MakeTempDir() {
  std::string tmpl = (std::filesystem::temp_directory_path() / "vipu-it-XXXXXX").string();
  if (mkdtemp(tmpl.data()) == nullptr) throw std::runtime_error("mkdtemp failed");
  return tmpl;
}

void RemoveTree(const std::string& path) {
  std::error_code ec;
  std::filesystem::remove_all(path, ec);
}

std::string ReadFile(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

std::unique_ptr<ServerProcess> ServerProcess::Start(const std::string& pod,
                                                    const std::vector<std::string>& extra_args) {
  auto server = std::unique_ptr<ServerProcess>(new ServerProcess());
  server->pod_ = pod;
  server->extra_args_ = extra_args;
  server->dir_ = MakeTempDir();
  std::filesystem::create_directories(server->home());
  server->Launch();
  return server;
}

void ServerProcess::Launch() {
  const std::string ready = dir_ + "/ready";
  std::filesystem::remove(ready);
  std::vector<std::string> argv = {VIPU_SERVER_BIN,
                                   "--simulate",
                                   pod_,
                                   "--listen",
                                   "127.0.0.1:0",
                                   "--db",
                                   db_path(),
                                   "--ready-file",
                                   ready,
                                   "--log-level",
                                   "warn",
                                   "--heartbeat-ms",
                                   std::to_string(TestHeartbeatMs())};
  argv.insert(argv.end(), extra_args_.begin(), extra_args_.end());
  int log = open((dir_ + "/server.log").c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  pid_ = Spawn(argv, {}, log, log);
  close(log);
  bool ok = WaitFor(
      [&] {
        int status = 0;
        if (waitpid(pid_, &status, WNOHANG) == pid_) {
          pid_ = -1;
          return true;  // exited: stop waiting and fail below
        }
        return std::filesystem::exists(ready);
      },
      absl::Seconds(60));
  if (!ok || pid_ < 0) {
    throw std::runtime_error("vipu-server did not become ready; log:\n" +
                             ReadFile(dir_ + "/server.log"));
  }
  std::string text(absl::StripAsciiWhitespace(ReadFile(ready)));
  std::vector<std::string> parts = absl::StrSplit(text, ':');
  if (parts.size() < 2 || !absl::SimpleAtoi(parts.back(), &port_)) {
    throw std::runtime_error("bad ready file: " + text);
  }
}

ServerProcess::~ServerProcess() {
  if (pid_ > 0) Kill();
  RemoveTree(dir_);
}

std::vector<pid_t> ServerProcess::Children() const {
  std::vector<pid_t> out;
  if (pid_ <= 0) return out;
  std::string text =
      ReadFile("/proc/" + std::to_string(pid_) + "/task/" + std::to_string(pid_) + "/children");
  for (absl::string_view s : absl::StrSplit(text, ' ', absl::SkipWhitespace())) {
    pid_t p = 0;
    if (absl::SimpleAtoi(s, &p)) out.push_back(p);
  }
  return out;
}

int ServerProcess::Stop() {
  if (pid_ <= 0) return -1;
  kill(pid_, SIGTERM);
  int status = WaitExit(pid_);
  pid_ = -1;
  return status;
}

void ServerProcess::Kill() {
  if (pid_ <= 0) return;
  kill(pid_, SIGKILL);
  WaitExit(pid_);
  pid_ = -1;
}

void ServerProcess::Restart() {
  if (pid_ > 0) Stop();
  Launch();
}

CommandResult ServerProcess::Vipu(const std::vector<std::string>& args) const {
  std::vector<std::string> argv = {VIPU_CLI_BIN, "--api-host", "127.0.0.1", "--api-port",
                                   std::to_string(port_)};
  argv.insert(argv.end(), args.begin(), args.end());
  return RunCommand(argv, {{"HOME", home()}});
}

CommandResult ServerProcess::VipuAdmin(const std::vector<std::string>& args) const {
  std::vector<std::string> argv = {VIPU_ADMIN_BIN, "--api-host", "127.0.0.1", "--api-port",
                                   std::to_string(port_)};
  argv.insert(argv.end(), args.begin(), args.end());
  return RunCommand(argv, {{"HOME", home()}});
}

std::string PartitionStatusField(const ServerProcess& s, const std::string& partition,
                                 const std::string& key) {
  CommandResult r = s.Vipu({"get", "partition-status", partition});
  std::regex re(" " + key + " +\\| ([^\\n]*?) *\\n");
  std::smatch m;
  if (r.exit_code != 0 || !std::regex_search(r.out, m, re)) return "";
  return m[1];
}

std::string PlanBin() {
  return (std::filesystem::path(VIPU_SERVER_BIN).parent_path() / "vipu-plan").string();
}

std::vector<std::string> Join(std::vector<std::string> a, const std::vector<std::string>& b) {
  a.insert(a.end(), b.begin(), b.end());
  return a;
}

CommandResult TlsInit(const std::string& dir, const std::vector<std::string>& extra) {
  std::vector<std::string> argv = {VIPU_SERVER_BIN, "--tls-init", dir};
  argv.insert(argv.end(), extra.begin(), extra.end());
  return RunCommand(argv);
}

std::vector<std::string> ClientTls(const std::string& tls) {
  return {"--api-tls-ca",           tls + "/client/ca.pem", "--api-tls-cert",
          tls + "/client/cert.pem", "--api-tls-key",        tls + "/client/key.pem"};
}

std::string DefaultAdminKey(const ServerProcess& server) {
  for (absl::string_view line : absl::StrSplit(ReadFile(server.dir() + "/server.log"), '\n')) {
    if (absl::ConsumePrefix(&line, "Access key: '") && absl::ConsumeSuffix(&line, "'")) {
      return std::string(line);
    }
  }
  return "";
}

}  // namespace vipu::testing
