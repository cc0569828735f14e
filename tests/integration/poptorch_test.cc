// PopTorch programs on the simulated pod, with real processes: a program
// attaches to its partition's IPUs through IPUoF and every step is modelled
// by the partition's machines; IPUs in use are refused to a second program
// and freed when the holder dies; an IPU error fails the next step in the
// machine's words; and the example trains under poprun as one data-parallel
// program whose instances end with the same weights.
#include <signal.h>

#include <fstream>
#include <map>
#include <memory>
#include <regex>
#include <set>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/integration/daemon_process.h"
#include "tests/integration/harness.h"

#if defined(POPTORCH_PYTHON_PATH) && defined(POPRUN_BIN)

namespace vipu::testing {
namespace {

using ::testing::HasSubstr;

class PoptorchTest : public ::testing::Test {
 protected:
  void SetUp() override {
    server_ = ServerProcess::Start("pod16");
    CommandResult r = server_->Vipu({"create", "partition", "pt", "--size", "4"});
    ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  }

  // The environment of a program attached to partition pt, as poprun or
  // `vipu get partition --ipuof-configs` gives it.
  std::map<std::string, std::string> Env() const {
    return {{"PYTHONPATH", POPTORCH_PYTHON_PATH},
            {"HOME", server_->home()},
            {"IPUOF_VIPU_API_HOST", "127.0.0.1"},
            {"IPUOF_VIPU_API_PORT", std::to_string(server_->port())},
            {"IPUOF_VIPU_API_PARTITION_ID", "pt"}};
  }

  CommandResult Program(const std::vector<std::string>& args) const {
    std::vector<std::string> argv = {"/usr/bin/python3", POPTORCH_PROGRAM};
    argv.insert(argv.end(), args.begin(), args.end());
    return RunCommand(argv, Env());
  }

  std::unique_ptr<ServerProcess> server_;
};

TEST_F(PoptorchTest, EveryStepIsModelledByThePartitionsMachines) {
  CommandResult r = Program({"--steps", "3"});
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_THAT(r.out, HasSubstr("attached partition pt, GCD 0, IPUs 0-1 of 4"));
  std::smatch m;
  ASSERT_TRUE(std::regex_search(r.out, m, std::regex("step 2 ([0-9.]+)"))) << r.out;
  EXPECT_GT(std::stod(m[1]), 0);
}

TEST_F(PoptorchTest, IpusInUseAreRefusedAndFreedWhenTheHolderDies) {
  const std::string log = server_->dir() + "/holder.log";
  auto holder = std::make_unique<Daemon>(
      std::vector<std::string>{"/usr/bin/python3", POPTORCH_PROGRAM, "--steps", "1", "--hold"}, log,
      Env());
  ASSERT_TRUE(
      WaitFor([&] { return ReadFile(log).find("step 0") != std::string::npos; }, absl::Seconds(60)))
      << ReadFile(log);
  CommandResult second = Program({"--steps", "1"});
  EXPECT_EQ(second.exit_code, 1) << second.out << second.err;
  EXPECT_THAT(second.out, HasSubstr(absl::StrCat("IPUs 0,1 are in use by pid ", holder->pid())));
  // A program that dies frees its IPUs with its connection.
  kill(holder->pid(), SIGKILL);
  holder.reset();
  EXPECT_TRUE(WaitFor([&] { return Program({"--steps", "1"}).exit_code == 0; }, absl::Seconds(30)));
}

TEST_F(PoptorchTest, AnIpuErrorFailsTheNextStepInTheMachinesWords) {
  const std::string log = server_->dir() + "/program.log";
  const std::string go = server_->dir() + "/go";
  Daemon program({"/usr/bin/python3", POPTORCH_PROGRAM, "--steps", "1", "--then-after", go}, log,
                 Env());
  ASSERT_TRUE(
      WaitFor([&] { return ReadFile(log).find("step 0") != std::string::npos; }, absl::Seconds(60)))
      << ReadFile(log);
  // The partition's first IPU: slot 0 of its first machine.
  CommandResult p = server_->Vipu({"get", "partition", "pt"});
  std::smatch m;
  ASSERT_TRUE(std::regex_search(p.out, m, std::regex("ILD 0: ([0-9]+)"))) << p.out;
  const int topology_id = std::stoi(m[1]);
  const std::string machine = absl::StrCat("ag", 1 + topology_id / 4);
  const int ipu = 3 - topology_id % 4;
  CommandResult inject = server_->VipuAdmin(
      {"inject", "fault", machine, "--kind", "ipu-error", "--ipu", std::to_string(ipu)});
  ASSERT_EQ(inject.exit_code, 0) << inject.err;
  std::ofstream(go).put('\n');
  ASSERT_TRUE(WaitFor([&] { return !program.running(); }, absl::Seconds(60))) << ReadFile(log);
  EXPECT_EQ(program.status(), 1 << 8) << ReadFile(log);
  EXPECT_THAT(ReadFile(log),
              HasSubstr(absl::StrCat("agent ", machine, ": IPU ", ipu, " error (injected fault)")));
}

// The example of docs/pytorch.md under poprun: 2 instances of 2 replicas
// each are one program (every instance ends with the same weights, the
// gradients being reduced across them) that learns as 1 instance of 4
// does. Each instance reads its own contiguous share of the data, as
// PopTorch's DataLoader gives it, so the two runs see other global batches:
// that equal batches give equal weights is tests/python/poptorch's.
class PoptorchPoprunTest : public PoptorchTest {};

TEST_F(PoptorchPoprunTest, TheExampleIsOneDataParallelProgram) {
  auto run = [&](const std::string& partition, const std::string& instances) {
    std::map<std::string, std::string> env = {{"PYTHONPATH", POPTORCH_PYTHON_PATH},
                                              {"HOME", server_->home()},
                                              {"TMPDIR", server_->dir()}};
    return RunCommand({POPRUN_BIN, "--allow-run-as-root", "1", "--vipu-server-host", "127.0.0.1",
                       "--vipu-server-port", std::to_string(server_->port()), "--vipu-partition",
                       partition, "--num-replicas", "4", "--num-instances", instances,
                       "/usr/bin/python3", POPTORCH_EXAMPLE, "--epochs", "2", "--samples", "256"},
                      env);
  };
  auto values = [](const std::string& out, const std::string& what) {
    std::set<std::string> found;
    const std::regex line(what + " ([-0-9.e+]+)");
    for (auto it = std::sregex_iterator(out.begin(), out.end(), line); it != std::sregex_iterator();
         ++it) {
      found.insert((*it)[1]);
    }
    return found;
  };
  for (const char* instances : {"2", "1"}) {
    CommandResult r = run(absl::StrCat("p", instances), instances);
    ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
    EXPECT_THAT(r.out, HasSubstr("ms/step modelled"));
    // Every instance has the same weights, and they classify the data.
    EXPECT_EQ(values(r.out, "weights checksum").size(), 1u) << r.out;
    const std::set<std::string> accuracy = values(r.out, "accuracy on the whole dataset");
    ASSERT_EQ(accuracy.size(), 1u) << r.out;
    EXPECT_GT(std::stod(*accuracy.begin()), 0.8) << r.out;
  }
}

}  // namespace
}  // namespace vipu::testing

#endif
