// Bad input on the wire, sent to every RPC of every service through the
// generic stub (raw bytes, so nothing on the client side cleans it up):
// random payloads, messages over the 4 MB receive limit, and requests whose
// every field holds an extreme value. The server must answer each one with a
// client-error code, stay up, and change nothing.
#include <grpcpp/generic/generic_stub.h>
#include <grpcpp/grpcpp.h>

#include <chrono>
#include <cstdint>
#include <future>
#include <limits>
#include <random>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "google/protobuf/descriptor.h"
#include "google/protobuf/dynamic_message.h"
#include "grpcpp/health_check_service_interface.h"
#include "gtest/gtest.h"
#include "tests/integration/harness.h"
#include "tests/integration/shared_server_suite.h"
#include "tests/integration/state_snapshot.h"
#include "version.grpc.pb.h"
#include "vipu_admin.grpc.pb.h"
#include "vipu_agent.grpc.pb.h"
#include "vipuuser.grpc.pb.h"

namespace vipu::testing {
namespace {

using google::protobuf::FieldDescriptor;
using google::protobuf::Message;
using google::protobuf::MethodDescriptor;
using google::protobuf::Reflection;

constexpr size_t kOverLimit = 5 * 1024 * 1024;  // gRPC's default receive limit is 4 MB

// The services under test, looked up in the generated pool so that an RPC
// added later is covered without touching this file.
std::vector<const MethodDescriptor*> AllMethods() {
  // Names the generated code, so the linker keeps every descriptor.
  const std::vector<std::string> services = {virmgrpc::UserService::service_full_name(),
                                             virmgrpc::VersionService::service_full_name(),
                                             vipuadmin::AdminService::service_full_name(),
                                             vipuadmin::AllocationService::service_full_name(),
                                             vipuagent::AgentRegistry::service_full_name(),
                                             vipuadmin::UserAdminService::service_full_name()};
  std::vector<const MethodDescriptor*> out;
  for (const std::string& name : services) {
    const auto* service =
        google::protobuf::DescriptorPool::generated_pool()->FindServiceByName(name);
    EXPECT_NE(service, nullptr) << name;
    if (service == nullptr) continue;
    for (int i = 0; i < service->method_count(); ++i) out.push_back(service->method(i));
  }
  return out;
}

std::string Path(const MethodDescriptor* m) {
  return absl::StrCat("/", m->service()->full_name(), "/", m->name());
}

// Every field set: numbers to `number`, enums to `enum_number` (proto3
// enums are open, so any int32 goes on the wire), strings to `text`,
// repeated fields to `repeat` elements, nested messages filled likewise.
struct Extremes {
  uint64_t number;
  int enum_number;
  std::string text;
  int repeat;
};

void Fill(Message* m, const Extremes& x, int depth) {
  const Reflection* r = m->GetReflection();
  const auto* d = m->GetDescriptor();
  for (int i = 0; i < d->field_count(); ++i) {
    const FieldDescriptor* f = d->field(i);
    const int n = f->is_repeated() ? x.repeat : 1;
    for (int k = 0; k < n; ++k) {
      const bool rep = f->is_repeated();
      switch (f->cpp_type()) {
        case FieldDescriptor::CPPTYPE_INT32: {
          auto v = static_cast<int32_t>(x.number);
          rep ? r->AddInt32(m, f, v) : r->SetInt32(m, f, v);
          break;
        }
        case FieldDescriptor::CPPTYPE_UINT32: {
          auto v = static_cast<uint32_t>(x.number);
          rep ? r->AddUInt32(m, f, v) : r->SetUInt32(m, f, v);
          break;
        }
        case FieldDescriptor::CPPTYPE_INT64: {
          auto v = static_cast<int64_t>(x.number);
          rep ? r->AddInt64(m, f, v) : r->SetInt64(m, f, v);
          break;
        }
        case FieldDescriptor::CPPTYPE_UINT64:
          rep ? r->AddUInt64(m, f, x.number) : r->SetUInt64(m, f, x.number);
          break;
        case FieldDescriptor::CPPTYPE_DOUBLE:
        case FieldDescriptor::CPPTYPE_FLOAT: {
          const double v = std::numeric_limits<double>::infinity();
          if (f->cpp_type() == FieldDescriptor::CPPTYPE_DOUBLE) {
            rep ? r->AddDouble(m, f, v) : r->SetDouble(m, f, v);
          } else {
            rep ? r->AddFloat(m, f, static_cast<float>(v))
                : r->SetFloat(m, f, static_cast<float>(v));
          }
          break;
        }
        case FieldDescriptor::CPPTYPE_BOOL:
          rep ? r->AddBool(m, f, true) : r->SetBool(m, f, true);
          break;
        case FieldDescriptor::CPPTYPE_ENUM:
          rep ? r->AddEnumValue(m, f, x.enum_number) : r->SetEnumValue(m, f, x.enum_number);
          break;
        case FieldDescriptor::CPPTYPE_STRING:
          rep ? r->AddString(m, f, x.text) : r->SetString(m, f, x.text);
          break;
        case FieldDescriptor::CPPTYPE_MESSAGE:
          if (depth < 4) Fill(rep ? r->AddMessage(m, f) : r->MutableMessage(m, f), x, depth + 1);
          break;
      }
    }
  }
}

std::string ExtremeRequest(const MethodDescriptor* method, const Extremes& x) {
  google::protobuf::DynamicMessageFactory factory;
  std::unique_ptr<Message> m(factory.GetPrototype(method->input_type())->New());
  Fill(m.get(), x, 0);
  return m->SerializeAsString();
}

bool Parses(const MethodDescriptor* method, const std::string& payload) {
  google::protobuf::LogSilencer quiet;  // invalid UTF-8 is expected here
  google::protobuf::DynamicMessageFactory factory;
  std::unique_ptr<Message> m(factory.GetPrototype(method->input_type())->New());
  return m->ParseFromString(payload);
}

// A length-delimited unknown field (number 1000) of `size` bytes: parses as
// any message, so only the size limit can refuse it.
std::string UnknownFieldOfSize(size_t size) {
  std::string out;
  out.push_back(static_cast<char>(0xC2));  // (1000 << 3) | 2, varint
  out.push_back(static_cast<char>(0x3E));
  for (uint64_t v = size;; v >>= 7) {
    if (v < 0x80) {
      out.push_back(static_cast<char>(v));
      break;
    }
    out.push_back(static_cast<char>((v & 0x7F) | 0x80));
  }
  out.append(size, 'x');
  return out;
}

class MalformedTest : public SharedServerSuite {
 protected:
  void SetUp() override {
    channel_ = grpc::CreateChannel(server_->address(), grpc::InsecureChannelCredentials());
    generic_ = std::make_unique<grpc::GenericStub>(channel_);
    user_ = virmgrpc::UserService::NewStub(channel_);
    admin_ = vipuadmin::AdminService::NewStub(channel_);
    // A partition that must come through untouched.
    grpc::ClientContext ctx;
    virmgrpc::CreatePartitionRequest request;
    request.mutable_requirements()->set_id("keep");
    request.mutable_requirements()->set_size(4);
    virmgrpc::CreatePartitionReply reply;
    grpc::Status s = user_->CreatePartition(&ctx, request, &reply);
    ASSERT_TRUE(s.ok() || s.error_code() == grpc::StatusCode::ALREADY_EXISTS) << s.error_message();
    ASSERT_TRUE(
        WaitFor([&] { return ReadyState("keep") == virmgrpc::PS_ACTIVE; }, absl::Seconds(30)));
    before_ = State();
  }

  void TearDown() override {
    EXPECT_EQ(State(), before_) << "bad input changed the server's state";
    ExpectHealthy();
  }

  grpc::Status Raw(const std::string& path, const std::string& payload) {
    grpc::ClientContext ctx;
    ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(20));
    grpc::Slice slice(payload);
    grpc::ByteBuffer request(&slice, 1);
    grpc::ByteBuffer response;
    std::promise<grpc::Status> done;
    generic_->UnaryCall(&ctx, path, grpc::StubOptions(), &request, &response,
                        [&](grpc::Status s) { done.set_value(std::move(s)); });
    return done.get_future().get();
  }

  int ReadyState(const std::string& id) {
    grpc::ClientContext ctx;
    virmgrpc::GetPartitionStatusRequest request;
    request.set_partition_id(id);
    virmgrpc::GetPartitionStatusReply reply;
    if (!user_->GetPartitionStatus(&ctx, request, &reply).ok()) return -1;
    return reply.status().ready_state();
  }

  // Everything the APIs list, and the ready state of "keep".
  std::string State() {
    absl::StatusOr<std::string> state = ListedState(*server_);
    EXPECT_TRUE(state.ok()) << state.status();
    return absl::StrCat(state.value_or(""), "keep: ", ReadyState("keep"), "\n");
  }

  void ExpectHealthy() {
    grpc::ClientContext ctx;
    ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(10));
    virmgrpc::VersionReply version;
    EXPECT_TRUE(virmgrpc::VersionService::NewStub(channel_)
                    ->GetVersion(&ctx, virmgrpc::VersionRequest(), &version)
                    .ok());
    // And it still does work: a partition comes and goes.
    grpc::ClientContext c1;
    virmgrpc::CreatePartitionRequest request;
    request.mutable_requirements()->set_id("after");
    request.mutable_requirements()->set_size(1);
    virmgrpc::CreatePartitionReply reply;
    grpc::Status s = user_->CreatePartition(&c1, request, &reply);
    EXPECT_TRUE(s.ok()) << s.error_message();
    grpc::ClientContext c2;
    virmgrpc::RemovePartitionRequest remove;
    remove.set_partition_id("after");
    virmgrpc::RemovePartitionReply removed;
    s = user_->RemovePartition(&c2, remove, &removed);
    EXPECT_TRUE(s.ok()) << s.error_message();
  }

  std::shared_ptr<grpc::Channel> channel_;
  std::unique_ptr<grpc::GenericStub> generic_;
  std::unique_ptr<virmgrpc::UserService::Stub> user_;
  std::unique_ptr<vipuadmin::AdminService::Stub> admin_;
  std::string before_;
};

// Codes that blame the server: none of them may answer bad input.
void ExpectClientError(const grpc::Status& s, const std::string& what) {
  EXPECT_NE(s.error_code(), grpc::StatusCode::UNKNOWN) << what << ": " << s.error_message();
  EXPECT_NE(s.error_code(), grpc::StatusCode::UNIMPLEMENTED) << what;
  EXPECT_NE(s.error_code(), grpc::StatusCode::DEADLINE_EXCEEDED) << what;
  EXPECT_NE(s.error_code(), grpc::StatusCode::UNAVAILABLE) << what << ": " << s.error_message();
  EXPECT_NE(s.error_code(), grpc::StatusCode::DATA_LOSS) << what;
}

TEST_F(MalformedTest, RandomBytesToEveryMethod) {
  std::mt19937 rng(20240617);
  const auto methods = AllMethods();
  ASSERT_GE(methods.size(), 20u);
  for (const MethodDescriptor* m : methods) {
    for (int i = 0; i < 25; ++i) {
      std::string payload(1 + rng() % 512, '\0');
      for (char& c : payload) c = static_cast<char>(rng());
      // Half of them start with a plausible tag, to get past the first byte.
      if (i % 2 == 0) payload[0] = static_cast<char>(0x0A);
      grpc::Status s = Raw(Path(m), payload);
      ExpectClientError(s, absl::StrCat(Path(m), " random #", i));
      // gRPC answers a payload that does not parse with INTERNAL before our
      // code runs; one that parses must be answered like any request.
      if (Parses(m, payload)) {
        EXPECT_NE(s.error_code(), grpc::StatusCode::INTERNAL)
            << Path(m) << " random #" << i << ": " << s.error_message();
      } else {
        EXPECT_EQ(s.error_code(), grpc::StatusCode::INTERNAL) << Path(m) << " random #" << i;
      }
    }
    // A length prefix that promises more than is there.
    ExpectClientError(Raw(Path(m), std::string("\x0A\xFF\xFF\xFF\xFF\x0F", 6)),
                      absl::StrCat(Path(m), " truncated"));
  }
}

TEST_F(MalformedTest, OversizedMessagesAreRefusedBeforeParsing) {
  const std::string huge = UnknownFieldOfSize(kOverLimit);
  for (const MethodDescriptor* m : AllMethods()) {
    grpc::Status s = Raw(Path(m), huge);
    EXPECT_EQ(s.error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED)
        << Path(m) << ": " << s.error_message();
  }
  // Typed: a 5 MB id, and strings of that size in every field of every request.
  for (const MethodDescriptor* m : AllMethods()) {
    grpc::Status s = Raw(Path(m), ExtremeRequest(m, {1, 1, std::string(kOverLimit, 'a'), 1}));
    // A request without string fields is small and an ordinary bad request.
    if (s.error_code() != grpc::StatusCode::RESOURCE_EXHAUSTED) {
      ExpectClientError(s, absl::StrCat(Path(m), " huge strings"));
    }
  }
  // Under the limit but far beyond any valid value: a 3 MB id, 200000 IPUs.
  virmgrpc::CreatePartitionRequest big;
  big.mutable_requirements()->set_id(std::string(3 * 1024 * 1024, 'p'));
  big.mutable_requirements()->set_size(4);
  grpc::Status s = Raw("/virmgrpc.UserService/CreatePartition", big.SerializeAsString());
  EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT) << s.error_message();
  EXPECT_LT(s.error_message().size(), 1024u) << "the error echoes the whole id";
  virmgrpc::CreatePartitionRequest many;
  many.mutable_requirements()->set_id("many");
  many.mutable_requirements()->set_size(4);
  for (uint32_t i = 0; i < 200000; ++i) {
    auto* ipu = many.mutable_requirements()->add_ipus();
    ipu->set_topology_id(i);
    ipu->set_routing_id(i);
  }
  s = Raw("/virmgrpc.UserService/CreatePartition", many.SerializeAsString());
  EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT) << s.error_message();
  EXPECT_LT(s.error_message().size(), 1024u);
}

TEST_F(MalformedTest, ExtremeValuesInEveryFieldOfEveryMethod) {
  const std::vector<Extremes> variants = {
      // Valid-looking names nobody uses, every number at its maximum.
      {std::numeric_limits<uint64_t>::max(), std::numeric_limits<int32_t>::max(), "zz-none", 3},
      // 2^31 (negative as int32), enum -1, empty names.
      {uint64_t{1} << 31, -1, "", 2},
      // 2^32 - 1 everywhere, unknown enum 12345, ids that are not ids.
      {0xFFFFFFFFull, 12345, "../../etc/passwd\n%s%n", 1},
  };
  for (const MethodDescriptor* m : AllMethods()) {
    // Creating a user with a fresh name is a valid request, not bad input.
    if (m->service()->name() == "UserAdminService") continue;
    for (size_t v = 0; v < variants.size(); ++v) {
      grpc::Status s = Raw(Path(m), ExtremeRequest(m, variants[v]));
      ExpectClientError(s, absl::StrCat(Path(m), " variant ", v));
      EXPECT_NE(s.error_code(), grpc::StatusCode::INTERNAL)
          << Path(m) << " variant " << v << ": " << s.error_message();
      // Whatever has fields to be wrong in must refuse; reads of nothing and
      // a heartbeat of an unknown agent (told to register) may answer.
      const bool may_succeed = m->input_type()->field_count() == 0 || m->name() == "Heartbeat" ||
                               (v == 1 && m->name() == "ListPartitions") ||
                               (v == 1 && m->name() == "ListIPUAttributes");
      if (!may_succeed) {
        EXPECT_FALSE(s.ok()) << Path(m) << " accepted variant " << v;
      }
    }
  }
}

TEST_F(MalformedTest, OutOfRangeNumbersInCreatePartition) {
  auto refused = [&](const std::function<void(virmgrpc::PartitionRequirements*)>& edit,
                     const std::string& field) {
    virmgrpc::CreatePartitionRequest request;
    request.mutable_requirements()->set_id("oor");
    request.mutable_requirements()->set_size(4);
    edit(request.mutable_requirements());
    grpc::Status s = Raw("/virmgrpc.UserService/CreatePartition", request.SerializeAsString());
    EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT)
        << field << ": " << s.error_message();
    EXPECT_THAT(s.error_message(), ::testing::HasSubstr(field));
  };
  using R = virmgrpc::PartitionRequirements*;
  refused([](R r) { r->set_size(1u << 31); }, "size");
  refused([](R r) { r->set_size(0xFFFFFFFFu); }, "size");
  refused([](R r) { r->set_num_gcds(0xFFFFFFFFu); }, "num_gcds");
  refused([](R r) { r->set_num_gcds(1u << 31); }, "num_gcds");
  refused([](R r) { r->set_num_ipulink_segments(0xFFFFFFFFu); }, "num_ipulink_segments");
  refused([](R r) { r->set_num_ipulink_segments(3); }, "num_ipulink_segments");
  // Segments larger than an ILD of the pod (ResolveDefaults).
  refused(
      [](R r) {
        r->set_size(32);
        r->set_num_ipulink_segments(1);
      },
      "num_ipulink_segments: 1 ILD(s) give segments of 32 IPUs");
  refused([](R r) { r->set_ipulink_routing_type(static_cast<virmgrpc::IpuLinkRoutingType>(99)); },
          "ipulink_routing_type");
  refused([](R r) { r->set_sync_type(static_cast<virmgrpc::SyncType>(-1)); }, "sync_type");
  refused([](R r) { r->set_gw_routing_type(static_cast<virmgrpc::GatewayRoutingType>(1)); },
          "gw_routing_type");
  // IPU positions beyond the pod (4 machines, topology ids 0..15, one ILD).
  auto ipus = [](R r, uint32_t ild, uint32_t first) {
    for (uint32_t i = 0; i < 4; ++i) {
      auto* ipu = r->add_ipus();
      ipu->set_ipulink_domain_topology_id(ild);
      ipu->set_topology_id(first + i);
      ipu->set_routing_id(i);
    }
  };
  for (uint32_t first : {16u, 1000u, 0xFFFFFFF0u}) {
    virmgrpc::CreatePartitionRequest request;
    request.mutable_requirements()->set_id("oor");
    request.mutable_requirements()->set_size(4);
    ipus(request.mutable_requirements(), 0, first);
    grpc::Status s = Raw("/virmgrpc.UserService/CreatePartition", request.SerializeAsString());
    EXPECT_FALSE(s.ok()) << first;
    ExpectClientError(s, absl::StrCat("topology id ", first));
  }
  virmgrpc::CreatePartitionRequest request;
  request.mutable_requirements()->set_id("oor");
  request.mutable_requirements()->set_size(4);
  ipus(request.mutable_requirements(), 0xFFFFFFFFu, 0);
  grpc::Status s = Raw("/virmgrpc.UserService/CreatePartition", request.SerializeAsString());
  EXPECT_FALSE(s.ok());
  ExpectClientError(s, "ild 2^32-1");
}

// A replica needs at least one IPU: num_replicas above the size is refused,
// whatever num_gcds is (TearDown checks that nothing changed).
TEST_F(MalformedTest, MoreReplicasThanIpusAreRefused) {
  for (uint32_t num_gcds : {0u, 1u, 4u}) {
    for (uint32_t replicas : {8u, 1u << 31, 0xFFFFFFFCu, 0xFFFFFFFFu}) {
      if (num_gcds > 1 && replicas % num_gcds != 0) continue;
      virmgrpc::CreatePartitionRequest request;
      request.mutable_requirements()->set_id("oor");
      request.mutable_requirements()->set_size(4);
      request.mutable_requirements()->set_num_gcds(num_gcds);
      request.mutable_requirements()->set_num_replicas(replicas);
      grpc::Status s = Raw("/virmgrpc.UserService/CreatePartition", request.SerializeAsString());
      EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT)
          << num_gcds << "/" << replicas << ": " << s.error_message();
      EXPECT_THAT(s.error_message(),
                  ::testing::HasSubstr("num_replicas: must be at most the size 4"));
    }
  }
}

TEST_F(MalformedTest, OutOfRangeNumbersOnRealObjects) {
  // A GCD beyond the partition's.
  for (uint32_t gcd : {1u, 1u << 31, 0xFFFFFFFFu}) {
    virmgrpc::GetPartitionIpuofConfigRequest request;
    request.set_partition_id("keep");
    request.mutable_gcd_id()->set_id(gcd);
    grpc::Status s =
        Raw("/virmgrpc.UserService/GetPartitionIpuofConfig", request.SerializeAsString());
    EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT) << gcd << s.error_message();
    EXPECT_THAT(s.error_message(), ::testing::HasSubstr("gcd_id"));
  }
  // Fault injection on a real machine with numbers past its IPUs and ports.
  grpc::ClientContext ctx;
  vipuadmin::ListAgentsReply agents;
  ASSERT_TRUE(admin_->ListAgents(&ctx, {}, &agents).ok());
  ASSERT_FALSE(agents.agents().empty());
  const std::string agent = agents.agents(0).id();
  for (uint32_t n : {4u, 14u, 1u << 31, 0xFFFFFFFFu}) {
    vipuadmin::InjectFaultRequest ipu;
    ipu.set_agent_id(agent);
    ipu.set_kind(vipuadmin::FAULT_IPU_ERROR);
    ipu.set_ipu(n);
    grpc::Status s = Raw("/vipuadmin.AdminService/InjectFault", ipu.SerializeAsString());
    EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT) << n << s.error_message();
    vipuadmin::InjectFaultRequest link;
    link.set_agent_id(agent);
    link.set_kind(vipuadmin::FAULT_LINK_DOWN);
    link.set_link(n == 4 ? 14 : n);  // ports are 0..13
    s = Raw("/vipuadmin.AdminService/InjectFault", link.SerializeAsString());
    EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT) << n << s.error_message();
  }
  vipuadmin::InjectFaultRequest kind;
  kind.set_agent_id(agent);
  kind.set_kind(static_cast<vipuadmin::FaultKind>(77));
  EXPECT_EQ(Raw("/vipuadmin.AdminService/InjectFault", kind.SerializeAsString()).error_code(),
            grpc::StatusCode::INVALID_ARGUMENT);
  // A registration of a real agent id from a port that cannot exist must
  // not move the agent.
  for (uint32_t port : {0u, 65536u, 0xFFFFFFFFu}) {
    vipuagent::RegisterRequest request;
    request.set_agent_id(agent);
    request.set_host("127.0.0.1");
    request.set_port(port);
    request.mutable_machine()->set_agent_id(agent);
    request.mutable_machine()->set_machine_type("m2000");
    grpc::Status s = Raw("/vipuagent.AgentRegistry/Register", request.SerializeAsString());
    EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT) << port << s.error_message();
  }
  // A heartbeat that reports IPUs and ports no machine has.
  vipuagent::HeartbeatRequest beat;
  beat.set_agent_id("zz-none");
  for (uint32_t n : {4u, 0xFFFFFFFFu}) {
    auto* h = beat.add_ipu_health();
    h->set_index(n);
    h->set_healthy(false);
    auto* l = beat.add_link_health();
    l->set_port(n);
    l->set_state(vipuagent::LINK_STATE_DOWN);
    l->set_kind(static_cast<vipuagent::LinkKind>(n));
  }
  ExpectClientError(Raw("/vipuagent.AgentRegistry/Heartbeat", beat.SerializeAsString()),
                    "heartbeat out of range");
}

}  // namespace
}  // namespace vipu::testing
