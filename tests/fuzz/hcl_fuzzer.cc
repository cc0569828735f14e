// The CLI's HCL config reader (cli/hcl.h) on arbitrary text: no crash, only
// allowed keys come out, and every refusal names the file and line.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <set>
#include <string>

#include "cli/hcl.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const std::set<std::string> kAllowed = {"api-host", "api-port", "api-timeout",
                                                 "api-user-id", "api-access-key"};
  const std::string text(reinterpret_cast<const char*>(data), size);
  auto parsed = vipu::cli::ParseHcl(text, "fuzz.hcl", kAllowed);
  if (parsed.ok()) {
    for (const auto& [key, value] : *parsed) {
      if (!kAllowed.count(key)) abort();
    }
  } else if (std::string(parsed.status().message()).find("fuzz.hcl:") == std::string::npos) {
    abort();
  }
  return 0;
}
