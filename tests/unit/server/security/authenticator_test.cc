// Authenticator, UserDirectory and the AccessControl gate against a real
// Store in a temporary directory (cheap PBKDF2 cost for speed).
#include "server/security/authenticator.h"

#include <stdlib.h>

#include <filesystem>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "server/security/access_control.h"
#include "server/security/user_directory.h"
#include "storage/sqlite_store.h"
#include "storage/store.h"

namespace vipu::server {
namespace {

using ::testing::HasSubstr;

std::string Msg(const absl::Status& s) { return std::string(s.message()); }

class AuthTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string tmpl = (std::filesystem::temp_directory_path() / "vipu-auth-XXXXXX").string();
    ASSERT_NE(mkdtemp(tmpl.data()), nullptr);
    dir_ = tmpl;
    auto store = storage::SqliteStore::Open(dir_ + "/vipu.db");
    ASSERT_TRUE(store.ok()) << store.status();
    store_ = *std::move(store);
    // One cluster with allocation "a1" (ag1) and "a2" (ag2).
    ASSERT_TRUE(store_
                    ->Write([](storage::WriteTxn& txn) -> absl::Status {
                      for (const char* id : {"ag1", "ag2"}) {
                        fabric::Agent a;
                        a.id = id;
                        a.host = "127.0.0.1";
                        a.port = 1;
                        if (absl::Status s = txn.InsertAgent(a); !s.ok()) return s;
                      }
                      fabric::Cluster c;
                      c.id = "c";
                      c.agent_ids = {"ag1", "ag2"};
                      if (absl::Status s = txn.InsertCluster(c); !s.ok()) return s;
                      fabric::Allocation a1{"a1", "c", {"ag1"}};
                      fabric::Allocation a2{"a2", "c", {"ag2"}};
                      if (absl::Status s = txn.InsertAllocation(a1); !s.ok()) return s;
                      return txn.InsertAllocation(a2);
                    })
                    .ok());
    authenticator_ = std::make_unique<Authenticator>(store_.get());
    users_ =
        std::make_unique<UserDirectory>(store_.get(), authenticator_.get(), kMinHashIterations);
  }
  void TearDown() override {
    store_.reset();
    std::filesystem::remove_all(dir_);
  }

  std::string dir_;
  std::unique_ptr<storage::Store> store_;
  std::unique_ptr<Authenticator> authenticator_;
  std::unique_ptr<UserDirectory> users_;
};

TEST_F(AuthTest, RightKeyAuthenticatesWithTheUsersGrants) {
  auto key = users_->Create("alice", {"a1"}, false);
  ASSERT_TRUE(key.ok()) << key.status();
  auto caller = authenticator_->Authenticate("alice", *key);
  ASSERT_TRUE(caller.ok()) << caller.status();
  EXPECT_EQ(caller->user_id, "alice");
  EXPECT_TRUE(caller->authenticated);
  EXPECT_FALSE(caller->is_admin);
  EXPECT_EQ(caller->allocations, std::vector<std::string>{"a1"});
}

TEST_F(AuthTest, OnlyTheHashIsStored) {
  auto key = users_->Create("alice", {}, false);
  ASSERT_TRUE(key.ok());
  auto list = users_->List();
  ASSERT_TRUE(list.ok());
  ASSERT_EQ(list->size(), 1u);
  EXPECT_EQ(list->front().key_hash.find(*key), std::string::npos);
  EXPECT_TRUE(VerifyAccessKey(*key, list->front().key_hash));
}

TEST_F(AuthTest, WrongMissingOrUnknownIsUnauthenticated) {
  auto key = users_->Create("alice", {}, false);
  ASSERT_TRUE(key.ok());
  auto wrong = authenticator_->Authenticate("alice", *key + "x");
  EXPECT_EQ(wrong.status().code(), absl::StatusCode::kUnauthenticated);
  auto unknown = authenticator_->Authenticate("mallory", *key);
  EXPECT_EQ(unknown.status().code(), absl::StatusCode::kUnauthenticated);
  // One message for both, so that user ids cannot be probed.
  EXPECT_EQ(Msg(wrong.status()).substr(0, 30), Msg(unknown.status()).substr(0, 30));
  auto no_user = authenticator_->Authenticate("", *key);
  EXPECT_EQ(no_user.status().code(), absl::StatusCode::kUnauthenticated);
  EXPECT_THAT(Msg(no_user.status()), HasSubstr("vipu-user-id: missing"));
  auto no_key = authenticator_->Authenticate("alice", "");
  EXPECT_EQ(no_key.status().code(), absl::StatusCode::kUnauthenticated);
  EXPECT_THAT(Msg(no_key.status()), HasSubstr("vipu-access-key: missing"));
}

TEST_F(AuthTest, VerifiedKeysAreCachedAndForgottenOnRemoval) {
  ASSERT_TRUE(users_->Create("root", {}, true).ok());  // keeps an admin around
  auto key = users_->Create("alice", {}, false);
  ASSERT_TRUE(key.ok());
  ASSERT_TRUE(authenticator_->Authenticate("alice", *key).ok());
  const uint64_t slow = authenticator_->SlowVerificationsForTesting();
  for (int i = 0; i < 5; ++i) ASSERT_TRUE(authenticator_->Authenticate("alice", *key).ok());
  EXPECT_EQ(authenticator_->SlowVerificationsForTesting(), slow);
  // A wrong key is never cached.
  EXPECT_FALSE(authenticator_->Authenticate("alice", "nope").ok());
  EXPECT_FALSE(authenticator_->Authenticate("alice", "nope").ok());
  EXPECT_EQ(authenticator_->SlowVerificationsForTesting(), slow + 2);
  ASSERT_TRUE(users_->Remove("alice").ok());
  EXPECT_EQ(authenticator_->Authenticate("alice", *key).status().code(),
            absl::StatusCode::kUnauthenticated);
}

TEST_F(AuthTest, CreateValidatesEveryField) {
  for (const std::string& bad :
       {std::string(""), std::string("-x"), std::string("a b"), std::string(65, 'a')}) {
    auto r = users_->Create(bad, {}, false);
    EXPECT_EQ(r.status().code(), absl::StatusCode::kInvalidArgument) << bad;
    EXPECT_THAT(Msg(r.status()), HasSubstr("user id")) << bad;
  }
  auto bad_allocation = users_->Create("bob", {"a1", "no/slash"}, false);
  EXPECT_EQ(bad_allocation.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(Msg(bad_allocation.status()), HasSubstr("allocations"));
  auto twice = users_->Create("bob", {"a1", "a1"}, false);
  EXPECT_EQ(twice.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(Msg(twice.status()), HasSubstr("listed twice"));
  auto missing = users_->Create("bob", {"a1", "a9"}, false);
  EXPECT_EQ(missing.status().code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(Msg(missing.status()), HasSubstr("allocations: allocation 'a9' not found"));
  // Nothing was written by the refused calls.
  EXPECT_TRUE(users_->List()->empty());
  ASSERT_TRUE(users_->Create("bob", {}, false).ok());
  EXPECT_EQ(users_->Create("bob", {}, false).status().code(), absl::StatusCode::kAlreadyExists);
}

TEST_F(AuthTest, RemoveRefusesUnknownBadAndTheLastAdmin) {
  EXPECT_EQ(users_->Remove("ghost").code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(users_->Remove("bad id").code(), absl::StatusCode::kInvalidArgument);
  ASSERT_TRUE(users_->Create("root", {}, true).ok());
  absl::Status last = users_->Remove("root");
  EXPECT_EQ(last.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(Msg(last), HasSubstr("last admin"));
  ASSERT_TRUE(users_->Create("root2", {}, true).ok());
  EXPECT_TRUE(users_->Remove("root").ok());
}

TEST_F(AuthTest, RotatedKeyReplacesTheCachedOldOneAtOnce) {
  ASSERT_TRUE(users_->Create("root", {}, true).ok());
  auto old_key = users_->Create("alice", {"a1"}, false);
  ASSERT_TRUE(old_key.ok());
  ASSERT_TRUE(authenticator_->Authenticate("alice", *old_key).ok());  // now cached
  UserUpdate rotate;
  rotate.rotate_key = true;
  auto updated = users_->Update("alice", rotate);
  ASSERT_TRUE(updated.ok()) << updated.status();
  ASSERT_FALSE(updated->access_key.empty());
  EXPECT_NE(updated->access_key, *old_key);
  EXPECT_EQ(authenticator_->Authenticate("alice", *old_key).status().code(),
            absl::StatusCode::kUnauthenticated);
  auto fresh = authenticator_->Authenticate("alice", updated->access_key);
  ASSERT_TRUE(fresh.ok()) << fresh.status();
  EXPECT_EQ(fresh->allocations, std::vector<std::string>{"a1"});  // grants kept
}

TEST_F(AuthTest, UpdateChangesGrantsSeenByTheNextCall) {
  ASSERT_TRUE(users_->Create("root", {}, true).ok());
  auto key = users_->Create("alice", {"a1"}, false);
  ASSERT_TRUE(key.ok());
  ASSERT_TRUE(authenticator_->Authenticate("alice", *key).ok());  // cached with a1
  UserUpdate update;
  update.allocations = std::vector<std::string>{"a2"};
  update.is_admin = true;
  auto updated = users_->Update("alice", update);
  ASSERT_TRUE(updated.ok()) << updated.status();
  EXPECT_TRUE(updated->access_key.empty());
  auto caller = authenticator_->Authenticate("alice", *key);
  ASSERT_TRUE(caller.ok()) << caller.status();
  EXPECT_EQ(caller->allocations, std::vector<std::string>{"a2"});
  EXPECT_TRUE(caller->is_admin);
  // An empty list grants every allocation.
  UserUpdate all;
  all.allocations = std::vector<std::string>{};
  ASSERT_TRUE(users_->Update("alice", all).ok());
  EXPECT_TRUE(authenticator_->Authenticate("alice", *key)->allocations.empty());
}

TEST_F(AuthTest, UpdateRefusesEmptyUnknownBadAndChangesNothing) {
  ASSERT_TRUE(users_->Create("root", {}, true).ok());
  ASSERT_TRUE(users_->Create("alice", {"a1"}, false).ok());
  auto before = users_->List();
  ASSERT_TRUE(before.ok());
  UserUpdate nothing;
  auto empty = users_->Update("alice", nothing);
  EXPECT_EQ(empty.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(Msg(empty.status()), HasSubstr("nothing to change"));
  UserUpdate admin;
  admin.is_admin = true;
  EXPECT_EQ(users_->Update("ghost", admin).status().code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(users_->Update("bad id", admin).status().code(), absl::StatusCode::kInvalidArgument);
  UserUpdate twice;
  twice.allocations = std::vector<std::string>{"a1", "a1"};
  twice.is_admin = true;
  EXPECT_THAT(Msg(users_->Update("alice", twice).status()), HasSubstr("listed twice"));
  UserUpdate missing;
  missing.allocations = std::vector<std::string>{"a9"};
  missing.is_admin = true;
  auto m = users_->Update("alice", missing);
  EXPECT_EQ(m.status().code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(Msg(m.status()), HasSubstr("allocation 'a9' not found"));
  UserUpdate bad;
  bad.allocations = std::vector<std::string>{"no/slash"};
  EXPECT_EQ(users_->Update("alice", bad).status().code(), absl::StatusCode::kInvalidArgument);
  auto after = users_->List();
  ASSERT_TRUE(after.ok());
  ASSERT_EQ(after->size(), before->size());
  for (size_t i = 0; i < after->size(); ++i) {
    EXPECT_EQ((*after)[i].is_admin, (*before)[i].is_admin);
    EXPECT_EQ((*after)[i].allocations, (*before)[i].allocations);
    EXPECT_EQ((*after)[i].key_hash, (*before)[i].key_hash);
  }
}

TEST_F(AuthTest, LastAdminKeepsTheFlagButAnotherAdminMayDropIt) {
  ASSERT_TRUE(users_->Create("root", {}, true).ok());
  UserUpdate demote;
  demote.is_admin = false;
  auto last = users_->Update("root", demote);
  EXPECT_EQ(last.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(Msg(last.status()), HasSubstr("last admin"));
  ASSERT_TRUE(users_->Create("root2", {}, true).ok());
  auto ok = users_->Update("root", demote);
  ASSERT_TRUE(ok.ok()) << ok.status();
  EXPECT_FALSE(ok->user.is_admin);
  // Asking for what the user already has is not an error.
  EXPECT_TRUE(users_->Update("root", demote).ok());
}

TEST_F(AuthTest, DefaultAdminIsCreatedOnlyOnce) {
  auto first = users_->EnsureDefaultAdmin("john");
  ASSERT_TRUE(first.ok());
  ASSERT_TRUE(first->has_value());
  auto caller = authenticator_->Authenticate("john", **first);
  ASSERT_TRUE(caller.ok());
  EXPECT_TRUE(caller->is_admin);
  auto second = users_->EnsureDefaultAdmin("john");
  ASSERT_TRUE(second.ok());
  EXPECT_FALSE(second->has_value());
  EXPECT_EQ(users_->EnsureDefaultAdmin("bad id").status().code(),
            absl::StatusCode::kInvalidArgument);
}

TEST_F(AuthTest, GateRefusesNonAdminsForAdminActions) {
  auto root_key = users_->Create("root", {}, true);
  auto alice_key = users_->Create("alice", {"a1"}, false);
  ASSERT_TRUE(root_key.ok() && alice_key.ok());
  std::unique_ptr<AccessControl> owned = AccessControl::Secure(*authenticator_, nullptr);
  AccessControl& gate = *owned;
  const Action admin_action{"create agent", true, true};
  auto denied = gate.Admit(CallInfo{"alice", *alice_key, "ipv4:127.0.0.1:1"}, admin_action);
  EXPECT_EQ(denied.status().code(), absl::StatusCode::kPermissionDenied);
  EXPECT_THAT(Msg(denied.status()), HasSubstr("needs an admin user"));
  EXPECT_TRUE(gate.Admit(CallInfo{"root", *root_key, "p"}, admin_action).ok());
  EXPECT_TRUE(gate.Admit(CallInfo{"alice", *alice_key, "p"}, Action{"list partitions"}).ok());
  auto anonymous = gate.Admit(CallInfo{"", "", "p"}, Action{"list partitions"});
  EXPECT_EQ(anonymous.status().code(), absl::StatusCode::kUnauthenticated);
  EXPECT_EQ(gate.RefusalsForTesting(), 2u);
}

TEST_F(AuthTest, GateRateLimitsMutatingCallsPerUser) {
  auto alice_key = users_->Create("alice", {}, false);
  auto bob_key = users_->Create("bob", {}, false);
  ASSERT_TRUE(alice_key.ok() && bob_key.ok());
  auto limiter = RateLimiter::Create(0.001, 2);  // no refill within the test
  ASSERT_TRUE(limiter.ok());
  std::unique_ptr<AccessControl> owned = AccessControl::Secure(*authenticator_, limiter->get());
  AccessControl& gate = *owned;
  const Action create{"create partition", false, true};
  const Action list{"list partitions"};
  CallInfo alice{"alice", *alice_key, "ipv4:10.0.0.1:1"};
  EXPECT_TRUE(gate.Admit(alice, create).ok());
  EXPECT_TRUE(gate.Admit(alice, create).ok());
  auto third = gate.Admit(alice, create);
  EXPECT_EQ(third.status().code(), absl::StatusCode::kResourceExhausted);
  EXPECT_THAT(Msg(third.status()), HasSubstr("rate limit"));
  EXPECT_TRUE(gate.Admit(alice, list).ok());  // reads are not limited
  EXPECT_TRUE(gate.Admit(CallInfo{"bob", *bob_key, "ipv4:10.0.0.1:2"}, create).ok());
}

TEST_F(AuthTest, InsecureGateAdmitsEveryoneButLimitsPerPeerHost) {
  auto limiter = RateLimiter::Create(0.001, 1);
  ASSERT_TRUE(limiter.ok());
  std::unique_ptr<AccessControl> owned = AccessControl::InsecureAdmittingEveryone(limiter->get());
  AccessControl& gate = *owned;
  const Action create{"create partition", false, true};
  auto first = gate.Admit(CallInfo{"", "", "ipv4:10.0.0.1:1000"}, create);
  ASSERT_TRUE(first.ok());
  EXPECT_FALSE(first->authenticated);
  EXPECT_TRUE(first->Unrestricted());
  // Another connection from the same host shares the bucket.
  EXPECT_EQ(gate.Admit(CallInfo{"", "", "ipv4:10.0.0.1:2000"}, create).status().code(),
            absl::StatusCode::kResourceExhausted);
  EXPECT_TRUE(gate.Admit(CallInfo{"", "", "ipv4:10.0.0.2:1000"}, create).ok());
  // Admin actions are open without --secure (docs/security.md).
  EXPECT_TRUE(gate.Admit(CallInfo{}, Action{"list agents", true, false}).ok());
}

TEST(CallerTest, VisibilityRules) {
  fabric::Partition mine;
  mine.id = "p";
  mine.owner = "alice";
  mine.allocation_id = "a1";
  Caller alice;
  alice.user_id = "alice";
  alice.authenticated = true;
  alice.allocations = {"a1"};
  EXPECT_TRUE(alice.MaySee(mine, false));
  Caller bob = alice;
  bob.user_id = "bob";
  EXPECT_FALSE(bob.MaySee(mine, false));
  EXPECT_TRUE(bob.MaySee(mine, true));  // shared in a granted allocation
  bob.allocations = {"a2"};
  EXPECT_FALSE(bob.MaySee(mine, true));  // shared, but in another allocation
  EXPECT_FALSE(bob.MayUseAllocation("a1"));
  bob.allocations = {};  // every allocation
  EXPECT_TRUE(bob.MayUseAllocation("a1"));
  bob.is_admin = true;
  bob.allocations = {"a2"};
  EXPECT_TRUE(bob.MaySee(mine, false));
  EXPECT_TRUE(Caller::System().MaySee(mine, false));
  EXPECT_EQ(PeerHost("ipv4:10.0.0.1:5000"), "ipv4:10.0.0.1");
  EXPECT_EQ(PeerHost("ipv6:[::1]:5000"), "ipv6:[::1]");
  EXPECT_EQ(PeerHost("unix:"), "unix:");
}

}  // namespace
}  // namespace vipu::server
