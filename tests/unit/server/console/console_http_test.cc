// The console's HTTP handlers against a real ConsoleServer on a loopback
// port, over a real store, registry and PartitionController: assets and
// security headers, the state and capacity views, the control plane (single
// server or member), partition details, the event stream, CSRF-protected
// actions, and a clear refusal (changing nothing) for every invalid
// parameter.
#include "server/console/console_http.h"

#include <arpa/inet.h>
#include <httplib.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <filesystem>
#include <fstream>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "fabric/enum_names.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "server/control/partition_controller.h"
#include "server/daemon/console_control_plane.h"
#include "server/daemon/vipu_server.h"
#include "server/fleet/agent_driver.h"
#include "server/fleet/agent_registry.h"
#include "server/fleet/cluster_links_cache.h"
#include "server/fleet/grpc_agent_client.h"
#include "server/ha/member_role.h"
#include "server/security/audit_log.h"
#include "storage/store.h"
#include "tests/unit/support/controller_harness.h"

namespace vipu::server {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

class ConsoleHttpTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto harness = test::ControllerHarness::Open("console_http", &agent_client_, 1);
    ASSERT_TRUE(harness.ok()) << harness.status();
    harness_ = *std::move(harness);
    dir_ = harness_->dir.path();
    store_ = harness_->store.get();
    controller_ = harness_->controller.get();
    std::vector<std::string> agents;
    for (int i = 1; i <= 4; ++i) {
      agents.push_back(absl::StrCat("ag", i));
      // Nothing listens on port 1: configuring fails fast.
      ASSERT_TRUE(harness_->AddMachine(agents.back(), 1).ok());
    }
    absl::Status s = store_->Write([&](storage::WriteTxn& txn) -> absl::Status {
      fabric::Cluster c{"pod16", agents, 1, fabric::IldTopology::kTorus,
                        fabric::ClusterTopology::kLooped};
      if (absl::Status s = txn.InsertCluster(c); !s.ok()) return s;
      return txn.InsertAllocation({"default", "pod16", agents});
    });
    ASSERT_TRUE(s.ok()) << s;
    ConsoleOptions options;
    options.listener.address = "127.0.0.1:0";
    options.tick = absl::Hours(1);  // tests call Refresh() themselves
    auto audit = AuditLog::Open({dir_ + "/audit.log"});
    ASSERT_TRUE(audit.ok()) << audit.status();
    audit_ = *std::move(audit);
    ConsoleDeps deps;
    deps.audit = audit_.get();
    deps.store = store_;
    deps.cluster_links = &harness_->cluster_links;
    deps.registry = &harness_->registry;
    deps.controller = controller_;
    auto server = ConsoleServer::Start(options, deps);
    ASSERT_TRUE(server.ok()) << server.status();
    server_ = std::move(*server);
    client_ = std::make_unique<httplib::Client>("127.0.0.1", server_->port());
  }
  void TearDown() override {
    client_.reset();
    server_.reset();
    harness_.reset();
  }

  void Create(const std::string& id, uint32_t size) {
    fabric::PartitionRequest r;
    r.id = id;
    r.size = size;
    auto p = controller_->Create(r);
    ASSERT_TRUE(p.ok()) << p.status();
  }
  std::string State() {
    auto res = client_->Get("/api/state");
    EXPECT_TRUE(res);
    if (!res) return "";
    EXPECT_EQ(res->status, 200) << res->body;
    return res->body;
  }
  // The session cookie and CSRF token of a new console session.
  std::pair<std::string, std::string> Session() {
    auto res = client_->Get("/api/session");
    EXPECT_TRUE(res && res->status == 200);
    if (!res) return {};
    std::string cookie = res->get_header_value("Set-Cookie");
    cookie = cookie.substr(0, cookie.find(';'));
    const std::string marker = "\"csrf\":\"";
    const size_t at = res->body.find(marker);
    EXPECT_NE(at, std::string::npos) << res->body;
    std::string csrf = res->body.substr(at + marker.size());
    csrf = csrf.substr(0, csrf.find('"'));
    return {cookie, csrf};
  }
  size_t PartitionCount() {
    auto all = controller_->List("");
    EXPECT_TRUE(all.ok());
    return all.ok() ? all->size() : 0;
  }

  GrpcAgentClient agent_client_{absl::Milliseconds(200),
                                /*credentials=*/nullptr};  // outlives the harness
  std::unique_ptr<test::ControllerHarness> harness_;
  std::string dir_;                            // the harness's directory
  storage::Store* store_ = nullptr;            // the harness's
  PartitionController* controller_ = nullptr;  // the harness's
  std::unique_ptr<AuditLog> audit_;
  std::unique_ptr<ConsoleServer> server_;
  std::unique_ptr<httplib::Client> client_;
};

TEST_F(ConsoleHttpTest, ServesEmbeddedAssetsWithStrictHeaders) {
  auto index = client_->Get("/");
  ASSERT_TRUE(index);
  EXPECT_EQ(index->status, 200);
  EXPECT_THAT(index->body, HasSubstr("<title>V-IPU pod console</title>"));
  EXPECT_THAT(index->body, Not(HasSubstr("<script>")));  // no inline script
  EXPECT_THAT(index->get_header_value("Content-Type"), HasSubstr("text/html"));
  const std::string csp = index->get_header_value("Content-Security-Policy");
  EXPECT_THAT(csp, HasSubstr("default-src 'none'"));
  EXPECT_THAT(csp, HasSubstr("script-src 'self'"));
  EXPECT_THAT(csp, HasSubstr("frame-ancestors 'none'"));
  EXPECT_EQ(index->get_header_value("X-Content-Type-Options"), "nosniff");
  auto js = client_->Get("/console.js");
  ASSERT_TRUE(js);
  EXPECT_EQ(js->status, 200);
  EXPECT_THAT(js->get_header_value("Content-Type"), HasSubstr("text/javascript"));
  EXPECT_THAT(js->body, HasSubstr("EventSource('/api/events')"));
  auto css = client_->Get("/console.css");
  ASSERT_TRUE(css);
  EXPECT_THAT(css->get_header_value("Content-Type"), HasSubstr("text/css"));
  auto missing = client_->Get("/nothing.js");
  ASSERT_TRUE(missing);
  EXPECT_EQ(missing->status, 404);
}

TEST_F(ConsoleHttpTest, StateShowsMachinesLinksAndPartitions) {
  // The watcher's first pass may run at any time after Start: the version
  // is taken from a pass of our own before the change, so that whichever
  // pass sees the new partition counts it.
  const uint64_t before = server_->Refresh();
  Create("p1", 4);
  EXPECT_GT(server_->Refresh(), before);
  const std::string state = State();
  for (const char* want :
       {"\"id\":\"pod16\"", "\"agent\":\"ag1\"", "\"agent\":\"ag4\"", "\"kind\":\"IPU-Link\"",
        "\"kind\":\"Sync-Link\"", "\"partition\":\"p1\"", "\"id\":\"p1\"",
        "\"allocation\":\"default\"", "\"up\":true", "\"port_name\":\"rung-lower\""}) {
    EXPECT_THAT(state, HasSubstr(want));
  }
  // Once the background configuration is over, nothing changes: the
  // version stays.
  controller_->Stop();
  const uint64_t settled = server_->Refresh();
  EXPECT_EQ(server_->Refresh(), settled);
  EXPECT_EQ(server_->Refresh(), settled);
}

TEST_F(ConsoleHttpTest, CapacityIsWhatCreateWouldPlace) {
  Create("p1", 4);
  server_->Refresh();
  std::string state = State();
  EXPECT_THAT(state, HasSubstr("\"ipus\":16,\"free_ipus\":12,\"largest\":8"));
  EXPECT_THAT(state, HasSubstr("{\"size\":16,\"fits\":false"));
  // Placement agrees: 16 is refused, 8 is placed, then nothing bigger than 4.
  fabric::PartitionRequest r;
  r.id = "big";
  r.size = 16;
  EXPECT_EQ(controller_->Create(r).status().code(), absl::StatusCode::kResourceExhausted);
  Create("p2", 8);
  server_->Refresh();
  state = State();
  EXPECT_THAT(state, HasSubstr("\"ipus\":16,\"free_ipus\":4,\"largest\":4"));
}

TEST_F(ConsoleHttpTest, StatesAreInTheWordsOfTheCli) {
  Create("p1", 4);
  controller_->Stop();  // settled: the state read below is the one served
  server_->Refresh();
  auto all = controller_->List("");
  ASSERT_TRUE(all.ok()) << all.status();
  ASSERT_EQ(all->size(), 1u);
  const nlohmann::json state = nlohmann::json::parse(State());
  ASSERT_EQ(state["partitions"].size(), 1u);
  const nlohmann::json& p = state["partitions"][0];
  // What `vipu list partitions` prints in its State column, and `vipu get
  // partition` in its Operation row: ERROR, not PS_ERROR; IDLE, not POS_IDLE.
  EXPECT_EQ(p["state"], fabric::TableName((*all)[0].ready_state));
  const std::string wire = fabric::WireName((*all)[0].operation_state);
  EXPECT_EQ(p["operation_state"], wire.substr(wire.find('_') + 1));
  EXPECT_THAT(p["state"].get<std::string>(), Not(HasSubstr("PS_")));
  EXPECT_THAT(p["operation_state"].get<std::string>(), Not(HasSubstr("POS_")));
}

TEST_F(ConsoleHttpTest, PartitionDetailHasTargetOptionsAndPrediction) {
  Create("p1", 8);
  server_->Refresh();
  auto res = client_->Get("/api/partition?id=p1");
  ASSERT_TRUE(res);
  ASSERT_EQ(res->status, 200) << res->body;
  EXPECT_THAT(res->body, HasSubstr("\"ipuLinkDomainSize\""));
  EXPECT_THAT(res->body, HasSubstr("\"gcds\":["));
  EXPECT_THAT(res->body, HasSubstr("\"model\":\"bert-large\""));
  EXPECT_THAT(res->body, HasSubstr("\"replicas\":2,\"ipus_per_replica\":4"));
  EXPECT_THAT(res->body, HasSubstr("\"step_time_s\":"));
}

TEST_F(ConsoleHttpTest, EveryInvalidParameterIsRefusedAndChangesNothing) {
  Create("p1", 4);
  server_->Refresh();
  auto [cookie, csrf] = Session();
  struct Case {
    std::string path;
    int status;
    std::string message;
  };
  const Case gets[] = {
      {"/api/state?x=1", 400, "unknown parameter 'x'"},
      {"/api/session?x=1", 400, "unknown parameter 'x'"},
      {"/api/events?x=1", 400, "unknown parameter 'x'"},
      {"/?a=b", 400, "takes no parameters"},
      {"/api/history?minutes=0", 400, "minutes: expected an integer in 1..60"},
      {"/api/history?minutes=61", 400, "minutes: expected an integer in 1..60"},
      {"/api/history?minutes=abc", 400, "minutes: expected an integer in 1..60"},
      {"/api/history?minutes=5&minutes=6", 400, "minutes: given more than once"},
      {"/api/history?since=5", 400, "unknown parameter 'since'"},
      {"/api/partition", 400, "id: required"},
      {"/api/partition?id=", 400, "id"},
      {"/api/partition?id=a%20b", 400, "id"},
      {"/api/partition?id=%zz", 400, "bad %-escape"},
      {"/api/partition?id=nope", 404, "partition 'nope' not found"},
  };
  for (const Case& c : gets) {
    auto res = client_->Get(c.path);
    ASSERT_TRUE(res) << c.path;
    EXPECT_EQ(res->status, c.status) << c.path << ": " << res->body;
    EXPECT_THAT(res->body, HasSubstr(c.message)) << c.path;
    EXPECT_THAT(res->get_header_value("Content-Type"), HasSubstr("application/json")) << c.path;
  }
  struct Post {
    std::string body;
    httplib::Headers headers;
    std::string content_type;
    int status;
    std::string message;
  };
  const httplib::Headers good = {{"Cookie", cookie}, {"X-CSRF-Token", csrf}};
  const std::string form = "application/x-www-form-urlencoded";
  const Post posts[] = {
      {"action=remove&id=p1", {{"Cookie", cookie}}, form, 403, "csrf"},
      {"action=remove&id=p1", {{"Cookie", cookie}, {"X-CSRF-Token", "00"}}, form, 403, "csrf"},
      {"action=remove&id=p1", {{"X-CSRF-Token", csrf}}, form, 401, "no session"},
      {"action=remove&id=p1",
       {{"Cookie", cookie}, {"X-CSRF-Token", csrf}, {"Origin", "http://evil.example"}},
       form,
       403,
       "origin"},
      {"action=remove&id=p1", good, "application/json", 400, "content-type"},
      {"action=delete&id=p1", good, form, 400, "action: expected remove or reset"},
      {"id=p1", good, form, 400, "action: required"},
      {"action=remove", good, form, 400, "id: required"},
      {"action=remove&id=p1&force=1", good, form, 400, "unknown parameter 'force'"},
      {"action=remove&id=-bad", good, form, 400, "id"},
      {"action=remove&id=nope", good, form, 404, "not found"},
  };
  for (const Post& c : posts) {
    auto res = client_->Post("/api/action", c.headers, c.body, c.content_type);
    ASSERT_TRUE(res) << c.body;
    EXPECT_EQ(res->status, c.status) << c.body << ": " << res->body;
    EXPECT_THAT(res->body, HasSubstr(c.message)) << c.body;
  }
  auto query = client_->Post("/api/action?action=remove&id=p1", good, "", form);
  ASSERT_TRUE(query);
  EXPECT_EQ(query->status, 400);
  auto login = client_->Post("/api/login", "user=alice&key=k", form);
  ASSERT_TRUE(login);
  EXPECT_EQ(login->status, 409);  // no users without --secure
  EXPECT_THAT(login->body, HasSubstr("without --secure"));
  auto bad_login = client_->Post("/api/login", "user=a%20b&key=k", form);
  ASSERT_TRUE(bad_login);
  EXPECT_EQ(bad_login->status, 400);
  EXPECT_EQ(PartitionCount(), 1u);  // nothing changed
}

TEST_F(ConsoleHttpTest, ActionWithSessionAndCsrfReachesTheController) {
  Create("p1", 4);
  Create("p2", 4);
  server_->Refresh();
  auto [cookie, csrf] = Session();
  const httplib::Headers headers = {{"Cookie", cookie}, {"X-CSRF-Token", csrf}};
  const std::string form = "application/x-www-form-urlencoded";
  auto reset = client_->Post("/api/action", headers, "action=reset&id=p2", form);
  ASSERT_TRUE(reset);
  EXPECT_EQ(reset->status, 200) << reset->body;
  EXPECT_THAT(reset->body, HasSubstr("\"action\":\"reset\""));
  // These agents do not answer: the controller's refusal comes back as is
  // and the partition stays (the browser test removes one for real).
  auto removed = client_->Post("/api/action", headers, "action=remove&id=p1", form);
  ASSERT_TRUE(removed);
  EXPECT_EQ(removed->status, 503) << removed->body;
  EXPECT_THAT(removed->body, HasSubstr("agents did not release partition 'p1'"));
  EXPECT_EQ(PartitionCount(), 2u);
  auto logout = client_->Post("/api/logout", headers, "", form);
  ASSERT_TRUE(logout);
  EXPECT_EQ(logout->status, 200);
  EXPECT_THAT(logout->get_header_value("Set-Cookie"), HasSubstr("Max-Age=0"));
  auto after = client_->Post("/api/action", headers, "action=reset&id=p2", form);
  ASSERT_TRUE(after);
  EXPECT_EQ(after->status, 401);
}

// Remove and reset from the console leave the same trail as the APIs: one
// audit line per request, allowed or refused.
TEST_F(ConsoleHttpTest, ActionsWriteOneAuditLineEach) {
  Create("p2", 4);
  auto [cookie, csrf] = Session();
  const std::string form = "application/x-www-form-urlencoded";
  auto reset = client_->Post("/api/action", {{"Cookie", cookie}, {"X-CSRF-Token", csrf}},
                             "action=reset&id=p2", form);
  ASSERT_TRUE(reset);
  EXPECT_EQ(reset->status, 200) << reset->body;
  auto forged = client_->Post("/api/action", {{"Cookie", cookie}}, "action=remove&id=p2", form);
  ASSERT_TRUE(forged);
  EXPECT_EQ(forged->status, 403);
  std::ifstream in(dir_ + "/audit.log");
  std::vector<nlohmann::json> lines;
  for (std::string line; std::getline(in, line);) lines.push_back(nlohmann::json::parse(line));
  ASSERT_EQ(lines.size(), 2u);
  EXPECT_EQ(lines[0]["action"], "console/ResetPartition");
  EXPECT_EQ(lines[0]["object"], "p2");
  EXPECT_EQ(lines[0]["result"], "OK");
  EXPECT_THAT(lines[0]["peer"].get<std::string>(), ::testing::StartsWith("http:127.0.0.1:"));
  EXPECT_EQ(lines[1]["action"], "console/RemovePartition");
  EXPECT_EQ(lines[1]["result"], "PERMISSION_DENIED");
  EXPECT_THAT(lines[1]["message"].get<std::string>(), HasSubstr("csrf"));
  EXPECT_EQ(PartitionCount(), 1u);
}

TEST_F(ConsoleHttpTest, SessionCookieIsHttpOnlyAndStrict) {
  auto res = client_->Get("/api/session");
  ASSERT_TRUE(res);
  EXPECT_EQ(res->status, 200);
  const std::string cookie = res->get_header_value("Set-Cookie");
  EXPECT_THAT(cookie, HasSubstr("HttpOnly"));
  EXPECT_THAT(cookie, HasSubstr("SameSite=Strict"));
  EXPECT_THAT(res->body, HasSubstr("\"secure\":false"));
  EXPECT_EQ(res->get_header_value("Cache-Control"), "no-store");
}

TEST_F(ConsoleHttpTest, EventStreamTellsOfEachChange) {
  std::mutex mu;
  std::string received;
  std::atomic<bool> done{false};
  std::thread reader([&] {
    httplib::Client c("127.0.0.1", server_->port());
    c.set_read_timeout(30, 0);
    c.Get("/api/events", [&](const char* data, size_t n) {
      std::lock_guard<std::mutex> lock(mu);
      received.append(data, n);
      return !done.load();
    });
  });
  auto has = [&](const std::string& text) {
    const absl::Time deadline = absl::Now() + absl::Seconds(20);
    while (absl::Now() < deadline) {
      {
        std::lock_guard<std::mutex> lock(mu);
        if (received.find(text) != std::string::npos) return true;
      }
      std::this_thread::yield();
    }
    return false;
  };
  const uint64_t v0 = server_->version();
  EXPECT_TRUE(has(absl::StrCat("event: state\ndata: ", v0, "\n\n")));
  // The hub counts the stream once the handler subscribed.
  const absl::Time deadline = absl::Now() + absl::Seconds(20);
  while (server_->HubForTesting().SubscribersForTesting() == 0 && absl::Now() < deadline)
    std::this_thread::yield();
  Create("p1", 4);
  const uint64_t v1 = server_->Refresh();
  EXPECT_GT(v1, v0);
  EXPECT_TRUE(has(absl::StrCat("event: state\ndata: ", v1, "\n\n")));
  done = true;
  server_.reset();  // ends the stream
  reader.join();
}

TEST_F(ConsoleHttpTest, HistoryHasSamples) {
  server_->Refresh();
  auto res = client_->Get("/api/history?minutes=5");
  ASSERT_TRUE(res);
  EXPECT_EQ(res->status, 200);
  EXPECT_THAT(res->body, HasSubstr("\"samples\":[{\"unix_ms\":"));
  EXPECT_THAT(res->body, HasSubstr("\"ipus_in_use\":0"));
}

TEST_F(ConsoleHttpTest, RestrictedCallerSeesOnlyItsOwnPartitions) {
  Caller alice;
  alice.user_id = "alice";
  alice.authenticated = true;
  alice.allocations = {"default"};
  fabric::PartitionRequest r;
  r.id = "mine";
  r.size = 4;
  ASSERT_TRUE(controller_->Create(r, alice).ok());
  Create("theirs", 8);
  auto snapshot = CollectSnapshot(store_, &harness_->cluster_links, harness_->registry,
                                  *controller_, absl::Now());
  ASSERT_TRUE(snapshot.ok()) << snapshot.status();
  const std::string state = StateJson(**snapshot, alice, 1);
  EXPECT_THAT(state, HasSubstr("\"id\":\"mine\""));
  EXPECT_THAT(state, Not(HasSubstr("theirs")));
  // The other partition's IPUs show as taken, unnamed.
  EXPECT_THAT(state, HasSubstr("\"partition\":null,\"used\":true"));
  EXPECT_THAT(state, HasSubstr("\"free_ipus\":4"));
  // A user of another allocation sees neither the cluster nor its capacity.
  Caller bob = alice;
  bob.user_id = "bob";
  bob.allocations = {"elsewhere"};
  const std::string none = StateJson(**snapshot, bob, 1);
  EXPECT_EQ(none, "{\"version\":1,\"unix_ms\":" + std::to_string((*snapshot)->unix_ms) +
                      ",\"clusters\":[],\"allocations\":[],\"partitions\":[],"
                      "\"capacity\":[],\"control_plane\":{\"mode\":\"single\"}}");
  Sample sample{1000, CountsOf(**snapshot)};
  EXPECT_THAT(HistoryJson({sample}, alice), HasSubstr("\"ipus_in_use\":12,\"partitions\":2"));
  EXPECT_THAT(HistoryJson({sample}, bob), HasSubstr("\"ipus_in_use\":0,\"partitions\":0"));
}

TEST_F(ConsoleHttpTest, SingleServerSaysSo) {
  const nlohmann::json state = nlohmann::json::parse(State());
  EXPECT_EQ(state["control_plane"], nlohmann::json({{"mode", "single"}})) << state.dump();
}

// A member of a highly available control plane, wired as VipuServer wires
// it: the role and the leader follow the member's MemberRole, and each
// change is a new state version.
TEST_F(ConsoleHttpTest, MemberShowsItsRoleAndTheLeader) {
  MemberRole role(MemberAddresses{"10.0.0.2:8090", "10.0.0.2:8091", "10.0.0.2:8092"});
  role.SetLeader(MemberAddresses{"10.0.0.1:8090", "10.0.0.1:8091", "10.0.0.1:8092"});
  ConsoleOptions options;
  options.listener.address = "127.0.0.1:0";
  options.tick = absl::Hours(1);
  ConsoleDeps deps;
  deps.store = store_;
  deps.cluster_links = &harness_->cluster_links;
  deps.registry = &harness_->registry;
  deps.controller = controller_;
  deps.control_plane = [&role] { return ConsoleControlPlane(&role); };
  auto started = ConsoleServer::Start(options, deps);
  ASSERT_TRUE(started.ok()) << started.status();
  std::unique_ptr<ConsoleServer> server = std::move(*started);
  httplib::Client client("127.0.0.1", server->port());
  auto control_plane = [&] {
    auto res = client.Get("/api/state");
    EXPECT_TRUE(res && res->status == 200);
    return res ? nlohmann::json::parse(res->body)["control_plane"] : nlohmann::json();
  };

  const uint64_t standby = server->Refresh();
  EXPECT_EQ(control_plane(), nlohmann::json({{"mode", "ha"},
                                             {"role", "standby"},
                                             {"leader", "10.0.0.1:8090"},
                                             {"member", "10.0.0.2:8090"}}));
  // Nobody known to lead: null, not a made-up address.
  role.SetLeader(std::nullopt);
  const uint64_t leaderless = server->Refresh();
  EXPECT_GT(leaderless, standby);
  EXPECT_EQ(
      control_plane(),
      nlohmann::json(
          {{"mode", "ha"}, {"role", "standby"}, {"leader", nullptr}, {"member", "10.0.0.2:8090"}}));
  role.BecomeLeader();
  EXPECT_GT(server->Refresh(), leaderless);
  EXPECT_EQ(control_plane(), nlohmann::json({{"mode", "ha"},
                                             {"role", "leader"},
                                             {"leader", "10.0.0.2:8090"},
                                             {"member", "10.0.0.2:8090"}}));
  // The keys the page read before are all still there.
  auto res = client.Get("/api/state");
  ASSERT_TRUE(res);
  const nlohmann::json state = nlohmann::json::parse(res->body);
  for (const char* key :
       {"version", "unix_ms", "clusters", "allocations", "partitions", "capacity"}) {
    EXPECT_TRUE(state.contains(key)) << key;
  }
  server.reset();
  // A single server's view of a null role.
  EXPECT_FALSE(ConsoleControlPlane(nullptr).ha);
}

// A raw connection that asks for the event stream and then never reads.
int StalledStream(int port) {
  const int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  int small = 1024;  // the kernel's minimum: the stream backs up at once
  setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &small, sizeof small);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = htons(static_cast<uint16_t>(port));
  EXPECT_EQ(connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr), 0);
  const std::string request = "GET /api/events HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n";
  EXPECT_EQ(send(fd, request.data(), request.size(), MSG_NOSIGNAL),
            static_cast<ssize_t>(request.size()));
  return fd;
}

TEST_F(ConsoleHttpTest, StalledStreamsNeverHoldUpTheServer) {
  // A server of its own with room for two streams.
  ConsoleOptions options;
  options.listener.address = "127.0.0.1:0";
  options.max_streams = 2;
  options.stream_queue = 4;
  ConsoleDeps deps;
  deps.store = store_;
  deps.cluster_links = &harness_->cluster_links;
  deps.registry = &harness_->registry;
  deps.controller = controller_;
  auto started = ConsoleServer::Start(options, deps);
  ASSERT_TRUE(started.ok()) << started.status();
  std::unique_ptr<ConsoleServer> server = std::move(*started);
  const int a = StalledStream(server->port());
  const int b = StalledStream(server->port());
  const absl::Time deadline = absl::Now() + absl::Seconds(20);
  while (server->HubForTesting().SubscribersForTesting() < 2 && absl::Now() < deadline)
    std::this_thread::yield();
  ASSERT_EQ(server->HubForTesting().SubscribersForTesting(), 2u);

  httplib::Client client("127.0.0.1", server->port());
  auto third = client.Get("/api/events");
  ASSERT_TRUE(third);
  EXPECT_EQ(third->status, 429);
  EXPECT_THAT(third->body, HasSubstr("2 consoles are already connected"));
  // Changes go on being seen and served while the two never read: each
  // pass returns, with a new version for the new partition.
  uint64_t version = server->version();
  for (int i = 0; i < 10; ++i) {
    Create(absl::StrCat("p", i), 1);
    const uint64_t refreshed = server->Refresh();
    EXPECT_GT(refreshed, version) << "p" << i;
    version = refreshed;
  }
  auto state = client.Get("/api/state");
  ASSERT_TRUE(state);
  EXPECT_EQ(state->status, 200);
  EXPECT_THAT(state->body, HasSubstr("\"id\":\"p9\""));
  // Shutting down does not wait on them either: it returns while both are
  // still connected and unread.
  server.reset();
  close(a);
  close(b);
}

TEST(ConsoleStartTest, BadAddressNamesTheFlag) {
  ConsoleOptions options;
  options.listener.address = "nope";
  options.listener.flag = "--http-listen";
  auto s = ConsoleServer::Start(options, ConsoleDeps{});
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(s.status().message()), HasSubstr("--http-listen: expected host:port"));
}

}  // namespace
}  // namespace vipu::server
