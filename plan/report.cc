// jobs.csv and report.html (inline SVG charts) of one or more replays.
#include "plan/report.h"

#include <algorithm>
#include <charconv>
#include <cmath>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"

namespace vipu::plan {
namespace {

constexpr int kBins = 200;
constexpr double kChartW = 760, kChartH = 180, kLeft = 56, kTop = 12, kBottom = 30;
constexpr const char* kColours[] = {"#1f77b4", "#d62728", "#2ca02c", "#9467bd",
                                    "#ff7f0e", "#17becf", "#8c564b", "#e377c2"};

std::string CsvField(const std::string& v) {
  if (v.find_first_of(",\"\n") == std::string::npos) return v;
  std::string out = "\"";
  for (char c : v) {
    if (c == '"') out.push_back('"');
    out.push_back(c);
  }
  return out + "\"";
}

std::string Html(std::string_view v) {
  std::string out;
  for (char c : v) {
    switch (c) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += "&quot;";
        break;
      default:
        out.push_back(c);
    }
  }
  return out;
}

std::string Percent(double v) { return absl::StrFormat("%.1f%%", 100 * v); }

// Time-weighted means of a step function over kBins equal bins of
// [t0, t1]: the value at points[i] holds until points[i+1] (the last until t1).
class Binner {
 public:
  Binner(double t0, double t1) : t0_(t0), width_(std::max(t1 - t0, 1e-9) / kBins), sum_(kBins) {}
  // Adds `value` over [a, b).
  void Add(double a, double b, double value) {
    if (b <= a || value == 0) return;
    int i = std::clamp(static_cast<int>((a - t0_) / width_), 0, kBins - 1);
    while (i < kBins && a < b) {
      const double bin_end = t0_ + (i + 1) * width_;
      const double end = i == kBins - 1 ? b : std::min(b, bin_end);
      sum_[i] += value * (end - a);
      a = end;
      ++i;
    }
  }
  double Mean(int i) const { return sum_[i] / width_; }
  double width() const { return width_; }

 private:
  double t0_, width_;
  std::vector<double> sum_;
};

struct Axis {
  double t0 = 0, t1 = 1;
};

Axis TimeAxis(const std::vector<ReportRun>& runs) {
  Axis a;
  bool first = true;
  for (const ReportRun& r : runs) {
    const double lo = r.summary->first_submit;
    const double hi = std::max(r.summary->last_end, lo + 1);
    a.t0 = first ? lo : std::min(a.t0, lo);
    a.t1 = first ? hi : std::max(a.t1, hi);
    first = false;
  }
  return a;
}

// A line chart: one series per run over time, y from 0 to y_max.
std::string LineChart(const std::string& title, const std::string& y_label,
                      const std::vector<std::vector<double>>& series, double y_max,
                      const Axis& axis, const std::vector<std::string>& labels, bool percent) {
  const double w = kChartW - kLeft - 10, h = kChartH - kTop - kBottom;
  if (y_max <= 0) y_max = 1;
  std::string svg = absl::StrFormat(
      "<h3>%s</h3><svg class=\"chart\" xmlns=\"http://www.w3.org/2000/svg\" width=\"%g\" "
      "height=\"%g\" role=\"img\" aria-label=\"%s\">",
      Html(title), kChartW, kChartH, Html(title));
  absl::StrAppendFormat(&svg,
                        "<rect x=\"%g\" y=\"%g\" width=\"%g\" height=\"%g\" fill=\"#fafafa\" "
                        "stroke=\"#ccc\"/>",
                        kLeft, kTop, w, h);
  for (int k = 0; k <= 4; ++k) {
    const double y = kTop + h - h * k / 4;
    const double v = y_max * k / 4;
    absl::StrAppendFormat(&svg,
                          "<line x1=\"%g\" x2=\"%g\" y1=\"%g\" y2=\"%g\" stroke=\"#e4e4e4\"/>"
                          "<text x=\"%g\" y=\"%g\" font-size=\"10\" text-anchor=\"end\">%s</text>",
                          kLeft, kLeft + w, y, y, kLeft - 4, y + 3,
                          percent    ? absl::StrFormat("%.0f%%", 100 * v)
                          : v >= 100 ? absl::StrFormat("%.0f", v)
                                     : absl::StrFormat("%.3g", v));
  }
  for (int k = 0; k <= 4; ++k) {
    const double x = kLeft + w * k / 4;
    absl::StrAppendFormat(&svg,
                          "<text x=\"%g\" y=\"%g\" font-size=\"10\" text-anchor=\"%s\">%s</text>",
                          x, kTop + h + 14, k == 4 ? "end" : "middle",
                          Html(FormatDuration((axis.t1 - axis.t0) * k / 4)));
  }
  absl::StrAppendFormat(&svg, "<text x=\"%g\" y=\"%g\" font-size=\"10\">%s</text>", kLeft,
                        kTop + h + 27, Html("time since the first submit; y: " + y_label));
  for (size_t s = 0; s < series.size(); ++s) {
    std::string points;
    for (size_t i = 0; i < series[s].size(); ++i) {
      const double x = kLeft + w * (i + 0.5) / series[s].size();
      const double y = kTop + h - h * std::min(1.0, series[s][i] / y_max);
      absl::StrAppendFormat(&points, "%.1f,%.1f ", x, y);
    }
    absl::StrAppendFormat(&svg,
                          "<polyline class=\"series\" data-run=\"%s\" fill=\"none\" "
                          "stroke=\"%s\" stroke-width=\"1.5\" points=\"%s\"/>",
                          Html(labels[s]), kColours[s % 8], points);
  }
  svg += "</svg>";
  return svg;
}

// The share of done jobs that waited at most x, for x on a log scale.
std::string WaitChart(const std::vector<ReportRun>& runs, const std::vector<std::string>& labels) {
  const double w = kChartW - kLeft - 10, h = kChartH - kTop - kBottom;
  double max_wait = 1;
  std::vector<std::vector<double>> waits(runs.size());
  for (size_t r = 0; r < runs.size(); ++r) {
    const ReportRun& run = runs[r];
    for (size_t j = 0; j < run.trace->jobs.size(); ++j) {
      const JobOutcome& o = run.result->jobs[j];
      if (!Ran(o.status)) continue;
      waits[r].push_back(o.start - run.trace->jobs[j].submit);
    }
    std::sort(waits[r].begin(), waits[r].end());
    if (!waits[r].empty()) max_wait = std::max(max_wait, waits[r].back());
  }
  // x: log10(1 + wait) from 0 to log10(1 + max).
  const double x_max = std::log10(1 + max_wait);
  std::string svg = absl::StrFormat(
      "<h3>Distribution of waits</h3><svg class=\"chart\" xmlns=\"http://www.w3.org/2000/svg\" "
      "width=\"%g\" height=\"%g\" role=\"img\" aria-label=\"distribution of waits\">"
      "<rect x=\"%g\" y=\"%g\" width=\"%g\" height=\"%g\" fill=\"#fafafa\" stroke=\"#ccc\"/>",
      kChartW, kChartH, kLeft, kTop, w, h);
  for (int k = 0; k <= 4; ++k) {
    const double y = kTop + h - h * k / 4;
    absl::StrAppendFormat(
        &svg,
        "<line x1=\"%g\" x2=\"%g\" y1=\"%g\" y2=\"%g\" stroke=\"#e4e4e4\"/>"
        "<text x=\"%g\" y=\"%g\" font-size=\"10\" text-anchor=\"end\">%d%%</text>",
        kLeft, kLeft + w, y, y, kLeft - 4, y + 3, 25 * k);
  }
  double last_x = -100;
  for (double tick : {0.0, 60.0, 3600.0, 86400.0, 7 * 86400.0, 30 * 86400.0}) {
    if (tick > max_wait && tick > 0) break;
    const double x = kLeft + w * (x_max > 0 ? std::log10(1 + tick) / x_max : 0);
    if (x - last_x < 50) continue;  // labels that would overlap
    last_x = x;
    absl::StrAppendFormat(
        &svg, "<text x=\"%g\" y=\"%g\" font-size=\"10\" text-anchor=\"%s\">%s</text>", x,
        kTop + h + 14, x > kLeft + w - 30 ? "end" : "middle", Html(FormatDuration(tick)));
  }
  absl::StrAppendFormat(&svg, "<text x=\"%g\" y=\"%g\" font-size=\"10\">%s</text>", kLeft,
                        kTop + h + 27,
                        "wait (log scale); y: share of jobs that waited at most that");
  for (size_t r = 0; r < runs.size(); ++r) {
    const std::vector<double>& v = waits[r];
    if (v.empty()) continue;
    std::string points = absl::StrFormat("%.1f,%.1f ", kLeft, kTop + h);
    const size_t step = std::max<size_t>(1, v.size() / 400);
    for (size_t i = 0; i < v.size();) {
      // A step of the CDF: the last of equal waits carries the share.
      size_t k = std::min(v.size(), i + step) - 1;
      while (k + 1 < v.size() && v[k + 1] == v[k]) ++k;
      const double x = kLeft + w * (x_max > 0 ? std::log10(1 + v[k]) / x_max : 0);
      const double y = kTop + h - h * static_cast<double>(k + 1) / v.size();
      absl::StrAppendFormat(&points, "%.1f,%.1f ", x, y);
      i = k + 1;
    }
    absl::StrAppendFormat(&svg,
                          "<polyline class=\"series\" data-run=\"%s\" fill=\"none\" "
                          "stroke=\"%s\" stroke-width=\"1.5\" points=\"%s\"/>",
                          Html(labels[r]), kColours[r % 8], points);
  }
  svg += "</svg>";
  return svg;
}

// A heat map: one row per ILD (or machine), colour = share of its IPUs held.
std::string OccupancyChart(const ReportRun& run, const Axis& axis, uint32_t ipus_per_row) {
  const ReplayResult& r = *run.result;
  const uint32_t rows = r.occupancy_rows;
  std::vector<Binner> binners(rows, Binner(axis.t0, axis.t1));
  std::vector<double> value(rows, 0), since(rows, axis.t0);
  for (const OccupancyDelta& d : r.occupancy) {
    binners[d.row].Add(since[d.row], d.t, value[d.row]);
    value[d.row] += d.delta;
    since[d.row] = d.t;
  }
  for (uint32_t row = 0; row < rows; ++row) binners[row].Add(since[row], axis.t1, value[row]);
  const double row_h = std::clamp(240.0 / rows, 2.0, 14.0);
  const double w = kChartW - kLeft - 10, h = row_h * rows;
  std::string svg = absl::StrFormat(
      "<h3>Occupancy per %s over time: %s</h3><svg class=\"chart occupancy\" "
      "xmlns=\"http://www.w3.org/2000/svg\" width=\"%g\" height=\"%g\" role=\"img\" "
      "aria-label=\"occupancy\">",
      r.occupancy_by_ild ? "ILD" : "machine", Html(run.label), kChartW, h + kTop + kBottom);
  const double cell_w = w / kBins;
  // Labels at least 10 px apart.
  const uint32_t label_every = static_cast<uint32_t>(std::ceil(10 / row_h));
  for (uint32_t row = 0; row < rows; ++row) {
    const double y = kTop + row * row_h;
    if (row % label_every == 0) {
      absl::StrAppendFormat(
          &svg, "<text x=\"%g\" y=\"%g\" font-size=\"9\" text-anchor=\"end\">%s %u</text>",
          kLeft - 4, y + std::min(row_h, 10.0) - 1, r.occupancy_by_ild ? "ILD" : "m", row);
    }
    for (int i = 0; i < kBins; ++i) {
      const double share = std::clamp(binners[row].Mean(i) / ipus_per_row, 0.0, 1.0);
      if (share <= 0.005) continue;
      // White (idle) to dark blue (every IPU held).
      const int shade = static_cast<int>(235 - 200 * share);
      absl::StrAppendFormat(&svg,
                            "<rect x=\"%.1f\" y=\"%.1f\" width=\"%.2f\" height=\"%.1f\" "
                            "fill=\"rgb(%d,%d,255)\"/>",
                            kLeft + i * cell_w, y, cell_w + 0.05, row_h, shade, shade);
    }
  }
  absl::StrAppendFormat(&svg,
                        "<rect x=\"%g\" y=\"%g\" width=\"%g\" height=\"%g\" fill=\"none\" "
                        "stroke=\"#ccc\"/><text x=\"%g\" y=\"%g\" font-size=\"10\">%s</text></svg>",
                        kLeft, kTop, w, h, kLeft, kTop + h + 16,
                        Html(absl::StrCat("0 to ", FormatDuration(axis.t1 - axis.t0),
                                          " since the first submit; darker: more of the ",
                                          ipus_per_row, " IPUs held")));
  return svg;
}

std::string InWords(const Summary& s) {
  std::string text = absl::StrFormat(
      "<p>On <b>%s</b> (%u IPUs) under policy <b>%s</b>, %u of the trace's %u jobs ran in "
      "<b>%s</b> from the first submit to the last end; the pod was <b>%s</b> used "
      "(IPU-seconds of the jobs over the pod's IPUs times that span).</p>",
      Html(s.pod), s.pod_ipus, Html(s.policy), s.done, s.jobs, FormatDuration(s.makespan_s),
      Percent(s.utilisation));
  absl::StrAppendFormat(&text,
                        "<p>Half the jobs waited at most <b>%s</b>, 95%% at most <b>%s</b>, 99%% "
                        "at most <b>%s</b>; the longest wait was <b>%s</b> (mean %s). Mean "
                        "bounded slowdown (&tau; = %g s): <b>%.2f</b>.</p>",
                        FormatDuration(s.wait_p50_s), FormatDuration(s.wait_p95_s),
                        FormatDuration(s.wait_p99_s), FormatDuration(s.wait_max_s),
                        FormatDuration(s.wait_mean_s), kSlowdownTau, s.bounded_slowdown_mean);
  if (s.policy == "none") {
    absl::StrAppendFormat(&text,
                          "<p>Without a scheduler, <b>%u</b> creates were refused because the "
                          "partition did not fit when asked.</p>",
                          s.refused);
  } else {
    absl::StrAppendFormat(
        &text,
        "<p>The head of the queue could not be placed for <b>%s</b>; during that time on "
        "average <b>%s</b> of the pod's IPUs were free but not usable by it "
        "(fragmentation).%s</p>",
        FormatDuration(s.blocked_s), Percent(s.fragmentation),
        s.policy == "backfill"
            ? absl::StrCat(" Backfill estimated run times from: ", Html(s.backfill_estimate), ".")
            : "");
  }
  std::string skipped;
  for (const auto& [reason, count] : s.skipped) {
    absl::StrAppend(&skipped, skipped.empty() ? "" : ", ", count, " ", reason);
  }
  absl::StrAppendFormat(&text,
                        "<p>%u jobs asked for a size that is not a partition size and were "
                        "rounded up; %u were larger than the pod; %u were refused by the "
                        "model; rows skipped: %s.</p>",
                        s.rounded, s.too_big, s.model_refused, skipped.empty() ? "none" : skipped);
  if (s.machine_mtbf_hours > 0) {
    absl::StrAppendFormat(&text,
                          "<p>Faults: machines failed at random (MTBF %g h, repair %g h): %u "
                          "failures, %u jobs requeued from the start, <b>%.1f IPU-hours</b> "
                          "lost.</p>",
                          s.machine_mtbf_hours, s.repair_hours, s.machine_failures, s.requeues,
                          s.lost_ipu_hours);
  } else {
    text += "<p>Faults: not modelled in this run (no --machine-mtbf).</p>";
  }
  return text;
}

std::string SummaryTable(const std::vector<ReportRun>& runs) {
  std::string t = "<table><tr><th>figure</th>";
  for (const ReportRun& r : runs) absl::StrAppend(&t, "<th>", Html(r.label), "</th>");
  t += "</tr>";
  auto row = [&](const char* name, const char* key, auto value) {
    absl::StrAppend(&t, "<tr><td>", name, "</td>");
    for (const ReportRun& r : runs) {
      absl::StrAppend(&t, "<td data-key=\"", key, "\">", value(*r.summary), "</td>");
    }
    t += "</tr>";
  };
  row("utilisation", "utilisation", [](const Summary& s) { return Percent(s.utilisation); });
  row("makespan", "makespan_s", [](const Summary& s) { return FormatDuration(s.makespan_s); });
  row("wait p50", "wait_p50_s", [](const Summary& s) { return FormatDuration(s.wait_p50_s); });
  row("wait p95", "wait_p95_s", [](const Summary& s) { return FormatDuration(s.wait_p95_s); });
  row("wait p99", "wait_p99_s", [](const Summary& s) { return FormatDuration(s.wait_p99_s); });
  row("wait max", "wait_max_s", [](const Summary& s) { return FormatDuration(s.wait_max_s); });
  row("bounded slowdown", "bounded_slowdown_mean",
      [](const Summary& s) { return absl::StrFormat("%.2f", s.bounded_slowdown_mean); });
  row("fragmentation", "fragmentation", [](const Summary& s) { return Percent(s.fragmentation); });
  row("jobs done", "done", [](const Summary& s) { return absl::StrCat(s.done); });
  row("refused", "refused", [](const Summary& s) { return absl::StrCat(s.refused); });
  row("larger than the pod", "too_big", [](const Summary& s) { return absl::StrCat(s.too_big); });
  row("rounded up", "rounded", [](const Summary& s) { return absl::StrCat(s.rounded); });
  row("requeues", "requeues", [](const Summary& s) { return absl::StrCat(s.requeues); });
  row("lost IPU-hours", "lost_ipu_hours",
      [](const Summary& s) { return absl::StrFormat("%.1f", s.lost_ipu_hours); });
  row("ended at their limit", "killed_at_limit",
      [](const Summary& s) { return absl::StrCat(s.killed_at_limit); });
  row("IPU-hours of runs ended at their limit", "killed_at_limit_ipu_hours",
      [](const Summary& s) { return absl::StrFormat("%.1f", s.killed_at_limit_ipu_hours); });
  return t + "</table>";
}

}  // namespace

std::string FormatDuration(double s) {
  if (s < 60) return absl::StrFormat("%.0f s", s);
  if (s < 3600) return absl::StrFormat("%.1f min", s / 60);
  if (s < 86400) return absl::StrFormat("%.1f h", s / 3600);
  return absl::StrFormat("%.1f days", s / 86400);
}

std::string JobsCsv(const Trace& trace, const ReplayResult& result,
                    const fabric::ClusterLayout& layout) {
  std::string out =
      "id,user,submit,start,end,wait,run,requested,ipus_asked,ipus,ilds,placed,status,requeues,"
      "lost_ipu_s,why\n";
  for (size_t j = 0; j < trace.jobs.size(); ++j) {
    const TraceJob& job = trace.jobs[j];
    const JobOutcome& o = result.jobs[j];
    const bool ran = Ran(o.status);
    std::string placed;
    if (ran) {
      for (uint32_t i = 0; i < o.block.num_ilds; ++i) {
        for (uint32_t k = 0; k < o.block.segment; ++k) {
          const fabric::IpuRef ipu = layout.IpuAt(o.block.first_ild + i, o.block.start + k);
          absl::StrAppend(&placed, placed.empty() ? "" : ";", ipu.agent_id, ":", ipu.ipu);
        }
      }
    }
    absl::StrAppend(&out, CsvField(job.id), ",", CsvField(job.user), ",", FormatNumber(job.submit),
                    ",", ran ? FormatNumber(o.start) : "", ",", ran ? FormatNumber(o.end) : "", ",",
                    ran ? FormatNumber(o.start - job.submit) : "", ",",
                    ran ? FormatNumber(o.end - o.start) : "", ",",
                    job.requested > 0 ? FormatNumber(job.requested) : "", ",", job.ipus, ",",
                    o.size, ",", ran ? o.block.num_ilds : 0, ",", placed, ",",
                    JobStatusName(o.status), ",", o.requeues, ",", FormatNumber(o.lost_ipu_s), ",",
                    CsvField(o.refusal), "\n");
  }
  return out;
}

std::string ReportHtml(const std::vector<ReportRun>& runs) {
  const Axis axis = TimeAxis(runs);
  std::vector<std::string> labels;
  for (const ReportRun& r : runs) labels.push_back(r.label);
  std::vector<std::vector<double>> utilisation(runs.size()), queue(runs.size());
  double max_queue = 1;
  for (size_t k = 0; k < runs.size(); ++k) {
    const ReplayResult& r = *runs[k].result;
    Binner busy(axis.t0, axis.t1), queued(axis.t0, axis.t1);
    for (size_t i = 0; i < r.timeline.size(); ++i) {
      const double end = i + 1 < r.timeline.size() ? r.timeline[i + 1].t : axis.t1;
      busy.Add(r.timeline[i].t, end, r.timeline[i].busy_ipus);
      queued.Add(r.timeline[i].t, end, r.timeline[i].queued);
    }
    for (int i = 0; i < kBins; ++i) {
      utilisation[k].push_back(busy.Mean(i) / runs[k].summary->pod_ipus);
      queue[k].push_back(queued.Mean(i));
      max_queue = std::max(max_queue, queue[k].back());
    }
  }
  std::string html =
      "<!DOCTYPE html><html lang=\"en\"><head><meta charset=\"utf-8\"><title>vipu-plan "
      "report</title><style>body{font-family:sans-serif;max-width:820px;margin:1em auto;"
      "color:#222}table{border-collapse:collapse}td,th{border:1px solid #ccc;padding:2px "
      "8px;text-align:right}td:first-child,th:first-child{text-align:left}.legend span{"
      "margin-right:1em}</style></head><body>";
  absl::StrAppend(&html, "<h1>Capacity plan: ", Html(runs.front().trace->source), "</h1>");
  html += "<p class=\"legend\">";
  for (size_t k = 0; k < runs.size(); ++k) {
    absl::StrAppend(&html, "<span style=\"color:", kColours[k % 8], "\">&#9632; ", Html(labels[k]),
                    "</span>");
  }
  html += "</p>";
  std::string words;
  for (const ReportRun& r : runs) {
    absl::StrAppend(&words, "<section class=\"words\"><h2>", Html(r.label), "</h2>",
                    InWords(*r.summary), "</section>");
  }
  // One replay: its figures in words first; several: the comparison first.
  if (runs.size() == 1) html += words;
  html += absl::StrCat("<h2>", runs.size() == 1 ? "Figures" : "Side by side", "</h2>",
                       SummaryTable(runs));
  html += LineChart("Utilisation over time", "share of the pod's IPUs held", utilisation, 1.0, axis,
                    labels, true);
  html += LineChart("Queue length over time", "jobs waiting (time-weighted mean)", queue, max_queue,
                    axis, labels, false);
  html += WaitChart(runs, labels);
  for (const ReportRun& r : runs) {
    const uint32_t rows = r.result->occupancy_rows;
    html += OccupancyChart(r, axis, r.summary->pod_ipus / std::max<uint32_t>(1, rows));
  }
  if (runs.size() > 1) html += words;
  html +=
      "<p><small>Placement is vipu-server's own (fabric::Place). Not modelled: partition "
      "create and reset latency, host and network contention between jobs; a job's run time "
      "is the trace's, or the model's at the partition it was placed on.</small></p>"
      "</body></html>\n";
  return html;
}

}  // namespace vipu::plan
