// poprun's option parser: spellings, booleans, integers, enums, verbosity and errors.
#include "poprun/poprun_options.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <sstream>

#include "absl/strings/str_cat.h"
#include "poprun/poprun_log.h"
#include "poprun/poprun_partition.h"
#include "poprun/poprun_runner.h"
#include "poprun/poprun_validation.h"

namespace vipu::poprun {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

PoprunOptions Parse(std::vector<std::string> args) {
  auto o = ParseCommandLine(args);
  EXPECT_TRUE(o.ok()) << o.status();
  return o.ok() ? *o : PoprunOptions{};
}

std::string Error(std::vector<std::string> args) {
  auto o = ParseCommandLine(args);
  EXPECT_FALSE(o.ok());
  return o.ok() ? "" : std::string(o.status().message());
}

std::string TempPath(const std::string& name) {
  return ::testing::TempDir() + "/" + name + "." + std::to_string(::getpid());
}

TEST(PoprunOptions, DefaultsAndCommand) {
  PoprunOptions o = Parse({"python3", "train.py", "--replicas", "4"});
  EXPECT_EQ(o.num_replicas, 1u);
  EXPECT_EQ(o.ipus_per_replica, 1u);
  EXPECT_EQ(o.num_instances, 1u);
  EXPECT_EQ(o.vipu_partition_attempts, 1u);
  EXPECT_TRUE(o.remove_partition);
  EXPECT_FALSE(o.update_partition);
  EXPECT_FALSE(o.reset_partition.has_value());
  EXPECT_EQ(o.process_placement, ProcessPlacement::kSpreadNuma);
  EXPECT_THAT(o.command, ElementsAre("python3", "train.py", "--replicas", "4"));
}

TEST(PoprunOptions, BothValueSpellings) {
  PoprunOptions o = Parse({"--num-replicas=16", "--ipus-per-replica", "4", "--num-instances=2",
                           "--num-ilds", "2", "prog"});
  EXPECT_EQ(o.num_replicas, 16u);
  EXPECT_EQ(o.ipus_per_replica, 4u);
  EXPECT_EQ(o.num_instances, 2u);
  EXPECT_EQ(o.num_ilds, 2u);
}

TEST(PoprunOptions, ValuesStartingWithDashesAreVerbatim) {
  PoprunOptions o =
      Parse({"--mpi-global-args", "--tag-output", "--mpi-global-args=--allow-run-as-root",
             "--mpi-global-args=--mca btl_tcp_if_include\n  10.0.0.0/8", "--mpi-local-args",
             "-x OPAL_PREFIX -x CPATH", "prog"});
  EXPECT_THAT(o.mpi_global_args, ElementsAre("--tag-output", "--allow-run-as-root", "--mca",
                                             "btl_tcp_if_include", "10.0.0.0/8"));
  EXPECT_THAT(o.mpi_local_args, ElementsAre("-x", "OPAL_PREFIX", "-x", "CPATH"));
}

TEST(PoprunOptions, BooleansTakeEverySpelling) {
  for (const char* yes : {"yes", "on", "1", "true", "YES", "True"}) {
    EXPECT_TRUE(Parse({std::string("--offline-mode=") + yes, "p"}).offline_mode) << yes;
  }
  for (const char* no : {"no", "off", "0", "false", "NO"}) {
    EXPECT_FALSE(Parse({"--remove-partition", no, "p"}).remove_partition) << no;
  }
  EXPECT_EQ(Parse({"--reset-partition", "no", "p"}).reset_partition, std::optional<bool>(false));
  EXPECT_EQ(Parse({"--reset-partition=yes", "p"}).reset_partition, std::optional<bool>(true));
  EXPECT_TRUE(Parse({"--update-partition", "yes", "p"}).update_partition);
  EXPECT_TRUE(Parse({"--allow-run-as-root", "1", "p"}).allow_run_as_root);
  EXPECT_TRUE(Parse({"--print-topology=yes", "p"}).print_topology);
  EXPECT_TRUE(Parse({"--overwrite-config=on", "p"}).overwrite_config);
  EXPECT_EQ(Parse({"--numa-aware", "0", "p"}).process_placement, ProcessPlacement::kDisabled);
  EXPECT_EQ(Parse({"--numa-aware=yes", "p"}).process_placement, ProcessPlacement::kSpreadNuma);
}

TEST(PoprunOptions, EveryBooleanRejectsOtherValues) {
  for (const char* opt :
       {"--update-partition", "--reset-partition", "--remove-partition", "--print-topology",
        "--offline-mode", "--allow-run-as-root", "--overwrite-config", "--numa-aware"}) {
    for (const char* bad : {"maybe", "2", "", "y"}) {
      EXPECT_EQ(Error({std::string(opt) + "=" + bad, "p"}),
                std::string(opt) + ": must be one of yes/no, on/off, 1/0, true/false, got " +
                    (*bad ? bad : "an empty value"));
    }
  }
}

TEST(PoprunOptions, EveryIntegerRejectsInvalidValues) {
  for (const char* opt : {"--num-replicas", "--ipus-per-replica", "--num-instances", "--num-ilds",
                          "--vipu-partition-attempts"}) {
    for (const char* bad : {"0", "-1", "x", "1.5", "", "+2", "99999999999"}) {
      EXPECT_EQ(Error({std::string(opt) + "=" + bad, "p"}),
                std::string(opt) + ": must be a positive integer, got " +
                    (*bad ? bad : "an empty value"));
    }
  }
  for (const char* bad : {"0", "65536", "x", ""}) {
    EXPECT_THAT(Error({std::string("--vipu-server-port=") + bad, "p"}),
                HasSubstr("--vipu-server-port: must be an integer in 1..65535"));
  }
  for (const char* bad : {"0", "86401", "-3", "abc"}) {
    EXPECT_THAT(Error({std::string("--vipu-server-timeout=") + bad, "p"}),
                HasSubstr("--vipu-server-timeout: must be a whole number of seconds in 1..86400"));
  }
  for (const char* bad : {"-1", "x", ""}) {
    EXPECT_THAT(Error({std::string("--only-output-from-instance=") + bad, "p"}),
                HasSubstr("--only-output-from-instance: must be a non-negative integer"));
  }
}

TEST(PoprunOptions, ServerDefaultsAreUnsetUntilGiven) {
  PoprunOptions o = Parse({"p"});
  EXPECT_FALSE(o.vipu_server_host.has_value());
  EXPECT_FALSE(o.vipu_server_port.has_value());
  EXPECT_FALSE(o.vipu_server_timeout.has_value());
  o = Parse({"--vipu-server-host", "10.1.3.101", "--vipu-server-port=34521",
             "--vipu-server-timeout", "300", "p"});
  EXPECT_EQ(o.vipu_server_host, std::optional<std::string>("10.1.3.101"));
  EXPECT_EQ(o.vipu_server_port, std::optional<uint32_t>(34521));
  EXPECT_EQ(o.vipu_server_timeout, std::optional<uint32_t>(300));
}

TEST(PoprunOptions, ServerHostIsAListOfMembersEachChecked) {
  PoprunOptions o = Parse({"--vipu-server-host", "a,b:9000,[::1]:7", "p"});
  EXPECT_EQ(o.vipu_server_host, std::optional<std::string>("a,b:9000,[::1]:7"));
  EXPECT_EQ(Error({"--vipu-server-host=a,,b", "p"}),
            "--vipu-server-host: entry 2 of 'a,,b' is empty");
  EXPECT_EQ(Error({"--vipu-server-host", "a,b:99999", "p"}),
            "--vipu-server-host: entry 'b:99999': port must be an integer in 1..65535, got "
            "'99999'");
  EXPECT_EQ(Error({"--vipu-server-host", "[::1", "p"}),
            "--vipu-server-host: entry '[::1': unbalanced '['");
  EXPECT_EQ(Error({"--vipu-server-host", "a, b", "p"}),
            "--vipu-server-host: entry ' b': must not contain spaces");
}

TEST(PoprunOptions, StringOptionsRejectEmptyValues) {
  for (const char* opt : {"--vipu-server-host", "--vipu-partition", "--vipu-allocation",
                          "--vipu-cluster", "--import-config", "--export-config", "--host-file"}) {
    EXPECT_EQ(Error({std::string(opt) + "=", "p"}),
              std::string(opt) + ": must not be empty, got an empty value");
  }
}

TEST(PoprunOptions, ClusterAndAllocationAreSeparate) {
  PoprunOptions o = Parse({"--vipu-cluster=c128", "p"});
  EXPECT_EQ(o.vipu_cluster, "c128");
  EXPECT_EQ(o.vipu_allocation, "");
  o = Parse({"--vipu-allocation", "a1", "--vipu-cluster", "c1", "p"});
  EXPECT_EQ(o.vipu_allocation, "a1");
  EXPECT_EQ(o.vipu_cluster, "c1");
}

TEST(PoprunOptions, InstanceMpiLocalArgs) {
  PoprunOptions o = Parse({"--num-instances=4", "--num-replicas=4", "--instance-mpi-local-args",
                           "0:-x FOO=1", "--instance-mpi-local-args=3:--report-bindings",
                           "--instance-mpi-local-args", "0:-x BAR", "p"});
  EXPECT_THAT(o.instance_mpi_local_args[0], ElementsAre("-x", "FOO=1", "-x", "BAR"));
  EXPECT_THAT(o.instance_mpi_local_args[3], ElementsAre("--report-bindings"));
  EXPECT_EQ(o.instance_mpi_local_args.count(1), 0u);
  for (const char* bad : {"-x FOO", ":-x FOO", "0:", "0:   ", "x:-x FOO", "-1:-x FOO", "+1:-x FOO",
                          "4294967296:-x FOO", ""}) {
    EXPECT_EQ(
        Error({"--instance-mpi-local-args", bad, "p"}),
        absl::StrCat("--instance-mpi-local-args: must be INSTANCE:ARGS, like 0:-x FOO=1, got ",
                     *bad ? bad : "an empty value"));
  }
  // An instance that the launch does not have.
  o = Parse({"--num-instances=2", "--num-replicas=2", "--instance-mpi-local-args=2:-x A", "p"});
  EXPECT_EQ(ValidateOptions(o).message(),
            "--instance-mpi-local-args: instance 2 does not exist, must be below --num-instances "
            "(2)");
}

TEST(PoprunOptions, AutoreportDir) {
  EXPECT_EQ(Parse({"--autoreport-dir", "/tmp/profile", "p"}).autoreport_dir, "/tmp/profile");
  EXPECT_EQ(Error({"--autoreport-dir=", "p"}),
            "--autoreport-dir: must not be empty, got an empty value");
  PoprunOptions o =
      Parse({"--autoreport-dir=/r", "--num-instances=2", "--num-replicas=2",
             "--mpi-local-args=-x POPLAR_ENGINE_OPTIONS={\"autoReport.all\":\"true\"}", "p"});
  EXPECT_TRUE(ValidateAutoreport(o, "{\"allowOutOfMemory\":\"true\"}").ok());
  EXPECT_TRUE(ValidateAutoreport(o, "{\"autoReport.all\":\"false\"}").ok());
  EXPECT_EQ(ValidateAutoreport(o, "{\"autoReport.directory\":\"/x\"}").message(),
            "--autoreport-dir: cannot be specified when POPLAR_ENGINE_OPTIONS contains the "
            "autoReport.directory setting (in poprun's environment)");
  o.mpi_local_args = {"-x", "POPLAR_ENGINE_OPTIONS={autoReport.directory:/tmp/p}"};
  EXPECT_THAT(std::string(ValidateAutoreport(o, "").message()), HasSubstr("(in --mpi-local-args)"));
  o.mpi_local_args.clear();
  o.instance_mpi_local_args[1] = {"-x",
                                  "POPLAR_ENGINE_OPTIONS={\"autoReport.directory\":\"/p/1\"}"};
  EXPECT_THAT(std::string(ValidateAutoreport(o, "").message()),
              HasSubstr("(in --instance-mpi-local-args of instance 1)"));
  o.autoreport_dir.clear();
  EXPECT_TRUE(ValidateAutoreport(o, "{\"autoReport.directory\":\"/x\"}").ok());
}

TEST(PoprunOptions, SynchronisationOptionsAreBooleans) {
  for (const char* opt :
       {"--synchronise-python-venv", "--synchronise-poplar-sdk", "--distribute-ssh-key"}) {
    SCOPED_TRACE(opt);
    EXPECT_EQ(Error({absl::StrCat(opt, "=maybe"), "p"}),
              absl::StrCat(opt, ": must be one of yes/no, on/off, 1/0, true/false, got maybe"));
    EXPECT_EQ(Error({absl::StrCat(opt, "="), "p"}),
              absl::StrCat(opt,
                           ": must be one of yes/no, on/off, 1/0, true/false, got an empty "
                           "value"));
  }
  PoprunOptions o = Parse({"--synchronise-python-venv=yes", "--synchronise-poplar-sdk", "on",
                           "--distribute-ssh-key=0", "p"});
  EXPECT_TRUE(o.synchronise_python_venv);
  EXPECT_TRUE(o.synchronise_poplar_sdk);
  EXPECT_FALSE(o.distribute_ssh_key);
}

TEST(PoprunOptions, EnumOptions) {
  EXPECT_EQ(Parse({"--process-placement=disabled", "p"}).process_placement,
            ProcessPlacement::kDisabled);
  EXPECT_EQ(Parse({"--process-placement", "spreadnuma", "p"}).process_placement,
            ProcessPlacement::kSpreadNuma);
  EXPECT_EQ(Parse({"--process-placement=scattersocket", "p"}).process_placement,
            ProcessPlacement::kScatterSocket);
  EXPECT_EQ(Parse({"--process-placement=scatternuma", "p"}).process_placement,
            ProcessPlacement::kScatterNuma);
  EXPECT_EQ(Parse({"--process-placement", "close", "p"}).process_placement,
            ProcessPlacement::kClose);
  for (const char* bad : {"", "SPREADNUMA", "scatter", "close,spreadnuma", "numa"}) {
    EXPECT_EQ(Error({std::string("--process-placement=") + bad, "p"}),
              absl::StrCat("--process-placement: must be one of spreadnuma, scattersocket, "
                           "scatternuma, close, disabled, got ",
                           *bad ? bad : "an empty value"));
  }
  EXPECT_EQ(Parse({"--sync-type=pod-native-default", "p"}).sync_type, "pod-native-default");
  EXPECT_EQ(Parse({"--sync-type=ST_POD_NATIVE_DEFAULT", "p"}).sync_type, "ST_POD_NATIVE_DEFAULT");
  EXPECT_THAT(Error({"--sync-type=fast", "p"}), HasSubstr("--sync-type: "));
  EXPECT_THAT(Error({"--sync-type=independent-rails", "p"}), HasSubstr("--sync-type: "));
  EXPECT_THAT(Error({"--version-format=xml"}), HasSubstr("--version-format: must be one of"));
  EXPECT_EQ(Parse({"--version"}).version_format, std::optional<std::string>("text"));
  EXPECT_EQ(Parse({"--version-format=full-json"}).version_format,
            std::optional<std::string>("full-json"));
}

// An invalid --sync-type is refused with the flag and the accepted values and
// exit code 1, like every invalid flag; the request poprun would send refuses
// it as well, so no partition is created with the server's choice instead.
TEST(PoprunOptions, InvalidSyncTypeIsRefusedNamingTheFlagAndTheAcceptedValues) {
  const std::string want =
      "--sync-type: sync type: unknown value \"fast\"; accepted: c2-compatible, "
      "pod-native-default, pod-native-replicated-pipeline";
  EXPECT_EQ(Error({"--sync-type=fast", "p"}), want);

  ::testing::internal::CaptureStderr();
  const int code = RunPoprun({"--sync-type", "fast", "p"}, cli::Environment{});
  EXPECT_EQ(::testing::internal::GetCapturedStderr(), "POPRUN ERROR: " + want + "\n");
  EXPECT_EQ(code, 1);

  PoprunOptions o = Parse({"--num-replicas=4", "--num-instances=2", "p"});
  o.sync_type = "fast";
  absl::StatusOr<fabric::PartitionRequest> request = CreateRequest(o, "p1");
  ASSERT_FALSE(request.ok());
  EXPECT_EQ(request.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(request.status().message(), want);
}

TEST(PoprunOptions, CreateRequestCarriesTheLaunchShape) {
  absl::StatusOr<fabric::PartitionRequest> request = CreateRequest(
      Parse({"--num-replicas=4", "--ipus-per-replica=2", "--num-instances=2", "--num-ilds=2",
             "--vipu-allocation=a1", "--sync-type=c2-compatible", "p"}),
      "p1");
  ASSERT_TRUE(request.ok()) << request.status();
  EXPECT_EQ(request->id, "p1");
  EXPECT_EQ(request->size, 8u);
  EXPECT_EQ(request->num_gcds, 2u);
  EXPECT_EQ(request->num_ilds, 2u);
  EXPECT_EQ(request->allocation_id, "a1");
  EXPECT_EQ(request->sync_type, fabric::SyncType::kGs2Default);
  EXPECT_EQ(request->routing, fabric::RoutingType::kUndefined);
  EXPECT_EQ(CreateRequest(Parse({"p"}), "p1")->sync_type, fabric::SyncType::kUndefined);
}

TEST(PoprunOptions, HostSubnet) {
  EXPECT_EQ(Parse({"--host-subnet=10.1.0.0/16", "p"}).host_subnet, "10.1.0.0/16");
  for (const char* bad : {"10.1.0.0", "10.1.0/16", "10.1.0.0/33", "300.1.0.0/8", "x/8", ""}) {
    EXPECT_THAT(Error({std::string("--host-subnet=") + bad, "p"}),
                HasSubstr("--host-subnet: must be an IPv4 subnet"));
  }
}

TEST(PoprunOptions, Verbosity) {
  EXPECT_EQ(Parse({"p"}).verbosity, Verbosity::kDefault);
  EXPECT_EQ(Parse({"-v", "p"}).verbosity, Verbosity::kInfo);
  EXPECT_EQ(Parse({"--verbose", "p"}).verbosity, Verbosity::kInfo);
  EXPECT_EQ(Parse({"-vv", "p"}).verbosity, Verbosity::kDebug);
  EXPECT_EQ(Parse({"--vv", "p"}).verbosity, Verbosity::kDebug);
  EXPECT_EQ(Parse({"--vv", "-v", "p"}).verbosity, Verbosity::kDebug);
  EXPECT_EQ(Error({"-vx", "p"}), "-v: takes no value, got x");
  EXPECT_EQ(Error({"--vv=1", "p"}), "--vv: takes no value, got 1");
}

TEST(PoprunOptions, UnknownOptionsAndMissingValues) {
  EXPECT_EQ(Error({"--autoreport-directory", "x", "p"}),
            "unrecognised option '--autoreport-directory'");
  EXPECT_EQ(Error({"-z", "p"}), "unrecognised option '-z'");
  EXPECT_EQ(Error({"--v", "p"}), "unrecognised option '--v'");
  EXPECT_EQ(Error({"--num-replicas"}), "--num-replicas: requires a value");
  EXPECT_EQ(Error({"--num-replicas", "4"}),
            "program: missing; usage: poprun [options] program [args]");
  EXPECT_TRUE(Parse({"--help"}).help);
}

TEST(PoprunOptions, DoubleDashEndsOptions) {
  EXPECT_THAT(Parse({"--num-replicas=2", "--", "--weird-program", "-x"}).command,
              ElementsAre("--weird-program", "-x"));
}

TEST(PoprunOptions, HostLists) {
  EXPECT_THAT(Parse({"-H", "host0,host1", "p"}).hosts, ElementsAre("host0", "host1"));
  EXPECT_THAT(Parse({"--host=host[0-2,4]", "p"}).hosts,
              ElementsAre("host0", "host1", "host2", "host4"));
  EXPECT_THAT(Parse({"-Hpod[1-2].lan,10.3.7.153", "p"}).hosts,
              ElementsAre("pod1.lan", "pod2.lan", "10.3.7.153"));
  EXPECT_THAT(*ExpandHosts("n[08-10]"), ElementsAre("n08", "n09", "n10"));
  // A range ending at 2^32-1 ends (a 32-bit counter would wrap and never pass it).
  EXPECT_THAT(*ExpandHosts("h[4294967294-4294967295]"), ElementsAre("h4294967294", "h4294967295"));
  EXPECT_THAT(*ExpandHosts("h[4294967295]"), ElementsAre("h4294967295"));
  EXPECT_EQ(ExpandHosts("h[4294967290-4294967295]")->size(), 6u);
  for (const char* bad : {"a,,b", "h[1-", "h[2-1]", "h[x]", "h]", "h[1-2][3]", "h[-1]", ""}) {
    EXPECT_THAT(Error({std::string("--host=") + bad, "p"}), HasSubstr("--host: ")) << bad;
  }
}

TEST(PoprunOptions, HostFile) {
  const std::string path = TempPath("hosts");
  std::ofstream(path) << "# hosts\nhostA\n\n  hostB  \nn[1-2]\n";
  EXPECT_THAT(Parse({"--host-file", path, "p"}).hosts, ElementsAre("hostA", "hostB", "n1", "n2"));
  EXPECT_EQ(Error({"--host-file", path, "-H", "x", "p"}),
            "--host-file: mutually exclusive with --host/-H");
  EXPECT_THAT(Error({"--host-file", path + ".missing", "p"}),
              HasSubstr("--host-file: cannot read file"));
  std::ofstream(path) << "# nothing\n";
  EXPECT_THAT(Error({"--host-file", path, "p"}), HasSubstr("--host-file: must list at least"));
  std::remove(path.c_str());
}

TEST(PoprunConfig, ExportThenImportRoundTrips) {
  const std::string path = TempPath("training.conf");
  std::remove(path.c_str());
  PoprunOptions o = Parse({"--export-config",
                           path,
                           "--vipu-partition=my_partition",
                           "--vipu-allocation=allocation1",
                           "--vipu-cluster=cluster1",
                           "--vipu-server-host=vipu.my_domain",
                           "--vipu-server-port=34521",
                           "--update-partition=yes",
                           "--remove-partition=no",
                           "--reset-partition=no",
                           "--num-replicas=32",
                           "--num-instances=2",
                           "--num-ilds=2",
                           "--host",
                           "pod[1-2]",
                           "--mpi-global-args=--tag-output --allow-run-as-root",
                           "--executable-cache-path=/tmp/cache",
                           "--sync-type=pod-native-default",
                           "--only-output-from-instance=1",
                           "--host-subnet=10.0.0.0/8",
                           "--instance-mpi-local-args=1:-x A=1 -x B",
                           "--autoreport-dir=/tmp/profile",
                           "--synchronise-python-venv=yes",
                           "--process-placement=scatternuma",
                           "python3",
                           "train.py"});
  auto written = ExportConfig(o, path);
  ASSERT_TRUE(written.ok()) << written.status();
  EXPECT_EQ(*written, path);
  PoprunOptions back = Parse({"--import-config", path});
  EXPECT_EQ(SerializeConfig(back), SerializeConfig(o));
  EXPECT_EQ(back.vipu_partition, "my_partition");
  EXPECT_EQ(back.reset_partition, std::optional<bool>(false));
  EXPECT_FALSE(back.remove_partition);
  EXPECT_THAT(back.hosts, ElementsAre("pod1", "pod2"));
  EXPECT_THAT(back.mpi_global_args, ElementsAre("--tag-output", "--allow-run-as-root"));
  EXPECT_THAT(back.command, ElementsAre("python3", "train.py"));

  // The command line wins, lists and the program included.
  PoprunOptions over =
      Parse({"--import-config", path, "--num-instances=4", "--mpi-global-args=--report-bindings",
             "python3", "train.py", "--hyper-param=1"});
  EXPECT_EQ(over.num_instances, 4u);
  EXPECT_EQ(over.num_replicas, 32u);
  EXPECT_THAT(over.mpi_global_args, ElementsAre("--report-bindings"));
  EXPECT_THAT(over.command, ElementsAre("python3", "train.py", "--hyper-param=1"));

  // Never overwritten unless allowed: a time-stamped name instead.
  auto second = ExportConfig(over, path);
  ASSERT_TRUE(second.ok());
  EXPECT_NE(*second, path);
  EXPECT_THAT(*second, HasSubstr(path + "."));
  std::ifstream first_file(path);
  std::stringstream first_text;
  first_text << first_file.rdbuf();
  EXPECT_THAT(first_text.str(), HasSubstr("num-instances = 2"));
  over.overwrite_config = true;
  auto third = ExportConfig(over, path);
  ASSERT_TRUE(third.ok());
  EXPECT_EQ(*third, path);
  EXPECT_EQ(Parse({"--import-config", path}).num_instances, 4u);
  std::remove(second->c_str());
  std::remove(path.c_str());
}

TEST(PoprunConfig, ImportErrors) {
  const std::string path = TempPath("bad.conf");
  EXPECT_EQ(Error({"--import-config", path + ".missing"}),
            "--import-config: cannot read file, got " + path + ".missing");
  EXPECT_EQ(Error({"--import-config", path, "--export-config", path, "p"}),
            "--export-config: cannot be used together with --import-config");
  std::ofstream(path) << "num-replicas = x\n";
  EXPECT_EQ(Error({"--import-config", path, "p"}),
            path + ":1: --num-replicas: must be a positive integer, got x");
  std::ofstream(path) << "\n# c\nbogus = 1\n";
  EXPECT_EQ(Error({"--import-config", path, "p"}), path + ":3: unknown option, got bogus");
  std::ofstream(path) << "num-replicas 4\n";
  EXPECT_THAT(Error({"--import-config", path, "p"}), HasSubstr(":1: expected `name = value`"));
  std::ofstream(path) << "import-config = other\n";
  EXPECT_THAT(Error({"--import-config", path, "p"}), HasSubstr(":1: unknown option"));
  std::remove(path.c_str());
}

TEST(PoprunValidation, Rules) {
  auto check = [](std::vector<std::string> args) {
    args.push_back("p");
    return ValidateOptions(Parse(args));
  };
  EXPECT_TRUE(check({"--num-replicas=16", "--ipus-per-replica=4"}).ok());
  EXPECT_EQ(check({"--num-replicas=6", "--num-instances=4"}).message(),
            "--num-replicas (6) must be divisible by --num-instances (4)");
  EXPECT_EQ(check({"--num-replicas=4", "--num-instances=4", "-H", "a,b,c"}).message(),
            "--num-instances (4) must be divisible by the number of hosts (3)");
  EXPECT_EQ(check({"--num-replicas=4", "--num-instances=1", "--num-ilds=2"}).message(),
            "--num-instances (1) must be at least --num-ilds (2): at least one instance per "
            "IPU-Link domain");
  EXPECT_EQ(check({"--num-replicas=8", "--num-instances=4", "--num-ilds=3"}).message(),
            "--num-instances (4) must be divisible by --num-ilds (3)");
  EXPECT_EQ(check({"--num-replicas=6"}).message(),
            "partition size: --num-replicas x --ipus-per-replica must be a power of two, got 6 "
            "(6 x 1)");
  EXPECT_EQ(check({"--num-replicas=4", "--ipus-per-replica=3"}).message(),
            "partition size: --num-replicas x --ipus-per-replica must be a power of two, got 12 "
            "(4 x 3)");
  EXPECT_EQ(
      check({"--num-replicas=2", "--num-instances=2", "--only-output-from-instance=2"}).message(),
      "--only-output-from-instance: must be below --num-instances (2), got 2");
  EXPECT_EQ(ValidateFitsAllocation(128, "a1", 64).message(),
            "partition size (128 IPUs) is too large for allocation a1 (64 IPUs)");
  EXPECT_TRUE(ValidateFitsAllocation(64, "a1", 64).ok());
}

TEST(PoprunLog, LevelsAndFormat) {
  EXPECT_EQ(*ResolveLogLevel(Verbosity::kDefault, std::nullopt), LogLevel::kWarn);
  EXPECT_EQ(*ResolveLogLevel(Verbosity::kInfo, std::string("ERR")), LogLevel::kInfo);
  EXPECT_EQ(*ResolveLogLevel(Verbosity::kDebug, std::nullopt), LogLevel::kDebug);
  EXPECT_EQ(*ResolveLogLevel(Verbosity::kDefault, std::string("trace")), LogLevel::kTrace);
  EXPECT_EQ(*ResolveLogLevel(Verbosity::kDefault, std::string("OFF")), LogLevel::kOff);
  for (const char* bad : {"LOUD", "warning", "5"}) {
    EXPECT_EQ(ResolveLogLevel(Verbosity::kDefault, std::string(bad)).status().message(),
              std::string("POPRUN_LOG_LEVEL: must be one of TRACE, DEBUG, INFO, WARN, ERR, OFF, "
                          "got ") +
                  bad);
  }
  EXPECT_EQ(FormatLogLine(23, 48, 29, 160, 3555537, LogLevel::kInfo,
                          "Using V-IPU partition slurm_2657 as it is the only one available"),
            "23:48:29.160 3555537 POPRUN [I] Using V-IPU partition slurm_2657 as it is the only "
            "one available\n");
  EXPECT_EQ(FormatLogLine(10, 10, 50, 4, 1, LogLevel::kDebug, "x"),
            "10:10:50.004 1 POPRUN [D] x\n");
}

}  // namespace
}  // namespace vipu::poprun
