// poprun's mpirun command and per-instance environment, the reset rule and target options.
#include "poprun/poprun_launch.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>

#include "poprun/poprun_partition.h"
#include "poprun/poprun_target_options.h"

namespace vipu::poprun {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

PoprunOptions Options(std::vector<std::string> args) {
  auto o = ParseCommandLine(args);
  EXPECT_TRUE(o.ok()) << o.status();
  return *o;
}

LaunchContext Context() {
  LaunchContext c;
  c.mpirun = "/opt/poplar/bin/mpirun";
  c.vipu_host = "10.21.21.129";
  c.vipu_port = 8090;
  c.vipu_timeout = 120;
  c.partition_id = "p-bert-poprun-64ipus-gc-dev-0";
  c.target_options =
      "{\"ipuLinkDomainSize\":\"64\",\"ipuLinkConfiguration\":\"slidingWindow\","
      "\"ipuLinkTopology\":\"torus\",\"gatewayMode\":\"true\",\"instanceSize\":\"64\"}";
  return c;
}

// The mpirun command of a real poprun run's log, reproduced.
TEST(PoprunLaunch, ReproducesTheLoggedCommand) {
  PoprunOptions o = Options(
      {"--allow-run-as-root", "1", "--vv", "--num-instances", "1", "--num-replicas", "16",
       "--mpi-global-args=--tag-output", "--ipus-per-replica", "4", "python3", "run_pretraining.py",
       "--config", "pretrain_large_128_POD64", "--dataset", "generated", "--training-steps", "1"});
  EXPECT_EQ(
      QuoteCommand(BuildMpirunCommand(o, Context())),
      "/opt/poplar/bin/mpirun '--tag-output' '--bind-to' 'none' '--tag-output' "
      "'--allow-run-as-root' '-np' '1' '-x' 'POPDIST_NUM_TOTAL_REPLICAS=16' '-x' "
      "'POPDIST_NUM_IPUS_PER_REPLICA=4' '-x' 'POPDIST_NUM_LOCAL_REPLICAS=16' '-x' "
      "'POPDIST_UNIFORM_REPLICAS_PER_INSTANCE=1' '-x' 'POPDIST_REPLICA_INDEX_OFFSET=0' '-x' "
      "'POPDIST_LOCAL_INSTANCE_INDEX=0' '-x' 'IPUOF_VIPU_API_HOST=10.21.21.129' '-x' "
      "'IPUOF_VIPU_API_PORT=8090' '-x' 'IPUOF_VIPU_API_PARTITION_ID=p-bert-poprun-64ipus-gc-dev-0' "
      "'-x' 'IPUOF_VIPU_API_TIMEOUT=120' '-x' 'IPUOF_VIPU_API_GCD_ID=0' '-x' "
      "'IPUOF_LOG_LEVEL=WARN' '-x' 'PATH' '-x' 'LD_LIBRARY_PATH' '-x' 'PYTHONPATH' '-x' "
      "'POPLAR_TARGET_OPTIONS={\"ipuLinkDomainSize\":\"64\",\"ipuLinkConfiguration\":"
      "\"slidingWindow\",\"ipuLinkTopology\":\"torus\",\"gatewayMode\":\"true\","
      "\"instanceSize\":\"64\"}' 'python3' 'run_pretraining.py' '--config' "
      "'pretrain_large_128_POD64' '--dataset' 'generated' '--training-steps' '1'");
}

std::string Get(const EnvList& env, const std::string& name) {
  for (const auto& [k, v] : env) {
    if (k == name) return v;
  }
  return "<unset>";
}

TEST(PoprunLaunch, PerInstanceEnvironment) {
  PoprunOptions o =
      Options({"--num-replicas=8", "--num-instances=4", "--ipus-per-replica=2", "-H", "a,b", "p"});
  LaunchContext c = Context();
  c.num_gcds = 2;
  for (uint32_t i = 0; i < 4; ++i) {
    EnvList env = InstanceEnvironment(o, c, i);
    EXPECT_EQ(Get(env, "POPDIST_NUM_TOTAL_REPLICAS"), "8");
    EXPECT_EQ(Get(env, "POPDIST_NUM_LOCAL_REPLICAS"), "2");
    EXPECT_EQ(Get(env, "POPDIST_NUM_IPUS_PER_REPLICA"), "2");
    EXPECT_EQ(Get(env, "POPDIST_REPLICA_INDEX_OFFSET"), std::to_string(2 * i));
    EXPECT_EQ(Get(env, "POPDIST_LOCAL_INSTANCE_INDEX"), std::to_string(i % 2));
    EXPECT_EQ(Get(env, "IPUOF_VIPU_API_GCD_ID"), std::to_string(i / 2));
    EXPECT_EQ(Get(env, "POPTORCH_CACHE_DIR"), "<unset>");
  }
  const std::string cmd = QuoteCommand(BuildMpirunCommand(o, c));
  EXPECT_THAT(cmd, HasSubstr("'-np' '1' '--host' 'a:2' '-x' 'POPDIST_NUM_TOTAL_REPLICAS=8'"));
  EXPECT_THAT(cmd, HasSubstr("':' '-np' '1' '--host' 'b:2'"));
}

TEST(PoprunLaunch, OfflineCacheQuietAndNuma) {
  PoprunOptions o =
      Options({"--num-replicas=4", "--num-instances=2", "--only-output-from-instance=0",
               "--process-placement=spreadnuma", "--mpi-local-args=-x FOO", "prog", "arg"});
  LaunchContext c;
  c.mpirun = "mpirun";
  c.cache_dir = "/tmp/c";
  c.tf_poplar_flags = "--max_compilation_threads=2";
  c.numa_nodes = 4;
  c.forwarded = {"PATH"};
  EnvList env = InstanceEnvironment(o, c, 1);
  EXPECT_EQ(Get(env, "IPUOF_VIPU_API_HOST"), "<unset>");
  EXPECT_EQ(Get(env, "POPART_CACHE_DIR"), "/tmp/c");
  EXPECT_EQ(Get(env, "POPXL_CACHE_DIR"), "/tmp/c");
  EXPECT_EQ(Get(env, "POPTORCH_CACHE_DIR"), "/tmp/c");
  EXPECT_EQ(Get(env, "TF_POPLAR_FLAGS"),
            "--max_compilation_threads=2 --executable_cache_path=/tmp/c");
  const std::vector<std::string> argv = BuildMpirunCommand(o, c);
  const std::string cmd = QuoteCommand(argv);
  EXPECT_THAT(cmd, HasSubstr("'-x' 'PATH' '-x' 'FOO' 'numactl' '--cpunodebind=0,1' "
                             "'--membind=0,1' 'prog' 'arg' ':'"));
  EXPECT_THAT(cmd, HasSubstr("'-x' 'PATH' '-x' 'FOO' 'sh' '-c' 'exec \"$@\" >/dev/null 2>&1' "
                             "'poprun-quiet' 'numactl' '--cpunodebind=2,3' '--membind=2,3' "
                             "'prog' 'arg'"));
  o.process_placement = ProcessPlacement::kDisabled;
  const std::string disabled = QuoteCommand(BuildMpirunCommand(o, c));
  EXPECT_EQ(disabled.find("numactl"), std::string::npos);
  EXPECT_EQ(disabled.find("--bind-to"), std::string::npos);
}

TEST(PoprunLaunch, PlacementsMapToMpirunBinding) {
  LaunchContext c;
  c.numa_nodes = 2;
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"spreadnuma", "'--tag-output' '--bind-to' 'none' '-np'"},
      {"scattersocket", "'--tag-output' '--map-by' 'socket' '--bind-to' 'core' '-np'"},
      {"scatternuma", "'--tag-output' '--map-by' 'numa' '--bind-to' 'core' '-np'"},
      {"close", "'--tag-output' '--map-by' 'core' '--bind-to' 'core' '-np'"},
      {"disabled", "'--tag-output' '-np'"}};
  for (const auto& [placement, global] : cases) {
    SCOPED_TRACE(placement);
    PoprunOptions o = Options(
        {"--num-replicas=2", "--num-instances=2", "--process-placement=" + placement, "prog"});
    const std::string cmd = QuoteCommand(BuildMpirunCommand(o, c));
    EXPECT_THAT(cmd, HasSubstr(global));
    // Only spreadnuma binds through numactl; the others leave it to mpirun.
    EXPECT_EQ(cmd.find("numactl") != std::string::npos, placement == "spreadnuma") << cmd;
  }
  // disabled: the user's own mapping reaches mpirun untouched.
  PoprunOptions o = Options({"--process-placement=disabled",
                             "--mpi-global-args=--map-by ppr:1:core --bind-to core", "prog"});
  EXPECT_THAT(QuoteCommand(BuildMpirunCommand(o, c)),
              HasSubstr("'--tag-output' '--map-by' 'ppr:1:core' '--bind-to' 'core' '-np'"));
}

TEST(PoprunLaunch, InstanceArgsAutoreportAndServerPerHost) {
  PoprunOptions o =
      Options({"--num-replicas=4", "--num-instances=4", "-H", "h1,h2",
               "--process-placement=disabled", "--mpi-local-args=-x ALL",
               "--instance-mpi-local-args=2:-x ONLY2=1", "--autoreport-dir=/tmp/profile", "prog"});
  LaunchContext c = Context();
  c.forwarded = {};
  c.target_options.clear();
  c.vipu_host_per_host = {"10.0.0.1", "10.0.0.2"};
  EXPECT_EQ(Get(InstanceEnvironment(o, c, 1), "IPUOF_VIPU_API_HOST"), "10.0.0.1");
  EXPECT_EQ(Get(InstanceEnvironment(o, c, 2), "IPUOF_VIPU_API_HOST"), "10.0.0.2");
  EXPECT_EQ(Get(InstanceEnvironment(o, c, 3), "POPDIST_AUTOREPORT_DIRECTORY"), "/tmp/profile");
  const std::string cmd = QuoteCommand(BuildMpirunCommand(o, c));
  EXPECT_THAT(cmd, HasSubstr("'-x' 'ALL' '-x' 'ONLY2=1' 'prog'"));
  EXPECT_EQ(cmd.find("ONLY2"), cmd.rfind("ONLY2")) << "instance 2 only: " << cmd;
  const size_t second = cmd.find("POPDIST_REPLICA_INDEX_OFFSET=2");
  const size_t third = cmd.find("POPDIST_REPLICA_INDEX_OFFSET=3");
  ASSERT_NE(second, std::string::npos);
  EXPECT_GT(cmd.find("ONLY2"), second);
  EXPECT_LT(cmd.find("ONLY2"), third);
  c.vipu_host_per_host.clear();
  EXPECT_EQ(Get(InstanceEnvironment(o, c, 3), "IPUOF_VIPU_API_HOST"), "10.21.21.129");
  o.autoreport_dir.clear();
  EXPECT_EQ(Get(InstanceEnvironment(o, c, 0), "POPDIST_AUTOREPORT_DIRECTORY"), "<unset>");
}

TEST(PoprunLaunch, HostSubnetOnlyWithHosts) {
  PoprunOptions o = Options({"--host-subnet=10.5.0.0/16", "p"});
  EXPECT_EQ(QuoteCommand(BuildMpirunCommand(o, LaunchContext())).find("btl_tcp_if_include"),
            std::string::npos);
  o = Options({"--host-subnet=10.5.0.0/16", "-H", "h1", "p"});
  EXPECT_THAT(QuoteCommand(BuildMpirunCommand(o, LaunchContext())),
              HasSubstr("'--mca' 'btl_tcp_if_include' '10.5.0.0/16' '--mca' "
                        "'oob_tcp_if_include' '10.5.0.0/16'"));
}

TEST(PoprunLaunch, SpreadNuma) {
  EXPECT_THAT(SpreadNuma(2, 2, 0), ElementsAre(0u));
  EXPECT_THAT(SpreadNuma(2, 2, 1), ElementsAre(1u));
  EXPECT_THAT(SpreadNuma(8, 2, 1), ElementsAre(4u, 5u, 6u, 7u));
  EXPECT_THAT(SpreadNuma(2, 4, 3), ElementsAre(1u));
  EXPECT_THAT(SpreadNuma(1, 1, 0), ElementsAre(0u));
}

TEST(PoprunLaunch, QuoteEscapesSingleQuotes) {
  EXPECT_EQ(QuoteCommand({"mpirun", "it's", "a b"}), "mpirun 'it'\\''s' 'a b'");
}

// The access key reaches the instances through mpirun's environment: the
// command (and so `ps` and poprun's log) names the variables only.
TEST(PoprunLaunch, CredentialsAreForwardedByNameOnly) {
  cli::ClientConfig config;
  config.user_id = "alice";
  config.access_key = "s3cr3t-key";
  config.tls_ca = "/etc/vipu/tls/client/ca.pem";
  config.tls_cert = "tls/./cert.pem";  // relative: made absolute
  config.tls_key = "/etc/vipu/tls/client/key.pem";
  LaunchContext c = Context();
  c.credentials = CredentialEnvironment(config);
  ASSERT_EQ(c.credentials.size(), 5u);
  EXPECT_EQ(Get(c.credentials, "VIPU_CLI_API_USER_ID"), "alice");
  EXPECT_EQ(Get(c.credentials, "VIPU_CLI_API_ACCESS_KEY"), "s3cr3t-key");
  EXPECT_EQ(Get(c.credentials, "VIPU_CLI_API_TLS_CA"), "/etc/vipu/tls/client/ca.pem");
  const std::string cert = Get(c.credentials, "VIPU_CLI_API_TLS_CERT");
  EXPECT_EQ(cert.front(), '/');
  EXPECT_THAT(cert, ::testing::EndsWith("/tls/cert.pem"));
  EXPECT_EQ(Get(c.credentials, "VIPU_CLI_API_TLS_KEY"), "/etc/vipu/tls/client/key.pem");

  PoprunOptions o = Options({"--num-instances", "2", "--num-replicas", "2", "app"});
  const std::vector<std::string> argv = BuildMpirunCommand(o, c);
  const std::string command = QuoteCommand(argv);
  EXPECT_THAT(command, ::testing::Not(HasSubstr("s3cr3t-key")));
  EXPECT_THAT(command, ::testing::Not(HasSubstr("alice")));
  // Every app context forwards each credential by name.
  for (const char* name : {"VIPU_CLI_API_USER_ID", "VIPU_CLI_API_ACCESS_KEY", "VIPU_CLI_API_TLS_CA",
                           "VIPU_CLI_API_TLS_CERT", "VIPU_CLI_API_TLS_KEY"}) {
    EXPECT_EQ(std::count(argv.begin(), argv.end(), name), 2) << name;
    auto at = std::find(argv.begin(), argv.end(), name);
    ASSERT_NE(at, argv.begin());
    EXPECT_EQ(*(at - 1), "-x") << name;
  }
  // Nothing set, nothing forwarded (an unauthenticated plaintext server).
  EXPECT_TRUE(CredentialEnvironment(cli::ClientConfig()).empty());
  cli::ClientConfig key_only;
  key_only.access_key = "k";
  EXPECT_THAT(CredentialEnvironment(key_only),
              ElementsAre(std::pair<std::string, std::string>("VIPU_CLI_API_ACCESS_KEY", "k")));
}

TEST(PoprunPartitionRules, ResetAndGcds) {
  EXPECT_TRUE(ShouldReset(std::nullopt, false, false));
  EXPECT_FALSE(ShouldReset(std::nullopt, true, false));
  EXPECT_FALSE(ShouldReset(std::nullopt, false, true));
  EXPECT_TRUE(ShouldReset(true, true, false));
  EXPECT_TRUE(ShouldReset(true, false, true));
  EXPECT_FALSE(ShouldReset(false, false, false));
  EXPECT_EQ(GcdOfInstance(3, 4, 1), 0u);
  EXPECT_EQ(GcdOfInstance(3, 4, 2), 1u);
  EXPECT_EQ(GcdOfInstance(3, 4, 4), 3u);
}

TEST(PoprunTargetOptions, ParseMergeFormat) {
  auto env = ParseTargetOptions(" {\"ipuLinkDomainSize\": \"64\", \"extra\": 5} ", "E");
  ASSERT_TRUE(env.ok()) << env.status();
  TargetOptions part = TargetOptionsFromGcd({{"IPU-Link Domain Size", "4"},
                                             {"IPU-Link Configuration", "default"},
                                             {"IPU-Link Topology", "mesh"}},
                                            4);
  EXPECT_EQ(FormatTargetOptions(part),
            "{\"ipuLinkDomainSize\":\"4\",\"ipuLinkConfiguration\":\"default\","
            "\"ipuLinkTopology\":\"mesh\",\"gatewayMode\":\"true\",\"instanceSize\":\"4\"}");
  EXPECT_EQ(FormatTargetOptions(MergeTargetOptions(part, *env)),
            "{\"ipuLinkDomainSize\":\"64\",\"ipuLinkConfiguration\":\"default\","
            "\"ipuLinkTopology\":\"mesh\",\"gatewayMode\":\"true\",\"instanceSize\":\"4\","
            "\"extra\":\"5\"}");
  EXPECT_TRUE(ParseTargetOptions("", "E")->empty());
  EXPECT_TRUE(ParseTargetOptions("{}", "E")->empty());
  for (const char* bad : {"{", "[1]", "{\"a\"}", "{\"a\":}", "{\"a\":\"b\"} x", "{\"a\":null}",
                          "{\"a\":{\"b\":1}}"}) {
    EXPECT_THAT(ParseTargetOptions(bad, "POPLAR_TARGET_OPTIONS").status().message(),
                HasSubstr("POPLAR_TARGET_OPTIONS: must be a flat JSON object"))
        << bad;
  }
}

// Open MPI's refusal to run as root, as mpirun 4.1 prints it: poprun
// explains it in one line naming what to add; other failures it leaves to
// mpirun's own words.
TEST(PoprunLaunch, ExplainsMpirunsRefusalToRunAsRoot) {
  const std::string refusal =
      "--------------------------------------------------------------------------\n"
      "mpirun has detected an attempt to run as root.\n\n"
      "Running as root is *strongly* discouraged as any mistake (e.g., in\n";
  std::optional<std::string> why = ExplainMpirunFailure(refusal);
  ASSERT_TRUE(why.has_value());
  EXPECT_EQ(*why,
            "mpirun refused to run as root (Open MPI's guard): add --allow-run-as-root=yes "
            "(or --mpi-global-args=--allow-run-as-root), or set OMPI_ALLOW_RUN_AS_ROOT=1 and "
            "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1");
  EXPECT_EQ(why->find('\n'), std::string::npos);
  EXPECT_FALSE(ExplainMpirunFailure("").has_value());
  EXPECT_FALSE(ExplainMpirunFailure("mpirun was unable to launch the specified application as it "
                                    "could not access or execute an executable")
                   .has_value());
}

}  // namespace
}  // namespace vipu::poprun
