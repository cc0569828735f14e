// --showjson output: a reply message as pretty-printed JSON with the proto
// field names (the names Graphcore's own tooling used) and zero values
// included, so scripts can rely on every field being present.
#ifndef VIPU_CLI_COMMON_JSON_OUTPUT_H_
#define VIPU_CLI_COMMON_JSON_OUTPUT_H_

#include <ostream>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "google/protobuf/message.h"

namespace vipu::cli {

// Newline-terminated.
absl::StatusOr<std::string> MessageToJson(const google::protobuf::Message& message);

// Writes MessageToJson(message) to `out` (the commands' --showjson answer).
absl::Status WriteJson(std::ostream& out, const google::protobuf::Message& message);

}  // namespace vipu::cli

#endif  // VIPU_CLI_COMMON_JSON_OUTPUT_H_
