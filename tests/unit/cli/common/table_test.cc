// Byte-exact table shapes: scripts parse these.
#include <sstream>
#include <string>
#include <vector>

#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "cli/common/admin_commands.h"
#include "cli/common/partition_commands.h"
#include "cli/common/table.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace vipu::cli {
namespace {

std::vector<std::string> Lines(const std::string& text) {
  std::vector<std::string> lines = absl::StrSplit(text, '\n');
  EXPECT_EQ(lines.back(), "") << "output must end with a newline";
  lines.pop_back();
  return lines;
}

std::string RStrip(std::string s) {
  while (!s.empty() && s.back() == ' ') s.pop_back();
  return s;
}

// Every line (header, rows) is as long as the rule, and with the padding
// after the last column removed equals the expected line in `spec`.
void ExpectSpecShape(const std::string& rendered, const std::vector<std::string>& spec) {
  std::vector<std::string> lines = Lines(rendered);
  ASSERT_EQ(lines.size(), spec.size()) << rendered;
  size_t rule = 0;
  for (const auto& l : lines) {
    if (!l.empty() && l.find_first_not_of('-') == std::string::npos) rule = l.size();
  }
  ASSERT_GT(rule, 0u);
  for (size_t i = 0; i < lines.size(); ++i) {
    EXPECT_EQ(RStrip(lines[i]), spec[i]) << "line " << i;
    EXPECT_EQ(lines[i].size(), rule) << "line " << i << ": '" << lines[i] << "'";
  }
}

virmgrpc::Partition P64() {
  virmgrpc::Partition p;
  p.set_id("p64");
  p.set_ready_state(virmgrpc::PS_ACTIVE);
  auto* spec = p.mutable_spec();
  spec->set_cluster_id("c64_1-16");
  spec->set_allocation_id("a64");
  spec->set_num_ipulink_segments(1);
  spec->set_ipulink_routing_type(virmgrpc::IRT_RINGSWNC);
  spec->set_num_gcds(1);
  for (uint32_t i = 0; i < 64; ++i) spec->add_ipus()->set_topology_id(i);
  return p;
}

TEST(PartitionsTableTest, ReproducesSpecExampleWithAn81DashRule) {
  virmgrpc::ListPartitionsReply reply;
  *reply.add_partitions() = P64();
  std::string out = RenderPartitionsTable(reply, PartitionTableKind::kUser);
  const std::string rule(81, '-');
  ExpectSpecShape(
      out, {
               " Partition   | Cluster  | ILDs | GW Routing | ILD Routing | Size | GCDs | State",
               rule,
               " p64         | c64_1-16 | 1    | DEFAULT    | RINGSWNC    | 64   | 1    | ACTIVE",
               rule,
           });
  EXPECT_EQ(Lines(out)[1], rule);
}

TEST(PartitionsTableTest, GrepActiveCutFieldOneGivesTheId) {
  virmgrpc::ListPartitionsReply reply;
  *reply.add_partitions() = P64();
  auto* pending = reply.add_partitions();
  *pending = P64();
  pending->set_id("p-pending");
  pending->set_ready_state(virmgrpc::PS_PENDING);
  std::vector<std::string> ids;
  for (const auto& line : Lines(RenderPartitionsTable(reply, PartitionTableKind::kUser))) {
    if (line.find("ACTIVE") == std::string::npos) continue;
    std::vector<std::string> fields = absl::StrSplit(line, '|');
    ids.push_back(std::string(absl::StripAsciiWhitespace(fields[0])));
  }
  EXPECT_THAT(ids, testing::ElementsAre("p64"));
}

TEST(PartitionsTableTest, AdminTableHasOneColumnBeforeTheId) {
  virmgrpc::ListPartitionsReply reply;
  *reply.add_partitions() = P64();
  std::vector<std::string> lines = Lines(RenderPartitionsTable(reply, PartitionTableKind::kAdmin));
  ASSERT_EQ(lines.size(), 4u);
  EXPECT_EQ(RStrip(lines[0]),
            " Allocation | Partition   | Cluster  | ILDs | GW Routing | ILD Routing | Size | GCDs "
            "| State");
  std::vector<std::string> fields = absl::StrSplit(lines[2], '|');  // cut -d '|' -f 2
  EXPECT_EQ(absl::StripAsciiWhitespace(fields[1]), "p64");
  EXPECT_EQ(absl::StripAsciiWhitespace(fields[0]), "a64");
  EXPECT_EQ(lines[1].size(), lines[2].size());
}

TEST(PartitionsTableTest, NamesStatesAndRoutingsWithoutPrefixes) {
  virmgrpc::ListPartitionsReply reply;
  auto* p = reply.add_partitions();
  *p = P64();
  p->set_ready_state(virmgrpc::PS_ERROR);
  p->mutable_spec()->set_gw_routing_type(virmgrpc::GRT_SWRING);
  p->mutable_spec()->set_ipulink_routing_type(virmgrpc::IRT_DNC);
  p->mutable_spec()->set_num_ipulink_segments(2);
  std::vector<std::string> lines = Lines(RenderPartitionsTable(reply, PartitionTableKind::kUser));
  EXPECT_EQ(RStrip(lines[2]),
            " p64         | c64_1-16 | 2    | SWRING     | DNC         | 64   | 1    | ERROR");
}

TEST(PartitionsTableTest, EmptyListIsHeaderAndTwoRules) {
  std::vector<std::string> lines =
      Lines(RenderPartitionsTable(virmgrpc::ListPartitionsReply(), PartitionTableKind::kUser));
  ASSERT_EQ(lines.size(), 3u);
  EXPECT_EQ(lines[1], lines[2]);
  EXPECT_EQ(lines[0].size(), lines[1].size());
}

TEST(AllocationsTableTest, ReproducesSpecExample) {
  vipuadmin::ListAllocationsReply reply;
  auto* a1 = reply.add_allocations();
  a1->set_id("alloc-1");
  for (const char* ag : {"ag0", "ag1", "ag2", "ag3"}) a1->mutable_spec()->add_agent_ids(ag);
  auto* a2 = reply.add_allocations();
  a2->set_id("alloc-2");
  for (const char* ag : {"ag4", "ag5"}) a2->mutable_spec()->add_agent_ids(ag);
  const std::string rule(33, '-');
  ExpectSpecShape(RenderAllocationsTable(reply), {
                                                     rule,
                                                     " Allocation ID | Agents",
                                                     rule,
                                                     " alloc-1       | ag0 ag1 ag2 ag3",
                                                     " alloc-2       | ag4 ag5",
                                                     rule,
                                                 });
}

TEST(IpuAttributesTableTest, AgentAndIpuOnlyOnTheFirstRowOfTheirGroup) {
  virmgrpc::ListIPUAttributesReply reply;
  auto* e = reply.add_entries();
  e->set_agent("ag0");
  auto& ipu0 = (*e->mutable_ipu_attributes())[0];
  (*ipu0.mutable_attributes())["clock"] = "1330MHz";
  (*ipu0.mutable_attributes())["board type"] = "M2000";
  auto& ipu1 = (*e->mutable_ipu_attributes())[1];
  (*ipu1.mutable_attributes())["board type"] = "M2000";
  auto* e2 = reply.add_entries();
  e2->set_agent("ag1");
  (*(*e2->mutable_ipu_attributes())[3].mutable_attributes())["clock"] = "1850MHz";
  const std::string rule(36, '-');
  ExpectSpecShape(RenderIpuAttributesTable(reply), {
                                                       " Agent | IPU | Attribute  | Value",
                                                       rule,
                                                       " ag0   | 0   | board type | M2000",
                                                       "       |     | clock      | 1330MHz",
                                                       "       | 1   | board type | M2000",
                                                       " ag1   | 3   | clock      | 1850MHz",
                                                       rule,
                                                   });
}

TEST(KeyValueBoxTest, ReproducesSpecAgentBox) {
  std::string out = RenderKeyValueBox({
      {"Agent ID", "ag10"},
      {"Host", "10.1.2.10"},
      {"IPUoF server version", "v1.3.3"},
      {"HDF Hash", "1275acb46311f7a46e05f721d73d180c44975e7e"},
      {"Num of IPUs", "4"},
  });
  const std::string rule(65, '-');
  ExpectSpecShape(out, {
                           rule,
                           " Agent ID             | ag10",
                           " Host                 | 10.1.2.10",
                           " IPUoF server version | v1.3.3",
                           " HDF Hash             | 1275acb46311f7a46e05f721d73d180c44975e7e",
                           " Num of IPUs          | 4",
                           rule,
                       });
}

TEST(AgentBoxTest, FixedRowsThenDetailsInOrder) {
  vipuadmin::Agent agent;
  agent.set_id("ag10");
  agent.set_host("10.1.2.10");
  agent.set_port(8080);
  agent.set_status(vipuadmin::AGENT_UP);
  agent.mutable_last_heartbeat()->set_seconds(1714564800);  // 2024-05-01T12:00:00Z
  auto* d = agent.add_details();
  d->set_name("Virm version");
  d->set_value("master-1189-1493e2a");
  d = agent.add_details();
  d->set_name("Num of IPUs");
  d->set_value("4");
  std::vector<std::string> lines = Lines(RenderAgentBox(agent));
  std::vector<std::string> stripped;
  for (const auto& l : lines) stripped.push_back(RStrip(l));
  EXPECT_THAT(stripped,
              testing::ElementsAre(testing::StartsWith("---"), " Agent ID       | ag10",
                                   " Host           | 10.1.2.10", " Port           | 8080",
                                   " Status         | Up", " Cluster        | -",
                                   " Last heartbeat | 2024-05-01T12:00:00Z",
                                   " Virm version   | master-1189-1493e2a", " Num of IPUs    | 4",
                                   testing::StartsWith("---")));
}

TEST(AgentBoxTest, DownAndNeverSeen) {
  vipuadmin::Agent agent;
  agent.set_id("ag1");
  agent.set_status(vipuadmin::AGENT_DOWN);
  std::string out = RenderAgentBox(agent);
  EXPECT_THAT(out, testing::HasSubstr(" Status         | Down"));
  EXPECT_THAT(out, testing::HasSubstr(" Last heartbeat | never"));
}

TEST(AgentsTableTest, HeaderAndRow) {
  vipuadmin::ListAgentsReply reply;
  auto* a = reply.add_agents();
  a->set_id("ag0");
  a->set_host("127.0.0.1");
  a->set_port(8080);
  a->set_status(vipuadmin::AGENT_UP);
  a->set_cluster_id("c16");
  a->set_num_ipus(4);
  std::vector<std::string> lines = Lines(RenderAgentsTable(reply));
  EXPECT_EQ(RStrip(lines[0]),
            " Agent ID | Host      | Port | Status | Cluster | IPUs | Last Heartbeat");
  EXPECT_EQ(RStrip(lines[2]), " ag0      | 127.0.0.1 | 8080 | Up     | c16     | 4    | never");
}

TEST(ClustersTableTest, HeaderAndRow) {
  vipuadmin::ListClustersReply reply;
  auto* c = reply.add_clusters();
  c->set_id("c16");
  for (const char* ag : {"ag0", "ag1"}) c->add_agent_ids(ag);
  c->set_num_ipulink_domains(1);
  c->set_topology(vipuadmin::ILT_TORUS);
  c->set_cluster_topology(vipuadmin::GLT_LOOPED);
  std::vector<std::string> lines = Lines(RenderClustersTable(reply));
  EXPECT_EQ(RStrip(lines[0]), " Cluster ID | Agents  | ILDs | Topology | Cluster Topology");
  EXPECT_EQ(RStrip(lines[2]), " c16        | ag0 ag1 | 1    | torus    | looped");
}

TEST(PartitionDetailsTest, ListsEveryFieldAndCompactsIpus) {
  virmgrpc::Partition p = P64();
  p.mutable_spec()->set_num_replicas(1);
  p.mutable_spec()->set_sync_type(virmgrpc::ST_POD_NATIVE_DEFAULT);
  virmgrpc::PartitionStatus status;
  status.set_partition_id("p64");
  status.set_ready_state(virmgrpc::PS_ACTIVE);
  status.set_operation_state(virmgrpc::POS_IDLE);
  std::string out = RenderPartitionDetails(p, status);
  for (const char* expected :
       {" Partition ID   | p64", " Allocation     | a64", " Cluster        | c64_1-16",
        " Size           | 64", " GCDs           | 1", " Replicas       | 1", " ILDs           | 1",
        " ILD Routing    | RINGSWNC", " GW Routing     | DEFAULT",
        " Sync Type      | pod-native-default", " Reconfigurable | false",
        " State          | ACTIVE", " Operation      | IDLE", " Errors         | none",
        " IPUs           | ILD 0: 0-63"}) {
    EXPECT_THAT(out, testing::HasSubstr(expected));
  }
}

TEST(FormatTimestampTest, UnsetIsNever) {
  EXPECT_EQ(FormatTimestamp(google::protobuf::Timestamp()), "never");
  google::protobuf::Timestamp t;
  t.set_seconds(86400);
  EXPECT_EQ(FormatTimestamp(t), "1970-01-02T00:00:00Z");
}

}  // namespace
}  // namespace vipu::cli
