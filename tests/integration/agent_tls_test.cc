// Agents over mutual TLS against real processes: every port of a secure pod
// refuses plaintext and foreign certificates, agents prove their id, only
// the server may change an agent, certificates reload on SIGHUP without
// disturbing partitions, and bad TLS files stop a start (docs/security.md).
#include <grpcpp/grpcpp.h>
#include <signal.h>

#include <filesystem>
#include <fstream>
#include <functional>
#include <regex>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/integration/cannot_run.h"
#include "tests/integration/daemon_process.h"
#include "tests/integration/harness.h"
#include "vipu_agent.grpc.pb.h"

namespace vipu::testing {
namespace {

using ::testing::HasSubstr;
namespace fs = std::filesystem;

// A client identity: the files of a role directory written by --tls-init.
struct Identity {
  std::string dir;  // empty: plaintext
};

std::shared_ptr<grpc::Channel> Dial(const std::string& address, const Identity& who,
                                    const std::string& target_name = "") {
  if (who.dir.empty()) return grpc::CreateChannel(address, grpc::InsecureChannelCredentials());
  grpc::SslCredentialsOptions ssl;
  ssl.pem_root_certs = ReadFile(who.dir + "/ca.pem");
  ssl.pem_cert_chain = ReadFile(who.dir + "/cert.pem");
  ssl.pem_private_key = ReadFile(who.dir + "/key.pem");
  grpc::ChannelArguments args;
  if (!target_name.empty()) args.SetSslTargetNameOverride(target_name);
  // A fresh connection per probe: what is being tested is the handshake.
  args.SetInt("grpc.use_local_subchannel_pool", 1);
  return grpc::CreateCustomChannel(address, grpc::SslCredentials(ssl), args);
}

grpc::Status GetInfo(const std::string& address, const Identity& who, const std::string& agent_id,
                     const std::string& target_name = "") {
  auto stub = vipuagent::Agent::NewStub(Dial(address, who, target_name));
  grpc::ClientContext ctx;
  ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(3));
  vipuagent::GetInfoRequest request;
  request.set_agent_id(agent_id);
  vipuagent::GetInfoReply reply;
  return stub->GetInfo(&ctx, request, &reply);
}

// The generation at which agent `agent_id` holds `partition`; 0 when it does
// not hold it or cannot be asked.
uint64_t HeldGeneration(const std::string& address, const Identity& who,
                        const std::string& agent_id, const std::string& partition) {
  auto stub = vipuagent::Agent::NewStub(Dial(address, who));
  grpc::ClientContext ctx;
  ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(3));
  vipuagent::GetInfoRequest request;
  request.set_agent_id(agent_id);
  vipuagent::GetInfoReply reply;
  if (!stub->GetInfo(&ctx, request, &reply).ok()) return 0;
  for (const auto& held : reply.held()) {
    if (held.partition_id() == partition) return held.generation();
  }
  return 0;
}

// agent id -> host:port, from the "agent ID listening on HOST:PORT" lines
// the agents print into the server's log.
std::map<std::string, std::string> AgentAddresses(const std::string& log) {
  std::map<std::string, std::string> out;
  static const std::regex line(R"(agent (\S+) listening on (\S+:\d+))");
  for (std::sregex_iterator it(log.begin(), log.end(), line), end; it != end; ++it) {
    out[(*it)[1]] = (*it)[2];
  }
  return out;
}

class AgentTlsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    work_ = MakeTempDir();
    tls_ = work_ + "/tls";
    CommandResult init =
        TlsInit(tls_, {"--tls-agents", "agA@127.0.0.1,agB@127.0.0.1,sp0+sp1+sp2@127.0.0.1"});
    ASSERT_EQ(init.exit_code, 0) << init.err;
    // Another pod's CA and certificates.
    ASSERT_EQ(TlsInit(work_ + "/other").exit_code, 0);
  }
  void TearDown() override {
    server_.reset();
    RemoveTree(work_);
  }
  void Start(const std::vector<std::string>& extra = {}, const std::string& pod = "pod4") {
    server_ = ServerProcess::Start(
        pod, Join({"--secure", "--tls-dir", tls_, "--default-user-id", "root"}, extra));
    for (const std::string& line :
         std::vector<std::string>(absl::StrSplit(ReadFile(server_->dir() + "/server.log"), '\n'))) {
      if (absl::StartsWith(line, "Access key: '")) root_key_ = line.substr(13, line.size() - 14);
    }
    ASSERT_FALSE(root_key_.empty());
  }
  CommandResult Vipu(const std::vector<std::string>& args) const {
    return server_->Vipu(
        Join({"--api-user-id", "root", "--api-access-key", root_key_, "--api-tls-ca",
              tls_ + "/client/ca.pem", "--api-tls-cert", tls_ + "/client/cert.pem", "--api-tls-key",
              tls_ + "/client/key.pem"},
             args));
  }
  std::string Log() const { return ReadFile(server_->dir() + "/server.log"); }

  std::string work_, tls_, root_key_;
  std::unique_ptr<ServerProcess> server_;
};

TEST_F(AgentTlsTest, EveryPortRefusesPlaintextAndForeignCertificates) {
  const int http_port = FreePort();
  Start({"--http-listen", absl::StrCat("127.0.0.1:", http_port)});
  const std::map<std::string, std::string> agents = AgentAddresses(Log());
  ASSERT_FALSE(agents.empty()) << Log();
  std::vector<std::pair<std::string, std::string>> ports = {{server_->address(), ""}};
  for (const auto& [id, address] : agents) ports.emplace_back(address, id);
  for (const auto& [address, id] : ports) {
    SCOPED_TRACE(address);
    EXPECT_EQ(GetInfo(address, {""}, id).error_code(), grpc::StatusCode::UNAVAILABLE);
    EXPECT_EQ(GetInfo(address, {work_ + "/other/client"}, id).error_code(),
              grpc::StatusCode::UNAVAILABLE);
  }
  // The pod's client certificate gets through the handshake everywhere.
  EXPECT_EQ(GetInfo(server_->address(), {tls_ + "/client"}, "ag1").error_code(),
            grpc::StatusCode::UNIMPLEMENTED);
  for (const auto& [id, address] : agents) {
    EXPECT_TRUE(GetInfo(address, {tls_ + "/client"}, id).ok()) << id;
  }
  // The HTTP listener (console and /metrics) is HTTPS with the server
  // certificate and no client certificate: a browser has none. It is off
  // by default and meant for loopback (docs/security.md).
  EXPECT_THAT(HttpGetRaw(http_port, "/metrics"), ::testing::Not(HasSubstr("vipu_agents")));
  // curl is the HTTPS client that checks the listener (scripts/install-deps.sh
  // installs it); without it that part cannot run, and the test says so.
  if (!fs::exists("/usr/bin/curl")) {
    VIPU_CANNOT_RUN_HERE() << "/usr/bin/curl is missing: the HTTPS listener was not checked "
                    "(scripts/install-deps.sh installs curl)";
  }
  CommandResult scrape =
      RunCommand({"/usr/bin/curl", "-sS", "--max-time", "10", "--cacert", tls_ + "/ca.pem",
                  absl::StrCat("https://127.0.0.1:", http_port, "/metrics")});
  EXPECT_EQ(scrape.exit_code, 0) << scrape.err;
  EXPECT_THAT(scrape.out, HasSubstr("vipu_agents"));
}

TEST_F(AgentTlsTest, SharedPortAgentsServeAndRegisterOverTls) {
  Start({"--auto-add-agents"});
  const std::string certs = tls_ + "/agents/sp0";
  Daemon agent({VIPU_AGENT_BIN, "--server", server_->address(), "--machines", "3", "--id-prefix",
                "sp", "--exit-with-parent", "--tls-ca", certs + "/ca.pem", "--tls-cert",
                certs + "/cert.pem", "--tls-key", certs + "/key.pem"},
               server_->dir() + "/sp.log");
  std::string address;
  ASSERT_TRUE(WaitFor(
      [&] {
        static const std::regex line(R"(machines 3 listening on (\S+:\d+))");
        std::smatch m;
        const std::string log = ReadFile(agent.log());
        if (!std::regex_search(log, m, line)) return false;
        address = m[1];
        return true;
      },
      absl::Seconds(20)))
      << ReadFile(agent.log());
  const std::vector<std::string> admin = {"--api-user-id",
                                          "root",
                                          "--api-access-key",
                                          root_key_,
                                          "--api-tls-ca",
                                          tls_ + "/client/ca.pem",
                                          "--api-tls-cert",
                                          tls_ + "/client/cert.pem",
                                          "--api-tls-key",
                                          tls_ + "/client/key.pem",
                                          "list",
                                          "agents"};
  EXPECT_TRUE(WaitFor([&] { return absl::StrContains(server_->VipuAdmin(admin).out, "sp2"); },
                      absl::Seconds(20)))
      << ReadFile(agent.log());
  EXPECT_EQ(GetInfo(address, {""}, "sp1").error_code(), grpc::StatusCode::UNAVAILABLE);
  EXPECT_EQ(GetInfo(address, {work_ + "/other/client"}, "sp1").error_code(),
            grpc::StatusCode::UNAVAILABLE);
  EXPECT_TRUE(GetInfo(address, {tls_ + "/client"}, "sp1").ok());
  // The server's view: the certificate names every machine behind the port.
  EXPECT_TRUE(GetInfo(address, {tls_ + "/server"}, "sp2", "sp2").ok());
}

TEST_F(AgentTlsTest, ClientCertificateRunsDataPlaneButNoControlCalls) {
  Start();
  const std::map<std::string, std::string> agents = AgentAddresses(Log());
  ASSERT_EQ(agents.count("ag1"), 1u) << Log();
  // As popdist dials: the host of the IPUoF config, normal host name check.
  auto stub = vipuagent::Agent::NewStub(Dial(agents.at("ag1"), {tls_ + "/client"}));
  {
    grpc::ClientContext ctx;
    vipuagent::ReleasePartitionRequest request;
    request.set_agent_id("ag1");
    request.set_partition_id("p");
    request.set_generation(1000000);
    vipuagent::ReleasePartitionReply reply;
    grpc::Status s = stub->ReleasePartition(&ctx, request, &reply);
    EXPECT_EQ(s.error_code(), grpc::StatusCode::PERMISSION_DENIED) << s.error_message();
    EXPECT_THAT(s.error_message(), HasSubstr("only from vipu-server"));
  }
  {
    grpc::ClientContext ctx;
    vipuagent::InjectFaultRequest request;
    request.set_agent_id("ag1");
    vipuagent::InjectFaultReply reply;
    EXPECT_EQ(stub->InjectFault(&ctx, request, &reply).error_code(),
              grpc::StatusCode::PERMISSION_DENIED);
  }
  // An agent's certificate is not the server's either.
  auto as_agent = vipuagent::Agent::NewStub(Dial(agents.at("ag1"), {tls_ + "/agents/agA"}));
  grpc::ClientContext ctx;
  vipuagent::ResetPartitionRequest reset;
  reset.set_agent_id("ag1");
  vipuagent::ResetPartitionReply reply;
  EXPECT_EQ(as_agent->ResetPartition(&ctx, reset, &reply).error_code(),
            grpc::StatusCode::PERMISSION_DENIED);
  // The server's own control calls went through: the pod is usable.
  CommandResult created = Vipu({"create", "partition", "p1", "--size", "4"});
  EXPECT_EQ(created.exit_code, 0) << created.err;
}

TEST_F(AgentTlsTest, WorkloadSpanningMachinesChecksPeersOverTls) {
  Start({}, "pod16");
  ASSERT_EQ(Vipu({"create", "partition", "p8", "--size", "8"}).exit_code, 0);
  const std::map<std::string, std::string> agents = AgentAddresses(Log());
  std::vector<std::string> holders;
  ASSERT_TRUE(WaitFor(
      [&] {
        holders.clear();
        for (const auto& [id, address] : agents) {
          if (HeldGeneration(address, {tls_ + "/client"}, id, "p8") != 0) holders.push_back(id);
        }
        return holders.size() == 2;
      },
      absl::Seconds(30)));
  // As the IPUoF client does: the CLI client certificate, the agent's host.
  auto stub = vipuagent::Agent::NewStub(Dial(agents.at(holders[0]), {tls_ + "/client"}));
  grpc::ClientContext ctx;
  ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(10));
  vipuagent::RunWorkloadRequest request;
  request.set_agent_id(holders[0]);
  request.set_partition_id("p8");
  request.mutable_workload()->set_model("resnet50");
  request.set_steps(1);
  vipuagent::RunWorkloadReply reply;
  grpc::Status s = stub->RunWorkload(&ctx, request, &reply);
  ASSERT_TRUE(s.ok()) << s.error_message();
  EXPECT_EQ(reply.agent_ids_size(), 2);
}

TEST_F(AgentTlsTest, AgentCannotRegisterWithAnotherAgentsCertificate) {
  Start({"--auto-add-agents"});
  auto registry_as = [&](const std::string& who) {
    return vipuagent::AgentRegistry::NewStub(Dial(server_->address(), {tls_ + "/agents/" + who}));
  };
  vipuagent::RegisterRequest request;
  request.set_agent_id("agA");
  request.set_host("127.0.0.1");
  request.set_port(1);
  request.mutable_machine()->set_machine_type("m2000");
  {
    grpc::ClientContext ctx;
    vipuagent::RegisterReply reply;
    grpc::Status s = registry_as("agB")->Register(&ctx, request, &reply);
    EXPECT_EQ(s.error_code(), grpc::StatusCode::PERMISSION_DENIED) << s.error_message();
    EXPECT_THAT(s.error_message(), HasSubstr("agent certificate is for agB"));
    EXPECT_THAT(s.error_message(), HasSubstr("not agA"));
  }
  {
    // The CLI client certificate names no agent.
    grpc::ClientContext ctx;
    vipuagent::RegisterReply reply;
    auto stub = vipuagent::AgentRegistry::NewStub(Dial(server_->address(), {tls_ + "/client"}));
    EXPECT_EQ(stub->Register(&ctx, request, &reply).error_code(),
              grpc::StatusCode::PERMISSION_DENIED);
  }
  {
    // Common names are no identity: the CLI certificate's CN is a valid id.
    grpc::ClientContext ctx;
    vipuagent::RegisterReply reply;
    vipuagent::RegisterRequest as_cn = request;
    as_cn.set_agent_id("vipu-client");
    auto stub = vipuagent::AgentRegistry::NewStub(Dial(server_->address(), {tls_ + "/client"}));
    grpc::Status s = stub->Register(&ctx, as_cn, &reply);
    EXPECT_EQ(s.error_code(), grpc::StatusCode::PERMISSION_DENIED);
    EXPECT_THAT(s.error_message(), HasSubstr("agent certificate is for CN=vipu-client"));
  }
  CommandResult agents = server_->VipuAdmin(
      Join({"--api-user-id", "root", "--api-access-key", root_key_, "--api-tls-ca",
            tls_ + "/client/ca.pem", "--api-tls-cert", tls_ + "/client/cert.pem", "--api-tls-key",
            tls_ + "/client/key.pem"},
           {"list", "agents"}));
  EXPECT_THAT(agents.out, ::testing::Not(HasSubstr("agA"))) << agents.err;
  {
    grpc::ClientContext ctx;
    vipuagent::RegisterReply reply;
    grpc::Status s = registry_as("agA")->Register(&ctx, request, &reply);
    EXPECT_TRUE(s.ok()) << s.error_message();
  }
}

// Copies role `role` of `from` over the same role of `to`.
void CopyRole(const std::string& from, const std::string& to) {
  for (const char* name : {"cert.pem", "key.pem"}) {
    fs::copy_file(from + "/" + name, to + "/" + name, fs::copy_options::overwrite_existing);
  }
}

TEST_F(AgentTlsTest, CertificatesRenewOnSighupWithoutDisturbingPartitions) {
  Start();
  ASSERT_EQ(Vipu({"create", "partition", "p1", "--size", "4"}).exit_code, 0);
  ASSERT_TRUE(WaitFor(
      [&] {
        return absl::StrContains(Vipu({"list", "partitions"}).out, "ACTIVE");
      },
      absl::Seconds(30)));
  const std::map<std::string, std::string> agents = AgentAddresses(Log());
  ASSERT_EQ(agents.count("ag1"), 1u);
  const uint64_t generation = HeldGeneration(agents.at("ag1"), {tls_ + "/client"}, "ag1", "p1");
  ASSERT_NE(generation, 0u);
  // Same CA, certificates that expired yesterday.
  const std::string expired = work_ + "/expired";
  const std::string valid = work_ + "/valid";
  fs::copy(tls_, expired, fs::copy_options::recursive);
  fs::copy(tls_, valid, fs::copy_options::recursive);
  ASSERT_EQ(
      TlsInit(expired, {"--tls-validity-days", "0", "--tls-agents", "ag1@127.0.0.1+localhost"})
          .exit_code,
      0);

  // The server.
  CopyRole(expired + "/server", tls_ + "/server");
  kill(server_->pid(), SIGHUP);
  EXPECT_TRUE(WaitFor(
      [&] {
        return Vipu({"list", "partitions"}).exit_code != 0;
      },
      absl::Seconds(15)))
      << Log();
  CopyRole(valid + "/server", tls_ + "/server");
  kill(server_->pid(), SIGHUP);
  EXPECT_TRUE(WaitFor(
      [&] {
        return Vipu({"list", "partitions"}).exit_code == 0;
      },
      absl::Seconds(15)))
      << Log();

  // An agent: ag1 is alone in pod4's only agent process.
  const std::vector<pid_t> children = server_->Children();
  ASSERT_FALSE(children.empty());
  CopyRole(expired + "/agents/ag1", tls_ + "/agents/ag1");
  for (pid_t pid : children) kill(pid, SIGHUP);
  EXPECT_TRUE(WaitFor([&] { return !GetInfo(agents.at("ag1"), {tls_ + "/client"}, "ag1").ok(); },
                      absl::Seconds(15)));
  // The server's check of the agent id fails the same way.
  EXPECT_FALSE(GetInfo(agents.at("ag1"), {tls_ + "/server"}, "ag1", "ag1").ok());
  CopyRole(valid + "/agents/ag1", tls_ + "/agents/ag1");
  for (pid_t pid : children) kill(pid, SIGHUP);
  EXPECT_TRUE(WaitFor([&] { return GetInfo(agents.at("ag1"), {tls_ + "/client"}, "ag1").ok(); },
                      absl::Seconds(15)));
  EXPECT_TRUE(GetInfo(agents.at("ag1"), {tls_ + "/server"}, "ag1", "ag1").ok());

  // The partition stayed ACTIVE and was never reset; the agents never restarted.
  CommandResult list = Vipu({"list", "partitions"});
  EXPECT_THAT(list.out, HasSubstr("ACTIVE"));
  EXPECT_EQ(server_->Children(), children);
  EXPECT_EQ(HeldGeneration(agents.at("ag1"), {tls_ + "/client"}, "ag1", "p1"), generation);
}

TEST_F(AgentTlsTest, ReloadOfBadFilesKeepsTheOldCertificates) {
  Start();
  std::ofstream(tls_ + "/server/cert.pem") << "not a certificate\n";
  kill(server_->pid(), SIGHUP);
  EXPECT_TRUE(WaitFor([&] { return absl::StrContains(Log(), "not reloaded"); }, absl::Seconds(10)))
      << Log();
  EXPECT_THAT(Log(), HasSubstr(tls_ + "/server/cert.pem"));
  EXPECT_EQ(Vipu({"list", "partitions"}).exit_code, 0);

  // An agent the same way.
  const std::map<std::string, std::string> agents = AgentAddresses(Log());
  ASSERT_EQ(agents.count("ag1"), 1u);
  std::ofstream(tls_ + "/agents/ag1/key.pem") << "not a key\n";
  for (pid_t pid : server_->Children()) kill(pid, SIGHUP);
  EXPECT_TRUE(WaitFor([&] { return absl::StrContains(Log(), tls_ + "/agents/ag1/key.pem"); },
                      absl::Seconds(10)))
      << Log();
  EXPECT_TRUE(GetInfo(agents.at("ag1"), {tls_ + "/client"}, "ag1").ok());
}

struct BadFiles {
  std::string name;
  // Breaks the files of `role_dir` (a copy) in `work`.
  std::function<void(const std::string& work, const std::string& role_dir)> Break;
  std::string named_file;  // relative to role_dir
};

std::vector<BadFiles> BadFileCases() {
  return {
      {"missing key", [](const std::string&, const std::string& d) { fs::remove(d + "/key.pem"); },
       "key.pem"},
      {"key of another certificate",
       [](const std::string& w, const std::string& d) {
         fs::copy_file(w + "/tls/client/key.pem", d + "/key.pem",
                       fs::copy_options::overwrite_existing);
       },
       "key.pem"},
      {"certificate of another CA",
       [](const std::string& w, const std::string& d) {
         fs::copy_file(w + "/other/client/cert.pem", d + "/cert.pem",
                       fs::copy_options::overwrite_existing);
         fs::copy_file(w + "/other/client/key.pem", d + "/key.pem",
                       fs::copy_options::overwrite_existing);
       },
       "cert.pem"},
      {"expired CA",
       [](const std::string& w, const std::string& d) {
         const std::string old = w + "/expired-ca";
         RunCommand({VIPU_SERVER_BIN, "--tls-init", old, "--tls-validity-days", "0"});
         for (const char* f : {"ca.pem", "cert.pem", "key.pem"}) {
           fs::copy_file(old + "/client/" + f, d + "/" + f, fs::copy_options::overwrite_existing);
         }
       },
       "ca.pem"},
  };
}

TEST_F(AgentTlsTest, MalformedFilesStopTheServerNamingTheFile) {
  for (const BadFiles& c : BadFileCases()) {
    SCOPED_TRACE(c.name);
    const std::string copy = work_ + "/copy";
    fs::remove_all(copy);
    fs::copy(tls_, copy, fs::copy_options::recursive);
    c.Break(work_, copy + "/server");
    CommandResult r = RunCommand({VIPU_SERVER_BIN, "--secure", "--tls-dir", copy, "--db",
                                  work_ + "/bad.db", "--listen", "127.0.0.1:0"});
    EXPECT_EQ(r.exit_code, 1) << r.err;
    EXPECT_THAT(r.err, HasSubstr(copy + "/server/" + c.named_file));
  }
}

TEST_F(AgentTlsTest, MalformedFilesOrPartialFlagsStopTheAgentNamingIt) {
  const std::vector<std::string> base = {VIPU_AGENT_BIN, "--server", "127.0.0.1:1", "--agent-ids",
                                         "agA"};
  for (const BadFiles& c : BadFileCases()) {
    SCOPED_TRACE(c.name);
    const std::string copy = work_ + "/copy";
    fs::remove_all(copy);
    fs::copy(tls_ + "/agents/agA", copy, fs::copy_options::recursive);
    c.Break(work_, copy);
    CommandResult r = RunCommand(Join(base, {"--tls-ca", copy + "/ca.pem", "--tls-cert",
                                             copy + "/cert.pem", "--tls-key", copy + "/key.pem"}));
    EXPECT_EQ(r.exit_code, 2) << r.err;
    EXPECT_THAT(r.err, HasSubstr(copy + "/" + c.named_file));
  }
  const std::string a = tls_ + "/agents/agA";
  for (const auto& [flags, missing] : std::vector<std::pair<std::vector<std::string>, std::string>>{
           {{"--tls-ca", a + "/ca.pem"}, "--tls-cert"},
           {{"--tls-ca", a + "/ca.pem", "--tls-cert", a + "/cert.pem"}, "--tls-key"},
           {{"--tls-cert", a + "/cert.pem", "--tls-key", a + "/key.pem"}, "--tls-ca"}}) {
    CommandResult r = RunCommand(Join(base, flags));
    EXPECT_EQ(r.exit_code, 2) << r.err;
    EXPECT_THAT(r.err, HasSubstr(missing + " is missing"));
  }
  // A certificate for other agent ids.
  CommandResult other = RunCommand(
      Join(base, {"--tls-ca", tls_ + "/agents/agB/ca.pem", "--tls-cert",
                  tls_ + "/agents/agB/cert.pem", "--tls-key", tls_ + "/agents/agB/key.pem"}));
  EXPECT_EQ(other.exit_code, 2);
  EXPECT_THAT(other.err,
              HasSubstr(tls_ + "/agents/agB/cert.pem: the certificate does not name agA"));
  // The environment works like the flags.
  CommandResult env = RunCommand(base, {{"VIPU_AGENT_TLS_CA", a + "/ca.pem"}});
  EXPECT_EQ(env.exit_code, 2);
  EXPECT_THAT(env.err, HasSubstr("--tls-cert is missing"));
}

TEST_F(AgentTlsTest, TlsAgentsFlagRefusesInvalidValues) {
  for (const std::string& bad :
       {std::string(""), std::string("@127.0.0.1"), std::string("ag 1"), std::string("-ag"),
        std::string("ag1@bad host"), std::string("ag1,ag1"), std::string("ag1,,ag2"),
        std::string("ag1@"), std::string("ag1+@h")}) {
    SCOPED_TRACE(bad);
    const std::string dir = work_ + "/flag";
    CommandResult r = TlsInit(dir, {"--tls-agents", bad});
    EXPECT_EQ(r.exit_code, 2) << r.out;
    EXPECT_THAT(r.err, HasSubstr("--tls-agents"));
    EXPECT_FALSE(fs::exists(dir + "/agents"));
  }
  CommandResult without_init =
      RunCommand({VIPU_SERVER_BIN, "--tls-agents", "ag1", "--db", work_ + "/x.db"});
  EXPECT_EQ(without_init.exit_code, 2);
  EXPECT_THAT(without_init.err, HasSubstr("--tls-agents: only with --tls-init"));
}

}  // namespace
}  // namespace vipu::testing
