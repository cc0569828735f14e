// --showjson: reply messages as pretty JSON with proto field names and zero values included.
#include "cli/common/json_output.h"

#include <memory>

#include "absl/strings/str_cat.h"
#include "base/status_macros.h"
#include "google/protobuf/descriptor.h"
#include "google/protobuf/io/coded_stream.h"
#include "google/protobuf/io/zero_copy_stream_impl_lite.h"
#include "google/protobuf/util/json_util.h"
#include "google/protobuf/util/type_resolver_util.h"

namespace vipu::cli {
namespace {

constexpr const char* kTypeUrlPrefix = "type.googleapis.com";

google::protobuf::util::TypeResolver* Resolver() {
  static auto* resolver = google::protobuf::util::NewTypeResolverForDescriptorPool(
      kTypeUrlPrefix, google::protobuf::DescriptorPool::generated_pool());
  return resolver;
}

}  // namespace

absl::StatusOr<std::string> MessageToJson(const google::protobuf::Message& message) {
  // MessageToJsonString prints maps in the (unspecified) order of plain
  // serialization; deterministic serialization sorts map keys, so the same
  // config prints the same bytes in the file and on stdout.
  std::string binary;
  {
    google::protobuf::io::StringOutputStream stream(&binary);
    google::protobuf::io::CodedOutputStream coded(&stream);
    coded.SetSerializationDeterministic(true);
    if (!message.SerializeToCodedStream(&coded)) {
      return absl::InternalError(absl::StrCat("encoding ", message.GetTypeName()));
    }
  }
  google::protobuf::util::JsonPrintOptions options;
  options.add_whitespace = true;
  options.preserve_proto_field_names = true;
  options.always_print_primitive_fields = true;
  std::string json;
  auto status = google::protobuf::util::BinaryToJsonString(
      Resolver(), absl::StrCat(kTypeUrlPrefix, "/", message.GetDescriptor()->full_name()), binary,
      &json, options);
  if (!status.ok()) {
    return absl::InternalError(
        absl::StrCat("encoding ", message.GetTypeName(), " as JSON: ", status.ToString()));
  }
  if (json.empty() || json.back() != '\n') json += "\n";
  return json;
}

absl::Status WriteJson(std::ostream& out, const google::protobuf::Message& message) {
  ASSIGN_OR_RETURN(std::string json, MessageToJson(message));
  out << json;
  return absl::OkStatus();
}

}  // namespace vipu::cli
