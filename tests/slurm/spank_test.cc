// vipu_spank.so under real Slurm daemons (munged, slurmctld, slurmd on
// loopback ports with a private configuration) and a real vipu-server
// --simulate pod16: the partition of each job, its environment, its removal
// however the job ends, the refusals, and poprun inside a job.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <memory>
#include <regex>
#include <set>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "absl/time/time.h"
#include "tests/integration/daemon_process.h"
#include "tests/integration/harness.h"

namespace vipu::testing {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;
using ::testing::Not;

// Exit code ctest reads as "skipped" (SKIP_RETURN_CODE in tests/CMakeLists.txt).
constexpr int kSkip = 77;

const char* const kSlurmPrograms[] = {"munged", "mungekey", "slurmctld", "slurmd",
                                      "srun",   "sbatch",   "salloc",    "scancel",
                                      "squeue", "sinfo",    "scontrol"};

// The absolute path of `name` on PATH, or "".
std::string Which(const std::string& name) {
  const char* path = getenv("PATH");
  for (absl::string_view dir : absl::StrSplit(path ? path : "/usr/bin:/bin", ':')) {
    std::string candidate = absl::StrCat(dir, "/", name);
    if (access(candidate.c_str(), X_OK) == 0) return candidate;
  }
  for (const char* dir : {"/usr/sbin", "/sbin"}) {
    std::string candidate = absl::StrCat(dir, "/", name);
    if (access(candidate.c_str(), X_OK) == 0) return candidate;
  }
  return "";
}

void WriteFile(const std::string& path, const std::string& text, mode_t mode = 0644) {
  std::ofstream(path) << text;
  chmod(path.c_str(), mode);
}

// One Slurm cluster of one node and one vipu-server for the whole suite:
// starting slurmctld and slurmd takes seconds, and every test leaves the
// cluster as it found it (no job, no partition).
class Cluster {
 public:
  Cluster() {
    dir_ = MakeTempDir();
    // slurmd runs jobs as their user and munged checks its directory's
    // permissions.
    chmod(dir_.c_str(), 0755);
    for (const char* sub : {"etc", "state", "spool", "log", "munge", "jobs"}) {
      fs::create_directories(dir_ + "/" + sub);
    }
    chmod((dir_ + "/munge").c_str(), 0755);
    chmod((dir_ + "/jobs").c_str(), 0777);
    server_ = ServerProcess::Start("pod16");

    RunCommand({Which("mungekey"), "-c", "-k", dir_ + "/munge/munge.key"});
    chmod((dir_ + "/munge/munge.key").c_str(), 0400);
    munged_ = std::make_unique<Daemon>(
        std::vector<std::string>{
            Which("munged"), "-F", "--force", "--socket=" + dir_ + "/munge/munge.socket",
            "--key-file=" + dir_ + "/munge/munge.key", "--pid-file=" + dir_ + "/munge/munged.pid",
            "--seed-file=" + dir_ + "/munge/munged.seed", "--log-file=" + dir_ + "/log/munged.log",
            "--num-threads=4"},
        dir_ + "/log/munged.out");
    if (!WaitFor([&] { return fs::exists(dir_ + "/munge/munge.socket"); }, absl::Seconds(20))) {
      throw std::runtime_error("munged did not create its socket");
    }

    char host[256] = {};
    gethostname(host, sizeof host - 1);
    host_ = std::string(host).substr(0, std::string(host).find('.'));
    const int ctld_port = FreePort();
    int slurmd_port = FreePort();
    while (slurmd_port == ctld_port) slurmd_port = FreePort();
    WriteFile(conf(),
              absl::StrJoin(
                  std::vector<std::string>{
                      "ClusterName=vipuspank",
                      "SlurmctldHost=" + host_,
                      absl::StrCat("SlurmctldPort=", ctld_port),
                      absl::StrCat("SlurmdPort=", slurmd_port),
                      "AuthType=auth/munge",
                      "AuthInfo=socket=" + dir_ + "/munge/munge.socket",
                      "StateSaveLocation=" + dir_ + "/state",
                      "SlurmdSpoolDir=" + dir_ + "/spool",
                      "SlurmctldPidFile=" + dir_ + "/slurmctld.pid",
                      "SlurmdPidFile=" + dir_ + "/slurmd.pid",
                      "SlurmctldLogFile=" + dir_ + "/log/slurmctld.log",
                      "SlurmdLogFile=" + dir_ + "/log/slurmd.log",
                      "SlurmctldDebug=info",
                      "SlurmdDebug=info",
                      "PlugStackConfig=" + plugstack(),
                      // Node failures: slurmd cannot run the job's
                      // epilog, slurmctld runs this one.
                      "EpilogSlurmctld=" + dir_ + "/etc/epilog_slurmctld.sh",
                      "ProctrackType=proctrack/linuxproc",
                      "TaskPlugin=task/none",
                      "SelectType=select/cons_tres",
                      "SelectTypeParameters=CR_Core",
                      "MpiDefault=none",
                      "ReturnToService=2",
                      "SlurmUser=root",
                      "SlurmdUser=root",
                      "SchedulerType=sched/builtin",
                      "SchedulerParameters=batch_sched_delay=0",
                      "KillWait=2",
                      // IPUs as a count-only resource, for the
                      // shared reconfigurable partition mode.
                      "GresTypes=ipu",
                      absl::StrCat("NodeName=", host_, " CPUs=", sysconf(_SC_NPROCESSORS_ONLN),
                                   " RealMemory=1000 Gres=ipu:16 State=UNKNOWN"),
                      "PartitionName=debug Nodes=" + host_ +
                          " Default=YES MaxTime=INFINITE State=UP OverSubscribe=FORCE:64",
                  },
                  "\n") +
                  "\n");
    WriteFile(dir_ + "/etc/gres.conf", "Name=ipu Count=16\n");
    WriteFile(dir_ + "/etc/epilog_slurmctld.sh",
              absl::StrCat("#!/bin/sh\nexport VIPU=", VIPU_CLI_BIN,
                           " VIPU_CLI_API_HOST=127.0.0.1 VIPU_CLI_API_PORT=", server_->port(),
                           "\nunset HOME\nexec ", VIPU_SLURM_SWEEP, "\n"),
              0755);
    SetPlugin({});

    slurmctld_ = std::make_unique<Daemon>(
        std::vector<std::string>{Which("slurmctld"), "-D", "-c", "-f", conf()},
        dir_ + "/log/slurmctld.out", env());
    slurmd_ =
        std::make_unique<Daemon>(std::vector<std::string>{Which("slurmd"), "-D", "-f", conf()},
                                 dir_ + "/log/slurmd.out", env());
    if (!WaitFor(
            [&] {
              CommandResult r = Slurm({"sinfo", "-h", "-N", "-o", "%T"});
              return r.exit_code == 0 && absl::StartsWith(r.out, "idle");
            },
            absl::Seconds(60))) {
      throw std::runtime_error("the node did not become idle: " + Logs());
    }
  }

  ~Cluster() {
    // Jobs first, so that their epilogs run while slurmd is still there and
    // no task outlives the test.
    Slurm({"scancel", "--full", "--user=root"});
    WaitFor([&] { return Slurm({"squeue", "-h"}).out.empty(); }, absl::Seconds(30));
    slurmd_->Terminate();
    slurmctld_->Terminate();
    munged_->Terminate();
    server_.reset();
    RemoveTree(dir_);
  }

  // Adds `line` to slurm.conf (or, empty, restores it) and has the daemons
  // read it again.
  // Waits for the jobs to end first: slurmd fails (and drains the node for)
  // an epilog that runs while it reads its configuration again.
  void Reconfigure(const std::string& line) {
    if (!WaitFor([&] { return Slurm({"squeue", "-h"}).out.empty(); }, absl::Seconds(30))) {
      throw std::runtime_error("jobs still queued: " + Slurm({"squeue"}).out);
    }
    std::string text = ReadFile(conf());
    const size_t extra = text.find("# extra\n");
    if (extra != std::string::npos) text.resize(extra);
    if (!line.empty()) absl::StrAppend(&text, "# extra\n", line, "\n");
    WriteFile(conf(), text);
    CommandResult r = Slurm({"scontrol", "reconfigure"});
    if (r.exit_code != 0) throw std::runtime_error("scontrol reconfigure: " + r.err);
  }

  // A node failure as slurmctld sees it: slurmd gone for good, no epilog.
  void KillSlurmd() { slurmd_->Kill(); }
  void RestartSlurmd() { slurmd_->Relaunch(); }

  const std::string& dir() const { return dir_; }
  const std::string& host() const { return host_; }
  ServerProcess& server() { return *server_; }
  std::string conf() const { return dir_ + "/etc/slurm.conf"; }
  std::string plugstack() const { return dir_ + "/etc/plugstack.conf"; }
  std::map<std::string, std::string> env() const {
    return {{"SLURM_CONF", conf()}, {"HOME", server_->home()}};
  }

  // The plugin's plugstack.conf line: host and port of the suite's server
  // and the built vipu, then `args`; `replace` drops those defaults.
  // srun, sbatch and slurmstepd read the file at every job and step.
  void SetPlugin(const std::vector<std::string>& args, bool replace = false) {
    std::vector<std::string> line = {"required", VIPU_SPANK_SO};
    if (!replace) {
      line.insert(line.end(), {"api-host=127.0.0.1", absl::StrCat("api-port=", server_->port()),
                               absl::StrCat("vipu=", VIPU_CLI_BIN)});
    }
    line.insert(line.end(), args.begin(), args.end());
    WriteFile(plugstack(), absl::StrJoin(line, " ") + "\n");
  }

  // A Slurm client (srun, sbatch, ...) with the suite's configuration.
  CommandResult Slurm(std::vector<std::string> argv,
                      std::map<std::string, std::string> extra_env = {}) const {
    argv[0] = Which(argv[0]);
    std::map<std::string, std::string> e = env();
    e.insert(extra_env.begin(), extra_env.end());
    // Jobs run in a directory every user can write (batch output files).
    return RunCommand(
        Join({"/bin/sh", "-c", "cd \"$0\" && shift && exec \"$@\"", dir_ + "/jobs", "ignored"},
             argv),
        e);
  }

  // Ids of the slurm_* partitions vipu-server lists.
  std::vector<std::string> SlurmPartitions() const {
    std::vector<std::string> ids;
    CommandResult r = server_->Vipu({"list", "partitions"});
    for (absl::string_view line : absl::StrSplit(r.out, '\n')) {
      std::string id(absl::StripAsciiWhitespace(line.substr(0, line.find('|'))));
      if (absl::StartsWith(id, "slurm_")) ids.push_back(id);
    }
    return ids;
  }
  bool NoSlurmPartition() const { return SlurmPartitions().empty(); }

  // The topology ids of a partition's IPUs ("ILD 0: 0-3 8" in its details).
  std::set<int> Ipus(const std::string& id) const {
    std::set<int> ipus;
    CommandResult r = server_->Vipu({"get", "partition", id});
    std::smatch m;
    static const std::regex ilds(R"(ILD [0-9]+: ([0-9 -]+))");
    std::string text = r.out;
    while (std::regex_search(text, m, ilds)) {
      for (absl::string_view run : absl::StrSplit(m[1].str(), ' ', absl::SkipEmpty())) {
        std::vector<std::string> ends = absl::StrSplit(run, '-');
        int from = 0, to = 0;
        if (!absl::SimpleAtoi(ends[0], &from)) continue;
        to = from;
        if (ends.size() == 2) (void)absl::SimpleAtoi(ends[1], &to);
        for (int i = from; i <= to; ++i) ipus.insert(i);
      }
      text = m.suffix();
    }
    return ipus;
  }

  // The state of a job as slurmctld reports it ("RUNNING", "COMPLETED", ...).
  std::string JobState(const std::string& job) const {
    CommandResult r = Slurm({"scontrol", "show", "job", job});
    std::smatch m;
    static const std::regex state(R"(JobState=([A-Z_]+))");
    return std::regex_search(r.out, m, state) ? m[1].str() : "";
  }
  bool JobEnded(const std::string& job) const {
    const std::string s = JobState(job);
    return !s.empty() && s != "PENDING" && s != "RUNNING" && s != "CONFIGURING" &&
           s != "COMPLETING" && s != "SUSPENDED";
  }

  std::string Logs() const {
    std::string text = Slurm({"sinfo", "-R"}).out;
    for (const char* f : {"slurmd.log", "slurmctld.log"}) {
      std::string log = ReadFile(dir_ + "/log/" + f);
      if (log.size() > 4000 && !getenv("SPANK_TEST_FULL_LOGS")) log = log.substr(log.size() - 4000);
      absl::StrAppend(&text, "\n--- ", f, ":\n", log);
    }
    return text;
  }

 private:
  static std::vector<std::string> Join(std::vector<std::string> a,
                                       const std::vector<std::string>& b) {
    a.insert(a.end(), b.begin(), b.end());
    return a;
  }

  std::string dir_;
  std::string host_;
  std::unique_ptr<ServerProcess> server_;
  std::unique_ptr<Daemon> munged_;
  std::unique_ptr<Daemon> slurmctld_;
  std::unique_ptr<Daemon> slurmd_;
};

class SpankTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { cluster_ = new Cluster(); }
  static void TearDownTestSuite() {
    delete cluster_;
    cluster_ = nullptr;
  }
  void TearDown() override {
    cluster_->SetPlugin({});
    // Every test ends with no job and no partition of a job.
    EXPECT_TRUE(WaitFor(
        [] {
          return cluster_->Slurm({"squeue", "-h"}).out.empty();
        },
        absl::Seconds(30)));
    EXPECT_TRUE(WaitFor([] { return cluster_->NoSlurmPartition(); }, absl::Seconds(30)))
        << absl::StrJoin(cluster_->SlurmPartitions(), ",") << cluster_->Logs();
  }

  // Submits a batch job and returns its id.
  static std::string Sbatch(const std::vector<std::string>& args) {
    std::vector<std::string> argv = {"sbatch", "--parsable"};
    argv.insert(argv.end(), args.begin(), args.end());
    CommandResult r = cluster_->Slurm(argv);
    EXPECT_EQ(r.exit_code, 0) << r.err;
    return std::string(absl::StripAsciiWhitespace(r.out.substr(0, r.out.find(';'))));
  }
  static bool Active(const std::string& partition, size_t ipus) {
    CommandResult r = cluster_->server().Vipu({"get", "partition-status", partition});
    return r.exit_code == 0 && absl::StrContains(r.out, "ACTIVE") &&
           cluster_->Ipus(partition).size() == ipus;
  }

  static Cluster* cluster_;
};

Cluster* SpankTest::cluster_ = nullptr;

std::map<std::string, std::string> EnvLines(const std::string& text) {
  std::map<std::string, std::string> env;
  for (absl::string_view line : absl::StrSplit(text, '\n')) {
    const size_t eq = line.find('=');
    if (eq != absl::string_view::npos)
      env[std::string(line.substr(0, eq))] = std::string(line.substr(eq + 1));
  }
  return env;
}

TEST_F(SpankTest, SrunGetsAnActivePartitionAndItsEnvironment) {
  // The task itself asks vipu-server about its partition, as a user would.
  const std::string script = absl::StrCat(
      "env; ", VIPU_CLI_BIN,
      " --api-port $IPUOF_VIPU_API_PORT get partition-status $IPUOF_VIPU_API_PARTITION_ID");
  CommandResult r = cluster_->Slurm({"srun", "--ipus=4", "/bin/sh", "-c", script});
  ASSERT_EQ(r.exit_code, 0) << r.err << cluster_->Logs();
  auto env = EnvLines(r.out);
  const std::string job = env["SLURM_JOB_ID"];
  ASSERT_FALSE(job.empty()) << r.out;
  EXPECT_EQ(env["IPUOF_VIPU_API_HOST"], "127.0.0.1");
  EXPECT_EQ(env["IPUOF_VIPU_API_PORT"], std::to_string(cluster_->server().port()));
  EXPECT_EQ(env["IPUOF_VIPU_API_PARTITION_ID"], "slurm_" + job);
  EXPECT_THAT(r.out, HasSubstr("ACTIVE"));
  // Removed when the job ends (the epilog runs after srun returns).
  EXPECT_TRUE(WaitFor([] { return cluster_->NoSlurmPartition(); }, absl::Seconds(30)));

  // salloc: the job's steps get it, with the same id.
  r = cluster_->Slurm({"salloc", "--ipus=2", "srun", "/bin/sh", "-c",
                       "echo P=$IPUOF_VIPU_API_PARTITION_ID J=$SLURM_JOB_ID"});
  ASSERT_EQ(r.exit_code, 0) << r.err << cluster_->Logs();
  std::smatch m;
  ASSERT_TRUE(std::regex_search(r.out, m, std::regex("P=slurm_([0-9]+) J=([0-9]+)"))) << r.out;
  EXPECT_EQ(m[1].str(), m[2].str());

  // Two first steps at once: one makes the partition, the other waits for it.
  r = cluster_->Slurm({"salloc", "--ipus=2", "/bin/sh", "-c",
                       "for i in 1 2; do srun --overlap printenv IPUOF_VIPU_API_PARTITION_ID & "
                       "done; wait; echo J=$SLURM_JOB_ID"});
  ASSERT_EQ(r.exit_code, 0) << r.err << cluster_->Logs();
  ASSERT_TRUE(std::regex_search(r.out, m, std::regex("J=([0-9]+)"))) << r.out;
  const std::string id = "slurm_" + m[1].str();
  EXPECT_EQ(r.out, id + "\n" + id + "\nJ=" + m[1].str() + "\n") << r.err;
}

TEST_F(SpankTest, GcdsAndReconfigurableReachThePartition) {
  const std::string job =
      Sbatch({"--ipus=4", "--ipus-gcds=2", "--ipus-reconfigurable", "--wrap", "sleep 300"});
  ASSERT_TRUE(WaitFor([&] { return Active("slurm_" + job, 4); }, absl::Seconds(60)))
      << cluster_->Logs();
  CommandResult r = cluster_->server().Vipu({"--showjson", "get", "partition", "slurm_" + job});
  EXPECT_THAT(r.out, ::testing::ContainsRegex("\"num_gcds\": *2"));
  EXPECT_THAT(r.out, ::testing::ContainsRegex("\"reconfigurable\": *true"));
  cluster_->Slurm({"scancel", job});
}

TEST_F(SpankTest, ScancelRemovesTheBatchJobsPartition) {
  const std::string job = Sbatch({"--ipus=8", "--wrap", "sleep 300"});
  ASSERT_TRUE(WaitFor([&] { return Active("slurm_" + job, 8); }, absl::Seconds(60)))
      << cluster_->Logs();
  ASSERT_EQ(cluster_->Slurm({"scancel", job}).exit_code, 0);
  EXPECT_TRUE(WaitFor([&] { return cluster_->JobEnded(job); }, absl::Seconds(30)));
  EXPECT_EQ(cluster_->JobState(job), "CANCELLED");
  EXPECT_TRUE(WaitFor([] { return cluster_->NoSlurmPartition(); }, absl::Seconds(30)));
}

TEST_F(SpankTest, AFailingTaskStillRemovesThePartition) {
  CommandResult r = cluster_->Slurm(
      {"srun", "--ipus=4", "/bin/sh", "-c", "test -n \"$IPUOF_VIPU_API_PARTITION_ID\" && exit 3"});
  EXPECT_EQ(r.exit_code, 3) << r.err;
  EXPECT_TRUE(WaitFor([] { return cluster_->NoSlurmPartition(); }, absl::Seconds(30)));
  // A batch job whose script fails.
  const std::string job = Sbatch({"--ipus=4", "--wrap", "exit 5"});
  EXPECT_TRUE(WaitFor([&] { return cluster_->JobEnded(job); }, absl::Seconds(60)));
  EXPECT_EQ(cluster_->JobState(job), "FAILED");
}

TEST_F(SpankTest, ConcurrentJobsGetDisjointPartitions) {
  const std::string a = Sbatch({"--ipus=4", "--wrap", "sleep 300"});
  const std::string b = Sbatch({"--ipus=8", "--wrap", "sleep 300"});
  ASSERT_TRUE(WaitFor([&] { return Active("slurm_" + a, 4) && Active("slurm_" + b, 8); },
                      absl::Seconds(60)))
      << cluster_->Logs();
  std::set<int> ia = cluster_->Ipus("slurm_" + a), ib = cluster_->Ipus("slurm_" + b);
  for (int ipu : ia) EXPECT_EQ(ib.count(ipu), 0u) << "IPU " << ipu << " in both";
  cluster_->Slurm({"scancel", a, b});
}

TEST_F(SpankTest, BadRequestsFailBeforeTheJobStartsAndCreateNothing) {
  struct Case {
    std::vector<std::string> argv;
    std::string message;
  };
  const std::vector<Case> cases = {
      {{"srun", "--ipus=3", "true"}, "--ipus=3: must be a power of two"},
      {{"sbatch", "--ipus=3", "--wrap", "true"}, "--ipus=3: must be a power of two"},
      {{"salloc", "--ipus=3", "true"}, "--ipus=3: must be a power of two"},
      {{"srun", "--ipus=0", "true"}, "--ipus=0: must be a power of two"},
      {{"srun", "--ipus=x", "true"}, "--ipus=x: must be a power of two"},
      {{"srun", "--ipus=2048", "true"}, "--ipus=2048: must be a power of two"},
      {{"srun", "--ipus=4", "--ipus-gcds=3", "true"}, "--ipus-gcds=3: must be a power of two"},
      {{"srun", "--ipus=4", "--ipus-gcds=8", "true"}, "--ipus-gcds=8: must divide --ipus=4"},
      {{"srun", "--ipus-gcds=2", "true"}, "--ipus-gcds: needs --ipus=N"},
      {{"sbatch", "--ipus-reconfigurable", "--wrap", "true"},
       "--ipus-reconfigurable: needs --ipus=N"},
      // The pod has 16 IPUs.
      {{"srun", "--ipus=32", "true"}, "--ipus=32: partition slurm_"},
  };
  for (const Case& c : cases) {
    CommandResult r = cluster_->Slurm(c.argv);
    EXPECT_NE(r.exit_code, 0) << absl::StrJoin(c.argv, " ");
    EXPECT_THAT(r.err, HasSubstr("vipu_spank: " + c.message)) << absl::StrJoin(c.argv, " ");
    EXPECT_TRUE(cluster_->NoSlurmPartition()) << absl::StrJoin(c.argv, " ");
  }
}

TEST_F(SpankTest, BadPluginArgumentsAndAnUnreachableServerFailTheJob) {
  struct Case {
    std::vector<std::string> args;
    bool replace;
    std::string message;
  };
  const std::string missing_key = cluster_->dir() + "/no-such-key";
  const std::string empty_key = cluster_->dir() + "/empty-key";
  WriteFile(empty_key, "", 0600);
  const std::vector<Case> cases = {
      {{"api-hots=x"}, false, "unknown plugin argument 'api-hots'"},
      {{"api-port=70000"}, false, "api-port=70000: must be an integer in 1..65535"},
      {{"api-timeout=0"}, false, "api-timeout=0: must be an integer in 1..86400"},
      {{"api-host"}, false, "plugin argument 'api-host': must be key=value"},
      {{"api-port=1"}, true, "plugin argument api-host=H is required"},
      {{"api-host=127.0.0.1"}, true, "plugin argument api-port=P is required"},
      {{"api-access-key=secret"}, false, "api-access-key: not accepted"},
      {{"api-user-id=alice"}, false, "api-user-id and api-access-key-file go together"},
      {{"api-tls-cert=/c"}, false, "api-tls-cert and api-tls-key go together"},
      {{"api-tls-cert=/c", "api-tls-key=/k"}, false, "api-tls-cert needs api-tls-ca"},
      // Checked where the job's partition is made (as root on the node).
      {{"api-user-id=alice", "api-access-key-file=" + missing_key},
       false,
       "api-access-key-file: cannot read '" + missing_key + "'"},
      {{"api-user-id=alice", "api-access-key-file=" + empty_key},
       false,
       "api-access-key-file: '" + empty_key + "' is empty"},
      {{"vipu=/no/such/vipu"}, false, "cannot run '/no/such/vipu'"},
      {{"allocation=nope"}, false, "allocation 'nope' not found"},
      {{"api-host=127.0.0.1", absl::StrCat("api-port=", FreePort()), "api-timeout=2",
        absl::StrCat("vipu=", VIPU_CLI_BIN)},
       true,
       "cannot reach vipu-server at 127.0.0.1:"},
  };
  for (const Case& c : cases) {
    cluster_->SetPlugin(c.args, c.replace);
    const std::string what = absl::StrJoin(c.args, " ");
    CommandResult r = cluster_->Slurm({"srun", "--ipus=4", "true"});
    EXPECT_NE(r.exit_code, 0) << what;
    EXPECT_THAT(r.err, HasSubstr("vipu_spank: ")) << what;
    EXPECT_THAT(r.err, HasSubstr(c.message)) << what << "\n" << r.err;
    EXPECT_TRUE(cluster_->NoSlurmPartition()) << what;
  }
}

// vipu-server --secure: mutual TLS and an access key from a file; without
// credentials the job fails and nothing is made.
TEST_F(SpankTest, SecureServerNeedsTheUsersCredentials) {
  const std::string tls = cluster_->dir() + "/tls";
  ASSERT_EQ(RunCommand({VIPU_SERVER_BIN, "--tls-init", tls}).exit_code, 0);
  auto secure =
      ServerProcess::Start("pod16", {"--secure", "--tls-dir", tls, "--default-user-id", "root"});
  std::string key;
  for (absl::string_view line : absl::StrSplit(ReadFile(secure->dir() + "/server.log"), '\n')) {
    if (absl::ConsumePrefix(&line, "Access key: '") && absl::ConsumeSuffix(&line, "'")) {
      key = std::string(line);
    }
  }
  ASSERT_FALSE(key.empty());
  const std::string key_file = cluster_->dir() + "/root.key";
  const std::string wrong_key_file = cluster_->dir() + "/wrong.key";
  WriteFile(key_file, key + "\n", 0600);
  WriteFile(wrong_key_file, "not-the-key\n", 0600);
  const std::vector<std::string> connection = {"api-host=127.0.0.1",
                                               absl::StrCat("api-port=", secure->port()),
                                               "api-tls-ca=" + tls + "/client/ca.pem",
                                               "api-tls-cert=" + tls + "/client/cert.pem",
                                               "api-tls-key=" + tls + "/client/key.pem",
                                               absl::StrCat("vipu=", VIPU_CLI_BIN)};
  auto with = [&](std::vector<std::string> extra) {
    extra.insert(extra.begin(), connection.begin(), connection.end());
    return extra;
  };
  const std::vector<std::string> as_root = {"--api-user-id",    "root",
                                            "--api-access-key", key,
                                            "--api-tls-ca",     tls + "/client/ca.pem",
                                            "--api-tls-cert",   tls + "/client/cert.pem",
                                            "--api-tls-key",    tls + "/client/key.pem"};
  auto secure_partitions = [&] {
    std::vector<std::string> args = as_root;
    args.insert(args.end(), {"list", "partitions"});
    CommandResult r = secure->Vipu(args);
    EXPECT_EQ(r.exit_code, 0) << r.err;
    return r.out;
  };

  for (const auto& [extra, message] : std::vector<std::pair<std::vector<std::string>, std::string>>{
           {{},
            "no credentials vipu-server accepts (plugin arguments api-user-id and "
            "api-access-key-file): unauthenticated: vipu-user-id: missing"},
           {{"api-user-id=root", "api-access-key-file=" + wrong_key_file},
            "no credentials vipu-server accepts (plugin arguments api-user-id and "
            "api-access-key-file): unauthenticated: unknown user 'root' or wrong "
            "vipu-access-key"}}) {
    cluster_->SetPlugin(with(extra), /*replace=*/true);
    CommandResult r = cluster_->Slurm({"srun", "--ipus=4", "true"});
    EXPECT_NE(r.exit_code, 0);
    EXPECT_THAT(r.err, HasSubstr("vipu_spank: --ipus=4: partition slurm_")) << r.err;
    EXPECT_THAT(r.err, HasSubstr(message)) << r.err;
    EXPECT_THAT(secure_partitions(), Not(HasSubstr("slurm_")));
  }

  cluster_->SetPlugin(with({"api-user-id=root", "api-access-key-file=" + key_file}), true);
  CommandResult r =
      cluster_->Slurm({"srun", "--ipus=4", "/bin/sh", "-c", "echo P=$IPUOF_VIPU_API_PARTITION_ID"});
  ASSERT_EQ(r.exit_code, 0) << r.err << cluster_->Logs();
  EXPECT_THAT(r.out, HasSubstr("P=slurm_"));
  EXPECT_TRUE(
      WaitFor([&] { return !absl::StrContains(secure_partitions(), "slurm_"); }, absl::Seconds(30)))
      << cluster_->Logs();
}

// allocation=A: partitions are made in A, and a job asking for more IPUs
// than A has is refused.
TEST_F(SpankTest, AllocationArgumentAndMoreIpusThanItHas) {
  ServerProcess& server = cluster_->server();
  auto admin = [&](std::vector<std::string> args) {
    CommandResult r = server.VipuAdmin(args);
    EXPECT_EQ(r.exit_code, 0) << absl::StrJoin(args, " ") << ": " << r.err;
  };
  admin({"remove", "allocation", "default"});
  admin({"create", "allocation", "small", "--cluster", "pod16", "--agents", "ag1,ag2"});
  admin({"create", "allocation", "rest", "--cluster", "pod16", "--agents", "ag3,ag4"});
  cluster_->SetPlugin({"allocation=small"});
  CommandResult r = cluster_->Slurm({"srun", "--ipus=16", "true"});
  EXPECT_NE(r.exit_code, 0);
  EXPECT_THAT(r.err, HasSubstr("vipu_spank: --ipus=16: partition slurm_"));
  EXPECT_THAT(r.err, HasSubstr("size: in allocation 'small', no ILD of cluster pod16 has a free "
                               "aligned block of 16 IPUs"))
      << r.err;
  EXPECT_TRUE(cluster_->NoSlurmPartition());
  const std::string job = Sbatch({"--ipus=8", "--wrap", "sleep 300"});
  ASSERT_TRUE(WaitFor([&] { return Active("slurm_" + job, 8); }, absl::Seconds(60)))
      << cluster_->Logs();
  r = server.Vipu({"list", "partitions", "--allocation", "small"});
  EXPECT_THAT(r.out, HasSubstr("slurm_" + job));
  cluster_->Slurm({"scancel", job});
  ASSERT_TRUE(WaitFor([] { return cluster_->NoSlurmPartition(); }, absl::Seconds(30)));
  admin({"remove", "allocation", "small"});
  admin({"remove", "allocation", "rest"});
  admin({"create", "allocation", "default", "--cluster", "pod16"});
}

// docs/slurm.md, mode 2: one preconfigured reconfigurable partition, IPUs
// counted by Slurm as a generic resource, tasks pointed at it by a task
// prolog.
TEST_F(SpankTest, DocumentedModeSharedReconfigurablePartition) {
  ServerProcess& server = cluster_->server();
  ASSERT_EQ(server
                .Vipu({"create", "partition", "shared", "--size", "16", "--reconfigurable",
                       "--sync-type", "c2-compatible"})
                .exit_code,
            0);
  const std::string prolog = cluster_->dir() + "/etc/vipu-shared-task-prolog.sh";
  WriteFile(prolog,
            absl::StrCat("#!/bin/sh\necho \"export IPUOF_VIPU_API_HOST=127.0.0.1\"\n",
                         "echo \"export IPUOF_VIPU_API_PORT=", server.port(), "\"\n",
                         "echo \"export IPUOF_VIPU_API_PARTITION_ID=shared\"\n"),
            0755);
  cluster_->Reconfigure("TaskProlog=" + prolog);
  const std::string script =
      absl::StrCat("echo P=$IPUOF_VIPU_API_PARTITION_ID; ", VIPU_CLI_BIN,
                   " --api-port $IPUOF_VIPU_API_PORT get partition $IPUOF_VIPU_API_PARTITION_ID");
  CommandResult r;
  EXPECT_TRUE(WaitFor(
      [&] {
        r = cluster_->Slurm({"srun", "--immediate=10", "--gres=ipu:4", "/bin/sh", "-c", script});
        return absl::StrContains(r.out, "P=shared");
      },
      absl::Seconds(30)))
      << r.out << r.err;
  EXPECT_THAT(r.out, HasSubstr("Reconfigurable"));
  // Slurm counts the IPUs: more than the node has is refused.
  r = cluster_->Slurm({"srun", "--gres=ipu:32", "true"});
  EXPECT_NE(r.exit_code, 0);
  cluster_->Reconfigure("");
  EXPECT_TRUE(WaitFor(
      [&] {
        r = cluster_->Slurm(
            {"srun", "--immediate=10", "/bin/sh", "-c", "echo P=$IPUOF_VIPU_API_PARTITION_ID"});
        return absl::StrContains(r.out, "P=\n");
      },
      absl::Seconds(30)))
      << r.err << cluster_->Logs();
  EXPECT_EQ(server.Vipu({"remove", "partition", "shared"}).exit_code, 0);
}

// docs/slurm.md, mode 3: a static partition per node, named after it.
TEST_F(SpankTest, DocumentedModeStaticPartitionPerNode) {
  ServerProcess& server = cluster_->server();
  ASSERT_EQ(server.Vipu({"create", "partition", cluster_->host(), "--size", "16"}).exit_code, 0);
  const std::string prolog = cluster_->dir() + "/etc/vipu-static-task-prolog.sh";
  WriteFile(prolog,
            absl::StrCat("#!/bin/sh\necho \"export IPUOF_VIPU_API_HOST=127.0.0.1\"\n",
                         "echo \"export IPUOF_VIPU_API_PORT=", server.port(), "\"\n",
                         "echo \"export IPUOF_VIPU_API_PARTITION_ID=$(hostname -s)\"\n"),
            0755);
  cluster_->Reconfigure("TaskProlog=" + prolog);
  CommandResult r;
  EXPECT_TRUE(WaitFor(
      [&] {
        r = cluster_->Slurm({"srun", "--immediate=10", "-N1", "--exclusive", "/bin/sh", "-c",
                             "echo P=$IPUOF_VIPU_API_PARTITION_ID"});
        return absl::StrContains(r.out, "P=" + cluster_->host() + "\n");
      },
      absl::Seconds(30)))
      << r.out << r.err;
#if defined(POPDIST_SAMPLE_TRAIN_BIN)
  // The IPUoF client in the job finds the node's partition by itself.
  r = cluster_->Slurm({"srun", "-N1", "--exclusive", POPDIST_SAMPLE_TRAIN_BIN, "--config",
                       "pretrain_large_128_pod16", "--training-steps", "1"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_THAT(r.out, HasSubstr("Steps run on 4 IPU-Machines of partition " + cluster_->host()));
#endif
  cluster_->Reconfigure("");
  EXPECT_TRUE(WaitFor(
      [&] {
        r = cluster_->Slurm(
            {"srun", "--immediate=10", "/bin/sh", "-c", "echo P=$IPUOF_VIPU_API_PARTITION_ID"});
        return absl::StrContains(r.out, "P=\n");
      },
      absl::Seconds(30)))
      << r.err << cluster_->Logs();
  EXPECT_EQ(server.Vipu({"remove", "partition", cluster_->host()}).exit_code, 0);
}

TEST_F(SpankTest, JobsWithoutIpusAreLeftAlone) {
  CommandResult r = cluster_->Slurm({"srun", "/bin/sh", "-c", "env"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_THAT(r.out, Not(HasSubstr("IPUOF_VIPU_API")));
}

// The node dies with the job: no epilog runs there, slurmctld's
// EpilogSlurmctld (vipu-slurm-sweep) removes the partition.
TEST_F(SpankTest, NodeFailureRemovesThePartitionThroughSlurmctld) {
  const std::string job = Sbatch({"--ipus=4", "--no-requeue", "--wrap", "sleep 120"});
  ASSERT_TRUE(WaitFor([&] { return Active("slurm_" + job, 4); }, absl::Seconds(60)))
      << cluster_->Logs();
  cluster_->KillSlurmd();
  CommandResult r = cluster_->Slurm({"scontrol", "update", "NodeName=" + cluster_->host(),
                                     "State=DOWN", "Reason=vipu_spank_test"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_TRUE(WaitFor([&] { return cluster_->JobEnded(job); }, absl::Seconds(30)));
  EXPECT_EQ(cluster_->JobState(job), "NODE_FAIL");
  EXPECT_TRUE(WaitFor([] { return cluster_->NoSlurmPartition(); }, absl::Seconds(30)))
      << cluster_->Logs();
  // The node comes back (ReturnToService=2) and kills what is left of the job.
  cluster_->RestartSlurmd();
  ASSERT_TRUE(WaitFor(
      [] {
        return absl::StartsWith(cluster_->Slurm({"sinfo", "-h", "-N", "-o", "%T"}).out, "idle");
      },
      absl::Seconds(60)))
      << cluster_->Logs();
}

// Pids of the processes whose command line starts with `prefix`.
std::vector<pid_t> PidsOf(const std::string& prefix) {
  std::vector<pid_t> pids;
  for (const auto& entry : fs::directory_iterator("/proc")) {
    pid_t pid = 0;
    if (!absl::SimpleAtoi(entry.path().filename().string(), &pid)) continue;
    if (absl::StartsWith(ReadFile(entry.path().string() + "/cmdline"), prefix)) {
      pids.push_back(pid);
    }
  }
  return pids;
}

// The processes descending from `root` (from /proc/PID/stat's parent pid).
std::vector<pid_t> DescendantsOf(pid_t root) {
  std::map<pid_t, pid_t> parent;
  for (const auto& entry : fs::directory_iterator("/proc")) {
    pid_t pid = 0;
    if (!absl::SimpleAtoi(entry.path().filename().string(), &pid)) continue;
    const std::string stat = ReadFile(entry.path().string() + "/stat");
    // "pid (comm) state ppid ...": comm may hold spaces, so after the last
    // ')'. A process that exited since the listing has no stat to read.
    const size_t comm_end = stat.rfind(')');
    if (comm_end == std::string::npos || comm_end + 2 > stat.size()) continue;
    std::vector<std::string> fields =
        absl::StrSplit(stat.substr(comm_end + 2), ' ', absl::SkipEmpty());
    pid_t ppid = 0;
    if (fields.size() > 1 && absl::SimpleAtoi(fields[1], &ppid)) parent[pid] = ppid;
  }
  std::vector<pid_t> out;
  for (const auto& [pid, unused] : parent) {
    for (pid_t p = parent[pid]; p > 1; p = parent.count(p) ? parent[p] : 0) {
      if (p == root) {
        out.push_back(pid);
        break;
      }
    }
  }
  return out;
}

// The process that made the partition (the batch step's slurmstepd) dies;
// the job's end still removes it, since the epilog is another process.
TEST_F(SpankTest, ACrashOfTheCreatingProcessLeavesNothingAfterTheJob) {
  const std::string job = Sbatch({"--ipus=4", "--wrap", "sleep 120"});
  ASSERT_TRUE(WaitFor([&] { return Active("slurm_" + job, 4); }, absl::Seconds(60)))
      << cluster_->Logs();
  const std::vector<pid_t> stepd = PidsOf("slurmstepd: [" + job + ".batch]");
  ASSERT_EQ(stepd.size(), 1u);
  // The job's task outlives its slurmstepd; it is the test's to stop.
  const std::vector<pid_t> task = DescendantsOf(stepd[0]);
  ASSERT_FALSE(task.empty());
  ASSERT_EQ(kill(stepd[0], SIGKILL), 0);
  EXPECT_TRUE(WaitFor([&] { return PidsOf("slurmstepd: [" + job + ".batch]").empty(); },
                      absl::Seconds(10)));
  EXPECT_EQ(cluster_->SlurmPartitions(), std::vector<std::string>{"slurm_" + job});
  cluster_->Slurm({"scancel", job});
  EXPECT_TRUE(WaitFor([&] { return cluster_->JobEnded(job); }, absl::Seconds(60)))
      << cluster_->Logs();
  EXPECT_TRUE(WaitFor([] { return cluster_->NoSlurmPartition(); }, absl::Seconds(30)))
      << cluster_->Logs();
  for (pid_t pid : task) kill(pid, SIGKILL);
}

// A batch script's steps use the partition its batch step made.
TEST_F(SpankTest, StepsOfABatchJobShareOnePartition) {
  const std::string job = Sbatch(
      {"--ipus=4", "--output=steps-%j.out", "--wrap",
       "echo B=$IPUOF_VIPU_API_PARTITION_ID; srun sh -c 'echo S=$IPUOF_VIPU_API_PARTITION_ID'"});
  ASSERT_TRUE(WaitFor([&] { return cluster_->JobEnded(job); }, absl::Seconds(60)));
  const std::string out = ReadFile(cluster_->dir() + "/jobs/steps-" + job + ".out");
  EXPECT_EQ(cluster_->JobState(job), "COMPLETED") << out;
  EXPECT_THAT(out, HasSubstr("B=slurm_" + job + "\nS=slurm_" + job + "\n"));
  const std::string log = ReadFile(cluster_->dir() + "/log/slurmd.log");
  const std::string created =
      absl::StrCat("job ", job, " step batch: partition slurm_", job, " of 4 IPUs created");
  const std::string reused =
      absl::StrCat("job ", job, " step 0: partition slurm_", job, " of 4 IPUs reused");
  EXPECT_THAT(log, HasSubstr(created));
  EXPECT_THAT(log, HasSubstr(reused));
}

TEST_F(SpankTest, SweepRemovesOnlyPartitionsOfJobsThatAreGone) {
  ServerProcess& server = cluster_->server();
  ASSERT_EQ(server.Vipu({"create", "partition", "slurm_999999", "--size", "1"}).exit_code, 0);
  ASSERT_EQ(server.Vipu({"create", "partition", "mine", "--size", "1"}).exit_code, 0);
  const std::map<std::string, std::string> env = {
      {"VIPU", VIPU_CLI_BIN},
      {"VIPU_CLI_API_HOST", "127.0.0.1"},
      {"VIPU_CLI_API_PORT", std::to_string(server.port())},
      {"SQUEUE", Which("squeue")},
      {"SLURM_CONF", cluster_->conf()},
      {"HOME", server.home()}};
  const std::string job = Sbatch({"--ipus=2", "--wrap", "sleep 300"});
  ASSERT_TRUE(WaitFor([&] { return Active("slurm_" + job, 2); }, absl::Seconds(60)));
  CommandResult r = RunCommand({VIPU_SLURM_SWEEP, "--dry-run"}, env);
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, "would remove slurm_999999\n");
  r = RunCommand({VIPU_SLURM_SWEEP}, env);
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, "removed slurm_999999\n");
  EXPECT_EQ(cluster_->SlurmPartitions(), std::vector<std::string>{"slurm_" + job});
  EXPECT_EQ(server.Vipu({"get", "partition", "mine"}).exit_code, 0);
  // --job removes one, also when it is already gone.
  r = RunCommand({VIPU_SLURM_SWEEP, "--job", "999999"}, env);
  EXPECT_EQ(r.exit_code, 0) << r.err;
  r = RunCommand({VIPU_SLURM_SWEEP, "--job", "x"}, env);
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_THAT(r.err, HasSubstr("--job: must be a numeric job id"));
  r = RunCommand({VIPU_SLURM_SWEEP, "--bogus"}, env);
  EXPECT_EQ(r.exit_code, 2);
  // A failing squeue removes nothing.
  auto no_squeue = env;
  no_squeue["SQUEUE"] = "/bin/false";
  r = RunCommand({VIPU_SLURM_SWEEP}, no_squeue);
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_THAT(r.err, HasSubstr("squeue failed, nothing removed"));
  EXPECT_EQ(cluster_->SlurmPartitions(), std::vector<std::string>{"slurm_" + job});
  cluster_->Slurm({"scancel", job});
  EXPECT_EQ(server.Vipu({"remove", "partition", "mine"}).exit_code, 0);
}

#if defined(POPRUN_BIN) && defined(POPDIST_SAMPLE_TRAIN_BIN)
TEST_F(SpankTest, PoprunInsideABatchJobTrainsOnTheJobsPartition) {
  const std::string script =
      absl::StrCat(POPRUN_BIN, " --allow-run-as-root 1 --vipu-partition=slurm_${SLURM_JOBID}",
                   " --num-replicas 4 --ipus-per-replica 4 ", POPDIST_SAMPLE_TRAIN_BIN,
                   " --config pretrain_large_128_pod16 --training-steps 1");
  const std::string job = Sbatch({"--ipus=16", "--output=poprun-%j.out", "--wrap", script});
  ASSERT_TRUE(WaitFor([&] { return cluster_->JobEnded(job); }, absl::Seconds(120)))
      << cluster_->Logs();
  const std::string out = ReadFile(cluster_->dir() + "/jobs/poprun-" + job + ".out");
  EXPECT_EQ(cluster_->JobState(job), "COMPLETED") << out;
  EXPECT_THAT(out, HasSubstr("Steps run on 4 IPU-Machines of partition slurm_" + job)) << out;
  EXPECT_THAT(out, HasSubstr("throughput:"));
}
#endif

// Last: the time limit is counted in minutes, so this one takes over a
// minute of the suite.
TEST_F(SpankTest, TimeLimitRemovesThePartition) {
  const std::string job = Sbatch({"--ipus=4", "--time=1", "--wrap", "sleep 300"});
  ASSERT_TRUE(WaitFor([&] { return Active("slurm_" + job, 4); }, absl::Seconds(60)));
  EXPECT_TRUE(WaitFor([&] { return cluster_->JobEnded(job); }, absl::Seconds(180)));
  EXPECT_EQ(cluster_->JobState(job), "TIMEOUT");
  EXPECT_TRUE(WaitFor([] { return cluster_->NoSlurmPartition(); }, absl::Seconds(30)));
}

}  // namespace
}  // namespace vipu::testing

int main(int argc, char** argv) {
  ::testing::InitGoogleTest(&argc, argv);
  std::vector<std::string> missing;
  for (const char* program : vipu::testing::kSlurmPrograms) {
    if (vipu::testing::Which(program).empty()) missing.push_back(program);
  }
  if (!missing.empty()) {
    std::printf(
        "SKIPPED: Slurm is not installed (missing %s): apt-get install -y slurmctld "
        "slurmd slurm-client munge\n",
        absl::StrJoin(missing, ", ").c_str());
    // Where every test must run (CI's fresh root), a skip would hide that
    // nothing was checked.
    const char* must_run = std::getenv("VIPU_TESTS_MUST_RUN");
    if (must_run != nullptr && std::string(must_run) == "1") return 1;
    return vipu::testing::kSkip;
  }
  if (getuid() != 0) {
    std::fprintf(stderr, "run as root: slurmd runs jobs as their user with SlurmUser=root\n");
    return 1;
  }
  return RUN_ALL_TESTS();
}
