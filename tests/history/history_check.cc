// history-check FILE: says whether a saved history is linearizable for the
// set of partitions (tests/history/linearizability.h), and if not, why.
//
// Exit status: 0 linearizable, 1 a violation, 2 a usage error or a file
// that cannot be read, 3 neither proven nor refuted within the search's
// limit.
#include <cstdio>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "tests/history/history_file.h"
#include "tests/history/linearizability.h"

namespace {

constexpr char kUsage[] =
    "usage: history-check [--max-configurations=N] FILE\n"
    "Checks that the history in FILE (one operation a line: client invoke_ns complete_ns\n"
    "kind partition result [answer]) is linearizable for a set of partitions.\n"
    "  --max-configurations=N  give up (exit 3) after exploring N configurations\n"
    "                          (default 4000000; about 50 bytes each)\n"
    "Exit status: 0 linearizable, 1 a violation, 2 bad usage or input, 3 undecided.\n";

int Usage(const std::string& error) {
  std::fprintf(stderr, "history-check: %s\n%s", error.c_str(), kUsage);
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  vipu::history::CheckOptions options;
  std::string path;
  for (int i = 1; i < argc; ++i) {
    const absl::string_view arg = argv[i];
    constexpr absl::string_view kMax = "--max-configurations=";
    if (arg == "-h" || arg == "--help") {
      std::fputs(kUsage, stdout);
      return 0;
    }
    if (absl::StartsWith(arg, kMax)) {
      const absl::string_view value = arg.substr(kMax.size());
      if (!absl::SimpleAtoi(value, &options.max_configurations) ||
          options.max_configurations == 0) {
        return Usage(
            absl::StrCat("--max-configurations needs a whole number above 0, not \"", value, "\""));
      }
    } else if (absl::StartsWith(arg, "-") && arg != "-") {
      return Usage(absl::StrCat("unknown option ", arg));
    } else if (!path.empty()) {
      return Usage(absl::StrCat("one FILE only; got ", path, " and ", arg));
    } else {
      path = std::string(arg);
    }
  }
  if (path.empty()) return Usage("no FILE given");

  absl::StatusOr<std::vector<vipu::history::Operation>> history =
      vipu::history::ReadHistoryFile(path);
  if (!history.ok()) {
    std::fprintf(stderr, "history-check: %s\n", std::string(history.status().message()).c_str());
    return 2;
  }
  absl::StatusOr<vipu::history::CheckResult> result =
      vipu::history::CheckLinearizable(*history, options);
  if (!result.ok()) {
    std::fprintf(stderr, "history-check: %s: %s\n", path.c_str(),
                 std::string(result.status().message()).c_str());
    return result.status().code() == absl::StatusCode::kResourceExhausted ? 3 : 2;
  }
  std::printf("%s: %zu operations, %zu checked, %zu configurations explored\n", path.c_str(),
              history->size(), result->operations_checked, result->configurations);
  if (result->linearizable) {
    std::printf("linearizable\n");
    return 0;
  }
  std::printf("NOT linearizable: %s\n", result->explanation.c_str());
  std::printf("operations involved (0 is the first operation line of the file):");
  for (size_t index : result->culprits) std::printf(" %zu", index);
  std::printf("\n");
  return 1;
}
