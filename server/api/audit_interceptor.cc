// A gRPC server interceptor writing one audit line per mutating call, and the request's object id.
#include "server/api/audit_interceptor.h"

#include <grpcpp/server_context.h>

#include <array>

#include "absl/time/clock.h"
#include "server/api/audited_methods.h"
#include "spdlog/spdlog.h"
#include "wire/metadata_keys.h"
#include "wire/status.h"

namespace vipu::server {
namespace {

using google::protobuf::FieldDescriptor;
using google::protobuf::Message;

constexpr std::array<const char*, 6> kObjectFields = {"partition_id",  "user_id",    "agent_id",
                                                      "allocation_id", "cluster_id", "path"};

std::string StringField(const Message& m, const char* name) {
  const FieldDescriptor* f = m.GetDescriptor()->FindFieldByName(name);
  if (f == nullptr || f->is_repeated() || f->type() != FieldDescriptor::TYPE_STRING) return "";
  return m.GetReflection()->GetString(m, f);
}

std::string FirstNamed(const Message& m) {
  for (const char* name : kObjectFields) {
    if (std::string v = StringField(m, name); !v.empty()) return v;
  }
  return "";
}

class AuditInterceptor : public grpc::experimental::Interceptor {
 public:
  AuditInterceptor(AuditLog* log, grpc::experimental::ServerRpcInfo* info)
      : log_(log), info_(info) {}

  void Intercept(grpc::experimental::InterceptorBatchMethods* methods) override {
    using grpc::experimental::InterceptionHookPoints;
    if (methods->QueryInterceptionHookPoint(InterceptionHookPoints::POST_RECV_MESSAGE)) {
      // The services here are protobuf services: the received message is
      // the generated request class, which derives from Message alone (so
      // the pointer is the Message's). Null when it did not parse.
      if (const void* m = methods->GetRecvMessage(); m != nullptr) {
        object_ = AuditObject(*static_cast<const Message*>(m));
      }
    }
    if (methods->QueryInterceptionHookPoint(InterceptionHookPoints::PRE_SEND_STATUS)) {
      Write(methods->GetSendStatus());
    }
    methods->Proceed();
  }

 private:
  void Write(const grpc::Status& status) {
    AuditRecord record;
    record.time = absl::Now();
    record.action = info_->method();
    record.object = object_;
    record.result = wire::CodeName(status.error_code());
    record.message = status.error_message();
    if (grpc::ServerContextBase* context = info_->server_context(); context != nullptr) {
      record.peer = context->peer();
      const auto& md = context->client_metadata();
      if (auto it = md.find(wire::kUserIdMetadata); it != md.end()) {
        record.user.assign(it->second.data(), it->second.size());
      }
    }
    if (absl::Status s = log_->Append(record); !s.ok()) {
      spdlog::error("audit log: {} (lost: {} {} by '{}')", std::string(s.message()), record.action,
                    record.object, record.user);
    }
  }

  AuditLog* log_;
  grpc::experimental::ServerRpcInfo* info_;
  std::string object_;
};

}  // namespace

std::string AuditObject(const Message& request) {
  if (std::string v = FirstNamed(request); !v.empty()) return v;
  const google::protobuf::Descriptor* d = request.GetDescriptor();
  const google::protobuf::Reflection* r = request.GetReflection();
  for (int i = 0; i < d->field_count(); ++i) {
    const FieldDescriptor* f = d->field(i);
    if (f->is_repeated() || f->cpp_type() != FieldDescriptor::CPPTYPE_MESSAGE ||
        !r->HasField(request, f)) {
      continue;
    }
    const Message& nested = r->GetMessage(request, f);
    if (std::string v = StringField(nested, "id"); !v.empty()) return v;
    if (std::string v = FirstNamed(nested); !v.empty()) return v;
  }
  return "";
}

grpc::experimental::Interceptor* AuditInterceptorFactory::CreateServerInterceptor(
    grpc::experimental::ServerRpcInfo* info) {
  if (info->method() == nullptr || !IsMutatingMethod(info->method())) return nullptr;
  return new AuditInterceptor(log_, info);
}

}  // namespace vipu::server
