// The HCL reader of the configuration files (hcl/hcl.h) on arbitrary text:
// no crash, only allowed keys come out, each at most once, and every
// refusal names the file and line.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <set>
#include <string>

#include "hcl/hcl.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const std::set<std::string> kAllowed = {"api-host", "api-port", "api-timeout",
                                                 "api-user-id", "api-access-key"};
  const std::string text(reinterpret_cast<const char*>(data), size);
  auto parsed = vipu::hcl::Parse(text, "fuzz.hcl", kAllowed);
  if (parsed.ok()) {
    std::set<std::string> seen;
    for (const vipu::hcl::Entry& e : *parsed) {
      if (!kAllowed.count(e.key) || e.line < 1) abort();
      if (!seen.insert(e.key).second) abort();
    }
  } else if (std::string(parsed.status().message()).find("fuzz.hcl:") == std::string::npos) {
    abort();
  }
  return 0;
}
