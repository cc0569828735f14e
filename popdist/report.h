// The run report that poprun's --autoreport-dir asks every instance for:
// <dir>/<instance>/vipu-report.json, what the pod knows of the instance's
// run (the partition it ran on, its place in the launch and the modelled
// times of a step on each IPU of a replica). docs/cli.md lists the fields.
//
// The application fills a RunReport when its run ends and calls
// writeRunReport; popdist adds the instance's place in the launch from the
// POPDIST_* environment and writes the file, or nothing when the launch did
// not ask for reports (no --autoreport-dir) or the instance's
// POPLAR_ENGINE_OPTIONS turns them off ("autoReport.all":"false"), as
// Poplar's own reports are turned off.
#ifndef VIPU_POPDIST_REPORT_H_
#define VIPU_POPDIST_REPORT_H_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace popdist {

// One IPU of a replica (a pipeline stage), seconds per step. The six parts
// add up to the step time.
struct IpuStepTimes {
  unsigned ipu = 0;
  double compute_s = 0;        // forward, backward and recomputation
  double exchange_s = 0;       // activations and gradients to the neighbouring stages
  double sync_s = 0;           // waiting at syncs: pipeline fill and drain, the slowest IPU
  double collectives_s = 0;    // gradient reduction with the other replicas
  double weight_update_s = 0;  // optimizer maths and Streaming Memory traffic
  double host_s = 0;           // host overhead and host I/O not hidden by compute
};

// What the application knows of its run; the instance's place in the launch
// is popdist's to add.
struct RunReport {
  // The partition the steps ran on; empty id: none (an offline run).
  std::string partition_id;
  unsigned gcd = 0;
  std::optional<unsigned> device;  // the device of the GCD it attached to, if narrowed
  uint64_t generation = 0;         // of the partition, as the machines held it
  std::vector<std::string> machines;
  std::string routing, gw_routing, sync_type;  // as the machines configured the partition

  unsigned steps = 0;
  double modelled_time_s = 0;  // the steps' modelled times, summed
  double elapsed_s = 0;        // wall-clock time of the same steps
  double samples_per_sec = 0;  // modelled, of the whole launch

  // Where the per-IPU times come from (e.g. "in-process model of bow-pod16").
  std::string step_source;
  double step_time_s = 0;  // the sum of the parts of any one IPU
  std::vector<IpuStepTimes> ipus;
};

// True when poprun's --autoreport-dir is set (POPDIST_AUTOREPORT_DIRECTORY)
// and POPLAR_ENGINE_OPTIONS does not set "autoReport.all" to "false".
bool isAutoReportEnabled();

// The report as the JSON object vipu-report.json holds, with this
// instance's place in the launch read from the POPDIST_* environment.
std::string formatRunReport(const RunReport& report);

// Writes formatRunReport to getAutoReportDirectory()/vipu-report.json,
// creating the directories, and returns the file's path; returns "" and
// writes nothing when !isAutoReportEnabled(). The file appears whole or not
// at all. popdist_error naming the path when it cannot be written.
std::string writeRunReport(const RunReport& report);

}  // namespace popdist

#endif  // VIPU_POPDIST_REPORT_H_
