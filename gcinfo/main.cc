// gc-info: lists the devices of the partition the environment names (-l).
#include <iostream>
#include <string>

#include "CLI/CLI.hpp"
#include "absl/status/status.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/time/time.h"
#include "gcinfo/device_listing.h"
#include "popdist/ipuof_client.h"
#include "wire/server_members.h"

namespace {

constexpr const char* kFooter =
    "The partition, as Poplar finds it:\n"
    "  1. IPUOF_VIPU_API_HOST (comma-separated list of members, each HOST, HOST:PORT, [V6]\n"
    "     or [V6]:PORT, tried in order), IPUOF_VIPU_API_PORT (default 8090, for members\n"
    "     without a port), IPUOF_VIPU_API_PARTITION_ID, IPUOF_VIPU_API_GCD_ID (default 0),\n"
    "     IPUOF_VIPU_API_TIMEOUT (seconds): ask vipu-server;\n"
    "  2. IPUOF_CONFIG_PATH: that IPUoF config file;\n"
    "  3. ~/.ipuof.conf.d/: <IPUOF_VIPU_API_PARTITION_ID>_gcd<N>_ipuof.conf, or the only config.\n";

// Server errors come from gRPC without the address; say which server failed.
std::string Explain(const vipu::popdist::ipuof::Environment& env, const absl::Status& status) {
  auto host = env.find("IPUOF_VIPU_API_HOST");
  if (host == env.end() || host->second.empty() ||
      status.code() == absl::StatusCode::kInvalidArgument) {
    return std::string(status.message());
  }
  // Every member, each with the port it was tried on.
  auto port = env.find("IPUOF_VIPU_API_PORT");
  uint32_t default_port = vipu::popdist::ipuof::kDefaultVipuPort;
  // Attach has refused a bad port already; this only names the members.
  if (port != env.end() && !port->second.empty() &&
      !absl::SimpleAtoi(port->second, &default_port)) {
    default_port = vipu::popdist::ipuof::kDefaultVipuPort;
  }
  auto members = vipu::wire::ParseServerMembers(host->second, default_port);
  return absl::StrCat(
      "V-IPU server ", members.ok() ? vipu::wire::JoinTargets(*members) : host->second,
      " (IPUOF_VIPU_API_HOST, IPUOF_VIPU_API_PORT): ", absl::StatusCodeToString(status.code()),
      ": ", status.message());
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"gc-info: the IPU devices of a partition, as Poplar sees them"};
  app.footer(kFooter);
  bool list_devices = false;
  app.add_flag("-l,--list-devices", list_devices,
               "list the devices of the partition's GCD: one per IPU, then the Multi IPU groups");
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e, std::cout, std::cerr);
  } catch (const CLI::ParseError& e) {
    std::cerr << "gc-info: " << e.what() << " (see --help)\n";
    return 2;
  }
  if (!list_devices) {
    std::cerr << "gc-info: nothing to do: give -l/--list-devices (see --help)\n";
    return 2;
  }

  const vipu::popdist::ipuof::Environment env = vipu::popdist::ipuof::ProcessEnvironment();
  absl::StatusOr<vipu::popdist::ipuof::IpuofClient> client =
      vipu::popdist::ipuof::IpuofClient::Attach(env, absl::Seconds(30));
  if (!client.ok()) {
    std::cerr << "gc-info: cannot list the devices: " << Explain(env, client.status()) << "\n";
    return 1;
  }
  std::cout << vipu::gcinfo::DeviceListing(client->partition_id(), client->gcd(), client->devices(),
                                           client->source());
  return 0;
}
