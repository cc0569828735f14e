// The server's metrics: labelled counters and histograms updated as things
// happen, plus collectors that compute gauges (and counters kept elsewhere)
// when scraped. Rendered as OpenMetrics 1.0 or as the Prometheus text format
// 0.0.4 (what `promtool check metrics` reads). Thread-safe.
//
// Owns its families and collectors; what a collector reads must outlive the
// Metrics. Collectors run on the scraping thread, outside the lock, since
// they may query the database.
#ifndef VIPU_SERVER_METRICS_METRICS_H_
#define VIPU_SERVER_METRICS_METRICS_H_

#include <functional>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "base/mutex.h"

namespace vipu::server {

enum class MetricsFormat { kOpenMetrics, kPrometheusText };

// Content-Type of each format.
const char* MetricsContentType(MetricsFormat format);

using MetricLabels = std::vector<std::pair<std::string, std::string>>;

struct MetricSample {
  MetricLabels labels;
  double value = 0;
};

class Metrics {
 public:
  enum class Type { kCounter, kGauge, kHistogram };

  // Families are declared once, before use. Counter names omit `_total`
  // (it is added when rendering). Histogram `buckets` are upper bounds in
  // increasing order; +Inf is implied.
  void DeclareCounter(const std::string& name, const std::string& help);
  void DeclareHistogram(const std::string& name, const std::string& help,
                        std::vector<double> buckets);
  // A family whose samples `collect` returns at every scrape (gauges, or
  // counters maintained by another component).
  void AddCollector(Type type, const std::string& name, const std::string& help,
                    std::function<std::vector<MetricSample>()> collect);

  // Undeclared names are ignored (and logged once), never a crash.
  void Increment(const std::string& name, const MetricLabels& labels, double by = 1);
  void Observe(const std::string& name, const MetricLabels& labels, double value);

  std::string Render(MetricsFormat format) const;

 private:
  struct HistogramSeries {
    std::vector<uint64_t> counts;  // per bucket, not cumulative; last is +Inf
    double sum = 0;
    uint64_t count = 0;
  };
  struct Family {
    Type type = Type::kCounter;
    std::string help;
    std::vector<double> buckets;
    std::map<MetricLabels, double> counters;
    std::map<MetricLabels, HistogramSeries> histograms;
    std::function<std::vector<MetricSample>()> collect;
  };

  mutable vipu::Mutex mu_;
  std::map<std::string, Family> families_ ABSL_GUARDED_BY(mu_);
};

}  // namespace vipu::server

#endif  // VIPU_SERVER_METRICS_METRICS_H_
