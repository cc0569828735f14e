// EtcdCluster: real etcd members as child processes for the tests.
#include "tests/etcd_harness.h"

#include <fcntl.h>
#include <grpcpp/grpcpp.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "etcd/rpc.grpc.pb.h"
#include "gtest/gtest.h"
#include "tests/integration/daemon_process.h"  // FreePort

namespace vipu::testing {
namespace {

// Waits up to `timeout` for child `pid` to exit and reaps it; false when it
// is still running. A pidfd makes the wait an event, not a poll.
bool WaitExit(pid_t pid, absl::Duration timeout) {
  const int fd = static_cast<int>(syscall(SYS_pidfd_open, pid, 0));
  if (fd >= 0) {
    pollfd p{fd, POLLIN, 0};
    const int ms =
        timeout == absl::InfiniteDuration()
            ? -1
            : static_cast<int>(std::clamp<int64_t>(absl::ToInt64Milliseconds(timeout), 0, 1 << 30));
    int n;
    while ((n = poll(&p, 1, ms)) < 0 && errno == EINTR) {
    }
    close(fd);
    if (n == 0) return false;
  }
  int status = 0;
  const absl::Time deadline = absl::Now() + timeout;
  for (;;) {
    const pid_t r = waitpid(pid, &status, fd >= 0 ? 0 : WNOHANG);
    if (r == pid || (r < 0 && errno == ECHILD)) return true;
    if (r < 0 && errno == EINTR) continue;
    // Without pidfd (old kernels) only: look again shortly.
    if (absl::Now() >= deadline) return false;
    absl::SleepFor(absl::Milliseconds(20));
  }
}

}  // namespace

std::string EtcdCluster::Binary() {
  const char* env = std::getenv("VIPU_ETCD_BIN");
  return env != nullptr && *env != '\0' ? env : "/usr/bin/etcd";
}

bool EtcdCluster::Available() { return access(Binary().c_str(), X_OK) == 0; }

absl::StatusOr<std::unique_ptr<EtcdCluster>> EtcdCluster::Launch(EtcdClusterOptions options) {
  if (options.members < 1) return absl::InvalidArgumentError("an etcd cluster needs a member");
  for (const std::vector<std::string>* per_member : {&options.hosts, &options.netns}) {
    if (!per_member->empty() && static_cast<int>(per_member->size()) != options.members) {
      return absl::InvalidArgumentError("hosts and netns need one entry per etcd member");
    }
  }
  std::unique_ptr<EtcdCluster> cluster(new EtcdCluster(std::move(options)));
  if (cluster->options_.dir.empty()) {
    std::string tmpl = (std::filesystem::temp_directory_path() / "vipu-etcd-XXXXXX").string();
    if (mkdtemp(tmpl.data()) == nullptr) return absl::InternalError("mkdtemp failed");
    cluster->options_.dir = tmpl;
    cluster->own_dir_ = true;
  }
  cluster->token_ = absl::StrCat("vipu-test-", getpid(), "-", absl::ToUnixNanos(absl::Now()));
  for (int i = 0; i < cluster->options_.members; ++i) {
    Member m;
    m.name = absl::StrCat("m", i);
    m.data_dir = absl::StrCat(cluster->options_.dir, "/", m.name, ".etcd");
    m.log = absl::StrCat(cluster->options_.dir, "/", m.name, ".log");
    m.client_port = FreePort();
    m.peer_port = FreePort();
    if (!cluster->options_.hosts.empty()) m.host = cluster->options_.hosts[i];
    if (!cluster->options_.netns.empty()) m.netns = cluster->options_.netns[i];
    cluster->members_.push_back(m);
  }
  for (int i = 0; i < cluster->size(); ++i) {
    absl::Status spawned = cluster->Spawn(i, /*existing=*/false);
    if (!spawned.ok()) return spawned;
  }
  const absl::Time deadline = absl::Now() + cluster->options_.start_timeout;
  for (int i = 0; i < cluster->size(); ++i) {
    absl::Status serving = cluster->WaitServing(i, deadline - absl::Now());
    if (!serving.ok()) return serving;  // the destructor stops the others
  }
  return cluster;
}

EtcdCluster::~EtcdCluster() {
  for (int i = 0; i < size(); ++i) {
    if (running(i)) kill(-members_[i].pid, SIGTERM);
  }
  // A short grace: members that all stop at once can wait a long time
  // for each other (a leader hands over to a peer that is going too), and
  // their data is thrown away anyway.
  for (int i = 0; i < size(); ++i) {
    if (running(i)) End(i, SIGTERM, absl::Seconds(1));
  }
  if (!own_dir_) return;
  const ::testing::TestInfo* test = ::testing::UnitTest::GetInstance()->current_test_info();
  if (test != nullptr && test->result()->Failed()) {
    std::fprintf(stderr, "etcd data and logs kept in %s\n", options_.dir.c_str());
    return;
  }
  std::error_code ignored;
  std::filesystem::remove_all(options_.dir, ignored);
}

std::string EtcdCluster::endpoint(int i) const {
  return absl::StrCat("http://", members_[i].host, ":", members_[i].client_port);
}

std::string EtcdCluster::endpoints() const {
  std::vector<std::string> urls;
  for (int i = 0; i < size(); ++i) urls.push_back(endpoint(i));
  return absl::StrJoin(urls, ",");
}

std::string EtcdCluster::log(int i) const { return members_[i].log; }

absl::Status EtcdCluster::Spawn(int i, bool existing) {
  Member& m = members_[i];
  std::vector<std::string> peers;
  for (const Member& other : members_) {
    peers.push_back(absl::StrCat(other.name, "=http://", other.host, ":", other.peer_port));
  }
  const std::string client_url = endpoint(i);
  const std::string peer_url = absl::StrCat("http://", m.host, ":", m.peer_port);
  std::vector<std::string> argv = {Binary(),
                                   "--name",
                                   m.name,
                                   "--data-dir",
                                   m.data_dir,
                                   "--listen-client-urls",
                                   client_url,
                                   "--advertise-client-urls",
                                   client_url,
                                   "--listen-peer-urls",
                                   peer_url,
                                   "--initial-advertise-peer-urls",
                                   peer_url,
                                   "--initial-cluster",
                                   absl::StrJoin(peers, ","),
                                   "--initial-cluster-state",
                                   existing ? "existing" : "new",
                                   "--initial-cluster-token",
                                   token_,
                                   "--logger",
                                   "zap",
                                   "--log-outputs",
                                   "stderr"};
  for (const std::string& flag : options_.extra_flags) argv.push_back(flag);

  const int log_fd = open(m.log.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  if (log_fd < 0) return absl::InternalError(absl::StrCat("cannot open ", m.log));
  const pid_t parent = getpid();
  const pid_t pid = fork();
  if (pid < 0) {
    close(log_fd);
    return absl::InternalError("fork failed");
  }
  if (pid == 0) {
    setpgid(0, 0);
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (getppid() != parent) _exit(127);
    if (!JoinNetns(m.netns)) _exit(126);
    const int devnull = open("/dev/null", O_RDONLY);
    dup2(devnull, 0);
    dup2(log_fd, 1);
    dup2(log_fd, 2);
    std::vector<char*> args;
    for (std::string& a : argv) args.push_back(a.data());
    args.push_back(nullptr);
    execv(args[0], args.data());
    _exit(127);
  }
  // Also here, so a signal to the group cannot come before the child's own
  // setpgid.
  setpgid(pid, pid);
  close(log_fd);
  m.pid = pid;
  return absl::OkStatus();
}

absl::Status EtcdCluster::WaitServing(int i, absl::Duration timeout) const {
  const absl::Time deadline = absl::Now() + timeout;
  auto channel = grpc::CreateChannel(absl::StrCat(members_[i].host, ":", members_[i].client_port),
                                     grpc::InsecureChannelCredentials());
  auto kv = etcdserverpb::KV::NewStub(channel);
  std::string last = "no answer";
  while (absl::Now() < deadline) {
    if (members_[i].pid <= 0) break;
    grpc::ClientContext context;
    // Waits for the port to open and for the call's answer, up to a second
    // per try: a linearizable read answers only once raft has a leader.
    context.set_wait_for_ready(true);
    context.set_deadline(absl::ToChronoTime(std::min(deadline, absl::Now() + absl::Seconds(1))));
    etcdserverpb::RangeRequest request;
    request.set_key("vipu-test-health");
    etcdserverpb::RangeResponse response;
    const grpc::Status status = kv->Range(&context, request, &response);
    if (status.ok()) return absl::OkStatus();
    last = status.error_message();
    // A member that exited will not serve.
    int wstatus = 0;
    if (waitpid(members_[i].pid, &wstatus, WNOHANG) == members_[i].pid) {
      return absl::UnavailableError(absl::StrCat("etcd member ", members_[i].name,
                                                 " exited during start; see ", members_[i].log));
    }
  }
  return absl::DeadlineExceededError(
      absl::StrCat("etcd member ", members_[i].name, " at ", endpoint(i), " did not serve within ",
                   absl::FormatDuration(timeout), " (", last, "); see ", members_[i].log));
}

void EtcdCluster::End(int i, int signal, absl::Duration grace) {
  Member& m = members_[i];
  if (m.pid <= 0) return;
  kill(-m.pid, signal);
  if (!WaitExit(m.pid, grace)) {
    kill(-m.pid, SIGKILL);
    WaitExit(m.pid, absl::InfiniteDuration());
  }
  m.pid = -1;
}

void EtcdCluster::Kill(int i) { End(i, SIGKILL, absl::Seconds(10)); }

void EtcdCluster::Stop(int i) { End(i, SIGTERM, absl::Seconds(5)); }

absl::Status EtcdCluster::Start(int i) {
  if (running(i)) {
    return absl::FailedPreconditionError(absl::StrCat("etcd member ", i, " is running"));
  }
  absl::Status spawned = Spawn(i, /*existing=*/true);
  if (!spawned.ok()) return spawned;
  return WaitServing(i, options_.start_timeout);
}

}  // namespace vipu::testing
