// RunPoprun: one whole poprun run, from parsing and validation to the PoprunJob that launches.
#include "poprun/poprun_runner.h"

#include <iostream>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "poprun/poprun_hosts.h"
#include "poprun/poprun_job.h"
#include "poprun/poprun_log.h"
#include "poprun/poprun_options.h"
#include "poprun/poprun_validation.h"

namespace vipu::poprun {
namespace {

int Fail(const absl::Status& status) { return ReportError(status.message()); }

void PrintVersion(const std::string& format) {
  if (format == "full-json") {
    std::cout << "{\"poprun\":\"" << VIPU_VERSION << "\",\"popdist\":\"" << VIPU_VERSION << "\"}\n";
  } else if (format == "full-text") {
    std::cout << "PopRun version " << VIPU_VERSION << "\nPopDist version " << VIPU_VERSION << "\n";
  } else {
    std::cout << "PopRun version " << VIPU_VERSION << "\n";
  }
}

}  // namespace

int RunPoprun(const std::vector<std::string>& args, const cli::Environment& env) {
  auto parsed = ParseCommandLine(args);
  if (!parsed.ok()) return Fail(parsed.status());
  const PoprunOptions& o = *parsed;
  if (o.help) {
    std::cout << HelpText();
    return 0;
  }
  if (o.version_format.has_value()) {
    PrintVersion(*o.version_format);
    return 0;
  }
  auto level =
      ResolveLogLevel(o.verbosity, env.vars.count("POPRUN_LOG_LEVEL")
                                       ? std::optional<std::string>(env.Get("POPRUN_LOG_LEVEL"))
                                       : std::nullopt);
  if (!level.ok()) return Fail(level.status());
  const Logger log(*level);
  if (absl::Status s = ValidateOptions(o); !s.ok()) return Fail(s);
  if (absl::Status s = ValidateAutoreport(o, env.Get("POPLAR_ENGINE_OPTIONS")); !s.ok()) {
    return Fail(s);
  }
  const HostProbe probe = SystemHostProbe();
  if (absl::Status s = CheckSynchronisation(o, probe); !s.ok()) return Fail(s);

  // Prepare hands its failure over before it removes what it created, so the
  // error line comes before the removal's log lines.
  absl::StatusOr<std::unique_ptr<PoprunJob>> job =
      PoprunJob::Prepare(o, env, log, probe, [](const absl::Status& s) { Fail(s); });
  if (!job.ok()) return 1;
  return (*job)->Finish((*job)->Launch());
}

}  // namespace vipu::poprun
