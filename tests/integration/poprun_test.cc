// poprun against a real vipu-server: resolution of server and partition,
// creation and removal (also on failure and SIGINT), update and reset
// rules, the environment of every instance, and popdist in C++ and Python
// under poprun and outside it.
#if defined(POPRUN_BIN) && defined(POPDIST_ENV_DUMP_BIN)

#include <arpa/inet.h>
#include <fcntl.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>
#include <regex>
#include <string>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "tests/integration/harness.h"

namespace vipu::testing {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

std::vector<std::string> PoprunArgs(const ServerProcess& server, std::vector<std::string> args) {
  std::vector<std::string> argv = {
      POPRUN_BIN,           "--allow-run-as-root",        "1", "--vipu-server-host", "127.0.0.1",
      "--vipu-server-port", std::to_string(server.port())};
  argv.insert(argv.end(), args.begin(), args.end());
  return argv;
}

// A directory of the test for mpirun's session directory tree (TMPDIR).
// Open MPI shares one tree per user and host in /tmp among all mpiruns, and
// an mpirun that ends removes it when it looks empty, under the feet of one
// starting; mpiruns of tests running side by side stay apart this way.
std::string MpiTmpDir(const ServerProcess& server) {
  const std::string dir = server.dir() + "/tmp";
  mkdir(dir.c_str(), 0700);
  return dir;
}

CommandResult Poprun(const ServerProcess& server, std::vector<std::string> args,
                     std::map<std::string, std::string> env = {}) {
  env.emplace("HOME", server.home());
  env.emplace("TMPDIR", MpiTmpDir(server));
  return RunCommand(PoprunArgs(server, std::move(args)), env);
}

// Each instance's output: mpirun tags every line "[1,i]<stdout>:", but
// lines of concurrent instances can interleave inside a line, so the text
// is cut at every tag rather than at newlines.
std::map<int, std::string> InstanceText(const std::string& out) {
  std::map<int, std::string> text;
  static const std::regex tag(R"(\[1,(\d+)\]<std(out|err)>:)");
  auto begin = std::sregex_iterator(out.begin(), out.end(), tag);
  for (auto it = begin; it != std::sregex_iterator(); ++it) {
    auto next = std::next(it);
    const size_t from = it->position() + it->length();
    const size_t to = next == std::sregex_iterator() ? out.size() : next->position();
    std::string chunk = out.substr(from, to - from);
    if (!chunk.empty() && chunk.back() != '\n') chunk += '\n';
    text[std::stoi((*it)[1])] += chunk;
  }
  return text;
}

// KEY=VALUE lines of each instance.
std::map<int, std::map<std::string, std::string>> ByInstance(const std::string& out) {
  std::map<int, std::map<std::string, std::string>> result;
  for (const auto& [instance, text] : InstanceText(out)) {
    for (absl::string_view l : absl::StrSplit(text, '\n', absl::SkipEmpty())) {
      std::pair<std::string, std::string> kv = absl::StrSplit(l, absl::MaxSplits('=', 1));
      if (!kv.second.empty()) result[instance][kv.first] = kv.second;
    }
  }
  return result;
}

int CountNumaNodes() {
  int n = 0;
  for (int i = 0; i < 1024; ++i) {
    if (access(absl::StrCat("/sys/devices/system/node/node", i).c_str(), F_OK) == 0) ++n;
  }
  return std::max(n, 1);
}

bool Listed(const ServerProcess& server, const std::string& id) {
  CommandResult r = server.Vipu({"list", "partitions"});
  return r.out.find(" " + id + " ") != std::string::npos;
}

class PoprunTest : public ::testing::Test {
 protected:
  void SetUp() override { server_ = ServerProcess::Start("pod16"); }
  std::unique_ptr<ServerProcess> server_;
};

TEST_F(PoprunTest, EnvironmentOfEveryInstance) {
  for (int instances : {1, 2, 4}) {
    SCOPED_TRACE(instances);
    CommandResult r = Poprun(
        *server_, {"--vipu-partition", "envp", "--num-replicas", "8", "--num-instances",
                   std::to_string(instances), "--ipus-per-replica", "2", POPDIST_ENV_DUMP_BIN});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    auto env = ByInstance(r.out);
    ASSERT_EQ(env.size(), static_cast<size_t>(instances)) << r.out;
    const int local = 8 / instances;
    for (int i = 0; i < instances; ++i) {
      auto& e = env[i];
      EXPECT_EQ(e["POPDIST_NUM_TOTAL_REPLICAS"], "8");
      EXPECT_EQ(e["POPDIST_NUM_IPUS_PER_REPLICA"], "2");
      EXPECT_EQ(e["POPDIST_NUM_LOCAL_REPLICAS"], std::to_string(local));
      EXPECT_EQ(e["POPDIST_UNIFORM_REPLICAS_PER_INSTANCE"], "1");
      EXPECT_EQ(e["POPDIST_REPLICA_INDEX_OFFSET"], std::to_string(i * local));
      EXPECT_EQ(e["POPDIST_LOCAL_INSTANCE_INDEX"], std::to_string(i));
      EXPECT_EQ(e["IPUOF_VIPU_API_HOST"], "127.0.0.1");
      EXPECT_EQ(e["IPUOF_VIPU_API_PORT"], std::to_string(server_->port()));
      EXPECT_EQ(e["IPUOF_VIPU_API_PARTITION_ID"], "envp");
      EXPECT_EQ(e["IPUOF_VIPU_API_TIMEOUT"], "120");
      EXPECT_EQ(e["IPUOF_VIPU_API_GCD_ID"], std::to_string(i));  // one GCD per instance
      EXPECT_EQ(e["IPUOF_LOG_LEVEL"], "WARN");
      EXPECT_THAT(e["POPLAR_TARGET_OPTIONS"],
                  HasSubstr(absl::StrCat("\"instanceSize\":\"", 16 / instances, "\"")));
      EXPECT_THAT(e["POPLAR_TARGET_OPTIONS"], HasSubstr("\"gatewayMode\":\"true\""));
      // popdist (C++) reads the same launch.
      EXPECT_EQ(e["popdist.isPopdistEnvSet"], "1");
      EXPECT_EQ(e["popdist.getNumInstances"], std::to_string(instances));
      EXPECT_EQ(e["popdist.getInstanceIndex"], std::to_string(i));
      // Multi-instance runs share a temporary executable cache.
      if (instances > 1) {
        EXPECT_THAT(e["POPART_CACHE_DIR"], HasSubstr("poprun-cache-"));
        EXPECT_EQ(e["POPTORCH_CACHE_DIR"], e["POPART_CACHE_DIR"]);
      } else {
        EXPECT_EQ(e.count("POPART_CACHE_DIR"), 0u);
      }
    }
    EXPECT_FALSE(Listed(*server_, "envp")) << "poprun created envp and must remove it";
  }
}

TEST_F(PoprunTest, VerboseLogAndTopology) {
  CommandResult r = Poprun(*server_, {"-vv", "--vipu-partition", "logp", "--num-replicas", "4",
                                      "--num-instances", "2", POPDIST_ENV_DUMP_BIN});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const std::regex prefix(R"(^\d\d:\d\d:\d\d\.\d\d\d \d+ POPRUN \[[IDWE]\] )");
  for (absl::string_view l : absl::StrSplit(r.err, '\n', absl::SkipEmpty())) {
    std::string s(l);
    if (s.find("POPRUN") != std::string::npos) {
      EXPECT_TRUE(std::regex_search(s, prefix)) << s;
    }
  }
  EXPECT_THAT(r.err,
              HasSubstr(absl::StrCat("POPRUN [D] Connecting to 127.0.0.1:", server_->port())));
  EXPECT_THAT(r.err, HasSubstr("POPRUN [D] Done polling, final state of logp: PS_ACTIVE"));
  EXPECT_THAT(r.err, HasSubstr("POPRUN [D] Target options from environment: {}"));
  EXPECT_THAT(r.err, HasSubstr("POPRUN [D] Target options from V-IPU partition: "
                               "{\"ipuLinkDomainSize\":\"4\""));
  EXPECT_THAT(r.err, HasSubstr("POPRUN [I] Running command: "));
  EXPECT_THAT(r.err, HasSubstr("POPRUN [I] Waiting for mpirun (PID "));
  EXPECT_THAT(r.err, HasSubstr(") terminated with exit code 0"));
  EXPECT_THAT(r.err, HasSubstr("POPRUN [I] Removing partition logp"));
  EXPECT_THAT(r.out, HasSubstr("| instances |   0   |   1   |\n"
                               "|-----------|---------------|\n"
                               "| replicas  | 0 | 1 | 2 | 3 |\n"));
  // Without -v only warnings and errors.
  r = Poprun(*server_, {"--vipu-partition", "logp", POPDIST_ENV_DUMP_BIN});
  EXPECT_EQ(r.err.find("POPRUN [I]"), std::string::npos) << r.err;
  r = Poprun(*server_, {"--vipu-partition", "logp", POPDIST_ENV_DUMP_BIN},
             {{"POPRUN_LOG_LEVEL", "INFO"}});
  EXPECT_THAT(r.err, HasSubstr("POPRUN [I] Running command"));
  r = Poprun(*server_, {"--vipu-partition", "logp", POPDIST_ENV_DUMP_BIN},
             {{"POPRUN_LOG_LEVEL", "LOUD"}});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_THAT(r.err, HasSubstr("POPRUN ERROR: POPRUN_LOG_LEVEL: must be one of"));
}

TEST_F(PoprunTest, RemovesItsPartitionWhenTheApplicationFails) {
  CommandResult r = Poprun(*server_, {"--vipu-partition", "failp", "--num-replicas", "2",
                                      "--num-instances", "2", "sh", "-c", "exit 3"});
  EXPECT_NE(r.exit_code, 0);
  EXPECT_FALSE(Listed(*server_, "failp"));
  // --remove-partition=no keeps it.
  r = Poprun(*server_, {"--vipu-partition", "keepp", "--remove-partition=no", "true"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_TRUE(Listed(*server_, "keepp"));
}

TEST_F(PoprunTest, ForwardsSigintAndCleansUp) {
  const std::string dir = MakeTempDir();
  const std::string marker = dir + "/started";
  std::vector<std::string> args = PoprunArgs(
      *server_, {"--vipu-partition", "sigp", "sh", "-c", "touch " + marker + "; sleep 100"});
  const std::string tmpdir = MpiTmpDir(*server_);
  pid_t pid = fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    setenv("HOME", server_->home().c_str(), 1);
    setenv("TMPDIR", tmpdir.c_str(), 1);
    int null = open("/dev/null", O_WRONLY);
    dup2(null, 1);
    dup2(null, 2);
    std::vector<char*> argv;
    for (auto& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    execv(argv[0], argv.data());
    _exit(127);
  }
  ASSERT_TRUE(WaitFor([&] { return access(marker.c_str(), F_OK) == 0; }, absl::Seconds(60)));
  EXPECT_TRUE(Listed(*server_, "sigp"));
  kill(pid, SIGINT);
  int status = 0;
  bool exited = WaitFor([&] { return waitpid(pid, &status, WNOHANG) == pid; }, absl::Seconds(60));
  if (!exited) kill(pid, SIGKILL);
  ASSERT_TRUE(exited);
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_NE(WEXITSTATUS(status), 0);
  EXPECT_FALSE(Listed(*server_, "sigp"));
  RemoveTree(dir);
}

TEST_F(PoprunTest, ExistingPartitionUpdateAndResetRules) {
  ASSERT_EQ(server_->Vipu({"create", "partition", "p", "--size", "4"}).exit_code, 0);
  // A matching partition is used, reset (not reconfigurable) and kept.
  CommandResult r = Poprun(*server_, {"-v", "--num-replicas", "4", POPDIST_ENV_DUMP_BIN});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_THAT(r.err, HasSubstr("Using V-IPU partition p as it is the only one available"));
  EXPECT_THAT(r.err, HasSubstr("Partition p already exists and is in state: PS_ACTIVE"));
  EXPECT_THAT(r.err, HasSubstr("Resetting partition p"));
  EXPECT_TRUE(Listed(*server_, "p"));
  r = Poprun(*server_, {"-v", "--reset-partition=no", "--num-replicas", "4", "true"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_THAT(r.err, Not(HasSubstr("Resetting partition")));

  // A mismatch is refused without --update-partition and nothing changes.
  r = Poprun(*server_, {"--vipu-partition", "p", "--num-replicas", "8", "true"});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_THAT(r.err, HasSubstr("POPRUN ERROR: partition p does not match the launch: size is 4, "
                               "need 8 (pass --update-partition=yes to re-create it)"));
  EXPECT_TRUE(Listed(*server_, "p"));
  // With it, p is re-created (poprun's now) and kept with --remove-partition=no.
  r = Poprun(*server_, {"-v", "--vipu-partition", "p", "--num-replicas", "8",
                        "--update-partition=yes", "--remove-partition=no", "true"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_THAT(r.err, HasSubstr("Updating partition p: size is 4, need 8"));
  EXPECT_THAT(server_->Vipu({"list", "partitions"}).out, HasSubstr("| 8    |"));

  // Two partitions and none named: refused.
  ASSERT_EQ(server_->Vipu({"create", "partition", "q", "--size", "2"}).exit_code, 0);
  r = Poprun(*server_, {"true"});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_THAT(r.err, HasSubstr("POPRUN ERROR: --vipu-partition: required when 2 partitions are "
                               "available (p, q)"));
}

TEST_F(PoprunTest, ReconfigurablePartitionIsNotResetByDefault) {
  ASSERT_EQ(
      server_->Vipu({"create", "partition", "r", "--size", "4", "--reconfigurable"}).exit_code, 0);
  CommandResult r =
      Poprun(*server_, {"-vv", "--vipu-partition", "r", "--num-replicas", "4", "true"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_THAT(r.err, HasSubstr("The reconfigurable partition r is OK"));
  EXPECT_THAT(r.err, Not(HasSubstr("Resetting partition")));
  r = Poprun(*server_, {"-v", "--vipu-partition", "r", "--reset-partition=yes", "--num-replicas",
                        "4", "true"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_THAT(r.err, HasSubstr("Resetting partition r"));
}

TEST_F(PoprunTest, ValidationFailsBeforeAnythingIsCreated) {
  CommandResult r = Poprun(*server_, {"--vipu-partition", "big", "--num-replicas", "32", "true"});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_THAT(r.err, HasSubstr("POPRUN ERROR: partition size (32 IPUs) is too large for "
                               "allocation"));
  EXPECT_FALSE(Listed(*server_, "big"));
  r = Poprun(*server_, {"--num-replicas", "6", "--num-instances", "4", "true"});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_EQ(r.err, "POPRUN ERROR: --num-replicas (6) must be divisible by --num-instances (4)\n");
  r = Poprun(*server_, {"--num-replicas", "4", "--num-instances", "1", "--num-ilds", "2", "true"});
  EXPECT_THAT(r.err, HasSubstr("at least one instance per IPU-Link domain"));
  EXPECT_THAT(server_->Vipu({"list", "partitions"}).out, Not(HasSubstr("poprun-")));
}

// --vipu-cluster names a cluster: the partition goes into an allocation of
// it (as in the BERT README's POD128 command), and an unknown cluster or an
// allocation in another cluster fails before anything is created.
TEST_F(PoprunTest, VipuClusterNamesACluster) {
  CommandResult r = Poprun(*server_, {"--vipu-cluster=pod16", "--vipu-partition", "inc",
                                      "--num-replicas", "4", POPDIST_ENV_DUMP_BIN});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(ByInstance(r.out)[0]["IPUOF_VIPU_API_PARTITION_ID"], "inc");
  r = Poprun(*server_, {"--vipu-cluster", "pod16", "--vipu-allocation", "default",
                        "--vipu-partition", "inc", "--num-replicas", "4", "true"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  r = Poprun(*server_,
             {"--vipu-cluster=c128", "--vipu-partition", "nope", "--num-replicas", "4", "true"});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_THAT(r.err, HasSubstr("POPRUN ERROR: --vipu-cluster: no allocation in a cluster named "
                               "c128 on the V-IPU server (clusters with allocations: pod16)"));
  r = Poprun(*server_, {"--vipu-cluster=c128", "--vipu-allocation=default", "--vipu-partition",
                        "nope", "--num-replicas", "4", "true"});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_THAT(r.err, HasSubstr("--vipu-cluster: allocation default is in cluster pod16, not c128"));
  EXPECT_FALSE(Listed(*server_, "nope"));
  EXPECT_FALSE(Listed(*server_, "inc"));
}

// Every --process-placement launches: the core-binding ones put each
// instance on a single core of its own; spreadnuma leaves a one-NUMA-node
// host's instances on every core this process may use.
TEST_F(PoprunTest, EveryProcessPlacementLaunches) {
  if (sysconf(_SC_NPROCESSORS_ONLN) < 2) GTEST_SKIP() << "needs two cores";
  const std::string allowed_here = [] {
    std::ifstream in("/proc/self/status");
    std::string line;
    while (std::getline(in, line)) {
      if (absl::StartsWith(line, "Cpus_allowed_list:")) {
        return std::string(absl::StripAsciiWhitespace(line.substr(18)));
      }
    }
    return std::string();
  }();
  const std::string show =
      "sed -n 's/^Cpus_allowed_list:[[:space:]]*/cpus=/p' /proc/self/status; env";
  for (const char* placement :
       {"spreadnuma", "scattersocket", "scatternuma", "close", "disabled"}) {
    SCOPED_TRACE(placement);
    CommandResult r = Poprun(
        *server_, {"--offline-mode=yes", "--num-replicas", "2", "--num-instances", "2",
                   "--executable-cache-path=", absl::StrCat("--process-placement=", placement),
                   "sh", "-c", show});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_THAT(r.err, Not(HasSubstr("unrecognised")));
    auto env = ByInstance(r.out);
    ASSERT_EQ(env.size(), 2u) << r.out;
    EXPECT_EQ(env[1]["POPDIST_REPLICA_INDEX_OFFSET"], "1");
    const std::string mode = placement;
    if (mode == "spreadnuma" && CountNumaNodes() == 1) {
      EXPECT_EQ(env[0]["cpus"], allowed_here);
      EXPECT_EQ(env[1]["cpus"], allowed_here);
    } else if (mode != "spreadnuma" && mode != "disabled") {
      EXPECT_THAT(env[0]["cpus"], ::testing::MatchesRegex("[0-9]+"));
      EXPECT_THAT(env[1]["cpus"], ::testing::MatchesRegex("[0-9]+"));
      EXPECT_NE(env[0]["cpus"], env[1]["cpus"]);
    }
  }
}

// Hosts 127.0.0.2 and 127.0.0.3 are "other hosts" to mpirun: it starts its
// daemons there through the remote launcher, here a script that runs the
// command on this machine and notes the host it was given. Open MPI names a
// daemon's session directory after the hostname and the job, so daemons of
// one job on hosts that are all this machine would share one, and each
// daemon clears it on start while the others fill it; each pretend host
// therefore gets its own session directory base, as a real host has its own
// /tmp.
class PoprunMultiHostTest : public PoprunTest {
 protected:
  void SetUp() override {
    PoprunTest::SetUp();
    dir_ = MakeTempDir();
    agent_ = dir_ + "/rsh-agent";
    std::ofstream(agent_) << "#!/bin/sh\n"
                          << "echo \"$1\" >> '" << dir_ << "/launched'\n"
                          << "OMPI_MCA_orte_tmpdir_base='" << dir_ << "/host-'\"$1\"\n"
                          << "export OMPI_MCA_orte_tmpdir_base\n"
                          << "shift\n"
                          << "exec sh -c \"$*\"\n";
    ASSERT_EQ(chmod(agent_.c_str(), 0755), 0);
  }
  void TearDown() override { RemoveTree(dir_); }

  CommandResult Run(std::vector<std::string> args, std::map<std::string, std::string> env = {}) {
    env.emplace("OMPI_MCA_plm_rsh_agent", agent_);
    return Poprun(*server_, std::move(args), env);
  }
  std::vector<std::string> Launched() const {
    std::vector<std::string> hosts =
        absl::StrSplit(ReadFile(dir_ + "/launched"), '\n', absl::SkipEmpty());
    std::sort(hosts.begin(), hosts.end());
    return hosts;
  }

  std::string dir_;
  std::string agent_;
};

TEST_F(PoprunMultiHostTest, InstancesOnOtherHostsReachTheServer) {
  CommandResult r = Run({"--host", "127.0.0.2,127.0.0.3", "--vipu-partition", "mh",
                         "--num-replicas", "4", "--num-instances", "2", "--ipus-per-replica", "4",
                         POPDIST_SAMPLE_TRAIN_BIN, "--config", "pretrain_large_128_pod16"});
  ASSERT_EQ(r.exit_code, 0) << r.err << r.out;
  EXPECT_THAT(Launched(), ::testing::ElementsAre("127.0.0.2", "127.0.0.3"));
  auto text = InstanceText(r.out);
  EXPECT_THAT(text[0], HasSubstr("Attached to partition mh GCD 0"));
  EXPECT_THAT(text[1], HasSubstr("Attached to partition mh GCD 1"));
  EXPECT_THAT(r.out, HasSubstr("IPU-Machines of partition mh"));
  EXPECT_FALSE(Listed(*server_, "mh"));

  // No --vipu-server-host: the default, localhost, still reaches the server
  // from hosts that are this machine.
  r = RunCommand({POPRUN_BIN, "--allow-run-as-root", "1", "--host", "127.0.0.2,127.0.0.3",
                  "--vipu-server-port", std::to_string(server_->port()), "--num-replicas", "2",
                  "--num-instances", "2", POPDIST_ENV_DUMP_BIN},
                 {{"HOME", server_->home()},
                  {"TMPDIR", MpiTmpDir(*server_)},
                  {"OMPI_MCA_plm_rsh_agent", agent_}});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  auto env = ByInstance(r.out);
  ASSERT_EQ(env.size(), 2u) << r.out;
  for (int i : {0, 1}) {
    EXPECT_EQ(env[i]["IPUOF_VIPU_API_HOST"], "localhost");
    EXPECT_EQ(env[i]["POPDIST_LOCAL_INSTANCE_INDEX"], "0");
    EXPECT_EQ(env[i]["popdist.getInstanceIndex"], std::to_string(i));
  }
}

// A host that is another machine cannot reach a server on loopback: refused
// before anything is created or launched, as are the options that would
// copy files to it.
TEST_F(PoprunMultiHostTest, LoopbackServerAndAnotherMachineAreRefused) {
  CommandResult r = Run({"--host", "127.0.0.2,198.51.100.1", "--vipu-partition", "far",
                         "--num-replicas", "2", "--num-instances", "2", "true"});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_THAT(r.err,
              HasSubstr("POPRUN ERROR: --host 198.51.100.1: the V-IPU server is at 127.0.0.1:"));
  EXPECT_THAT(r.err, HasSubstr("--vipu-server-host"));
  EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
  for (const char* option :
       {"--synchronise-python-venv", "--synchronise-poplar-sdk", "--distribute-ssh-key"}) {
    r = Run({"--host", "198.51.100.1", absl::StrCat(option, "=yes"), "--vipu-partition", "far",
             "--num-replicas", "2", "true"});
    EXPECT_EQ(r.exit_code, 1);
    EXPECT_THAT(r.err, HasSubstr(absl::StrCat("POPRUN ERROR: ", option,
                                              ": host 198.51.100.1 is another machine")));
  }
  EXPECT_FALSE(Listed(*server_, "far"));
  EXPECT_TRUE(Launched().empty());
  // Hosts that are this machine share its files: nothing to copy.
  r = Run({"--host", "127.0.0.2", "--synchronise-python-venv=yes", "--synchronise-poplar-sdk=yes",
           "--distribute-ssh-key=yes", "--num-replicas", "2", POPDIST_ENV_DUMP_BIN});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(ByInstance(r.out)[0]["IPUOF_VIPU_API_HOST"], "127.0.0.1");
  EXPECT_THAT(Launched(), ::testing::ElementsAre("127.0.0.2"));
}

// --instance-mpi-local-args reaches one instance only; --autoreport-dir
// gives every instance POPDIST_AUTOREPORT_DIRECTORY and POPLAR_ENGINE_OPTIONS
// unchanged, and is refused when those already name a report directory.
TEST_F(PoprunTest, InstanceArgsAndAutoreportDir) {
  const std::string engine = "{\"allowOutOfMemory\":\"true\"}";
  CommandResult r =
      Poprun(*server_,
             {"--num-replicas", "2", "--num-instances", "2", "--instance-mpi-local-args",
              "1:-x ONLY_ONE=yes", "--autoreport-dir", "/tmp/training-profile-directory", "env"},
             {{"POPLAR_ENGINE_OPTIONS", engine}});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  auto env = ByInstance(r.out);
  ASSERT_EQ(env.size(), 2u) << r.out;
  EXPECT_EQ(env[0].count("ONLY_ONE"), 0u);
  EXPECT_EQ(env[1]["ONLY_ONE"], "yes");
  for (int i : {0, 1}) {
    EXPECT_EQ(env[i]["POPDIST_AUTOREPORT_DIRECTORY"], "/tmp/training-profile-directory");
    EXPECT_EQ(env[i]["POPLAR_ENGINE_OPTIONS"], engine);
  }
  // popdist gives each instance its own directory below it.
  r = Poprun(*server_, {"--num-replicas", "2", "--num-instances", "2", "--autoreport-dir",
                        "/tmp/training-profile-directory", POPDIST_ENV_DUMP_BIN});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  env = ByInstance(r.out);
  EXPECT_EQ(env[0]["popdist.getAutoReportDirectory"], "/tmp/training-profile-directory/0");
  EXPECT_EQ(env[1]["popdist.getAutoReportDirectory"], "/tmp/training-profile-directory/1");
  r = Poprun(
      *server_,
      {"--vipu-partition", "ar", "--num-replicas", "2", "--autoreport-dir", "/tmp/p", "true"},
      {{"POPLAR_ENGINE_OPTIONS", "{\"autoReport.directory\":\"/tmp/p\"}"}});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_EQ(r.err,
            "POPRUN ERROR: --autoreport-dir: cannot be specified when POPLAR_ENGINE_OPTIONS "
            "contains the autoReport.directory setting (in poprun's environment)\n");
  r = Poprun(*server_,
             {"--vipu-partition", "ar", "--num-replicas", "2", "--num-instances", "2",
              "--autoreport-dir", "/tmp/p", "--instance-mpi-local-args",
              "0:-x POPLAR_ENGINE_OPTIONS={\"autoReport.directory\":\"/tmp/p/0\"}", "true"});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_THAT(r.err, HasSubstr("(in --instance-mpi-local-args of instance 0)"));
  r = Poprun(*server_, {"--vipu-partition", "ar", "--num-replicas", "2", "--num-instances", "2",
                        "--instance-mpi-local-args", "2:-x A", "true"});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_THAT(r.err, HasSubstr("--instance-mpi-local-args: instance 2 does not exist"));
  EXPECT_FALSE(Listed(*server_, "ar"));
}

TEST(PoprunServer, UnreachableServerIsNamed) {
  // A port nobody listens on: bind, read the port, close.
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ASSERT_EQ(bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr), 0);
  socklen_t len = sizeof addr;
  getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len);
  const int port = ntohs(addr.sin_port);
  close(fd);
  CommandResult r = RunCommand({POPRUN_BIN, "--vipu-server-host", "127.0.0.1", "--vipu-server-port",
                                std::to_string(port), "--vipu-server-timeout", "5", "true"});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_THAT(
      r.err, HasSubstr(absl::StrCat("POPRUN ERROR: V-IPU server unreachable at 127.0.0.1:", port)));
  EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
}

TEST_F(PoprunTest, ServerFromIpuofEnvironmentAndVipuConfig) {
  std::vector<std::string> argv = {POPRUN_BIN,         "-v",     "--allow-run-as-root", "1",
                                   "--vipu-partition", "envsrv", POPDIST_ENV_DUMP_BIN};
  CommandResult r = RunCommand(argv, {{"HOME", server_->home()},
                                      {"TMPDIR", MpiTmpDir(*server_)},
                                      {"IPUOF_VIPU_API_HOST", "127.0.0.1"},
                                      {"IPUOF_VIPU_API_PORT", std::to_string(server_->port())},
                                      {"IPUOF_VIPU_API_TIMEOUT", "77"}});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(ByInstance(r.out)[0]["IPUOF_VIPU_API_TIMEOUT"], "77");
  EXPECT_THAT(r.err, Not(HasSubstr("picked up from 'vipu'")));
  r = RunCommand(argv, {{"HOME", server_->home()},
                        {"TMPDIR", MpiTmpDir(*server_)},
                        {"VIPU_CLI_API_HOST", "127.0.0.1"},
                        {"VIPU_CLI_API_PORT", std::to_string(server_->port())}});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_THAT(r.err, HasSubstr(absl::StrCat("POPRUN [I] V-IPU server address picked up from "
                                            "'vipu': 127.0.0.1:",
                                            server_->port())));
  r = RunCommand(argv, {{"IPUOF_VIPU_API_PORT", "0"}});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_THAT(r.err, HasSubstr("POPRUN ERROR: IPUOF_VIPU_API_PORT: must be an integer in 1..65535, "
                               "got 0"));
}

#ifdef POPDIST_PYTHON_DIR
TEST_F(PoprunTest, PythonPopdistUnderPoprunAndOutside) {
  const std::string script = std::string(POPDIST_PYTHON_DIR) + "/popdist_check.py";
  CommandResult r =
      Poprun(*server_,
             {"--vipu-partition", "py", "--num-replicas", "8", "--num-instances", "4",
              "--autoreport-dir", "/tmp/profile/", "/usr/bin/python3", script, "--collectives"},
             {{"PYTHONPATH", POPDIST_PYTHON_DIR}});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  auto env = ByInstance(r.out);
  ASSERT_EQ(env.size(), 4u) << r.out;
  for (int i = 0; i < 4; ++i) {
    EXPECT_EQ(env[i]["popdist.getInstanceIndex"], std::to_string(i));
    EXPECT_EQ(env[i]["popdist.getNumInstances"], "4");
    EXPECT_EQ(env[i]["popdist.getReplicaIndexOffset"], std::to_string(2 * i));
    EXPECT_EQ(env[i]["popdist.getDeviceId"], "2");  // the pair of its own 2-IPU GCD
    EXPECT_EQ(env[i]["collectives.allReduceSum"], "10");
    EXPECT_EQ(env[i]["collectives.allGather"], "0,1,2,3");
    EXPECT_EQ(env[i]["collectives.broadcast"], "42.5");
    EXPECT_EQ(env[i]["collectives.executeOnInstances"], i < 2 ? "21" : "none");
    EXPECT_EQ(env[i]["popdist.getAutoReportDirectory"], absl::StrCat("/tmp/profile/", i));
  }
  // The guide's PopDist example (Listing 4.3) runs under poprun.
  r = Poprun(
      *server_,
      {"--vipu-partition", "py", "--num-replicas", "4", "--num-instances", "2", "/usr/bin/python3",
       std::string(POPDIST_PYTHON_DIR) + "/../examples/popdist_example.py"},
      {{"PYTHONPATH", POPDIST_PYTHON_DIR}});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  auto text = InstanceText(r.out);
  for (int i = 0; i < 2; ++i) {
    EXPECT_THAT(text[i], HasSubstr("The number of replicas is overridden by PopRun. The new "
                                   "value is 4.\n"));
    // Two GCDs of 2 IPUs: each instance's pair is device 2 of its GCD.
    EXPECT_THAT(text[i], HasSubstr(absl::StrCat("model options: {'replication_factor': 2, "
                                                "'device_id': 2, 'process_id': ",
                                                i, ", 'num_processes': 2}\n")));
  }
  // Outside poprun: the single-instance defaults.
  r = RunCommand({"/usr/bin/python3", script}, {{"PYTHONPATH", POPDIST_PYTHON_DIR}});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_THAT(r.out, HasSubstr("popdist.isPopdistEnvSet=0\npopdist.getNumTotalReplicas=1\n"));
  EXPECT_THAT(r.out, HasSubstr("popdist.getNumInstances=1\npopdist.getInstanceIndex=0\n"));
}
#endif

#ifdef POPDIST_PYTHON_DIR
// The build tree holds the Python module as the install does: with the
// documented PYTHONPATH=<build>/python, `import popdist` finds the build's
// copy of the sources.
TEST(PopdistPython, ImportsFromTheBuildTree) {
  const std::string python_dir =
      (std::filesystem::path(POPRUN_BIN).parent_path().parent_path() / "python").string();
  CommandResult r =
      RunCommand({"/usr/bin/python3", "-c",
                  "import popdist; print(popdist.__file__); print(popdist.getNumInstances())"},
                 {{"PYTHONPATH", python_dir}});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, python_dir + "/popdist/__init__.py\n1\n");
  EXPECT_EQ(ReadFile(python_dir + "/popdist/__init__.py"),
            ReadFile(std::string(POPDIST_PYTHON_DIR) + "/popdist/__init__.py"));
}
#endif

// Run as root without leave, Open MPI's mpirun refuses in a 20-line banner;
// poprun adds one line of its own saying why and what to add, and each way
// it names lets the run through.
TEST(PoprunAsRoot, SaysWhyMpirunRefusedAndWhatToAdd) {
  if (geteuid() != 0) GTEST_SKIP() << "mpirun refuses only root";
  const std::string dir = MakeTempDir();
  const std::map<std::string, std::string> env = {{"HOME", dir}, {"TMPDIR", dir}};
  auto poprun = [&](std::vector<std::string> args, std::vector<std::string> set) {
    std::vector<std::string> argv = {"/usr/bin/env", "-u", "OMPI_ALLOW_RUN_AS_ROOT", "-u",
                                     "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM"};
    argv.insert(argv.end(), set.begin(), set.end());
    argv.insert(argv.end(), {POPRUN_BIN, "--offline-mode=yes"});
    argv.insert(argv.end(), args.begin(), args.end());
    return RunCommand(argv, env);
  };
  CommandResult r = poprun({"echo", "ran"}, {});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_THAT(r.err, HasSubstr("has detected an attempt to run as root"));
  std::vector<std::string> errors;
  for (absl::string_view l : absl::StrSplit(r.err, '\n')) {
    if (absl::StrContains(l, "POPRUN ERROR")) errors.emplace_back(l);
  }
  EXPECT_THAT(errors,
              ::testing::ElementsAre(
                  "POPRUN ERROR: mpirun refused to run as root (Open MPI's guard): add "
                  "--allow-run-as-root=yes (or --mpi-global-args=--allow-run-as-root), or set "
                  "OMPI_ALLOW_RUN_AS_ROOT=1 and OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1"))
      << r.err;
  EXPECT_THAT(r.out, Not(HasSubstr("ran")));
  for (const auto& [args, set] :
       std::vector<std::pair<std::vector<std::string>, std::vector<std::string>>>{
           {{"--allow-run-as-root=yes", "echo", "ran"}, {}},
           {{"--mpi-global-args=--allow-run-as-root", "echo", "ran"}, {}},
           {{"echo", "ran"}, {"OMPI_ALLOW_RUN_AS_ROOT=1", "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1"}}}) {
    r = poprun(args, set);
    EXPECT_EQ(r.exit_code, 0) << args[0] << r.err;
    EXPECT_THAT(r.out, HasSubstr("ran\n")) << args[0];
    EXPECT_THAT(r.err, Not(HasSubstr("POPRUN ERROR"))) << args[0];
  }
  RemoveTree(dir);
}

TEST_F(PoprunTest, CppCollectivesUnderPoprun) {
  CommandResult r =
      Poprun(*server_, {"--vipu-partition", "cc", "--num-replicas", "4", "--num-instances", "4",
                        POPDIST_ENV_DUMP_BIN, "--collectives"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  auto env = ByInstance(r.out);
  ASSERT_EQ(env.size(), 4u);
  for (int i = 0; i < 4; ++i) {
    EXPECT_EQ(env[i]["collectives.allReduceSum"], "10");
    EXPECT_EQ(env[i]["collectives.allGather"], "0,1,2,3");
    EXPECT_EQ(env[i]["collectives.broadcast"], "42.5");
    EXPECT_EQ(env[i]["collectives.executeOnInstances"], i < 2 ? "21" : "none");
  }
}

#ifdef POPDIST_SAMPLE_TRAIN_BIN
double Throughput(const std::string& out) {
  std::smatch m;
  static const std::regex re(R"(throughput: ([0-9.]+) samples/sec)");
  return std::regex_search(out, m, re) ? std::stod(m[1]) : -1;
}

// BERT-Large on a Bow Pod64 as in its calibration run (docs/model.md): 16
// replicas x 4 IPUs, with the executable cache missed once and hit the
// second time.
TEST(PoprunSample, BertLargeOnBowPod64AndExecutableCache) {
  auto server = ServerProcess::Start("bow-pod64");
  const std::string cache = MakeTempDir() + "/cache";
  std::vector<std::string> args = {"--vipu-partition",
                                   "bert",
                                   "--num-replicas",
                                   "16",
                                   "--ipus-per-replica",
                                   "4",
                                   "--executable-cache-path",
                                   cache,
                                   POPDIST_SAMPLE_TRAIN_BIN,
                                   "--config",
                                   "pretrain_large_128_POD64",
                                   "--dataset",
                                   "generated",
                                   "--training-steps",
                                   "1"};
  CommandResult r = Poprun(*server, args);
  ASSERT_EQ(r.exit_code, 0) << r.err << r.out;
  EXPECT_THAT(r.out, HasSubstr("Attached to partition bert GCD 0: 64 IPUs"));
  // The steps ran on the partition's 16 machines (RunWorkload's answer).
  EXPECT_THAT(r.out,
              ::testing::ContainsRegex(
                  "Steps run on 16 IPU-Machines of partition bert \\(generation [0-9]+\\): "
                  "ag1,ag2,ag3,ag4,ag5,ag6,ag7,ag8,ag9,ag10,ag11,ag12,ag13,ag14,ag15,ag16\n"));
  EXPECT_THAT(r.out, HasSubstr("<stdout>:Embedding  --> IPU 0\n"));
  EXPECT_THAT(r.out, HasSubstr("<stdout>:Encoder 3  --> IPU 1\n"));
  EXPECT_THAT(r.out, HasSubstr("<stdout>:Encoder 23 --> IPU 3\n"));
  EXPECT_THAT(r.out, HasSubstr("Graph compilation: 100%"));
  EXPECT_THAT(r.out, HasSubstr("global_batch_size: 65536"));
  EXPECT_THAT(r.out, HasSubstr("training_steps: 1"));
  const double miss = Throughput(r.out);
  EXPECT_LT(std::abs(miss / 17692.1 - 1), 0.05) << r.out;
  // The machines model exactly what the in-process model predicts for a
  // Bow Pod64: every field of the workload reached them.
  CommandResult offline =
      RunCommand({POPDIST_SAMPLE_TRAIN_BIN, "--offline", "--config", "pretrain_large_128_POD64"});
  ASSERT_EQ(offline.exit_code, 0) << offline.err;
  EXPECT_THAT(offline.out, HasSubstr("Offline: no partition"));
  EXPECT_DOUBLE_EQ(Throughput(offline.out), miss);
  r = Poprun(*server, args);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_THAT(r.out, HasSubstr("Loading executable from cache: " + cache));
  EXPECT_THAT(r.out, Not(HasSubstr("Graph compilation")));
  EXPECT_DOUBLE_EQ(Throughput(r.out), miss);
  // Two instances train the same global batch at the same modelled rate.
  args[3] = "16";
  args.insert(args.begin(), {"--num-instances", "2"});
  r = Poprun(*server, args);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_THAT(InstanceText(r.out)[1], HasSubstr("Attached to partition bert GCD 1: 32 IPUs\n"));
  EXPECT_LT(std::abs(Throughput(r.out) / 17692.1 - 1), 0.05) << r.out;
  RemoveTree(cache);
}

// The steps run on the machines: an IPU fault on one machine of the
// partition fails the training, naming that machine; once it clears, the
// same partition trains again under poprun.
// On a reconfigurable partition each instance attaches to the sub-device
// holding its own IPUs, as Poplar numbers it (popdist::getDeviceId).
TEST(PoprunSample, InstancesAttachToTheirSubDeviceOfAReconfigurablePartition) {
  auto server = ServerProcess::Start("bow-pod16");
  ASSERT_EQ(server->Vipu({"create", "partition", "r", "--size", "8", "--reconfigurable"}).exit_code,
            0);
  CommandResult r =
      Poprun(*server, {"--vipu-partition", "r", "--num-replicas", "2", "--ipus-per-replica", "4",
                       "--num-instances", "2", POPDIST_SAMPLE_TRAIN_BIN, "--config",
                       "pretrain_base_128_pod4"});
  ASSERT_EQ(r.exit_code, 0) << r.err << r.out;
  auto text = InstanceText(r.out);
  ASSERT_EQ(text.size(), 2u);
  EXPECT_THAT(text[0], HasSubstr("Attached to partition r GCD 0 device 12: 4 of its 8 IPUs\n"));
  EXPECT_THAT(text[1], HasSubstr("Attached to partition r GCD 0 device 13: 4 of its 8 IPUs\n"));
  EXPECT_THAT(text[0], HasSubstr("sync type c2-compatible"));
}

TEST(PoprunSample, AFaultOnOneMachineFailsTheTrainingNamingIt) {
  auto server = ServerProcess::Start("bow-pod16");
  ASSERT_EQ(server->Vipu({"create", "partition", "bert", "--size", "16"}).exit_code, 0);
  const std::vector<std::string> app = {POPDIST_SAMPLE_TRAIN_BIN, "--config",
                                        "pretrain_large_128_pod16", "--training-steps", "2"};
  const std::map<std::string, std::string> env = {
      {"HOME", server->home()},
      {"IPUOF_VIPU_API_HOST", "127.0.0.1"},
      {"IPUOF_VIPU_API_PORT", std::to_string(server->port())},
      {"IPUOF_VIPU_API_PARTITION_ID", "bert"}};
  CommandResult r = RunCommand(app, env);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_THAT(r.out, HasSubstr("Steps run on 4 IPU-Machines of partition bert"));

  ASSERT_EQ(
      server->VipuAdmin({"inject", "fault", "ag3", "--kind", "ipu-error", "--ipu", "2"}).exit_code,
      0);
  r = RunCommand(app, env);
  EXPECT_EQ(r.exit_code, 4) << r.out;
  EXPECT_THAT(r.err, HasSubstr("Step 0: partition bert failed: partition bert cannot run: agent "
                               "ag3: IPU 2 error"));
  EXPECT_THAT(r.out, Not(HasSubstr("throughput:")));
  // Without a partition to attach to, it says so unless --offline.
  r = RunCommand(app, {{"HOME", server->home() + "/none"}});
  EXPECT_EQ(r.exit_code, 3);
  EXPECT_THAT(r.err, HasSubstr("IPUoF: cannot attach: attach: set IPUOF_VIPU_API_HOST"));

  ASSERT_EQ(server->VipuAdmin({"inject", "fault", "ag3", "--kind", "clear"}).exit_code, 0);
  ASSERT_TRUE(WaitFor(
      [&] {
        return server->Vipu({"get", "partition-status", "bert"}).out.find("ACTIVE") !=
               std::string::npos;
      },
      absl::Seconds(20)));
  r = Poprun(*server, {"--vipu-partition", "bert", "--num-replicas", "4", "--ipus-per-replica", "4",
                       POPDIST_SAMPLE_TRAIN_BIN, "--config", "pretrain_large_128_pod16"});
  ASSERT_EQ(r.exit_code, 0) << r.err << r.out;
  EXPECT_THAT(r.out, HasSubstr("Steps run on 4 IPU-Machines of partition bert"));
  EXPECT_GT(Throughput(r.out), 0);
}

// The "total loss" of every step line, in order.
std::vector<double> Losses(const std::string& text) {
  std::vector<double> losses;
  static const std::regex re(R"(total loss: ([0-9.]+) )");
  for (auto it = std::sregex_iterator(text.begin(), text.end(), re); it != std::sregex_iterator();
       ++it) {
    losses.push_back(std::stod((*it)[1]));
  }
  return losses;
}

// The loss is learned: two instances that all-reduce their gradients print
// the same falling losses as one process training all the replicas, and the
// log says which numbers are learned and which are modelled.
TEST(PoprunSample, TheLossIsLearnedDataParallelAcrossInstances) {
  auto server = ServerProcess::Start("bow-pod16");
  const std::vector<std::string> app = {POPDIST_SAMPLE_TRAIN_BIN, "--config",
                                        "pretrain_large_128_pod16", "--training-steps", "12"};
  std::vector<std::string> args = {"--vipu-partition",   "learn", "--num-replicas",  "4",
                                   "--ipus-per-replica", "4",     "--num-instances", "2"};
  args.insert(args.end(), app.begin(), app.end());
  CommandResult r = Poprun(*server, args);
  ASSERT_EQ(r.exit_code, 0) << r.err << r.out;
  auto text = InstanceText(r.out);
  ASSERT_EQ(text.size(), 2u);
  const std::vector<double> first = Losses(text[0]), second = Losses(text[1]);
  ASSERT_EQ(first.size(), 12u) << text[0];
  EXPECT_EQ(first, second);
  EXPECT_LT(first.back(), 0.95 * first.front());
  EXPECT_THAT(text[0], HasSubstr("gradients all-reduced across 2 instances"));
  EXPECT_THAT(text[0], HasSubstr("Modelled: step times and throughput (the partition's "
                                 "IPU-Machines); compile: not modelled"));

  std::vector<std::string> offline = app;
  offline.push_back("--offline");
  CommandResult one = RunCommand(offline);
  ASSERT_EQ(one.exit_code, 0) << one.err;
  const std::vector<double> alone = Losses(one.out);
  ASSERT_EQ(alone.size(), first.size());
  for (size_t i = 0; i < alone.size(); ++i) EXPECT_NEAR(alone[i], first[i], 0.0015) << "step " << i;
  // Another seed, other data: another loss curve.
  offline.insert(offline.end(), {"--seed", "7"});
  one = RunCommand(offline);
  ASSERT_EQ(one.exit_code, 0) << one.err;
  EXPECT_NE(Losses(one.out), alone);
}

// The training time is what the pod would take, from the model; the elapsed
// time is the wall clock of this simulated run. The progress bar says which
// it shows.
TEST(PoprunSample, TrainingTimeIsModelledAndElapsedIsTheWallClock) {
  const auto start = std::chrono::steady_clock::now();
  CommandResult r = RunCommand({POPDIST_SAMPLE_TRAIN_BIN, "--offline", "--config",
                                "pretrain_large_128_POD64", "--training-steps", "40"});
  const double wall =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  ASSERT_EQ(r.exit_code, 0) << r.err;
  std::smatch m;
  static const std::regex times(
      R"(\nTraining time: ([0-9.]+) secs \(modelled\)\nElapsed: ([0-9.]+) secs \(wall clock\)\n)");
  ASSERT_TRUE(std::regex_search(r.out, m, times)) << r.out;
  const double modelled = std::stod(m[1]), elapsed = std::stod(m[2]);
  EXPECT_LE(elapsed, wall);
  // 40 steps of BERT-Large on a Bow Pod64 are modelled at over two minutes;
  // the run itself ends within RunCommand's deadline of two minutes.
  EXPECT_GT(modelled, wall);
  // The last step's bar shows the modelled total, and says so.
  const long s = std::lround(modelled);
  char bar[64];
  std::snprintf(bar, sizeof bar, "| 39/40 [modelled %02ld:%02ld<", s / 60, s % 60);
  EXPECT_THAT(r.out, HasSubstr(bar)) << r.out;
}

// The fields of a vipu-report.json the tests check, as KEY=VALUE; Python's
// json module reads the file, so it must parse.
std::map<std::string, std::string> ReportFields(const std::string& path) {
  static const char kScript[] = R"(
import json, sys
r = json.load(open(sys.argv[1]))
p, step = r["partition"], r["step"]
print("format=%s/%d" % (r["format"], r["version"]))
print("instance=%d/%d" % (r["instance"]["index"], r["instance"]["instances"]))
print("replica_offset=%d" % r["instance"]["replica_offset"])
print("partition=%s gcd %d" % (p["id"], p["gcd"]))
print("machines=%s" % ",".join(p["machines"]))
print("steps=%d" % r["run"]["steps"])
print("modelled_time_s=%.3f" % r["run"]["modelled_time_s"])
print("elapsed_s=%.3f" % r["run"]["elapsed_s"])
print("ipus=%d" % len(step["ipus"]))
parts = ["compute_s", "exchange_s", "sync_s", "collectives_s", "weight_update_s", "host_s"]
print("parts_add_up=%d" % all(abs(sum(i[k] for k in parts) / step["step_time_s"] - 1) < 1e-9
                              for i in step["ipus"]))
print("computes=%d" % all(i["compute_s"] > 0 for i in step["ipus"]))
print("source=%s" % step["source"])
)";
  CommandResult r = RunCommand({"/usr/bin/python3", "-c", kScript, path});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  std::map<std::string, std::string> fields;
  for (absl::string_view l : absl::StrSplit(r.out, '\n', absl::SkipEmpty())) {
    std::pair<std::string, std::string> kv = absl::StrSplit(l, absl::MaxSplits('=', 1));
    fields[kv.first] = kv.second;
  }
  return fields;
}

// The first match of `re`'s group 1 in `text`, "" if none.
std::string Find(const std::string& text, const std::regex& re) {
  std::smatch m;
  return std::regex_search(text, m, re) ? m[1].str() : "";
}

// poprun's --autoreport-dir: every instance writes, when its run ends, a
// report of what the pod knows of it into its own directory under the one
// given; with "autoReport.all":"false" nothing is written at all.
TEST(PoprunSample, AutoreportDirHoldsARunReportPerInstance) {
  auto server = ServerProcess::Start("bow-pod16");
  const std::string tmp = MakeTempDir();
  const std::string dir = tmp + "/training-profile-directory";
  std::vector<std::string> args = {"--vipu-partition",
                                   "rep",
                                   "--num-replicas",
                                   "4",
                                   "--ipus-per-replica",
                                   "4",
                                   "--num-instances",
                                   "2",
                                   "--autoreport-dir",
                                   dir,
                                   POPDIST_SAMPLE_TRAIN_BIN,
                                   "--config",
                                   "pretrain_large_128_pod16",
                                   "--training-steps",
                                   "2"};
  CommandResult r = Poprun(*server, args);
  ASSERT_EQ(r.exit_code, 0) << r.err << r.out;
  std::vector<std::string> listed;
  for (const auto& e : std::filesystem::directory_iterator(dir)) {
    listed.push_back(e.path().filename().string());
  }
  std::sort(listed.begin(), listed.end());
  EXPECT_THAT(listed, ::testing::ElementsAre("0", "1"));
  auto text = InstanceText(r.out);
  for (int i : {0, 1}) {
    SCOPED_TRACE(i);
    const std::string path = absl::StrCat(dir, "/", i, "/vipu-report.json");
    EXPECT_THAT(text[i], HasSubstr("Run report: " + path + "\n"));
    auto fields = ReportFields(path);
    EXPECT_EQ(fields["format"], "vipu-report/1");
    EXPECT_EQ(fields["instance"], absl::StrCat(i, "/2"));
    EXPECT_EQ(fields["replica_offset"], absl::StrCat(2 * i));
    EXPECT_EQ(fields["partition"], absl::StrCat("rep gcd ", i));
    // What the instance printed of the same run.
    const std::string machines =
        Find(text[i], std::regex(R"(Steps run on \d+ IPU-Machines of partition rep \(generation )"
                                 R"(\d+\): ([a-z0-9,]+)\n)"));
    EXPECT_FALSE(machines.empty()) << text[i];
    EXPECT_EQ(fields["machines"], machines);
    EXPECT_EQ(fields["steps"], "2");
    EXPECT_EQ(fields["modelled_time_s"],
              Find(text[i], std::regex(R"(Training time: ([0-9.]+) secs \(modelled\))")));
    EXPECT_EQ(fields["elapsed_s"], Find(text[i], std::regex(R"(Elapsed: ([0-9.]+) secs)")));
    // One entry per IPU of a replica, each adding up to the step time.
    EXPECT_EQ(fields["ipus"], "4");
    EXPECT_EQ(fields["parts_add_up"], "1");
    EXPECT_EQ(fields["computes"], "1");
    EXPECT_EQ(fields["source"], "in-process model of bow-pod16");
  }

  const std::string off = tmp + "/off";
  args[9] = off;
  r = Poprun(*server, args, {{"POPLAR_ENGINE_OPTIONS", "{\"autoReport.all\":\"false\"}"}});
  ASSERT_EQ(r.exit_code, 0) << r.err << r.out;
  EXPECT_FALSE(std::filesystem::exists(off));
  EXPECT_THAT(r.out, Not(HasSubstr("Run report:")));
  RemoveTree(tmp);
}

TEST(PoprunSample, InvalidSeedIsRefused) {
  for (const char* seed : {"-1", "x", "4611686018427387905", ""}) {
    CommandResult r = RunCommand({POPDIST_SAMPLE_TRAIN_BIN, "--offline", "--seed", seed});
    EXPECT_NE(r.exit_code, 0) << seed;
    EXPECT_THAT(r.err, HasSubstr("--seed")) << seed;
    EXPECT_THAT(r.out, Not(HasSubstr("Step:"))) << seed;
  }
}
#endif

}  // namespace
}  // namespace vipu::testing

#endif  // POPRUN_BIN && POPDIST_ENV_DUMP_BIN
