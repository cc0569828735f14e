// Parsing of the etcd client URL list (etcd_endpoints.h).
#include "storage/etcd/etcd_endpoints.h"

#include "absl/status/status.h"
#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "base/absl_view.h"

namespace vipu::storage::etcd {
namespace {

absl::Status Bad(absl::string_view entry, absl::string_view why) {
  return absl::InvalidArgumentError(absl::StrCat(
      "etcd endpoint \"", entry, "\": ", why, " (expected http://HOST:PORT or https://HOST:PORT)"));
}

absl::StatusOr<EtcdEndpoint> ParseOne(absl::string_view entry) {
  EtcdEndpoint endpoint;
  endpoint.url = std::string(entry);
  absl::string_view rest = entry;
  const size_t scheme_end = rest.find("://");
  if (scheme_end == absl::string_view::npos) return Bad(entry, "no scheme");
  const std::string scheme = absl::AsciiStrToLower(rest.substr(0, scheme_end));
  if (scheme == "https") {
    endpoint.tls = true;
  } else if (scheme != "http") {
    return Bad(entry, absl::StrCat("scheme \"", scheme, "\" is neither http nor https"));
  }
  rest.remove_prefix(scheme_end + 3);
  if (rest.find_first_of("/?#") != absl::string_view::npos) {
    return Bad(entry, "a path or query after the port is not allowed");
  }
  if (rest.find('@') != absl::string_view::npos) return Bad(entry, "user info is not allowed");
  absl::string_view host;
  absl::string_view port;
  if (absl::StartsWith(rest, "[")) {
    const size_t close = rest.find(']');
    if (close == absl::string_view::npos) return Bad(entry, "unclosed '[' around an IPv6 address");
    host = rest.substr(0, close + 1);
    absl::string_view after = rest.substr(close + 1);
    if (!absl::StartsWith(after, ":")) return Bad(entry, "no port");
    port = after.substr(1);
    if (host.size() <= 2) return Bad(entry, "empty host");
  } else {
    const size_t colon = rest.rfind(':');
    if (colon == absl::string_view::npos) return Bad(entry, "no port");
    host = rest.substr(0, colon);
    port = rest.substr(colon + 1);
    if (host.empty()) return Bad(entry, "empty host");
    if (host.find(':') != absl::string_view::npos) {
      return Bad(entry, "an IPv6 address must be in brackets");
    }
  }
  int port_number = 0;
  if (port.empty()) return Bad(entry, "no port");
  if (port.find_first_not_of("0123456789") != absl::string_view::npos ||
      !absl::SimpleAtoi(port, &port_number) || port_number < 1 || port_number > 65535) {
    return Bad(entry, absl::StrCat("port \"", port, "\" is not a number from 1 to 65535"));
  }
  endpoint.host_port = absl::StrCat(host, ":", port_number);
  return endpoint;
}

}  // namespace

absl::StatusOr<std::vector<EtcdEndpoint>> ParseEtcdEndpoints(std::string_view list) {
  const absl::string_view all = AbslView(list);
  if (absl::StripAsciiWhitespace(all).empty()) {
    return absl::InvalidArgumentError("etcd endpoints: the list is empty");
  }
  std::vector<EtcdEndpoint> endpoints;
  int index = 0;
  for (absl::string_view entry : absl::StrSplit(all, ',')) {
    ++index;
    entry = absl::StripAsciiWhitespace(entry);
    if (entry.empty()) {
      return absl::InvalidArgumentError(
          absl::StrCat("etcd endpoints \"", all, "\": entry ", index, " is empty"));
    }
    absl::StatusOr<EtcdEndpoint> endpoint = ParseOne(entry);
    if (!endpoint.ok()) return endpoint.status();
    endpoints.push_back(*std::move(endpoint));
  }
  return endpoints;
}

}  // namespace vipu::storage::etcd
