// The files a replay writes: jobs.csv (one row per job), and report.html,
// readable offline (inline SVG, no script, no network): utilisation and
// queue length over time, the distribution of waits, occupancy per ILD (or
// per machine on small pods) over time, and the summary in words. One
// report can hold several replays side by side (vipu-plan compare).
// Functions of their arguments: thread-safe.
#ifndef VIPU_PLAN_REPORT_H_
#define VIPU_PLAN_REPORT_H_

#include <string>
#include <vector>

#include "fabric/topology.h"
#include "plan/replay.h"
#include "plan/summary.h"
#include "plan/trace.h"

namespace vipu::plan {

// Seconds in words: "45 s", "12.5 min", "3.2 h", "4.1 days".
std::string FormatDuration(double seconds);

// jobs.csv: id, user, submit, start, end, wait, run, requested, ipus_asked,
// ipus, ilds, placed, status, requeues, lost_ipu_s, why. `ipus` is the
// partition's size, `placed` its IPUs as agent:IPU# joined by ';'. A job
// that did not run has empty start, end, wait, run and placed, and `why`
// says why not.
std::string JobsCsv(const Trace& trace, const ReplayResult& result,
                    const fabric::ClusterLayout& layout);

// One replay as the report shows it. Borrows; the caller keeps them alive.
struct ReportRun {
  std::string label;  // "pod64 fifo"
  const Trace* trace = nullptr;
  const ReplayResult* result = nullptr;
  const Summary* summary = nullptr;
};

// report.html for one or more replays of one trace.
std::string ReportHtml(const std::vector<ReportRun>& runs);

}  // namespace vipu::plan

#endif  // VIPU_PLAN_REPORT_H_
