// ParseServerMembers: the comma-separated member list every client of vipu-server takes.
#include "wire/server_members.h"

#include <arpa/inet.h>

#include <algorithm>
#include <cstddef>

#include "absl/status/status.h"
#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/strings/string_view.h"

namespace vipu::wire {
namespace {

absl::Status Bad(absl::string_view entry, absl::string_view rule) {
  return absl::InvalidArgumentError(absl::StrCat("entry '", entry, "': ", rule));
}

// An IPv6 literal, optionally with a zone (`fe80::1%eth0`), as inet_pton
// knows them; the zone is kept, since the resolver takes it.
bool IsIpv6(absl::string_view text) {
  const absl::string_view address = text.substr(0, text.find('%'));
  if (address.empty() || address.size() >= INET6_ADDRSTRLEN) return false;
  if (address.size() != text.size()) {
    const absl::string_view zone = text.substr(address.size() + 1);
    if (zone.empty()) return false;
    for (char c : zone) {
      if (!absl::ascii_isalnum(static_cast<unsigned char>(c)) && c != '_' && c != '-' && c != '.') {
        return false;
      }
    }
  }
  unsigned char buffer[16];
  return inet_pton(AF_INET6, std::string(address).c_str(), buffer) == 1;
}

// A DNS name or an IPv4 literal: letters, digits, '-', '_' and '.'.
absl::Status CheckHostName(absl::string_view entry, absl::string_view host) {
  if (host.empty()) return Bad(entry, "needs a host before ':'");
  for (char c : host) {
    if (!absl::ascii_isalnum(static_cast<unsigned char>(c)) && c != '-' && c != '_' && c != '.') {
      return Bad(entry, absl::StrCat("'", absl::string_view(&c, 1),
                                     "' is not allowed in a host name (letters, digits, '-', '_', "
                                     "'.'; IPv6 as [V6] or [V6]:PORT)"));
    }
  }
  return absl::OkStatus();
}

absl::StatusOr<uint32_t> ParsePort(absl::string_view entry, absl::string_view text) {
  uint32_t port = 0;
  bool digits = !text.empty();
  for (char c : text) digits = digits && absl::ascii_isdigit(static_cast<unsigned char>(c));
  if (!digits || text.size() > 5 || !absl::SimpleAtoi(text, &port) || port < 1 || port > 65535) {
    return Bad(entry,
               absl::StrCat("port must be an integer in 1..65535, got ",
                            text.empty() ? std::string("nothing") : absl::StrCat("'", text, "'")));
  }
  return port;
}

absl::StatusOr<ServerMember> ParseEntry(absl::string_view entry,
                                        std::optional<uint32_t> default_port) {
  for (char c : entry) {
    if (absl::ascii_isspace(static_cast<unsigned char>(c))) {
      return Bad(entry, "must not contain spaces");
    }
  }
  ServerMember member;
  absl::string_view port_text;
  bool has_port = false;
  if (entry.front() == '[') {
    const size_t close = entry.find(']');
    if (close == absl::string_view::npos) return Bad(entry, "unbalanced '['");
    const absl::string_view inside = entry.substr(1, close - 1);
    if (inside.find('[') != absl::string_view::npos) return Bad(entry, "unbalanced '['");
    if (!IsIpv6(inside)) {
      return Bad(entry, absl::StrCat("'", inside, "' in brackets is not an IPv6 address"));
    }
    member.host = std::string(inside);
    const absl::string_view rest = entry.substr(close + 1);
    if (!rest.empty()) {
      if (rest.front() != ':') {
        return Bad(entry, absl::StrCat("unexpected '", rest, "' after ']' (expected :PORT)"));
      }
      port_text = rest.substr(1);
      has_port = true;
    }
  } else if (entry.find_first_of("[]") != absl::string_view::npos) {
    return Bad(entry, entry.find(']') != absl::string_view::npos && entry.find('[') == entry.npos
                          ? "unbalanced ']'"
                          : "'[' must open the entry ([V6] or [V6]:PORT)");
  } else {
    const size_t colons = static_cast<size_t>(std::count(entry.begin(), entry.end(), ':'));
    if (colons >= 2) {
      // A bare IPv6 literal: it cannot carry a port.
      if (!IsIpv6(entry)) {
        return Bad(entry, "more than one ':'; write an IPv6 address as [V6] or [V6]:PORT");
      }
      member.host = std::string(entry);
    } else if (colons == 1) {
      const size_t colon = entry.find(':');
      member.host = std::string(entry.substr(0, colon));
      port_text = entry.substr(colon + 1);
      has_port = true;
    } else {
      member.host = std::string(entry);
    }
    if (colons < 2) {
      if (absl::Status s = CheckHostName(entry, member.host); !s.ok()) return s;
    }
  }
  if (has_port) {
    absl::StatusOr<uint32_t> port = ParsePort(entry, port_text);
    if (!port.ok()) return port.status();
    member.port = *port;
    member.port_given = true;
  } else if (default_port.has_value()) {
    member.port = *default_port;
  } else {
    return Bad(entry, "needs a port (HOST:PORT)");
  }
  return member;
}

}  // namespace

std::string ServerMember::Target() const {
  return host.find(':') != std::string::npos ? absl::StrCat("[", host, "]:", port)
                                             : absl::StrCat(host, ":", port);
}

std::string ServerMember::Entry() const {
  std::string out = host.find(':') != std::string::npos ? absl::StrCat("[", host, "]") : host;
  if (port_given) absl::StrAppend(&out, ":", port);
  return out;
}

absl::StatusOr<std::vector<ServerMember>> ParseServerMembers(std::string_view text,
                                                             std::optional<uint32_t> default_port) {
  // Debian's abseil has its own string_view, distinct from std::string_view.
  const absl::string_view list(text.data(), text.size());
  if (list.empty()) return absl::InvalidArgumentError("must name at least one member");
  std::vector<ServerMember> members;
  size_t position = 0;
  for (absl::string_view entry : absl::StrSplit(list, ',')) {
    ++position;
    if (entry.empty()) {
      return absl::InvalidArgumentError(
          absl::StrCat("entry ", position, " of '", list, "' is empty"));
    }
    absl::StatusOr<ServerMember> member = ParseEntry(entry, default_port);
    if (!member.ok()) return member.status();
    for (const ServerMember& seen : members) {
      if (seen == *member) {
        return absl::InvalidArgumentError(
            absl::StrCat("entry '", entry, "' is listed twice (", member->Target(), ")"));
      }
    }
    members.push_back(*std::move(member));
  }
  return members;
}

absl::StatusOr<ServerMember> ParseServerMember(std::string_view text) {
  absl::StatusOr<std::vector<ServerMember>> members = ParseServerMembers(text, std::nullopt);
  if (!members.ok()) return members.status();
  if (members->size() != 1) {
    return absl::InvalidArgumentError(absl::StrCat(
        "name one member, HOST:PORT, got '", absl::string_view(text.data(), text.size()), "'"));
  }
  return members->front();
}

std::string JoinTargets(const std::vector<ServerMember>& members) {
  return absl::StrJoin(members, ",",
                       [](std::string* out, const ServerMember& m) { out->append(m.Target()); });
}

}  // namespace vipu::wire
