// Access keys: random generation, PBKDF2-HMAC-SHA256 hashing and verification (OpenSSL).
#include "server/security/access_key.h"

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/rand.h>
#include <openssl/sha.h>

#include <cstdint>
#include <stdexcept>
#include <vector>

#include "absl/strings/escaping.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"

namespace vipu::server {
namespace {

constexpr char kScheme[] = "pbkdf2-sha256";
constexpr size_t kSaltBytes = 16;
constexpr size_t kHashBytes = 32;

std::string RandomBytes(size_t n) {
  std::string out(n, '\0');
  if (RAND_bytes(reinterpret_cast<unsigned char*>(out.data()), static_cast<int>(n)) != 1) {
    // No safe fallback for key material.
    throw std::runtime_error("RAND_bytes failed");
  }
  return out;
}

bool Pbkdf2(std::string_view key, const std::string& salt, int iterations, std::string* out) {
  out->assign(kHashBytes, '\0');
  return PKCS5_PBKDF2_HMAC(key.data(), static_cast<int>(key.size()),
                           reinterpret_cast<const unsigned char*>(salt.data()),
                           static_cast<int>(salt.size()), iterations, EVP_sha256(),
                           static_cast<int>(kHashBytes),
                           reinterpret_cast<unsigned char*>(out->data())) == 1;
}

}  // namespace

std::string NewAccessKey() {
  static constexpr char kAlphabet[] =
      "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_-";
  std::string bytes = RandomBytes(kAccessKeyLength);
  std::string key;
  for (char b : bytes) key.push_back(kAlphabet[static_cast<uint8_t>(b) & 63]);  // 64 symbols
  return key;
}

absl::StatusOr<std::string> HashAccessKey(std::string_view key, int iterations) {
  if (key.empty()) return absl::InvalidArgumentError("access key: must not be empty");
  if (iterations < kMinHashIterations) {
    return absl::InvalidArgumentError(
        absl::StrCat("iterations: must be at least ", kMinHashIterations, ", got ", iterations));
  }
  std::string salt = RandomBytes(kSaltBytes);
  std::string hash;
  if (!Pbkdf2(key, salt, iterations, &hash)) return absl::InternalError("PBKDF2 failed");
  return absl::StrCat(kScheme, "$", iterations, "$", absl::BytesToHexString(salt), "$",
                      absl::BytesToHexString(hash));
}

bool VerifyAccessKey(std::string_view key, std::string_view encoded) {
  std::vector<absl::string_view> parts =
      absl::StrSplit(absl::string_view(encoded.data(), encoded.size()), '$');
  int iterations = 0;
  if (parts.size() != 4 || parts[0] != kScheme || !absl::SimpleAtoi(parts[1], &iterations) ||
      iterations < kMinHashIterations || parts[2].size() != 2 * kSaltBytes ||
      parts[3].size() != 2 * kHashBytes) {
    return false;
  }
  std::string salt = absl::HexStringToBytes(parts[2]);
  std::string expected = absl::HexStringToBytes(parts[3]);
  std::string actual;
  if (!Pbkdf2(key, salt, iterations, &actual)) return false;
  return CRYPTO_memcmp(actual.data(), expected.data(), kHashBytes) == 0;
}

std::string Sha256Hex(std::string_view data) {
  unsigned char digest[SHA256_DIGEST_LENGTH];
  SHA256(reinterpret_cast<const unsigned char*>(data.data()), data.size(), digest);
  return absl::BytesToHexString(
      absl::string_view(reinterpret_cast<const char*>(digest), sizeof(digest)));
}

}  // namespace vipu::server
