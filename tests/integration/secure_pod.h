// The fixture the secure-mode tests share: certificates of their own
// (`vipu-server --tls-init`) and a pod16 vipu-server started on them with
// --secure, whose default admin is "root".
#ifndef VIPU_TESTS_INTEGRATION_SECURE_POD_H_
#define VIPU_TESTS_INTEGRATION_SECURE_POD_H_

#include <memory>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "tests/integration/harness.h"

namespace vipu::testing {

class SecurePodTest : public ::testing::Test {
 protected:
  void SetUp() override {
    work_ = MakeTempDir();
    tls_ = work_ + "/tls";
    CommandResult init = RunCommand({VIPU_SERVER_BIN, "--tls-init", tls_});
    ASSERT_EQ(init.exit_code, 0) << init.err;
  }
  void TearDown() override {
    server_.reset();
    RemoveTree(work_);
  }

  // Starts the server with `extra` flags and reads root's key from its log.
  void StartSecure(const std::vector<std::string>& extra = {}) {
    server_ = ServerProcess::Start(
        "pod16", Join({"--secure", "--tls-dir", tls_, "--default-user-id", "root"}, extra));
    root_key_ = DefaultAdminKey(*server_);
    ASSERT_FALSE(root_key_.empty()) << ReadFile(server_->dir() + "/server.log");
  }
  // The CLI flags of `user` with `key` and the client certificate.
  std::vector<std::string> As(const std::string& user, const std::string& key) const {
    return Join({"--api-user-id", user, "--api-access-key", key}, ClientTls(tls_));
  }
  // `vipu-admin args` as root.
  CommandResult Admin(const std::vector<std::string>& args) const {
    return server_->VipuAdmin(Join(As("root", root_key_), args));
  }

  std::string work_, tls_, root_key_;
  std::unique_ptr<ServerProcess> server_;
};

}  // namespace vipu::testing

#endif  // VIPU_TESTS_INTEGRATION_SECURE_POD_H_
