// How the members of a highly available control plane find each other: the
// addresses a member publishes as its value in the leader election.
#ifndef VIPU_SERVER_HA_MEMBER_ADDRESSES_H_
#define VIPU_SERVER_HA_MEMBER_ADDRESSES_H_

#include <string>
#include <string_view>

#include "absl/status/statusor.h"

namespace vipu::server {

// host:port of a member's user, admin and agent listeners as others reach
// them. The user address is the member's --advertise; the admin and agent
// addresses differ from it only when the member splits its listeners.
struct MemberAddresses {
  std::string user, admin, agent;

  // "user=H:P admin=H:P agent=H:P".
  std::string Encode() const;
  // The inverse; INVALID_ARGUMENT for anything else.
  static absl::StatusOr<MemberAddresses> Parse(std::string_view text);
  friend bool operator==(const MemberAddresses& a, const MemberAddresses& b) {
    return a.user == b.user && a.admin == b.admin && a.agent == b.agent;
  }
};

// The address others reach a listener bound to `listen` at: `advertise` when
// given, else `listen` itself unless its host is a wildcard (0.0.0.0, [::],
// or empty). INVALID_ARGUMENT naming the flag when neither works.
absl::StatusOr<std::string> AdvertisedAddress(std::string_view listen, std::string_view advertise,
                                              std::string_view flag);

}  // namespace vipu::server

#endif  // VIPU_SERVER_HA_MEMBER_ADDRESSES_H_
