// Access keys: randomness, salted hashes that verify only the same key, cost and bad input.
#include "server/security/access_key.h"

#include <set>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace vipu::server {
namespace {

using ::testing::HasSubstr;
using ::testing::StartsWith;

TEST(AccessKeyTest, NewKeysAreLongRandomAndUrlSafe) {
  std::set<std::string> keys;
  for (int i = 0; i < 200; ++i) {
    std::string key = NewAccessKey();
    ASSERT_EQ(key.size(), kAccessKeyLength);
    for (char c : key) {
      EXPECT_TRUE(isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '-') << key;
    }
    keys.insert(key);
  }
  EXPECT_EQ(keys.size(), 200u);
}

TEST(AccessKeyTest, HashVerifiesOnlyTheSameKey) {
  auto hash = HashAccessKey("s3cret", kMinHashIterations);
  ASSERT_TRUE(hash.ok()) << hash.status();
  EXPECT_THAT(*hash, StartsWith("pbkdf2-sha256$1000$"));
  EXPECT_EQ(hash->find("s3cret"), std::string::npos);
  EXPECT_TRUE(VerifyAccessKey("s3cret", *hash));
  EXPECT_FALSE(VerifyAccessKey("s3creT", *hash));
  EXPECT_FALSE(VerifyAccessKey("", *hash));
  EXPECT_FALSE(VerifyAccessKey("s3cret ", *hash));
}

TEST(AccessKeyTest, SaltMakesEveryHashDifferent) {
  auto a = HashAccessKey("same", kMinHashIterations);
  auto b = HashAccessKey("same", kMinHashIterations);
  ASSERT_TRUE(a.ok() && b.ok());
  EXPECT_NE(*a, *b);
  EXPECT_TRUE(VerifyAccessKey("same", *a));
  EXPECT_TRUE(VerifyAccessKey("same", *b));
}

TEST(AccessKeyTest, DefaultCostIsAtLeast100k) {
  EXPECT_GE(kDefaultHashIterations, 100000);
  auto hash = HashAccessKey("k");
  ASSERT_TRUE(hash.ok());
  EXPECT_THAT(*hash, StartsWith("pbkdf2-sha256$100000$"));
}

TEST(AccessKeyTest, RefusesBadInput) {
  auto empty = HashAccessKey("", kMinHashIterations);
  EXPECT_EQ(empty.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(empty.status().message()), HasSubstr("access key: must not be empty"));
  auto cheap = HashAccessKey("k", kMinHashIterations - 1);
  EXPECT_EQ(cheap.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(cheap.status().message()), HasSubstr("iterations: must be at least"));
}

TEST(AccessKeyTest, MalformedHashesNeverVerify) {
  auto good = HashAccessKey("k", kMinHashIterations);
  ASSERT_TRUE(good.ok());
  const std::string salt_and_hash = good->substr(good->find('$', 14));  // "$salt$hash"
  for (const std::string& bad : {
           std::string(""), std::string("k"),
           "md5$1000" + salt_and_hash,               // other scheme
           "pbkdf2-sha256$999" + salt_and_hash,      // below the floor
           "pbkdf2-sha256$x" + salt_and_hash,        // not a number
           std::string("pbkdf2-sha256$1000$00$00"),  // short salt and hash
           *good + "$extra",                         // extra field
       }) {
    EXPECT_FALSE(VerifyAccessKey("k", bad)) << bad;
  }
}

TEST(AccessKeyTest, Sha256HexIsTheKnownDigest) {
  EXPECT_EQ(Sha256Hex("abc"), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
}

}  // namespace
}  // namespace vipu::server
