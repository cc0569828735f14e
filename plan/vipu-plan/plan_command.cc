// `vipu-plan replay|compare|generate`: flags to traces, replays and the files they write.
#include "plan/vipu-plan/plan_command.h"

#include <chrono>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <memory>
#include <optional>
#include <ostream>
#include <string>
#include <utility>
#include <vector>

#include "CLI/CLI.hpp"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "base/status_macros.h"
#include "fabric/topology.h"
#include "plan/generator.h"
#include "plan/model_run_time.h"
#include "plan/pod.h"
#include "plan/replay.h"
#include "plan/report.h"
#include "plan/summary.h"
#include "plan/trace_readers.h"
#include "plan/vipu-plan/live_replay.h"

namespace vipu::plan {
namespace {

// Flags shared by replay and compare.
struct ReplayFlags {
  std::string trace;
  std::string format;  // swf, csv; empty: by the file name
  std::string columns;
  int64_t ipus_per_proc = 1;
  int64_t seed = 1;
  std::optional<double> machine_mtbf_hours;
  std::optional<double> repair_hours;
  int64_t backfill_depth = 1000;
  std::string out;
  bool quiet = false;
  bool run_past_limit = false;  // jobs are not ended at their requested time
  std::string live;             // HOST:PORT of a vipu-server to drive
  double time_scale = 1000;
};

absl::Status Invalid(std::string m) { return absl::InvalidArgumentError(std::move(m)); }

absl::StatusOr<Trace> LoadTrace(const ReplayFlags& f) {
  if (f.ipus_per_proc < 1 || f.ipus_per_proc > 65536) {
    return Invalid(absl::StrCat("ipus-per-proc: must be 1..65536, got ", f.ipus_per_proc));
  }
  std::string format = f.format;
  if (format.empty()) {
    format = absl::EndsWith(f.trace, ".swf") || absl::EndsWith(f.trace, ".swf.gz") ? "swf" : "csv";
  }
  const uint32_t k = static_cast<uint32_t>(f.ipus_per_proc);
  if (format == "swf") {
    if (!f.columns.empty()) return Invalid("columns: apply to CSV traces only");
    return ReadSwf(f.trace, k);
  }
  if (format != "csv") return Invalid(absl::StrCat("format: must be swf or csv, got ", format));
  ASSIGN_OR_RETURN(ColumnMap columns, ParseColumnMap(f.columns));
  return ReadCsv(f.trace, columns, k);
}

absl::StatusOr<ReplayOptions> OptionsOf(const ReplayFlags& f, Policy policy) {
  ReplayOptions o;
  o.policy = policy;
  o.end_at_limit = !f.run_past_limit;
  if (f.seed < 0) return Invalid(absl::StrCat("seed: must be >= 0, got ", f.seed));
  o.seed = static_cast<uint64_t>(f.seed);
  if (f.backfill_depth < 1 || f.backfill_depth > 1000000) {
    return Invalid(absl::StrCat("backfill-depth: must be 1..1000000, got ", f.backfill_depth));
  }
  o.backfill_depth = static_cast<uint32_t>(f.backfill_depth);
  if (f.machine_mtbf_hours.has_value() != f.repair_hours.has_value()) {
    return Invalid("machine-mtbf: --machine-mtbf and --repair-hours go together");
  }
  if (f.machine_mtbf_hours) {
    if (!(*f.machine_mtbf_hours > 0) || !std::isfinite(*f.machine_mtbf_hours)) {
      return Invalid(absl::StrCat("machine-mtbf: must be > 0 hours, got ", *f.machine_mtbf_hours));
    }
    if (!(*f.repair_hours > 0) || !std::isfinite(*f.repair_hours)) {
      return Invalid(absl::StrCat("repair-hours: must be > 0, got ", *f.repair_hours));
    }
    o.faults.machine_mtbf_hours = *f.machine_mtbf_hours;
    o.faults.repair_hours = *f.repair_hours;
  }
  return o;
}

// One replay and everything it writes.
struct Run {
  std::string label;
  PlanPod pod;
  std::unique_ptr<fabric::ClusterLayout> layout;
  ReplayOptions options;
  ReplayResult result;
  Summary summary;
};

absl::StatusOr<std::unique_ptr<Run>> Prepare(const std::string& pod_text, Policy policy,
                                             const ReplayFlags& f) {
  auto run = std::make_unique<Run>();
  ASSIGN_OR_RETURN(run->pod, ParsePod(pod_text));
  ASSIGN_OR_RETURN(fabric::ClusterLayout layout, fabric::ClusterLayout::Build(run->pod.cluster));
  run->layout = std::make_unique<fabric::ClusterLayout>(std::move(layout));
  ASSIGN_OR_RETURN(run->options, OptionsOf(f, policy));
  run->label = absl::StrCat(run->pod.spec.name, "-", PolicyName(policy));
  return run;
}

absl::Status Execute(const Trace& trace, Run* run, bool quiet, std::ostream& err) {
  ModelRunTime model(run->pod.spec);
  run->options.model_run_time = [&model](const TraceJob& job, uint32_t size, uint32_t ilds) {
    return model.RunSeconds(job, size, ilds);
  };
  const std::string label = run->label;
  if (!quiet) {
    run->options.progress = [&err, label](const ReplayProgress& p) {
      err << absl::StrFormat("vipu-plan: %s: %u/%u jobs arrived, %s simulated\n", label, p.arrived,
                             p.total, FormatDuration(p.simulated_s));
    };
  }
  const auto wall0 = std::chrono::steady_clock::now();
  ASSIGN_OR_RETURN(run->result, Replay(*run->layout, trace, run->options));
  const double wall =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - wall0).count();
  run->options.model_run_time = nullptr;
  run->options.progress = nullptr;
  run->summary =
      Summarise(trace, run->result, run->pod.spec.name, run->layout->num_ipus(), run->options);
  if (!quiet) {
    err << absl::StrFormat(
        "vipu-plan: %s: %u jobs, %u events in %.3f s wall: %.0f simulated seconds per wall "
        "second\n",
        label, trace.jobs.size(), run->result.events, wall,
        wall > 0 ? run->summary.makespan_s / wall : 0.0);
  }
  return absl::OkStatus();
}

// Writes every file into `dir` (created when missing), each first under a
// temporary name and then renamed.
absl::Status WriteFiles(const std::string& dir,
                        const std::vector<std::pair<std::string, std::string>>& files) {
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) return absl::InternalError(absl::StrCat("out: cannot create ", dir, ": ", ec.message()));
  for (const auto& [name, content] : files) {
    const std::filesystem::path path = std::filesystem::path(dir) / name;
    std::filesystem::create_directories(path.parent_path(), ec);
    const std::filesystem::path tmp = path.string() + ".tmp";
    {
      std::ofstream file(tmp, std::ios::binary | std::ios::trunc);
      file << content;
      if (!file.good())
        return absl::InternalError(absl::StrCat("out: cannot write ", tmp.string()));
    }
    std::filesystem::rename(tmp, path, ec);
    if (ec) return absl::InternalError(absl::StrCat("out: cannot write ", path.string()));
  }
  return absl::OkStatus();
}

// --out must be a directory or not exist yet.
absl::Status CheckOut(const std::string& out) {
  if (out.empty()) return Invalid("out: must name a directory");
  std::error_code ec;
  if (std::filesystem::exists(out, ec) && !std::filesystem::is_directory(out, ec)) {
    return Invalid(absl::StrCat("out: ", out, " exists and is not a directory"));
  }
  return absl::OkStatus();
}

// Bad input (flags, trace files and lines) is a usage error; the rest
// (writing, the live server) a failure.
int Fail(std::ostream& err, const absl::Status& status) {
  err << "vipu-plan: " << status.message() << "\n";
  const bool input =
      absl::IsInvalidArgument(status) || absl::IsNotFound(status) || absl::IsDataLoss(status);
  return input ? kExitUsage : kExitFailure;
}

// --live and --time-scale: INVALID_ARGUMENT unless HOST:PORT, a scale > 0,
// and no faults (a real pod's machines fail on their own).
absl::Status CheckLive(const ReplayFlags& f) {
  if (f.live.empty()) return absl::OkStatus();
  const size_t colon = f.live.rfind(':');
  int64_t port = 0;
  if (colon == std::string::npos || colon == 0 ||
      !absl::SimpleAtoi(f.live.substr(colon + 1), &port) || port < 1 || port > 65535) {
    return Invalid(absl::StrCat("live: expected HOST:PORT, got \"", f.live, "\""));
  }
  if (!(f.time_scale > 0) || !std::isfinite(f.time_scale)) {
    return Invalid(absl::StrCat("time-scale: must be > 0, got ", f.time_scale));
  }
  if (f.machine_mtbf_hours) return Invalid("live: --machine-mtbf applies to virtual replays only");
  return absl::OkStatus();
}

std::string Headline(const Summary& s) {
  return absl::StrFormat(
      "%s %s: utilisation %.1f%%, makespan %s, wait p50 %s p95 %s p99 %s max %s, bounded "
      "slowdown %.2f, fragmentation %.1f%%, refused %u, rounded %u\n",
      s.pod, s.policy, 100 * s.utilisation, FormatDuration(s.makespan_s),
      FormatDuration(s.wait_p50_s), FormatDuration(s.wait_p95_s), FormatDuration(s.wait_p99_s),
      FormatDuration(s.wait_max_s), s.bounded_slowdown_mean, 100 * s.fragmentation, s.refused,
      s.rounded);
}

std::string SkipLine(const Trace& trace) {
  if (trace.skipped.empty()) return "";
  std::vector<std::string> parts;
  for (const auto& [reason, count] : trace.skipped)
    parts.push_back(absl::StrCat(count, " ", reason));
  return absl::StrCat("skipped rows of ", trace.source, ": ", absl::StrJoin(parts, ", "), "\n");
}

int RunReplay(const ReplayFlags& f, const std::string& pod, const std::string& policy_name,
              std::ostream& out, std::ostream& err) {
  if (absl::Status s = CheckOut(f.out); !s.ok()) return Fail(err, s);
  if (absl::Status s = CheckLive(f); !s.ok()) return Fail(err, s);
  absl::StatusOr<Policy> policy = ParsePolicy(policy_name);
  if (!policy.ok()) return Fail(err, policy.status());
  absl::StatusOr<std::unique_ptr<Run>> run = Prepare(pod, *policy, f);
  if (!run.ok()) return Fail(err, run.status());
  absl::StatusOr<Trace> trace = LoadTrace(f);
  if (!trace.ok()) return Fail(err, trace.status());
  if (absl::Status s = Execute(*trace, run->get(), f.quiet, err); !s.ok()) return Fail(err, s);
  const Run& r = **run;
  std::string live_line;
  if (!f.live.empty()) {
    LiveOptions live;
    live.address = f.live;
    live.time_scale = f.time_scale;
    if (!f.quiet) {
      live.progress = [&err](uint64_t done, uint64_t all) {
        err << absl::StrFormat("vipu-plan: live: %u/%u creates and removes\n", done, all);
      };
    }
    absl::StatusOr<LiveOutcome> outcome = ReplayLive(*trace, r.result, live);
    if (!outcome.ok()) return Fail(err, outcome.status());
    if (!outcome->divergences.empty()) {
      err << "vipu-plan: live: " << f.live << " diverged from the replay "
          << outcome->divergences.size() << " time(s); nothing written:\n";
      for (size_t i = 0; i < outcome->divergences.size() && i < 10; ++i) {
        err << "  " << outcome->divergences[i] << "\n";
      }
      return kExitFailure;
    }
    live_line = absl::StrFormat(
        "live: %s created %u partitions and refused %u creates in the replay's order, each on "
        "the IPUs the replay chose (%.1f s wall)\n",
        f.live, outcome->creates, outcome->refusals, outcome->wall_s);
  }
  const std::vector<ReportRun> report{{r.label, &*trace, &r.result, &r.summary}};
  absl::Status written = WriteFiles(f.out, {{"jobs.csv", JobsCsv(*trace, r.result, *r.layout)},
                                            {"summary.json", SummaryJson(r.summary)},
                                            {"report.html", ReportHtml(report)}});
  if (!written.ok()) return Fail(err, written);
  out << SkipLine(*trace) << Headline(r.summary) << live_line;
  out << "wrote " << f.out << "/jobs.csv, summary.json, report.html\n";
  return kExitOk;
}

int RunCompare(const ReplayFlags& f, const std::string& pods, const std::string& policies,
               std::ostream& out, std::ostream& err) {
  if (absl::Status s = CheckOut(f.out); !s.ok()) return Fail(err, s);
  std::vector<std::unique_ptr<Run>> runs;
  const std::vector<std::string> pod_list = absl::StrSplit(pods, ',', absl::SkipWhitespace());
  const std::vector<std::string> policy_list =
      absl::StrSplit(policies, ',', absl::SkipWhitespace());
  if (pod_list.empty()) return Fail(err, Invalid("pods: name at least one pod"));
  if (policy_list.empty()) return Fail(err, Invalid("policies: name at least one policy"));
  if (pod_list.size() * policy_list.size() > 16) {
    return Fail(err, Invalid("pods: at most 16 replays (pods x policies) in one comparison"));
  }
  for (const std::string& pod : pod_list) {
    for (const std::string& name : policy_list) {
      absl::StatusOr<Policy> policy = ParsePolicy(name);
      if (!policy.ok()) return Fail(err, policy.status());
      absl::StatusOr<std::unique_ptr<Run>> run = Prepare(pod, *policy, f);
      if (!run.ok()) return Fail(err, run.status());
      runs.push_back(*std::move(run));
    }
  }
  absl::StatusOr<Trace> trace = LoadTrace(f);
  if (!trace.ok()) return Fail(err, trace.status());
  std::vector<std::pair<std::string, std::string>> files;
  std::vector<ReportRun> report;
  std::string summaries = "[";
  for (auto& run : runs) {
    if (absl::Status s = Execute(*trace, run.get(), f.quiet, err); !s.ok()) return Fail(err, s);
    files.emplace_back(run->label + "/jobs.csv", JobsCsv(*trace, run->result, *run->layout));
    files.emplace_back(run->label + "/summary.json", SummaryJson(run->summary));
    report.push_back({run->label, &*trace, &run->result, &run->summary});
    std::string json = SummaryJson(run->summary);
    json.pop_back();
    absl::StrAppend(&summaries, summaries.size() > 1 ? "," : "", json);
  }
  files.emplace_back("summary.json", summaries + "]\n");
  files.emplace_back("report.html", ReportHtml(report));
  if (absl::Status s = WriteFiles(f.out, files); !s.ok()) return Fail(err, s);
  out << SkipLine(*trace);
  for (const auto& run : runs) out << Headline(run->summary);
  out << "wrote " << f.out << "/report.html, summary.json and one folder per replay\n";
  return kExitOk;
}

void AddReplayFlags(CLI::App* app, ReplayFlags* f) {
  app->add_option("trace", f->trace, "SWF (.swf, .swf.gz) or CSV trace")->required();
  app->add_option("--out", f->out, "directory for jobs.csv, summary.json, report.html")->required();
  app->add_option("--format", f->format, "swf or csv (default: by the file name)");
  app->add_option("--columns", f->columns,
                  "CSV columns: id=,submit=,ipus=,duration=|end=[,start=],requested=,user=,"
                  "model=,steps=,ipus_per_replica=");
  app->add_option("--ipus-per-proc", f->ipus_per_proc, "IPUs per processor (GPU) of the trace (1)");
  app->add_option("--seed", f->seed, "seed of the random faults (1)");
  app->add_option("--machine-mtbf", f->machine_mtbf_hours,
                  "mean hours between failures of one machine (no faults when absent)");
  app->add_option("--repair-hours", f->repair_hours, "hours a failed machine is away");
  app->add_option("--backfill-depth", f->backfill_depth,
                  "queued jobs backfill examines at each event (1000)");
  app->add_flag("--quiet", f->quiet, "no progress on stderr");
  app->add_flag("--run-past-limit", f->run_past_limit,
                "let a job run past the time it requested (default: it is ended there, as a "
                "batch scheduler ends it)");
}

// `generate`'s flags: the options as parsed, the counts as wide integers so
// that negatives reach GeneratorOptionsFrom's checks.
struct GenerateFlags {
  GeneratorOptions options;
  std::string out;
  int64_t jobs = 0, pod_ipus = 0, max_ipus = 0, users = 0, seed = 0;
};

void AddGenerateFlags(CLI::App* app, GenerateFlags* f) {
  app->add_option("--jobs", f->jobs, "number of jobs (1000)");
  app->add_option("--pod-ipus", f->pod_ipus, "IPUs of the pod the load is offered to (64)");
  app->add_option("--max-ipus", f->max_ipus, "largest job (a quarter of the pod)");
  app->add_option("--load", f->options.load, "offered load, share of the pod's IPUs (0.9)");
  app->add_option("--min-run", f->options.min_run_s, "shortest run, seconds (60)");
  app->add_option("--max-run", f->options.max_run_s, "longest run, seconds (86400)");
  app->add_option("--span-days", f->options.span_s,
                  "spread the arrivals over this many days instead of --load");
  app->add_option("--users", f->users, "number of users (20)");
  app->add_option("--seed", f->seed, "seed (1)");
  app->add_option("--out", f->out, "file to write: SWF when it ends in .swf, else CSV")->required();
}

// The generator's options from `generate`'s flags, each count checked when
// it was given; --span-days in seconds.
absl::StatusOr<GeneratorOptions> GeneratorOptionsFrom(const CLI::App& generate,
                                                      const GenerateFlags& f) {
  auto in_range = [&](const char* name, int64_t v, int64_t lo, int64_t hi) -> absl::Status {
    if (v < lo || v > hi)
      return Invalid(absl::StrCat(name, ": must be ", lo, "..", hi, ", got ", v));
    return absl::OkStatus();
  };
  GeneratorOptions gen = f.options;
  if (generate.count("--jobs")) {
    RETURN_IF_ERROR(in_range("jobs", f.jobs, 1, 100000000));
    gen.jobs = static_cast<uint64_t>(f.jobs);
  }
  if (generate.count("--pod-ipus")) {
    RETURN_IF_ERROR(in_range("pod-ipus", f.pod_ipus, 1, 65536));
    gen.pod_ipus = static_cast<uint32_t>(f.pod_ipus);
  }
  if (generate.count("--max-ipus")) {
    RETURN_IF_ERROR(in_range("max-ipus", f.max_ipus, 1, 65536));
    gen.max_ipus = static_cast<uint32_t>(f.max_ipus);
  }
  if (generate.count("--users")) {
    RETURN_IF_ERROR(in_range("users", f.users, 1, 1000000));
    gen.users = static_cast<uint32_t>(f.users);
  }
  if (generate.count("--seed")) {
    RETURN_IF_ERROR(in_range("seed", f.seed, 0, INT64_MAX));
    gen.seed = static_cast<uint64_t>(f.seed);
  }
  if (!(gen.span_s >= 0) || !std::isfinite(gen.span_s)) {
    return Invalid(absl::StrCat("span-days: must be >= 0, got ", gen.span_s));
  }
  gen.span_s *= 86400;
  return gen;
}

int RunGenerate(const GeneratorOptions& o, const std::string& path, std::ostream& out,
                std::ostream& err) {
  absl::StatusOr<Trace> trace = Generate(o);
  if (!trace.ok()) return Fail(err, trace.status());
  std::ofstream file(path, std::ios::binary | std::ios::trunc);
  // The file's name says the format, as replay reads it.
  file << (absl::EndsWith(path, ".swf") ? TraceSwf(*trace, o.pod_ipus) : TraceCsv(*trace));
  if (!file.good()) return Fail(err, absl::InternalError(absl::StrCat("out: cannot write ", path)));
  out << "wrote " << trace->jobs.size() << " jobs to " << path << "\n";
  return kExitOk;
}

}  // namespace

int RunVipuPlan(int argc, const char* const* argv, std::ostream& out, std::ostream& err) {
  CLI::App app{"vipu-plan: replay a job trace on a simulated pod with vipu-server's placement",
               "vipu-plan"};
  app.require_subcommand(1);
  ReplayFlags replay_flags, compare_flags;
  std::string pod, policy = "fifo", pods, policies = "fifo";
  CLI::App* replay = app.add_subcommand("replay", "Replay a trace on one pod under one policy");
  AddReplayFlags(replay, &replay_flags);
  replay->add_option("--pod", pod, "pod4..pod256, bow-pod..., or ILDSxMACHINES such as 64x16")
      ->required();
  replay->add_option("--policy", policy, "fifo, backfill or none (fifo)");
  replay->add_option("--live", replay_flags.live,
                     "HOST:PORT of a vipu-server on the same pod: send it the replay's creates "
                     "and removes and check it places every job where the replay did");
  replay->add_option("--time-scale", replay_flags.time_scale,
                     "with --live: virtual seconds per wall second (1000)");
  CLI::App* compare =
      app.add_subcommand("compare", "Replay a trace on several pods or policies, one report");
  AddReplayFlags(compare, &compare_flags);
  compare->add_option("--pods", pods, "comma list of pods")->required();
  compare->add_option("--policies", policies, "comma list of policies (fifo)");
  GenerateFlags gen;
  CLI::App* generate =
      app.add_subcommand("generate", "Write a synthetic trace (CSV, or SWF for a .swf name)");
  AddGenerateFlags(generate, &gen);
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp&) {
    out << (app.got_subcommand(replay)     ? replay->help()
            : app.got_subcommand(compare)  ? compare->help()
            : app.got_subcommand(generate) ? generate->help()
                                           : app.help());
    return kExitOk;
  } catch (const CLI::ParseError& e) {
    std::string message = e.what();
    for (char& c : message) {
      if (c == '\n') c = ' ';
    }
    err << "vipu-plan: " << message << "\n";
    return kExitUsage;
  }
  if (app.got_subcommand(replay)) return RunReplay(replay_flags, pod, policy, out, err);
  if (app.got_subcommand(compare)) return RunCompare(compare_flags, pods, policies, out, err);
  absl::StatusOr<GeneratorOptions> options = GeneratorOptionsFrom(*generate, gen);
  if (!options.ok()) return Fail(err, options.status());
  return RunGenerate(*options, gen.out, out, err);
}

}  // namespace vipu::plan
