// Access keys of the secure mode: random, shown once, stored only as a
// salted PBKDF2-HMAC-SHA256 hash ("pbkdf2-sha256$<iterations>$<salt hex>$<hash hex>").
#ifndef VIPU_SERVER_SECURITY_ACCESS_KEY_H_
#define VIPU_SERVER_SECURITY_ACCESS_KEY_H_

#include <string>
#include <string_view>

#include "absl/status/statusor.h"

namespace vipu::server {

// OWASP's 2023 floor for PBKDF2-HMAC-SHA256 is 600k; we take 100k because
// the Authenticator caches verified keys, so the cost is paid once per
// (user, key) and process, and a CLI call must stay well under a second.
inline constexpr int kDefaultHashIterations = 100000;
inline constexpr int kMinHashIterations = 1000;
inline constexpr size_t kAccessKeyLength = 22;  // 132 random bits

// kAccessKeyLength characters of [A-Za-z0-9_-] from OpenSSL's CSPRNG.
std::string NewAccessKey();

// A fresh 16-byte salt per call. INVALID_ARGUMENT when `iterations` is below
// kMinHashIterations or `key` is empty.
absl::StatusOr<std::string> HashAccessKey(std::string_view key,
                                          int iterations = kDefaultHashIterations);

// Constant-time comparison; false for a malformed `encoded` too.
bool VerifyAccessKey(std::string_view key, std::string_view encoded);

// Lower-case hex SHA-256 (cache keys: the key itself is not kept in memory).
std::string Sha256Hex(std::string_view data);

}  // namespace vipu::server

#endif  // VIPU_SERVER_SECURITY_ACCESS_KEY_H_
