// The IPUoF client: attach to a GCD (server, config file or directory), list devices, run work.
#include "popdist/ipuof_client.h"

#include <grpcpp/grpcpp.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <system_error>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "base/host_port.h"
#include "base/status_macros.h"
#include "cli/common/credentials.h"
#include "google/protobuf/util/json_util.h"
#include "vipu_agent.grpc.pb.h"
#include "vipuuser.grpc.pb.h"
#include "wire/member_channels.h"
#include "wire/server_members.h"
#include "wire/status.h"

namespace vipu::popdist::ipuof {
namespace {

constexpr const char* kVariables[] = {"IPUOF_VIPU_API_HOST",
                                      "IPUOF_VIPU_API_PORT",
                                      "IPUOF_VIPU_API_PARTITION_ID",
                                      "IPUOF_VIPU_API_GCD_ID",
                                      "IPUOF_VIPU_API_TIMEOUT",
                                      "IPUOF_CONFIG_PATH",
                                      "HOME"};
// The vipu CLI settings that say who the caller is; the server's address
// comes from IPUOF_VIPU_API_* instead, so VIPU_CLI_API_HOST and the like
// are neither read nor checked.
constexpr const char* kCredentialVariables[] = {"VIPU_CLI_API_USER_ID", "VIPU_CLI_API_ACCESS_KEY",
                                                "VIPU_CLI_API_TLS_CA", "VIPU_CLI_API_TLS_CERT",
                                                "VIPU_CLI_API_TLS_KEY"};
constexpr const char* kConfigSuffix = "_ipuof.conf";

std::string Get(const Environment& env, const std::string& name) {
  auto it = env.find(name);
  return it == env.end() ? std::string() : it->second;
}

absl::StatusOr<uint32_t> Number(const std::string& name, const std::string& text, uint32_t min,
                                uint32_t max) {
  uint64_t n = 0;
  if (!absl::SimpleAtoi(text, &n) || n < min || n > max) {
    return absl::InvalidArgumentError(
        absl::StrCat(name, ": must be an integer in ", min, "..", max, ", got '", text, "'"));
  }
  return static_cast<uint32_t>(n);
}

// IPUOF_VIPU_API_GCD_ID, 0 when unset.
absl::StatusOr<uint32_t> GcdOf(const Environment& env) {
  const std::string g = Get(env, "IPUOF_VIPU_API_GCD_ID");
  if (g.empty()) return 0u;
  return Number("IPUOF_VIPU_API_GCD_ID", g, 0, 65535);
}

// The config in $HOME/.ipuof.conf.d/ this process should use; empty when
// the directory holds none.
absl::StatusOr<std::string> ConfigFromDirectory(const Environment& env) {
  const std::string home = Get(env, "HOME");
  if (home.empty()) return std::string();
  const std::filesystem::path dir = std::filesystem::path(home) / ".ipuof.conf.d";
  std::error_code ec;
  if (!std::filesystem::is_directory(dir, ec)) return std::string();
  if (const std::string partition = Get(env, "IPUOF_VIPU_API_PARTITION_ID"); !partition.empty()) {
    ASSIGN_OR_RETURN(auto gcd, GcdOf(env));
    const std::filesystem::path path = dir / absl::StrCat(partition, "_gcd", gcd, kConfigSuffix);
    if (!std::filesystem::exists(path, ec)) {
      return absl::NotFoundError(absl::StrCat("IPUOF_VIPU_API_PARTITION_ID: ", dir.string(),
                                              " has no ", path.filename().string()));
    }
    return path.string();
  }
  std::vector<std::string> configs;
  for (const auto& entry : std::filesystem::directory_iterator(dir, ec)) {
    const std::string name = entry.path().filename().string();
    if (entry.is_regular_file(ec) && absl::EndsWith(name, kConfigSuffix)) configs.push_back(name);
  }
  if (configs.empty()) return std::string();
  if (configs.size() > 1) {
    std::sort(configs.begin(), configs.end());
    return absl::FailedPreconditionError(absl::StrCat(
        dir.string(), ": holds ", configs.size(), " IPUoF configs (", absl::StrJoin(configs, ", "),
        "); set IPUOF_VIPU_API_PARTITION_ID or IPUOF_CONFIG_PATH to choose one"));
  }
  return (dir / configs.front()).string();
}

// The caller's credentials as the vipu CLIs resolve them: VIPU_CLI_* from
// `env`, else the configuration file; flags there are none.
absl::StatusOr<cli::ClientConfig> ResolveCredentials(const Environment& env,
                                                     const std::string& cli_config_path) {
  cli::Environment cli_env;
  cli_env.system_config_path = cli_config_path;
  for (const char* name : kCredentialVariables) {
    if (std::string v = Get(env, name); !v.empty()) cli_env.vars[name] = v;
  }
  return cli::ResolveClientConfig(cli::ConnectionFlags(), cli_env);
}

}  // namespace

Environment ProcessEnvironment() {
  Environment env;
  for (const char* name : kVariables) {
    if (const char* v = std::getenv(name); v != nullptr) env[name] = v;
  }
  for (const char* name : kCredentialVariables) {
    if (const char* v = std::getenv(name); v != nullptr) env[name] = v;
  }
  return env;
}

absl::StatusOr<IpuofClient> IpuofClient::Attach(const Environment& env, absl::Duration timeout,
                                                const std::string& cli_config_path) {
  ASSIGN_OR_RETURN(cli::ClientConfig credentials, ResolveCredentials(env, cli_config_path));
  absl::StatusOr<IpuofClient> client = AttachWith(env, timeout, credentials);
  if (client.ok()) client->credentials_ = std::move(credentials);
  return client;
}

absl::StatusOr<IpuofClient> IpuofClient::AttachWith(const Environment& env, absl::Duration timeout,
                                                    const cli::ClientConfig& credentials) {
  const std::string host = Get(env, "IPUOF_VIPU_API_HOST");
  if (!host.empty()) {
    uint32_t port = kDefaultVipuPort;
    if (std::string p = Get(env, "IPUOF_VIPU_API_PORT"); !p.empty()) {
      ASSIGN_OR_RETURN(auto n, Number("IPUOF_VIPU_API_PORT", p, 1, 65535));
      port = n;
    }
    const std::string partition = Get(env, "IPUOF_VIPU_API_PARTITION_ID");
    if (partition.empty()) {
      return absl::InvalidArgumentError(
          "IPUOF_VIPU_API_PARTITION_ID: must name the partition when IPUOF_VIPU_API_HOST is set");
    }
    ASSIGN_OR_RETURN(auto gcd, GcdOf(env));
    if (std::string t = Get(env, "IPUOF_VIPU_API_TIMEOUT"); !t.empty()) {
      ASSIGN_OR_RETURN(auto seconds, Number("IPUOF_VIPU_API_TIMEOUT", t, 1, 86400));
      timeout = absl::Seconds(seconds);
    }
    return AttachToPartition(host, port, partition, gcd, timeout, credentials);
  }
  if (std::string path = Get(env, "IPUOF_CONFIG_PATH"); !path.empty()) {
    return FromConfigFile(path);
  }
  ASSIGN_OR_RETURN(std::string path, ConfigFromDirectory(env));
  if (!path.empty()) return FromConfigFile(path);
  return absl::FailedPreconditionError(
      "attach: set IPUOF_VIPU_API_HOST and IPUOF_VIPU_API_PARTITION_ID, or IPUOF_CONFIG_PATH, "
      "or leave one config in ~/.ipuof.conf.d/");
}

absl::StatusOr<IpuofClient> IpuofClient::AttachToPartition(const std::string& host, uint32_t port,
                                                           const std::string& partition_id,
                                                           uint32_t gcd, absl::Duration timeout,
                                                           const cli::ClientConfig& credentials) {
  absl::StatusOr<std::vector<wire::ServerMember>> members = wire::ParseServerMembers(host, port);
  if (!members.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat("IPUOF_VIPU_API_HOST: ", members.status().message()));
  }
  auto channel_credentials = cli::ChannelCredentials(credentials);
  if (!channel_credentials.ok()) return channel_credentials.status();
  wire::MemberChannels channels(*std::move(members), *channel_credentials);
  virmgrpc::GetPartitionIpuofConfigRequest request;
  request.set_partition_id(partition_id);
  request.mutable_gcd_id()->set_id(gcd);
  virmgrpc::GetPartitionIpuofConfigReply reply;
  wire::MemberCallResult result = channels.Call(
      wire::CallKind::kReadOnly, absl::ToChronoTime(absl::Now() + timeout),
      [&](grpc::ClientContext* ctx) { cli::AddCallCredentials(credentials, ctx); },
      [&](size_t member, grpc::ClientContext* ctx) {
        return virmgrpc::UserService::NewStub(channels.channel(member))
            ->GetPartitionIpuofConfig(ctx, request, &reply);
      });
  if (!result.status.ok()) return wire::FromGrpc(result.status);
  if (reply.ipuof_config().gcd_configs_size() == 0) {
    return absl::NotFoundError(
        absl::StrCat("partition ", partition_id, ": the server sent no config for GCD ", gcd));
  }
  absl::StatusOr<IpuofClient> client = FromGcd(reply.ipuof_config().gcd_configs(0));
  if (client.ok()) {
    client->source_ = absl::StrCat("V-IPU server ", channels.member(result.member).Target());
    client->credentials_ = credentials;
  }
  return client;
}

absl::StatusOr<IpuofClient> IpuofClient::FromConfigFile(const std::string& path) {
  std::ifstream in(path);
  if (!in) {
    return absl::NotFoundError(absl::StrCat("IPUOF_CONFIG_PATH: cannot read '", path, "'"));
  }
  std::stringstream text;
  text << in.rdbuf();
  virmgrpc::PartitionConfig::Gcd gcd;
  google::protobuf::util::JsonParseOptions options;
  options.ignore_unknown_fields = true;
  auto parsed = google::protobuf::util::JsonStringToMessage(text.str(), &gcd, options);
  if (!parsed.ok()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "IPUOF_CONFIG_PATH: '", path, "' is not an IPUoF config: ", std::string(parsed.message())));
  }
  absl::StatusOr<IpuofClient> client = FromGcd(gcd);
  if (!client.ok()) {
    return absl::Status(client.status().code(),
                        absl::StrCat("'", path, "': ", client.status().message()));
  }
  client->source_ = absl::StrCat("IPUoF config ", path);
  return client;
}

absl::StatusOr<IpuofClient> IpuofClient::FromGcd(const virmgrpc::PartitionConfig::Gcd& gcd) {
  IpuofClient client;
  auto id = gcd.attributes().find("Partition Id");
  if (id == gcd.attributes().end() || id->second.empty()) {
    return absl::InvalidArgumentError("attributes: the GCD config has no \"Partition Id\"");
  }
  client.partition_id_ = id->second;
  if (auto g = gcd.attributes().find("GCD Id"); g != gcd.attributes().end()) {
    ASSIGN_OR_RETURN(auto n, Number("attributes.GCD Id", g->second, 0, 65535));
    client.gcd_ = n;
  }
  for (const auto& d : gcd.devices()) {
    if (d.ip().empty() || d.server_port() == 0 || d.server_port() > 65535) {
      return absl::InvalidArgumentError(absl::StrCat("devices: device ", d.device_id(),
                                                     " has no usable endpoint '", d.ip(), ":",
                                                     d.server_port(), "'"));
    }
    client.devices_.push_back({d.device_id(), d.ip(), d.server_port(), d.ipu_id(), d.chip_id()});
  }
  if (client.devices_.empty()) {
    return absl::InvalidArgumentError("devices: the GCD config lists no devices");
  }
  if (auto m = gcd.attributes().find(fabric::kMultiIpuDevicesAttribute);
      m != gcd.attributes().end()) {
    ASSIGN_OR_RETURN(auto sub, fabric::ParseMultiIpuDevices(m->second, gcd.devices_size()));
    client.sub_devices_ = std::move(sub);
  }
  std::sort(client.devices_.begin(), client.devices_.end(),
            [](const IpuofDevice& a, const IpuofDevice& b) { return a.device_id < b.device_id; });
  for (size_t i = 1; i < client.devices_.size(); ++i) {
    if (client.devices_[i].device_id == client.devices_[i - 1].device_id) {
      return absl::InvalidArgumentError(absl::StrCat(
          "devices: device id ", client.devices_[i].device_id, " appears more than once"));
    }
  }
  return client;
}

absl::StatusOr<IpuofClient> IpuofClient::Device(uint32_t id) const {
  if (device_id_) {
    return absl::FailedPreconditionError(
        absl::StrCat("device ", id, ": this client is already attached to device ", *device_id_));
  }
  if (sub_devices_.empty()) {
    return absl::FailedPreconditionError(
        absl::StrCat("device ", id, ": partition ", partition_id_,
                     " is not reconfigurable; only its whole GCD can be attached"));
  }
  const uint32_t singles = static_cast<uint32_t>(devices_.size());
  IpuofClient narrowed = *this;
  narrowed.sub_devices_.clear();
  narrowed.device_id_ = id;
  if (id < singles) {
    narrowed.devices_ = {devices_[id]};
    return narrowed;
  }
  for (const fabric::SubDevice& d : sub_devices_) {
    if (d.id != id) continue;
    narrowed.devices_.assign(devices_.begin() + d.first, devices_.begin() + d.first + d.count);
    return narrowed;
  }
  return absl::NotFoundError(absl::StrCat("device ", id, ": GCD ", gcd_, " of partition ",
                                          partition_id_, " has devices 0..",
                                          sub_devices_.back().id));
}

absl::StatusOr<std::unique_ptr<DeviceConnection>> IpuofClient::Connect() const {
  const IpuofDevice& first = devices_.front();
  // The machine's certificate is checked against the endpoint's host. The
  // access key stays with vipu-server: machines trust the pod's client
  // certificate and check the partition's generation themselves.
  auto channel_credentials = cli::ChannelCredentials(credentials_);
  if (!channel_credentials.ok()) return channel_credentials.status();
  return std::make_unique<DeviceConnection>(HostPort(first.host, first.port), *channel_credentials,
                                            partition_id_, gcd_);
}

absl::StatusOr<WorkloadResult> IpuofClient::Run(const vipuagent::WorkloadSpec& workload,
                                                uint32_t steps, absl::Duration timeout) const {
  ASSIGN_OR_RETURN(std::unique_ptr<DeviceConnection> connection, Connect());
  return connection->Run(workload, steps, timeout);
}

}  // namespace vipu::popdist::ipuof
