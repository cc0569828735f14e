// Real processes for integration tests: a vipu-server with a simulated pod on
// a free loopback port and its own temporary directory, and the CLIs run as
// child processes. Everything is cleaned up when the objects go away, and a
// crashed test takes its server down with it (PR_SET_PDEATHSIG).
#ifndef VIPU_TESTS_INTEGRATION_HARNESS_H_
#define VIPU_TESTS_INTEGRATION_HARNESS_H_

#include <sys/types.h>

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/time/time.h"

namespace vipu::testing {

struct CommandResult {
  int exit_code = -1;
  std::string out;
  std::string err;
};

// Runs argv to completion (deadline 120 s) with `env` added to the
// environment; stdin is /dev/null.
CommandResult RunCommand(const std::vector<std::string>& argv,
                         const std::map<std::string, std::string>& env = {});

// Polls `condition` until it holds or `timeout` passes.
bool WaitFor(const std::function<bool()>& condition, absl::Duration timeout);

// The --heartbeat-ms ServerProcess gives its servers: $VIPU_TEST_HEARTBEAT_MS,
// else 200. Agents count as down after three missed heartbeats, which a
// build that runs every process many times slower (ThreadSanitizer, two
// tests on two cores) misses at 200 ms though nothing is wrong:
// scripts/tsan.sh sets it longer.
int TestHeartbeatMs();

std::string MakeTempDir();
void RemoveTree(const std::string& path);
std::string ReadFile(const std::string& path);

// IPUs of the pod16 that ServerProcess::Start("pod16") simulates.
inline constexpr uint32_t kPod16Ipus = 16;

class ServerProcess {
 public:
  // Starts `vipu-server --simulate <pod>` on 127.0.0.1:0 with a database in
  // a fresh temporary directory and waits until it is ready.
  static std::unique_ptr<ServerProcess> Start(const std::string& pod,
                                              const std::vector<std::string>& extra_args = {});
  ~ServerProcess();

  const std::string& dir() const { return dir_; }
  std::string db_path() const { return dir_ + "/vipu.db"; }
  std::string home() const { return dir_ + "/home"; }
  int port() const { return port_; }
  std::string address() const { return "127.0.0.1:" + std::to_string(port_); }
  pid_t pid() const { return pid_; }
  // Pids of the server's child processes (the agents).
  std::vector<pid_t> Children() const;

  // SIGTERM and wait; returns the exit status (as from waitpid).
  int Stop();
  // SIGKILL and wait.
  void Kill();
  // Starts again on the same database (and a new port).
  void Restart();

  // `vipu` / `vipu-admin` against this server, HOME set to home().
  CommandResult Vipu(const std::vector<std::string>& args) const;
  CommandResult VipuAdmin(const std::vector<std::string>& args) const;

 private:
  void Launch();
  std::string pod_;
  std::vector<std::string> extra_args_;
  std::string dir_;
  pid_t pid_ = -1;
  int port_ = 0;
};

// The value of row `key` ("State", ...) of `vipu get partition-status
// PARTITION` against `s`; empty when the command fails or has no such row.
std::string PartitionStatusField(const ServerProcess& s, const std::string& partition,
                                 const std::string& key);

// vipu-plan, beside vipu-server in the build tree.
std::string PlanBin();

// `a` followed by `b`: argument lists built from parts.
std::vector<std::string> Join(std::vector<std::string> a, const std::vector<std::string>& b);

// Secure mode. `vipu-server --tls-init DIR` followed by `extra`: the
// certificates and keys of a secure pod, written under `dir`.
CommandResult TlsInit(const std::string& dir, const std::vector<std::string>& extra = {});
// --api-tls-* for the client files `vipu-server --tls-init
// DIR` wrote under `tls`.
std::vector<std::string> ClientTls(const std::string& tls);
// The default admin's access key, printed once on the server's stdout (its
// log); empty when it was not printed.
std::string DefaultAdminKey(const ServerProcess& server);

}  // namespace vipu::testing

#endif  // VIPU_TESTS_INTEGRATION_HARNESS_H_
