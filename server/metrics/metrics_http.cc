// Parsing of the HTTP listener's host:port.
#include "server/metrics/metrics_http.h"

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"

namespace vipu::server {

absl::StatusOr<std::pair<std::string, int>> ParseListenAddress(const std::string& address,
                                                               const std::string& flag) {
  auto bad = [&](const std::string& rule) {
    return absl::InvalidArgumentError(absl::StrCat(flag, ": ", rule, ", got '", address, "'"));
  };
  const size_t colon = address.rfind(':');
  if (colon == std::string::npos) return bad("expected host:port");
  std::string host = address.substr(0, colon);
  const std::string port_text = address.substr(colon + 1);
  if (host.size() >= 2 && host.front() == '[' && host.back() == ']') {
    host = host.substr(1, host.size() - 2);
  } else if (host.find(':') != std::string::npos) {
    return bad("an IPv6 host must be in brackets, [::1]:port");
  }
  if (host.empty()) return bad("missing host (use 0.0.0.0 for every interface)");
  int port = 0;
  if (!absl::SimpleAtoi(port_text, &port) || port < 0 || port > 65535) {
    return bad("port must be an integer in 0..65535");
  }
  return std::make_pair(host, port);
}

}  // namespace vipu::server
