// Metrics: counters, histograms and collectors, rendered as OpenMetrics or Prometheus text.
#include "server/metrics/metrics.h"

#include <cmath>
#include <set>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "spdlog/spdlog.h"

namespace vipu::server {
namespace {

std::string FormatValue(double v) {
  if (std::isinf(v)) return v > 0 ? "+Inf" : "-Inf";
  if (std::isnan(v)) return "NaN";
  if (v == std::floor(v) && std::fabs(v) < 1e15) return absl::StrCat(static_cast<int64_t>(v));
  return absl::StrFormat("%.12g", v);
}

std::string EscapeLabelValue(const std::string& v) {
  std::string out;
  for (char c : v) {
    if (c == '\\') {
      out += "\\\\";
    } else if (c == '"') {
      out += "\\\"";
    } else if (c == '\n') {
      out += "\\n";
    } else {
      out.push_back(c);
    }
  }
  return out;
}

std::string EscapeHelp(const std::string& v) {
  std::string out;
  for (char c : v) {
    if (c == '\\') {
      out += "\\\\";
    } else if (c == '\n') {
      out += "\\n";
    } else {
      out.push_back(c);
    }
  }
  return out;
}

std::string RenderLabels(const MetricLabels& labels, const std::string& le = "") {
  if (labels.empty() && le.empty()) return "";
  std::string out = "{";
  bool first = true;
  for (const auto& [k, v] : labels) {
    if (!first) out += ",";
    first = false;
    absl::StrAppend(&out, k, "=\"", EscapeLabelValue(v), "\"");
  }
  if (!le.empty()) absl::StrAppend(&out, first ? "" : ",", "le=\"", le, "\"");
  return out + "}";
}

const char* TypeName(Metrics::Type type) {
  switch (type) {
    case Metrics::Type::kCounter:
      return "counter";
    case Metrics::Type::kGauge:
      return "gauge";
    case Metrics::Type::kHistogram:
      return "histogram";
  }
  return "unknown";
}

}  // namespace

const char* MetricsContentType(MetricsFormat format) {
  return format == MetricsFormat::kOpenMetrics
             ? "application/openmetrics-text; version=1.0.0; charset=utf-8"
             : "text/plain; version=0.0.4; charset=utf-8";
}

void Metrics::DeclareCounter(const std::string& name, const std::string& help) {
  vipu::MutexLock lock(&mu_);
  Family& f = families_[name];
  f.type = Type::kCounter;
  f.help = help;
}

void Metrics::DeclareHistogram(const std::string& name, const std::string& help,
                               std::vector<double> buckets) {
  vipu::MutexLock lock(&mu_);
  Family& f = families_[name];
  f.type = Type::kHistogram;
  f.help = help;
  f.buckets = std::move(buckets);
}

void Metrics::AddCollector(Type type, const std::string& name, const std::string& help,
                           std::function<std::vector<MetricSample>()> collect) {
  vipu::MutexLock lock(&mu_);
  Family& f = families_[name];
  f.type = type;
  f.help = help;
  f.collect = std::move(collect);
}

void Metrics::Increment(const std::string& name, const MetricLabels& labels, double by) {
  vipu::MutexLock lock(&mu_);
  auto it = families_.find(name);
  if (it == families_.end() || it->second.type != Type::kCounter || it->second.collect) {
    spdlog::debug("metrics: {} is not a declared counter", name);
    return;
  }
  it->second.counters[labels] += by;
}

void Metrics::Observe(const std::string& name, const MetricLabels& labels, double value) {
  vipu::MutexLock lock(&mu_);
  auto it = families_.find(name);
  if (it == families_.end() || it->second.type != Type::kHistogram) {
    spdlog::debug("metrics: {} is not a declared histogram", name);
    return;
  }
  Family& f = it->second;
  HistogramSeries& h = f.histograms[labels];
  if (h.counts.empty()) h.counts.assign(f.buckets.size() + 1, 0);
  size_t i = 0;
  while (i < f.buckets.size() && value > f.buckets[i]) ++i;
  ++h.counts[i];
  h.sum += value;
  ++h.count;
}

std::string Metrics::Render(MetricsFormat format) const {
  // Collectors may query the database: run them without holding the lock
  // that every RPC takes to count itself.
  std::map<std::string, Family> snapshot;
  {
    vipu::MutexLock lock(&mu_);
    snapshot = families_;
  }
  const bool open_metrics = format == MetricsFormat::kOpenMetrics;
  std::string out;
  for (auto& [name, family] : snapshot) {
    const bool counter = family.type == Type::kCounter;
    // OpenMetrics names the counter family without `_total`; the 0.0.4
    // text format names it as its samples.
    const std::string sample_name = counter ? name + "_total" : name;
    const std::string family_name = counter && !open_metrics ? sample_name : name;
    absl::StrAppend(&out, "# HELP ", family_name, " ", EscapeHelp(family.help), "\n");
    absl::StrAppend(&out, "# TYPE ", family_name, " ", TypeName(family.type), "\n");
    if (family.collect) {
      for (const MetricSample& s : family.collect()) {
        absl::StrAppend(&out, sample_name, RenderLabels(s.labels), " ", FormatValue(s.value), "\n");
      }
      continue;
    }
    if (family.type == Type::kHistogram) {
      for (const auto& [labels, h] : family.histograms) {
        uint64_t cumulative = 0;
        for (size_t i = 0; i < h.counts.size(); ++i) {
          cumulative += h.counts[i];
          const std::string le =
              i < family.buckets.size() ? FormatValue(family.buckets[i]) : "+Inf";
          absl::StrAppend(&out, name, "_bucket", RenderLabels(labels, le), " ", cumulative, "\n");
        }
        absl::StrAppend(&out, name, "_sum", RenderLabels(labels), " ", FormatValue(h.sum), "\n");
        absl::StrAppend(&out, name, "_count", RenderLabels(labels), " ", h.count, "\n");
      }
      continue;
    }
    for (const auto& [labels, value] : family.counters) {
      absl::StrAppend(&out, sample_name, RenderLabels(labels), " ", FormatValue(value), "\n");
    }
  }
  if (open_metrics) out += "# EOF\n";
  return out;
}

}  // namespace vipu::server
