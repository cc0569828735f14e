// poprun's option parser (poprun/poprun_options.h): one argument per input line.
// No crash, no runaway expansion (-H host[a-b]), and what is accepted keeps
// the documented minimums and serializes.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <vector>

#include "absl/strings/str_split.h"
#include "poprun/poprun_options.h"

namespace {

// Options that read or write files; the fuzzer stays off the file system.
bool Dropped(const std::string& arg) {
  for (const char* f : {"--import-config", "--export-config", "--host-file"}) {
    if (arg.find(f) != std::string::npos) return true;
  }
  return false;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  std::vector<std::string> lines = absl::StrSplit(text, '\n');
  if (lines.size() > 64) return 0;
  std::vector<std::string> args;
  for (const std::string& l : lines) {
    if (!Dropped(l)) args.push_back(l);
  }
  auto parsed = vipu::poprun::ParseCommandLine(args);
  if (!parsed.ok()) return 0;
  if (parsed->num_replicas < 1 || parsed->ipus_per_replica < 1 || parsed->num_instances < 1) {
    abort();
  }
  if (vipu::poprun::SerializeConfig(*parsed).empty()) abort();
  return 0;
}
