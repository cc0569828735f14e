// MemberAddresses: the election value of a member, and advertised addresses.
#include "server/ha/member_addresses.h"

#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "base/absl_view.h"

namespace vipu::server {

std::string MemberAddresses::Encode() const {
  return absl::StrCat("user=", user, " admin=", admin, " agent=", agent);
}

absl::StatusOr<MemberAddresses> MemberAddresses::Parse(std::string_view text) {
  MemberAddresses out;
  for (absl::string_view field : absl::StrSplit(AbslView(text), ' ', absl::SkipEmpty())) {
    std::pair<absl::string_view, absl::string_view> kv =
        absl::StrSplit(field, absl::MaxSplits('=', 1));
    if (kv.first == "user") {
      out.user = std::string(kv.second);
    } else if (kv.first == "admin") {
      out.admin = std::string(kv.second);
    } else if (kv.first == "agent") {
      out.agent = std::string(kv.second);
    }
  }
  if (out.user.empty() || out.admin.empty() || out.agent.empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat("not a member's addresses: '", AbslView(text), "'"));
  }
  return out;
}

absl::StatusOr<std::string> AdvertisedAddress(std::string_view listen, std::string_view advertise,
                                              std::string_view flag) {
  if (!advertise.empty()) return std::string(advertise);
  const size_t colon = listen.rfind(':');
  const std::string_view host = colon == std::string_view::npos ? "" : listen.substr(0, colon);
  const std::string_view port = colon == std::string_view::npos ? "" : listen.substr(colon + 1);
  if (host.empty() || host == "0.0.0.0" || host == "[::]" || host == "::" || port == "0") {
    return absl::InvalidArgumentError(
        absl::StrCat(AbslView(flag), " ", AbslView(listen),
                     ": other members cannot reach a wildcard address or port 0; give "
                     "--advertise HOST:PORT (and a fixed port)"));
  }
  return std::string(listen);
}

}  // namespace vipu::server
