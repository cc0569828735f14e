// Real etcd clusters for tests: N `etcd` members on free loopback ports,
// their data and logs in a directory the test gives, started together and
// waited for until each answers a linearizable read (so a raft leader
// exists), and stopped in the destructor however the test ends.
//
// Members are processes of their own process group, so a stop reaches
// anything they started; they also die with the test process
// (PR_SET_PDEATHSIG). Not thread-safe: one test thread drives a cluster.
#ifndef VIPU_TESTS_ETCD_HARNESS_H_
#define VIPU_TESTS_ETCD_HARNESS_H_

#include <sys/types.h>

#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"

namespace vipu::testing {

struct EtcdClusterOptions {
  // Members of the cluster.
  int members = 1;
  // Where the members keep their data ("<dir>/m<i>.etcd") and logs
  // ("<dir>/m<i>.log"); must exist, and the caller removes it. Empty: a new
  // directory under $TMPDIR that the cluster removes when it goes, unless
  // the test failed (the logs are kept then, and the path printed).
  std::string dir;
  // How long a start may take before it fails.
  absl::Duration start_timeout = absl::Seconds(30);
  // Extra flags for every member ("--max-txn-ops=16").
  std::vector<std::string> extra_flags;
  // Per member, when given (one entry per member): the address it listens
  // on and the network namespace it runs in (/run/netns/NAME, see
  // tests/integration/network_lab.h). Empty: 127.0.0.1 in the test's own.
  std::vector<std::string> hosts;
  std::vector<std::string> netns;
};

class EtcdCluster {
 public:
  // The etcd binary the harness runs: $VIPU_ETCD_BIN, else /usr/bin/etcd.
  static std::string Binary();
  // Whether Binary() exists (tests skip without it).
  static bool Available();

  // Starts every member and waits until each serves. On failure the members
  // started so far are stopped and the error names the member and its log.
  static absl::StatusOr<std::unique_ptr<EtcdCluster>> Launch(EtcdClusterOptions options);

  // Stops every running member: SIGTERM to its process group, SIGKILL if it
  // has not exited within a second.
  ~EtcdCluster();
  EtcdCluster(const EtcdCluster&) = delete;
  EtcdCluster& operator=(const EtcdCluster&) = delete;

  // The directory of the members' data and logs.
  const std::string& dir() const { return options_.dir; }
  int size() const { return static_cast<int>(members_.size()); }
  // "http://HOST1:P1,http://HOST2:P2,..." (client URLs, all members).
  std::string endpoints() const;
  // Member i's client URL.
  std::string endpoint(int i) const;
  // Member i's log file.
  std::string log(int i) const;
  bool running(int i) const { return members_[i].pid > 0; }
  // Member i's process id (for SIGSTOP and SIGCONT), or -1 when it is not
  // running.
  pid_t pid(int i) const { return members_[i].pid; }

  // SIGKILL to member i's process group; returns once it is reaped.
  void Kill(int i);
  // SIGTERM, then SIGKILL after a few seconds; returns once it is reaped.
  void Stop(int i);
  // Starts member i again with its data (--initial-cluster-state existing)
  // and waits until it serves. FAILED_PRECONDITION when it is running.
  absl::Status Start(int i);
  // Waits until member i answers a linearizable read, or `timeout` passes.
  absl::Status WaitServing(int i, absl::Duration timeout) const;

 private:
  struct Member {
    std::string name, data_dir, log, host = "127.0.0.1", netns;
    int client_port = 0, peer_port = 0;
    pid_t pid = -1;
  };

  explicit EtcdCluster(EtcdClusterOptions options) : options_(std::move(options)) {}
  absl::Status Spawn(int i, bool existing);
  // Signals member i's group with `signal`, waits up to `grace` for it to
  // exit, then SIGKILLs it; reaps it.
  void End(int i, int signal, absl::Duration grace);

  EtcdClusterOptions options_;
  bool own_dir_ = false;
  std::string token_;
  std::vector<Member> members_;
};

}  // namespace vipu::testing

#endif  // VIPU_TESTS_ETCD_HARNESS_H_
