// The data plane on a secure pod (docs/security.md, "poprun on a secure
// pod"): the IPUoF client attaching over mutual TLS with the vipu CLIs'
// credentials (GetPartitionIpuofConfig with the access key, RunWorkload with
// the client certificate and the machine's certificate checked against its
// endpoint), and poprun handing those credentials to its instances with the
// access key on no command line.
#include <gmock/gmock.h>
#include <grpcpp/grpcpp.h>
#include <grpcpp/security/server_credentials.h>
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <fstream>
#include <map>
#include <memory>
#include <regex>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "popdist/ipuof_client.h"
#include "tests/integration/harness.h"
#include "tests/integration/secure_pod.h"
#include "vipu_agent.grpc.pb.h"

namespace vipu::testing {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

// A machine's agent that serves RunWorkload over mutual TLS with the pod's
// server certificate (SAN 127.0.0.1 and localhost), on `address`.
class TlsAgent final : public vipuagent::Agent::Service {
 public:
  TlsAgent(const std::string& tls, const std::string& address) {
    grpc::SslServerCredentialsOptions options(
        GRPC_SSL_REQUEST_AND_REQUIRE_CLIENT_CERTIFICATE_AND_VERIFY);
    options.pem_root_certs = ReadFile(tls + "/server/ca.pem");
    options.pem_key_cert_pairs.push_back(
        {ReadFile(tls + "/server/key.pem"), ReadFile(tls + "/server/cert.pem")});
    grpc::ServerBuilder builder;
    builder.AddChannelArgument(GRPC_ARG_ALLOW_REUSEPORT, 0);
    builder.AddListeningPort(address, grpc::SslServerCredentials(options), &port_);
    builder.RegisterService(this);
    server_ = builder.BuildAndStart();
  }
  ~TlsAgent() override {
    if (server_ != nullptr) server_->Shutdown();
  }
  int port() const { return port_; }

  grpc::Status RunWorkload(grpc::ServerContext* context,
                           const vipuagent::RunWorkloadRequest* request,
                           vipuagent::RunWorkloadReply* reply) override {
    peer_authenticated = context->auth_context()->IsPeerAuthenticated();
    saw_access_key = context->client_metadata().count("vipu-access-key") > 0;
    for (uint32_t i = 0; i < request->steps(); ++i) reply->add_step_time_s(0.5);
    reply->add_agent_ids("ag1");
    return grpc::Status::OK;
  }
  bool peer_authenticated = false;
  bool saw_access_key = false;

 private:
  int port_ = 0;
  std::unique_ptr<grpc::Server> server_;
};

class IpuofSecureTest : public SecurePodTest {
 protected:
  void SetUp() override {
    SecurePodTest::SetUp();
    StartSecure();
  }

  // The admin's credentials as the CLIs take them from the environment.
  std::map<std::string, std::string> Credentials(const std::string& key) const {
    return {{"VIPU_CLI_API_USER_ID", "root"},
            {"VIPU_CLI_API_ACCESS_KEY", key},
            {"VIPU_CLI_API_TLS_CA", tls_ + "/client/ca.pem"},
            {"VIPU_CLI_API_TLS_CERT", tls_ + "/client/cert.pem"},
            {"VIPU_CLI_API_TLS_KEY", tls_ + "/client/key.pem"}};
  }
  popdist::ipuof::Environment Attaching(
      const std::string& partition, const std::map<std::string, std::string>& credentials) const {
    popdist::ipuof::Environment env = {{"IPUOF_VIPU_API_HOST", "127.0.0.1"},
                                       {"IPUOF_VIPU_API_PORT", std::to_string(server_->port())},
                                       {"IPUOF_VIPU_API_PARTITION_ID", partition},
                                       {"IPUOF_VIPU_API_TIMEOUT", "20"}};
    env.insert(credentials.begin(), credentials.end());
    return env;
  }
  CommandResult Vipu(const std::vector<std::string>& args) const {
    return server_->Vipu(Join(As("root", root_key_), args));
  }
  // An IPUoF config naming one device at host:port.
  std::string WriteIpuofConfig(const std::string& host, int port) const {
    const std::string path = absl::StrCat(work_, "/", host, "_", port, "_ipuof.conf");
    std::ofstream(path) << "{\"attributes\":{\"Partition Id\":\"p\",\"GCD Id\":\"0\"},"
                        << "\"devices\":[{\"device_id\":0,\"ip\":\"" << host
                        << "\",\"server_port\":" << port << ",\"ipu_id\":0}]}";
    return path;
  }
};

TEST_F(IpuofSecureTest, AttachesToTheServerOverTlsWithTheAccessKey) {
  CommandResult created = Vipu({"create", "partition", "p", "--size", "4"});
  ASSERT_EQ(created.exit_code, 0) << created.err;

  auto client = popdist::ipuof::IpuofClient::Attach(Attaching("p", Credentials(root_key_)),
                                                    absl::Seconds(20), "");
  ASSERT_TRUE(client.ok()) << client.status();
  EXPECT_EQ(client->partition_id(), "p");
  EXPECT_EQ(client->devices().size(), 4u);
  EXPECT_TRUE(client->tls());
  EXPECT_EQ(client->source(), absl::StrCat("V-IPU server 127.0.0.1:", server_->port()));

  // A wrong key, or none, is the server's refusal, code and message.
  auto wrong = popdist::ipuof::IpuofClient::Attach(Attaching("p", Credentials("not-the-key")),
                                                   absl::Seconds(20), "");
  EXPECT_EQ(wrong.status().code(), absl::StatusCode::kUnauthenticated) << wrong.status();
  EXPECT_THAT(std::string(wrong.status().message()), HasSubstr("unauthenticated"));
  std::map<std::string, std::string> no_key = Credentials(root_key_);
  no_key.erase("VIPU_CLI_API_ACCESS_KEY");
  auto keyless = popdist::ipuof::IpuofClient::Attach(Attaching("p", no_key), absl::Seconds(20), "");
  EXPECT_EQ(keyless.status().code(), absl::StatusCode::kUnauthenticated) << keyless.status();
  // Plaintext does not get through the handshake.
  std::map<std::string, std::string> plaintext = {{"VIPU_CLI_API_USER_ID", "root"},
                                                  {"VIPU_CLI_API_ACCESS_KEY", root_key_}};
  auto plain = popdist::ipuof::IpuofClient::Attach(Attaching("p", plaintext), absl::Seconds(5), "");
  EXPECT_EQ(plain.status().code(), absl::StatusCode::kUnavailable) << plain.status();
  // A CA that cannot be read is named before anything is sent.
  std::map<std::string, std::string> missing_ca = Credentials(root_key_);
  missing_ca["VIPU_CLI_API_TLS_CA"] = work_ + "/absent/ca.pem";
  auto no_ca =
      popdist::ipuof::IpuofClient::Attach(Attaching("p", missing_ca), absl::Seconds(5), "");
  EXPECT_EQ(no_ca.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(no_ca.status().message(),
            absl::StrCat("VIPU_CLI_API_TLS_CA: cannot read '", work_, "/absent/ca.pem'"));

  // The same credentials from the vipu CLI configuration file.
  const std::string hcl = work_ + "/vipu-cli.hcl";
  std::ofstream(hcl) << "api-user-id = \"root\"\napi-access-key = \"" << root_key_
                     << "\"\napi-tls-ca = \"tls/client/ca.pem\"\n"
                     << "api-tls-cert = \"tls/client/cert.pem\"\n"
                     << "api-tls-key = \"tls/client/key.pem\"\n";
  auto from_file = popdist::ipuof::IpuofClient::Attach(Attaching("p", {}), absl::Seconds(20), hcl);
  ASSERT_TRUE(from_file.ok()) << from_file.status();
  EXPECT_TRUE(from_file->tls());
}

TEST_F(IpuofSecureTest, RunSpeaksMutualTlsToTheMachine) {
  TlsAgent agent(tls_, "127.0.0.1:0");
  ASSERT_NE(agent.port(), 0);
  popdist::ipuof::Environment env = Credentials(root_key_);
  env["IPUOF_CONFIG_PATH"] = WriteIpuofConfig("127.0.0.1", agent.port());
  auto client = popdist::ipuof::IpuofClient::Attach(env, absl::Seconds(5), "");
  ASSERT_TRUE(client.ok()) << client.status();
  auto run = client->Run(vipuagent::WorkloadSpec(), 2, absl::Seconds(20));
  ASSERT_TRUE(run.ok()) << run.status();
  EXPECT_EQ(run->step_time_s, (std::vector<double>{0.5, 0.5}));
  EXPECT_TRUE(agent.peer_authenticated);  // the client certificate was presented
  EXPECT_FALSE(agent.saw_access_key);     // the key stays with vipu-server

  // Plaintext to a TLS machine fails, as does TLS with another pod's CA.
  auto plain = popdist::ipuof::IpuofClient::Attach(
      {{"IPUOF_CONFIG_PATH", WriteIpuofConfig("127.0.0.1", agent.port())}}, absl::Seconds(5), "");
  ASSERT_TRUE(plain.ok()) << plain.status();
  EXPECT_EQ(plain->Run(vipuagent::WorkloadSpec(), 1, absl::Seconds(5)).status().code(),
            absl::StatusCode::kUnavailable);
  const std::string other = work_ + "/other";
  ASSERT_EQ(RunCommand({VIPU_SERVER_BIN, "--tls-init", other}).exit_code, 0);
  popdist::ipuof::Environment foreign = env;
  foreign["VIPU_CLI_API_TLS_CA"] = other + "/client/ca.pem";
  auto untrusting = popdist::ipuof::IpuofClient::Attach(foreign, absl::Seconds(5), "");
  ASSERT_TRUE(untrusting.ok()) << untrusting.status();
  EXPECT_EQ(untrusting->Run(vipuagent::WorkloadSpec(), 1, absl::Seconds(5)).status().code(),
            absl::StatusCode::kUnavailable);

  // The machine's certificate must name the endpoint's host: 127.0.0.2 is
  // not among its SANs.
  TlsAgent elsewhere(tls_, "127.0.0.2:0");
  ASSERT_NE(elsewhere.port(), 0);
  popdist::ipuof::Environment misnamed = env;
  misnamed["IPUOF_CONFIG_PATH"] = WriteIpuofConfig("127.0.0.2", elsewhere.port());
  auto wrong_host = popdist::ipuof::IpuofClient::Attach(misnamed, absl::Seconds(5), "");
  ASSERT_TRUE(wrong_host.ok()) << wrong_host.status();
  EXPECT_EQ(wrong_host->Run(vipuagent::WorkloadSpec(), 1, absl::Seconds(5)).status().code(),
            absl::StatusCode::kUnavailable);
  EXPECT_FALSE(elsewhere.peer_authenticated);
}

#if defined(POPRUN_BIN)
// poprun against the secure server with the credentials in VIPU_CLI_*,
// mpirun through a wrapper that records its argv.
class PoprunSecureTest : public IpuofSecureTest {
 protected:
  void SetUp() override {
    IpuofSecureTest::SetUp();
    wrapper_ = work_ + "/mpirun-wrapper";
    std::ofstream(wrapper_) << "#!/bin/sh\nprintf '%s\\n' \"$@\" >> '" << work_
                            << "/mpirun.argv'\nexec mpirun \"$@\"\n";
    ASSERT_EQ(chmod(wrapper_.c_str(), 0755), 0);
  }
  CommandResult Poprun(const std::vector<std::string>& args,
                       std::map<std::string, std::string> env = {}) const {
    std::vector<std::string> argv = {
        POPRUN_BIN,           "-vv",       "--allow-run-as-root", "1",
        "--vipu-server-host", "127.0.0.1", "--vipu-server-port",  std::to_string(server_->port())};
    argv.insert(argv.end(), args.begin(), args.end());
    env.emplace("HOME", server_->home());
    // mpirun's session directory tree stays in the test's directory rather
    // than in the /tmp one that every mpirun of this user shares.
    env.emplace("TMPDIR", work_);
    env.emplace("POPRUN_MPIRUN", wrapper_);
    for (const auto& [name, value] : Credentials(root_key_)) env.emplace(name, value);
    return RunCommand(argv, env);
  }
  // Asserts that no command line poprun ran, logged or printed holds the key.
  void ExpectKeyOnNoCommandLine(const CommandResult& r) const {
    EXPECT_THAT(ReadFile(work_ + "/mpirun.argv"), HasSubstr("VIPU_CLI_API_ACCESS_KEY\n"));
    EXPECT_THAT(ReadFile(work_ + "/mpirun.argv"), Not(HasSubstr(root_key_)));
    EXPECT_THAT(r.err, HasSubstr("'-x' 'VIPU_CLI_API_ACCESS_KEY'"));
    EXPECT_THAT(r.err, Not(HasSubstr(root_key_)));
    EXPECT_THAT(r.out, Not(HasSubstr(root_key_)));
  }

  std::string wrapper_;
};

// Works with plaintext agents too: nothing here calls a machine.
TEST_F(PoprunSecureTest, InstancesGetTheCredentialsThroughTheEnvironmentOnly) {
  // Each instance notes the key it got and the command lines of itself and
  // of the process that started it (mpirun, or orted on another host).
  const std::string script =
      absl::StrCat("d='", work_, "/seen'; mkdir -p \"$d\"; r=$OMPI_COMM_WORLD_RANK; ",
                   "printenv VIPU_CLI_API_ACCESS_KEY > \"$d/key.$r\"; ",
                   "printenv VIPU_CLI_API_TLS_CERT > \"$d/cert.$r\"; ",
                   "tr '\\0' ' ' < /proc/$PPID/cmdline > \"$d/parent.$r\"; ",
                   "tr '\\0' ' ' < /proc/$$/cmdline > \"$d/self.$r\"");
  CommandResult r = Poprun({"--vipu-partition", "sp", "--num-replicas", "2", "--num-instances", "2",
                            "--ipus-per-replica", "4", "sh", "-c", script});
  ASSERT_EQ(r.exit_code, 0) << r.err << r.out;
  for (int i : {0, 1}) {
    SCOPED_TRACE(i);
    EXPECT_EQ(ReadFile(absl::StrCat(work_, "/seen/key.", i)), root_key_ + "\n");
    EXPECT_EQ(ReadFile(absl::StrCat(work_, "/seen/cert.", i)), tls_ + "/client/cert.pem\n");
    EXPECT_THAT(ReadFile(absl::StrCat(work_, "/seen/parent.", i)), Not(HasSubstr(root_key_)));
    EXPECT_THAT(ReadFile(absl::StrCat(work_, "/seen/self.", i)), Not(HasSubstr(root_key_)));
  }
  ExpectKeyOnNoCommandLine(r);

  // Through mpirun's remote launcher as well (hosts 127.0.0.2 and
  // 127.0.0.3, started by a launcher that records its command lines). Each
  // pretend host has its own Open MPI session directory base, as a real
  // host has its own /tmp: daemons of one job on the same hostname would
  // otherwise share one, each clearing it on start while another fills it.
  const std::string rsh = work_ + "/rsh-agent";
  std::ofstream(rsh) << "#!/bin/sh\nprintf '%s\\n' \"$*\" >> '" << work_ << "/rsh.argv'\n"
                     << "OMPI_MCA_orte_tmpdir_base='" << work_ << "/host-'\"$1\"\n"
                     << "export OMPI_MCA_orte_tmpdir_base\nshift\nexec sh -c \"$*\"\n";
  ASSERT_EQ(chmod(rsh.c_str(), 0755), 0);
  RemoveTree(work_ + "/seen");
  r = Poprun({"--host", "127.0.0.2,127.0.0.3", "--vipu-partition", "sp", "--num-replicas", "2",
              "--num-instances", "2", "--ipus-per-replica", "4", "sh", "-c", script},
             {{"OMPI_MCA_plm_rsh_agent", rsh}});
  ASSERT_EQ(r.exit_code, 0) << r.err << r.out;
  EXPECT_THAT(ReadFile(work_ + "/rsh.argv"), HasSubstr("127.0.0.2"));
  EXPECT_THAT(ReadFile(work_ + "/rsh.argv"), Not(HasSubstr(root_key_)));
  for (int i : {0, 1}) {
    SCOPED_TRACE(i);
    EXPECT_EQ(ReadFile(absl::StrCat(work_, "/seen/key.", i)), root_key_ + "\n");
    EXPECT_THAT(ReadFile(absl::StrCat(work_, "/seen/parent.", i)), Not(HasSubstr(root_key_)));
  }
  ExpectKeyOnNoCommandLine(r);
}

// An unreadable TLS file is named, with its variable, by poprun before
// anything is created and by the application when it attaches.
TEST_F(PoprunSecureTest, UnreadableTlsFilesAreNamed) {
  const std::string absent = work_ + "/absent/ca.pem";
  CommandResult r = Poprun({"--vipu-partition", "nf", "--num-replicas", "2", "true"},
                           {{"VIPU_CLI_API_TLS_CA", absent}});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_THAT(r.err, HasSubstr(absl::StrCat(
                         "POPRUN ERROR: vipu configuration: VIPU_CLI_API_TLS_CA: cannot read '",
                         absent, "'")));
  r = Poprun({"--vipu-partition", "nf", "--num-replicas", "2", "true"},
             {{"VIPU_CLI_API_TLS_KEY", ""}});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_THAT(r.err, HasSubstr("VIPU_CLI_API_TLS_CERT: needs --api-tls-key"));
  EXPECT_THAT(Vipu({"list", "partitions"}).out, Not(HasSubstr(" nf ")));

#if defined(POPDIST_SAMPLE_TRAIN_BIN)
  ASSERT_EQ(Vipu({"create", "partition", "p", "--size", "4"}).exit_code, 0);
  std::map<std::string, std::string> env = Credentials(root_key_);
  const popdist::ipuof::Environment attaching = Attaching("p", {});
  env.insert(attaching.begin(), attaching.end());
  env["HOME"] = server_->home();
  env["VIPU_CLI_API_TLS_CA"] = absent;
  CommandResult app = RunCommand(
      {POPDIST_SAMPLE_TRAIN_BIN, "--config", "pretrain_large_128_pod16", "--training-steps", "1"},
      env);
  EXPECT_EQ(app.exit_code, 3);
  EXPECT_THAT(app.err,
              HasSubstr(absl::StrCat("IPUoF: cannot attach: VIPU_CLI_API_TLS_CA: cannot read '",
                                     absent, "'")));
  EXPECT_THAT(app.err, Not(HasSubstr(root_key_)));
#endif
}

#if defined(POPDIST_SAMPLE_TRAIN_BIN)
// End to end: needs agents that serve mutual TLS in secure mode (RunWorkload
// goes to the machines over TLS with the client certificate).
TEST_F(PoprunSecureTest, SampleTrainsUnderPoprunOnASecurePod) {
  CommandResult r =
      Poprun({"--vipu-partition", "train", "--num-replicas", "4", "--ipus-per-replica", "4",
              "--num-instances", "2", POPDIST_SAMPLE_TRAIN_BIN, "--config",
              "pretrain_large_128_pod16", "--training-steps", "2"});
  ASSERT_EQ(r.exit_code, 0) << r.err << r.out;
  std::map<int, std::string> text;
  static const std::regex tag(R"(\[1,(\d+)\]<stdout>:([^\n]*))");
  for (auto it = std::sregex_iterator(r.out.begin(), r.out.end(), tag);
       it != std::sregex_iterator(); ++it) {
    text[std::stoi((*it)[1])] += (*it)[2].str() + "\n";
  }
  ASSERT_EQ(text.size(), 2u) << r.out;
  for (int i : {0, 1}) {
    SCOPED_TRACE(i);
    EXPECT_THAT(text[i],
                HasSubstr(absl::StrCat("Attached to partition train GCD ", i, ": 8 IPUs")));
    EXPECT_THAT(text[i], HasSubstr("IPU-Machines of partition train"));
    EXPECT_THAT(text[i], HasSubstr("Step: 1 / 1"));
    EXPECT_THAT(text[i], HasSubstr("Training time: "));
  }
  ExpectKeyOnNoCommandLine(r);
}
#endif  // POPDIST_SAMPLE_TRAIN_BIN
#endif  // POPRUN_BIN

}  // namespace
}  // namespace vipu::testing
