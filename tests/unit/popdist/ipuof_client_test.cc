// The IPUoF client in-process: attaching from the environment (server,
// config file, ~/.ipuof.conf.d/), every malformed value named, the GCD
// config checks, and Run against a fake machine: what goes on the wire and
// how the machine's answers and errors come back. Also the wire form of a
// model workload (ToWorkloadSpec).
#include "popdist/ipuof_client.h"

#include <gmock/gmock.h>
#include <grpcpp/grpcpp.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <memory>
#include <string>

#include "absl/strings/str_cat.h"
#include "google/protobuf/util/json_util.h"
#include "model/workload.h"
#include "popdist/workload_spec.h"
#include "tests/integration/daemon_process.h"
#include "vipu_agent.grpc.pb.h"
#include "vipuuser.grpc.pb.h"

namespace vipu::popdist::ipuof {
namespace {

using ::testing::HasSubstr;
namespace fs = std::filesystem;

virmgrpc::PartitionConfig::Gcd Gcd(const std::string& partition, uint32_t port, uint32_t gcd = 0) {
  virmgrpc::PartitionConfig::Gcd g;
  (*g.mutable_attributes())["Partition Id"] = partition;
  (*g.mutable_attributes())["GCD Id"] = std::to_string(gcd);
  // Out of order on purpose: the client sorts by device id.
  for (uint32_t id : {1u, 0u}) {
    auto* d = g.add_devices();
    d->set_device_id(id);
    d->set_ip("127.0.0.1");
    d->set_server_port(port);
    d->set_ipu_id(id);
    d->set_chip_id(absl::StrCat("chip", id));
  }
  return g;
}

std::string Json(const virmgrpc::PartitionConfig::Gcd& gcd) {
  std::string out;
  google::protobuf::util::JsonPrintOptions options;
  options.preserve_proto_field_names = true;
  EXPECT_TRUE(google::protobuf::util::MessageToJsonString(gcd, &out, options).ok());
  return out;
}

class TempDir {
 public:
  TempDir() {
    std::string pattern = (fs::temp_directory_path() / "ipuof_client_XXXXXX").string();
    path_ = mkdtemp(pattern.data());
  }
  ~TempDir() { fs::remove_all(path_); }
  const std::string& path() const { return path_; }
  std::string Write(const std::string& relative, const std::string& content) const {
    const fs::path p = fs::path(path_) / relative;
    fs::create_directories(p.parent_path());
    std::ofstream(p) << content;
    return p.string();
  }

 private:
  std::string path_;
};

// A vipu-server that answers GetPartitionIpuofConfig for partition "p".
class FakeUserService final : public virmgrpc::UserService::Service {
 public:
  grpc::Status GetPartitionIpuofConfig(grpc::ServerContext* context,
                                       const virmgrpc::GetPartitionIpuofConfigRequest* request,
                                       virmgrpc::GetPartitionIpuofConfigReply* reply) override {
    last_gcd = request->gcd_id().id();
    last_user = Metadata(*context, "vipu-user-id");
    last_key = Metadata(*context, "vipu-access-key");
    if (request->partition_id() != "p") {
      return grpc::Status(grpc::StatusCode::NOT_FOUND,
                          "partition_id: no partition " + request->partition_id());
    }
    *reply->mutable_ipuof_config()->add_gcd_configs() = Gcd("p", 7000, request->gcd_id().id());
    return grpc::Status::OK;
  }
  uint32_t last_gcd = 99;
  std::string last_user = "<none>";
  std::string last_key = "<none>";

 private:
  static std::string Metadata(const grpc::ServerContext& context, const std::string& key) {
    auto it = context.client_metadata().find(key);
    return it == context.client_metadata().end()
               ? ""
               : std::string(it->second.data(), it->second.size());
  }
};

// The machine holding device 0: records the request, answers as set.
class FakeAgent final : public vipuagent::Agent::Service {
 public:
  grpc::Status RunWorkload(grpc::ServerContext*, const vipuagent::RunWorkloadRequest* request,
                           vipuagent::RunWorkloadReply* reply) override {
    last = *request;
    if (!fail.ok()) return fail;
    for (uint32_t i = 0; i < request->steps() + extra_steps; ++i) reply->add_step_time_s(0.25);
    reply->set_samples_per_sec(4096);
    reply->set_generation(3);
    reply->add_agent_ids("ag1");
    reply->add_agent_ids("ag2");
    return grpc::Status::OK;
  }
  vipuagent::RunWorkloadRequest last;
  grpc::Status fail = grpc::Status::OK;
  uint32_t extra_steps = 0;
};

class Served {
 public:
  explicit Served(grpc::Service* service) {
    grpc::ServerBuilder builder;
    builder.AddChannelArgument(GRPC_ARG_ALLOW_REUSEPORT, 0);
    builder.AddListeningPort("127.0.0.1:0", grpc::InsecureServerCredentials(), &port_);
    builder.RegisterService(service);
    server_ = builder.BuildAndStart();
  }
  ~Served() { server_->Shutdown(); }
  uint32_t port() const { return static_cast<uint32_t>(port_); }

 private:
  int port_ = 0;
  std::unique_ptr<grpc::Server> server_;
};

TEST(IpuofClientTest, FromGcdListsDevicesInOrder) {
  auto client = IpuofClient::FromGcd(Gcd("p", 7000, 2));
  ASSERT_TRUE(client.ok()) << client.status();
  EXPECT_EQ(client->partition_id(), "p");
  EXPECT_EQ(client->gcd(), 2u);
  ASSERT_EQ(client->devices().size(), 2u);
  EXPECT_EQ(client->devices()[0].device_id, 0u);
  EXPECT_EQ(client->devices()[0].chip_id, "chip0");
  EXPECT_EQ(client->devices()[1].port, 7000u);
}

TEST(IpuofClientTest, FromGcdRefusesBadConfigsNamingTheField) {
  struct Case {
    std::function<void(virmgrpc::PartitionConfig::Gcd*)> mutate;
    std::string message;
  };
  const std::vector<Case> cases = {
      {[](auto* g) { g->mutable_attributes()->erase("Partition Id"); }, "attributes: "},
      {[](auto* g) { (*g->mutable_attributes())["Partition Id"] = ""; }, "attributes: "},
      {[](auto* g) { (*g->mutable_attributes())["GCD Id"] = "x"; }, "attributes.GCD Id: "},
      {[](auto* g) { (*g->mutable_attributes())["GCD Id"] = "70000"; }, "attributes.GCD Id: "},
      {[](auto* g) { g->mutable_devices(0)->set_ip(""); }, "devices: device 1 has no usable"},
      {[](auto* g) { g->mutable_devices(0)->set_server_port(0); }, "devices: device 1 has no"},
      {[](auto* g) { g->mutable_devices(0)->set_server_port(65536); }, "devices: device 1 has"},
      {[](auto* g) { g->clear_devices(); }, "devices: the GCD config lists no devices"},
      {[](auto* g) { g->mutable_devices(0)->set_device_id(0); },
       "devices: device id 0 appears more than once"},
  };
  for (const Case& c : cases) {
    virmgrpc::PartitionConfig::Gcd g = Gcd("p", 7000);
    c.mutate(&g);
    auto client = IpuofClient::FromGcd(g);
    ASSERT_FALSE(client.ok()) << c.message;
    EXPECT_EQ(client.status().code(), absl::StatusCode::kInvalidArgument) << c.message;
    EXPECT_THAT(std::string(client.status().message()), HasSubstr(c.message));
  }
}

// A reconfigurable partition's GCD lists its multi-IPU devices; a client
// narrows to one of them, or to a single IPU, and a non-reconfigurable GCD
// attaches only whole.
TEST(IpuofClientTest, ReconfigurableGcdAttachesToASubDevice) {
  virmgrpc::PartitionConfig::Gcd g = Gcd("r", 7000);
  for (uint32_t id : {2u, 3u}) {
    auto* d = g.add_devices();
    d->set_device_id(id);
    d->set_ip("127.0.0.1");
    d->set_server_port(7001);
    d->set_ipu_id(id);
  }
  auto whole = IpuofClient::FromGcd(g);
  ASSERT_TRUE(whole.ok()) << whole.status();
  EXPECT_TRUE(whole->sub_devices().empty());
  auto refused = whole->Device(4);
  EXPECT_EQ(refused.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(std::string(refused.status().message()), HasSubstr("not reconfigurable"));

  (*g.mutable_attributes())["Multi IPU Devices"] = "4:0-1 5:2-3 6:0-3";
  auto gcd = IpuofClient::FromGcd(g);
  ASSERT_TRUE(gcd.ok()) << gcd.status();
  ASSERT_EQ(gcd->sub_devices().size(), 3u);
  auto pair = gcd->Device(5);
  ASSERT_TRUE(pair.ok()) << pair.status();
  EXPECT_EQ(pair->device_id(), 5u);
  ASSERT_EQ(pair->devices().size(), 2u);
  EXPECT_EQ(pair->devices()[0].device_id, 2u);
  EXPECT_EQ(pair->devices()[0].port, 7001u);  // its workloads go to the machine of IPU 2
  auto single = gcd->Device(1);
  ASSERT_TRUE(single.ok()) << single.status();
  EXPECT_EQ(single->devices().size(), 1u);
  auto missing = gcd->Device(7);
  EXPECT_EQ(missing.status().code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(std::string(missing.status().message()), HasSubstr("has devices 0..6"));
  EXPECT_EQ(pair->Device(2).status().code(), absl::StatusCode::kFailedPrecondition);

  (*g.mutable_attributes())["Multi IPU Devices"] = "4:0-2";
  auto bad = IpuofClient::FromGcd(g);
  EXPECT_EQ(bad.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(bad.status().message()), HasSubstr("Multi IPU Devices: entry '4:0-2'"));
}

TEST(IpuofClientTest, AttachesThroughTheServerWithItsGcd) {
  FakeUserService service;
  Served served(&service);
  Environment env = {{"IPUOF_VIPU_API_HOST", "127.0.0.1"},
                     {"IPUOF_VIPU_API_PORT", std::to_string(served.port())},
                     {"IPUOF_VIPU_API_PARTITION_ID", "p"},
                     {"IPUOF_VIPU_API_GCD_ID", "1"},
                     {"IPUOF_VIPU_API_TIMEOUT", "5"},
                     // The server wins over a config file.
                     {"IPUOF_CONFIG_PATH", "/nonexistent"}};
  auto client = IpuofClient::Attach(env);
  ASSERT_TRUE(client.ok()) << client.status();
  EXPECT_EQ(service.last_gcd, 1u);
  EXPECT_EQ(client->gcd(), 1u);
  EXPECT_EQ(client->source(), absl::StrCat("V-IPU server 127.0.0.1:", served.port()));
  env["IPUOF_VIPU_API_PARTITION_ID"] = "q";
  auto missing = IpuofClient::Attach(env);
  EXPECT_EQ(missing.status().code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(std::string(missing.status().message()), HasSubstr("no partition q"));
}

TEST(IpuofClientTest, AttachFailsOverToTheNextMemberOfTheServer) {
  FakeUserService service;
  Served served(&service);
  const int dead = vipu::testing::FreePort();
  Environment env = {
      {"IPUOF_VIPU_API_HOST", absl::StrCat("127.0.0.1:", dead, ",127.0.0.1:", served.port())},
      {"IPUOF_VIPU_API_PORT", "1"},  // every member has its own
      {"IPUOF_VIPU_API_PARTITION_ID", "p"},
      {"IPUOF_VIPU_API_TIMEOUT", "10"}};
  auto client = IpuofClient::Attach(env, absl::Seconds(10), "");
  ASSERT_TRUE(client.ok()) << client.status();
  EXPECT_EQ(client->source(), absl::StrCat("V-IPU server 127.0.0.1:", served.port()));
  // IPUOF_VIPU_API_PORT for the members without a port.
  env["IPUOF_VIPU_API_HOST"] = absl::StrCat("127.0.0.1:", dead, ",127.0.0.1");
  env["IPUOF_VIPU_API_PORT"] = std::to_string(served.port());
  client = IpuofClient::Attach(env, absl::Seconds(10), "");
  ASSERT_TRUE(client.ok()) << client.status();
  EXPECT_EQ(client->source(), absl::StrCat("V-IPU server 127.0.0.1:", served.port()));
}

TEST(IpuofClientTest, AttachRefusesABadMemberListNamingTheEntry) {
  for (const auto& [host, message] : std::vector<std::pair<std::string, std::string>>{
           {"a,,b", "IPUOF_VIPU_API_HOST: entry 2 of 'a,,b' is empty"},
           {"a,b:0", "IPUOF_VIPU_API_HOST: entry 'b:0': port must be an integer in 1..65535"},
           {"[::1", "IPUOF_VIPU_API_HOST: entry '[::1': unbalanced '['"},
           {"a b", "IPUOF_VIPU_API_HOST: entry 'a b': must not contain spaces"}}) {
    auto client =
        IpuofClient::Attach({{"IPUOF_VIPU_API_HOST", host}, {"IPUOF_VIPU_API_PARTITION_ID", "p"}},
                            absl::Seconds(1), "");
    EXPECT_EQ(client.status().code(), absl::StatusCode::kInvalidArgument) << host;
    EXPECT_THAT(std::string(client.status().message()), HasSubstr(message)) << host;
  }
}

// The vipu CLIs' credentials, resolved as they resolve them: VIPU_CLI_*
// first, then their configuration file.
TEST(IpuofClientTest, SendsTheVipuCredentialsToTheServer) {
  FakeUserService service;
  Served served(&service);
  TempDir dir;
  const Environment base = {{"IPUOF_VIPU_API_HOST", "127.0.0.1"},
                            {"IPUOF_VIPU_API_PORT", std::to_string(served.port())},
                            {"IPUOF_VIPU_API_PARTITION_ID", "p"}};
  auto anonymous = IpuofClient::Attach(base, absl::Seconds(5), "");
  ASSERT_TRUE(anonymous.ok()) << anonymous.status();
  EXPECT_EQ(service.last_user, "");
  EXPECT_EQ(service.last_key, "");
  EXPECT_FALSE(anonymous->tls());

  Environment env = base;
  env["VIPU_CLI_API_USER_ID"] = "alice";
  env["VIPU_CLI_API_ACCESS_KEY"] = "k1";
  ASSERT_TRUE(IpuofClient::Attach(env, absl::Seconds(5), "").ok());
  EXPECT_EQ(service.last_user, "alice");
  EXPECT_EQ(service.last_key, "k1");

  const std::string hcl =
      dir.Write("vipu-cli.hcl", "api-user-id = \"bob\"\napi-access-key = \"k2\"\n");
  ASSERT_TRUE(IpuofClient::Attach(base, absl::Seconds(5), hcl).ok());
  EXPECT_EQ(service.last_user, "bob");
  EXPECT_EQ(service.last_key, "k2");
  // The environment wins over the file, setting by setting.
  Environment user_only = base;
  user_only["VIPU_CLI_API_USER_ID"] = "carol";
  ASSERT_TRUE(IpuofClient::Attach(user_only, absl::Seconds(5), hcl).ok());
  EXPECT_EQ(service.last_user, "carol");
  EXPECT_EQ(service.last_key, "k2");
  // The server's address comes from IPUOF_VIPU_API_*: vipu's own settings
  // for it are neither used nor checked.
  Environment vipu_address = base;
  vipu_address["VIPU_CLI_API_HOST"] = "";
  vipu_address["VIPU_CLI_API_PORT"] = "not-a-port";
  EXPECT_TRUE(IpuofClient::Attach(vipu_address, absl::Seconds(5), "").ok());
}

TEST(IpuofClientTest, InvalidCredentialSettingsAreNamed) {
  TempDir dir;
  const std::string pem = dir.Write("ca.pem", "not used before the checks");
  struct Case {
    Environment env;
    std::string config_file;  // contents; empty: none
    std::string message;
  };
  const std::string missing = dir.path() + "/missing/ca.pem";
  const std::vector<Case> cases = {
      {{{"VIPU_CLI_API_TLS_CA", missing}},
       "",
       absl::StrCat("VIPU_CLI_API_TLS_CA: cannot read '", missing, "'")},
      {{{"VIPU_CLI_API_TLS_CA", pem}, {"VIPU_CLI_API_TLS_CERT", missing}},
       "",
       absl::StrCat("VIPU_CLI_API_TLS_CERT: cannot read '", missing, "'")},
      {{{"VIPU_CLI_API_TLS_CA", pem}, {"VIPU_CLI_API_TLS_CERT", pem}},
       "",
       "VIPU_CLI_API_TLS_CERT: needs --api-tls-key"},
      {{{"VIPU_CLI_API_TLS_CA", pem}, {"VIPU_CLI_API_TLS_KEY", pem}},
       "",
       "VIPU_CLI_API_TLS_KEY: needs --api-tls-cert"},
      {{{"VIPU_CLI_API_TLS_CERT", pem}, {"VIPU_CLI_API_TLS_KEY", pem}},
       "",
       "VIPU_CLI_API_TLS_CERT: needs --api-tls-ca"},
      {{}, "api-tls-ca = \"absent.pem\"\n", "vipu-cli.hcl: api-tls-ca: cannot read '"},
      {{}, "api-tls-ca = \"\"\n", "vipu-cli.hcl: api-tls-ca: must name a file"},
      {{}, "api-acess-key = \"k\"\n", "vipu-cli.hcl:1"},
  };
  for (const Case& c : cases) {
    std::string config;
    if (!c.config_file.empty()) config = dir.Write("vipu-cli.hcl", c.config_file);
    // Checked before any way of attaching is tried: a config file too.
    for (const char* way : {"IPUOF_VIPU_API_HOST", "IPUOF_CONFIG_PATH"}) {
      Environment env = c.env;
      env[way] = way == std::string("IPUOF_CONFIG_PATH") ? pem : "127.0.0.1";
      env["IPUOF_VIPU_API_PARTITION_ID"] = "p";
      auto client = IpuofClient::Attach(env, absl::Seconds(1), config);
      ASSERT_FALSE(client.ok()) << c.message;
      EXPECT_EQ(client.status().code(), absl::StatusCode::kInvalidArgument) << c.message;
      EXPECT_THAT(std::string(client.status().message()), HasSubstr(c.message)) << way;
    }
  }
  // A missing configuration file is no error: the CLIs' system file is optional.
  auto none = IpuofClient::Attach({{"IPUOF_CONFIG_PATH", dir.path() + "/x.conf"}}, absl::Seconds(1),
                                  dir.path() + "/absent.hcl");
  EXPECT_THAT(std::string(none.status().message()), HasSubstr("IPUOF_CONFIG_PATH: cannot read"));
}

TEST(IpuofClientTest, ProcessEnvironmentHasTheCredentialVariables) {
  ASSERT_EQ(setenv("VIPU_CLI_API_ACCESS_KEY", "from-process", 1), 0);
  ASSERT_EQ(setenv("VIPU_CLI_API_TLS_CA", "/ca.pem", 1), 0);
  const Environment env = ProcessEnvironment();
  unsetenv("VIPU_CLI_API_ACCESS_KEY");
  unsetenv("VIPU_CLI_API_TLS_CA");
  EXPECT_EQ(env.at("VIPU_CLI_API_ACCESS_KEY"), "from-process");
  EXPECT_EQ(env.at("VIPU_CLI_API_TLS_CA"), "/ca.pem");
}

TEST(IpuofClientTest, AttachRefusesMalformedVariablesNamingThem) {
  const Environment base = {{"IPUOF_VIPU_API_HOST", "127.0.0.1"},
                            {"IPUOF_VIPU_API_PARTITION_ID", "p"}};
  struct Case {
    std::string name, value;
  };
  for (const Case& c : std::vector<Case>{{"IPUOF_VIPU_API_PORT", "0"},
                                         {"IPUOF_VIPU_API_PORT", "65536"},
                                         {"IPUOF_VIPU_API_PORT", "x"},
                                         {"IPUOF_VIPU_API_PORT", "-1"},
                                         {"IPUOF_VIPU_API_GCD_ID", "-1"},
                                         {"IPUOF_VIPU_API_GCD_ID", "65536"},
                                         {"IPUOF_VIPU_API_GCD_ID", "one"},
                                         {"IPUOF_VIPU_API_TIMEOUT", "0"},
                                         {"IPUOF_VIPU_API_TIMEOUT", "86401"},
                                         {"IPUOF_VIPU_API_TIMEOUT", "1.5"}}) {
    Environment env = base;
    env[c.name] = c.value;
    auto client = IpuofClient::Attach(env, absl::Seconds(1));
    ASSERT_FALSE(client.ok()) << c.name << "=" << c.value;
    EXPECT_EQ(client.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_THAT(std::string(client.status().message()), HasSubstr(c.name + ": must be"));
  }
  auto no_partition = IpuofClient::Attach({{"IPUOF_VIPU_API_HOST", "127.0.0.1"}});
  EXPECT_EQ(no_partition.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(no_partition.status().message()),
              HasSubstr("IPUOF_VIPU_API_PARTITION_ID: must name the partition"));
  auto nothing = IpuofClient::Attach({});
  EXPECT_EQ(nothing.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(std::string(nothing.status().message()), HasSubstr("set IPUOF_VIPU_API_HOST"));
}

TEST(IpuofClientTest, AttachesFromAConfigFileOrTheHomeDirectory) {
  TempDir dir;
  const std::string p_gcd0 = dir.Write("home/.ipuof.conf.d/p_gcd0_ipuof.conf", Json(Gcd("p", 1)));
  auto file = IpuofClient::Attach({{"IPUOF_CONFIG_PATH", p_gcd0}});
  ASSERT_TRUE(file.ok()) << file.status();
  EXPECT_EQ(file->source(), "IPUoF config " + p_gcd0);

  // The only config in ~/.ipuof.conf.d/ (other files ignored).
  const std::string home = dir.path() + "/home";
  dir.Write("home/.ipuof.conf.d/README", "not a config");
  auto only = IpuofClient::Attach({{"HOME", home}});
  ASSERT_TRUE(only.ok()) << only.status();
  EXPECT_EQ(only->partition_id(), "p");

  // Several: the partition and GCD choose, else it is an error listing them.
  dir.Write("home/.ipuof.conf.d/p_gcd1_ipuof.conf", Json(Gcd("p", 2, 1)));
  auto several = IpuofClient::Attach({{"HOME", home}});
  EXPECT_EQ(several.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(std::string(several.status().message()),
              HasSubstr("holds 2 IPUoF configs (p_gcd0_ipuof.conf, p_gcd1_ipuof.conf)"));
  auto chosen = IpuofClient::Attach(
      {{"HOME", home}, {"IPUOF_VIPU_API_PARTITION_ID", "p"}, {"IPUOF_VIPU_API_GCD_ID", "1"}});
  ASSERT_TRUE(chosen.ok()) << chosen.status();
  EXPECT_EQ(chosen->gcd(), 1u);
  EXPECT_EQ(chosen->devices()[0].port, 2u);
  auto absent = IpuofClient::Attach({{"HOME", home}, {"IPUOF_VIPU_API_PARTITION_ID", "x"}});
  EXPECT_EQ(absent.status().code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(std::string(absent.status().message()), HasSubstr("x_gcd0_ipuof.conf"));
  auto bad_gcd = IpuofClient::Attach(
      {{"HOME", home}, {"IPUOF_VIPU_API_PARTITION_ID", "p"}, {"IPUOF_VIPU_API_GCD_ID", "z"}});
  EXPECT_THAT(std::string(bad_gcd.status().message()), HasSubstr("IPUOF_VIPU_API_GCD_ID: "));

  // A home without the directory: nothing configured.
  auto none = IpuofClient::Attach({{"HOME", dir.path()}});
  EXPECT_EQ(none.status().code(), absl::StatusCode::kFailedPrecondition);

  // Unreadable, not JSON, or a config without devices.
  auto missing = IpuofClient::Attach({{"IPUOF_CONFIG_PATH", dir.path() + "/none.conf"}});
  EXPECT_EQ(missing.status().code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(std::string(missing.status().message()), HasSubstr("IPUOF_CONFIG_PATH: cannot read"));
  const std::string garbage = dir.Write("garbage.conf", "{devices: [");
  auto not_json = IpuofClient::Attach({{"IPUOF_CONFIG_PATH", garbage}});
  EXPECT_EQ(not_json.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(not_json.status().message()), HasSubstr("is not an IPUoF config"));
  virmgrpc::PartitionConfig::Gcd empty = Gcd("p", 1);
  empty.clear_devices();
  const std::string no_devices = dir.Write("empty.conf", Json(empty));
  auto no_dev = IpuofClient::Attach({{"IPUOF_CONFIG_PATH", no_devices}});
  EXPECT_EQ(no_dev.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(no_dev.status().message()), HasSubstr("devices: "));
}

TEST(IpuofClientTest, RunCallsTheMachineOfDeviceZero) {
  FakeAgent agent;
  Served served(&agent);
  auto client = IpuofClient::FromGcd(Gcd("p", served.port()));
  ASSERT_TRUE(client.ok()) << client.status();
  vipuagent::WorkloadSpec spec;
  spec.set_model("bert-large");
  spec.set_replicated_tensor_sharding(true);
  auto run = client->Run(spec, 3, absl::Seconds(10));
  ASSERT_TRUE(run.ok()) << run.status();
  EXPECT_EQ(agent.last.partition_id(), "p");
  EXPECT_EQ(agent.last.agent_id(), "");  // the endpoint names the machine
  EXPECT_EQ(agent.last.steps(), 3u);
  EXPECT_EQ(agent.last.workload().model(), "bert-large");
  EXPECT_TRUE(agent.last.workload().has_replicated_tensor_sharding());
  EXPECT_FALSE(agent.last.workload().has_recompute());
  EXPECT_EQ(run->step_time_s, (std::vector<double>{0.25, 0.25, 0.25}));
  EXPECT_EQ(run->samples_per_sec, 4096);
  EXPECT_EQ(run->generation, 3u);
  EXPECT_EQ(run->agent_ids, (std::vector<std::string>{"ag1", "ag2"}));

  // The machine's error, code and message unchanged.
  agent.fail = grpc::Status(grpc::StatusCode::FAILED_PRECONDITION,
                            "partition p cannot run: agent ag2: IPU 1 error");
  auto failed = client->Run(spec, 1, absl::Seconds(10));
  EXPECT_EQ(failed.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(failed.status().message(), "partition p cannot run: agent ag2: IPU 1 error");
  // An answer that does not match the request is not trusted.
  agent.fail = grpc::Status::OK;
  agent.extra_steps = 1;
  auto short_answer = client->Run(spec, 2, absl::Seconds(10));
  EXPECT_EQ(short_answer.status().code(), absl::StatusCode::kDataLoss);
  EXPECT_THAT(std::string(short_answer.status().message()), HasSubstr("3 step times for 2 steps"));
}

TEST(IpuofClientTest, RunReportsAMachineThatDoesNotAnswer) {
  uint32_t port = 0;
  {
    FakeAgent agent;
    Served served(&agent);
    port = served.port();
  }  // gone
  auto client = IpuofClient::FromGcd(Gcd("p", port));
  ASSERT_TRUE(client.ok());
  auto run = client->Run(vipuagent::WorkloadSpec(), 1, absl::Seconds(2));
  EXPECT_EQ(run.status().code(), absl::StatusCode::kUnavailable);
}

TEST(WorkloadSpecTest, SendsEveryFieldExplicitly) {
  model::Workload w = *model::WorkloadPreset("bert-large");
  w.micro_batch = 8;
  w.grad_accum = 512;
  w.replicas = 16;
  w.ipus_per_replica = 4;
  w.layers_per_ipu = {3, 7, 7, 7};
  w.optimizer_state_offchip = true;
  w.replicated_tensor_sharding = true;
  w.recompute = false;
  w.packing = 2;
  w.host_loader_samples_per_s = 500;
  auto spec = ToWorkloadSpec(w);
  ASSERT_TRUE(spec.ok()) << spec.status();
  EXPECT_EQ(spec->model(), "bert-large");
  EXPECT_EQ(spec->micro_batch(), 8u);
  EXPECT_EQ(spec->grad_accum(), 512u);
  EXPECT_EQ(spec->device_iterations(), 1u);
  EXPECT_EQ(spec->replicas(), 16u);
  EXPECT_EQ(spec->ipus_per_replica(), 4u);
  EXPECT_EQ(spec->seq_len(), 128u);
  EXPECT_THAT(spec->layers_per_ipu(), ::testing::ElementsAre(3, 7, 7, 7));
  EXPECT_EQ(spec->optimizer(), "lamb");
  EXPECT_TRUE(spec->optimizer_state_offchip());
  EXPECT_TRUE(spec->replicated_tensor_sharding());
  ASSERT_TRUE(spec->has_recompute());  // false, explicitly
  EXPECT_FALSE(spec->recompute());
  EXPECT_EQ(spec->packing(), 2);
  EXPECT_EQ(spec->host_loader_samples_per_s(), 500);

  model::Workload custom = w;
  custom.name = "transformer";
  EXPECT_THAT(std::string(ToWorkloadSpec(custom).status().message()),
              HasSubstr("workload.name: the wire names presets only"));
  custom = w;
  custom.transformer.layers = 30;
  auto reshaped = ToWorkloadSpec(custom);
  EXPECT_EQ(reshaped.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(reshaped.status().message()),
              HasSubstr("network shape differs from the bert-large preset"));
}

}  // namespace
}  // namespace vipu::popdist::ipuof
