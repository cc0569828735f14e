// PeerNames: the subject alternative names of a call's peer, from gRPC's AuthContext.
#include "tls/peer_identity.h"

#include <algorithm>

#include "absl/strings/str_join.h"

namespace vipu::tls {

std::vector<std::string> PeerNames(const grpc::AuthContext* context) {
  std::vector<std::string> names;
  if (context == nullptr) return names;
  for (const grpc::string_ref& value :
       context->FindPropertyValues("x509_subject_alternative_name")) {
    names.emplace_back(value.data(), value.size());
  }
  return names;
}

bool PeerHasName(const grpc::AuthContext* context, const std::string& name) {
  const std::vector<std::string> names = PeerNames(context);
  return std::find(names.begin(), names.end(), name) != names.end();
}

std::string DescribePeer(const grpc::AuthContext* context) {
  const std::vector<std::string> names = PeerNames(context);
  if (!names.empty()) return absl::StrJoin(names, ",");
  if (context != nullptr) {
    for (const grpc::string_ref& cn : context->FindPropertyValues("x509_common_name")) {
      return "CN=" + std::string(cn.data(), cn.size());
    }
  }
  return "no certificate";
}

}  // namespace vipu::tls
