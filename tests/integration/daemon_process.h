// Long-running processes for the operations tests (server without
// --simulate, standalone agents), plus small clients the tests need: a free
// port, an HTTP GET, and grpc.health.v1 Check without generated stubs.
// Header-only so that it needs no build change; the harness (harness.h)
// covers the simulated-pod case.
#ifndef VIPU_TESTS_INTEGRATION_DAEMON_PROCESS_H_
#define VIPU_TESTS_INTEGRATION_DAEMON_PROCESS_H_

#include <arpa/inet.h>
#include <fcntl.h>
#include <grpcpp/generic/generic_stub.h>
#include <grpcpp/grpcpp.h>
#include <netinet/in.h>
#include <sched.h>
#include <signal.h>
#include <sys/file.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <fstream>
#include <map>
#include <stdexcept>
#include <string>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "tests/integration/harness.h"

namespace vipu::testing {

// A port for a daemon that a test starts on a fixed address. It lies below
// the kernel's ephemeral range, so no bind to port 0 and no outgoing
// connection of any process can take it meanwhile, and it is claimed with an
// flock on a file under /tmp that this process holds until it exits, so no
// other test process is handed it. Throws when every port is taken.
inline int FreePort() {
  int ephemeral_low = 32768;
  {
    std::ifstream range("/proc/sys/net/ipv4/ip_local_port_range");
    range >> ephemeral_low;
  }
  const int low = 10000;
  if (ephemeral_low <= low + 1)
    throw std::runtime_error("FreePort: no ports below the ephemeral range");
  const int span = ephemeral_low - low;
  const std::string dir = "/tmp/vipu-test-ports";
  mkdir(dir.c_str(), 01777);
  chmod(dir.c_str(), 01777);
  static int next = static_cast<int>(getpid() % span);
  for (int tries = 0; tries < span; ++tries) {
    const int port = low + (next++ % span);
    const std::string claim = dir + "/" + std::to_string(port);
    int fd = open(claim.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0666);
    if (fd < 0) continue;
    if (flock(fd, LOCK_EX | LOCK_NB) != 0) {
      close(fd);
      continue;
    }
    int sock = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    addr.sin_port = htons(static_cast<uint16_t>(port));
    const bool bindable = bind(sock, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0;
    close(sock);
    if (bindable) return port;  // `fd` stays open: the claim lasts as long as this process
    close(fd);
  }
  throw std::runtime_error("FreePort: every port below the ephemeral range is taken");
}

// The port of "host:port".
inline int PortOfAddress(const std::string& address) {
  return std::stoi(address.substr(address.rfind(':') + 1));
}

// Bytes the kernel holds for connections to `port` on this machine that
// nobody has read yet: for a stopped process, what has reached it. gRPC
// listens on IPv6 sockets that also take IPv4, so both tables are read.
inline size_t UnreadBytesToPort(int port) {
  size_t unread = 0;
  for (const char* table : {"/proc/net/tcp", "/proc/net/tcp6"}) {
    std::ifstream tcp(table);
    std::string line;
    std::getline(tcp, line);  // the header
    while (std::getline(tcp, line)) {
      std::vector<std::string> f = absl::StrSplit(line, ' ', absl::SkipEmpty());
      if (f.size() < 5) continue;
      const std::string local_port = f[1].substr(f[1].find(':') + 1);
      const std::string rx = f[4].substr(f[4].find(':') + 1);
      unsigned long p = 0, n = 0;
      if (!absl::SimpleHexAtoi(local_port, &p) || !absl::SimpleHexAtoi(rx, &n)) continue;
      if (static_cast<int>(p) == port) unread += n;
    }
  }
  return unread;
}

// Joins the network namespace at `path` (/run/netns/NAME); in a child
// between fork and exec, so it only makes system calls. False on failure.
inline bool JoinNetns(const std::string& path) {
  if (path.empty()) return true;
  const int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  return fd >= 0 && setns(fd, CLONE_NEWNET) == 0;
}

// A child process with stdout and stderr appended to `log`; killed when the
// test process dies (PR_SET_PDEATHSIG) or the object goes away. With
// `netns`, it runs in that network namespace (tests/integration/network_lab.h).
class Daemon {
 public:
  Daemon(std::vector<std::string> argv, std::string log,
         std::map<std::string, std::string> env = {}, std::string netns = "")
      : argv_(std::move(argv)),
        log_(std::move(log)),
        env_(std::move(env)),
        netns_(std::move(netns)) {
    Launch();
  }
  ~Daemon() { Kill(); }
  Daemon(const Daemon&) = delete;
  Daemon& operator=(const Daemon&) = delete;

  pid_t pid() const { return pid_; }
  const std::string& log() const { return log_; }
  bool running() {
    if (pid_ <= 0) return false;
    int status = 0;
    if (waitpid(pid_, &status, WNOHANG) == pid_) {
      pid_ = -1;
      status_ = status;
      return false;
    }
    return true;
  }
  // The waitpid status once the process has exited.
  int status() const { return status_; }

  void Kill() {
    if (pid_ <= 0) return;
    kill(pid_, SIGKILL);
    Reap();
  }
  int Terminate() {
    if (pid_ <= 0) return status_;
    kill(pid_, SIGTERM);
    Reap();
    return status_;
  }
  // Starts the same command again (after Kill/Terminate).
  void Relaunch() {
    Kill();
    Launch();
  }

 private:
  void Launch() {
    int fd = open(log_.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
    const pid_t parent = getpid();
    pid_ = fork();
    if (pid_ < 0) throw std::runtime_error("fork failed");
    if (pid_ == 0) {
      prctl(PR_SET_PDEATHSIG, SIGKILL);
      if (getppid() != parent) _exit(127);
      if (!JoinNetns(netns_)) _exit(126);
      int devnull = open("/dev/null", O_RDONLY);
      dup2(devnull, 0);
      dup2(fd, 1);
      dup2(fd, 2);
      for (const auto& [k, v] : env_) setenv(k.c_str(), v.c_str(), 1);
      std::vector<char*> args;
      for (const std::string& a : argv_) args.push_back(const_cast<char*>(a.c_str()));
      args.push_back(nullptr);
      execv(args[0], args.data());
      _exit(127);
    }
    close(fd);
  }
  void Reap() {
    int status = 0;
    while (waitpid(pid_, &status, 0) < 0 && errno == EINTR) {
    }
    status_ = status;
    pid_ = -1;
  }

  std::vector<std::string> argv_;
  std::string log_;
  std::map<std::string, std::string> env_;
  std::string netns_;
  pid_t pid_ = -1;
  int status_ = -1;
};

// The whole HTTP response to GET http://127.0.0.1:port/path (status line and
// headers included), or "" when the connection fails. `headers` are extra
// request header lines ("Accept: ...", without the line end).
inline std::string HttpGetRaw(int port, const std::string& path, const std::string& headers = "") {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = htons(static_cast<uint16_t>(port));
  if (connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) {
    close(fd);
    return "";
  }
  std::string request = absl::StrCat("GET ", path, " HTTP/1.1\r\nHost: 127.0.0.1\r\n", headers,
                                     headers.empty() ? "" : "\r\n", "Connection: close\r\n\r\n");
  if (write(fd, request.data(), request.size()) != static_cast<ssize_t>(request.size())) {
    close(fd);
    return "";
  }
  std::string response;
  char buf[8192];
  for (;;) {
    ssize_t n = read(fd, buf, sizeof buf);
    if (n <= 0) break;
    response.append(buf, static_cast<size_t>(n));
  }
  close(fd);
  return response;
}

// The body of a 200 answer to GET http://127.0.0.1:port/path, or "" on any
// failure or other status.
inline std::string HttpGet(int port, const std::string& path, const std::string& headers = "") {
  const std::string response = HttpGetRaw(port, path, headers);
  const size_t body = response.find("\r\n\r\n");
  if (response.rfind("HTTP/1.1 200", 0) != 0 || body == std::string::npos) return "";
  return response.substr(body + 4);
}

// grpc.health.v1.Health/Check for the whole server (service ""). The
// messages are tiny and standard, so they are encoded by hand:
// HealthCheckRequest{} is empty, HealthCheckResponse is field 1 (varint
// ServingStatus: 1 SERVING, 2 NOT_SERVING). Returns -1 when the call fails.
inline int HealthCheck(const std::string& address) {
  auto channel = grpc::CreateChannel(address, grpc::InsecureChannelCredentials());
  grpc::GenericStub stub(channel);
  grpc::ClientContext context;
  context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(5));
  grpc::CompletionQueue cq;
  grpc::ByteBuffer request;  // empty message
  grpc::Slice empty("", 0);
  request = grpc::ByteBuffer(&empty, 1);
  auto call = stub.PrepareUnaryCall(&context, "/grpc.health.v1.Health/Check", request, &cq);
  call->StartCall();
  grpc::ByteBuffer response;
  grpc::Status status;
  call->Finish(&response, &status, reinterpret_cast<void*>(1));
  void* tag = nullptr;
  bool ok = false;
  const bool got = cq.Next(&tag, &ok);
  cq.Shutdown();
  void* ignored_tag = nullptr;
  bool ignored_ok = false;
  while (cq.Next(&ignored_tag, &ignored_ok)) {
  }
  if (!got || !ok || !status.ok()) return -1;
  std::vector<grpc::Slice> slices;
  if (!response.Dump(&slices).ok()) return -1;
  std::string bytes;
  for (const grpc::Slice& s : slices) {
    bytes.append(reinterpret_cast<const char*>(s.begin()), s.size());
  }
  if (bytes.empty()) return 0;  // UNKNOWN (the default value is not sent)
  if (bytes.size() == 2 && bytes[0] == 0x08) return bytes[1];
  return -1;
}

}  // namespace vipu::testing

#endif  // VIPU_TESTS_INTEGRATION_DAEMON_PROCESS_H_
