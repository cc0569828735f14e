// Metrics rendering: family names per format, histograms, escaping, collectors, gRPC code names.
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "server/api/rpc_metrics_interceptor.h"
#include "server/metrics/metrics.h"

namespace vipu::server {
namespace {

using ::testing::EndsWith;
using ::testing::HasSubstr;
using ::testing::Not;

TEST(MetricsTest, CounterFamilyNamesDifferByFormat) {
  Metrics m;
  m.DeclareCounter("vipu_things", "Things.");
  m.Increment("vipu_things", {{"kind", "a"}});
  m.Increment("vipu_things", {{"kind", "a"}}, 2);
  std::string om = m.Render(MetricsFormat::kOpenMetrics);
  EXPECT_THAT(om, HasSubstr("# TYPE vipu_things counter\n"));
  EXPECT_THAT(om, HasSubstr("vipu_things_total{kind=\"a\"} 3\n"));
  EXPECT_THAT(om, EndsWith("# EOF\n"));
  std::string text = m.Render(MetricsFormat::kPrometheusText);
  EXPECT_THAT(text, HasSubstr("# HELP vipu_things_total Things.\n"));
  EXPECT_THAT(text, HasSubstr("# TYPE vipu_things_total counter\n"));
  EXPECT_THAT(text, Not(HasSubstr("# EOF")));
}

TEST(MetricsTest, HistogramBucketsAreCumulativeWithInf) {
  Metrics m;
  m.DeclareHistogram("vipu_latency_seconds", "Latency.", {0.1, 1});
  m.Observe("vipu_latency_seconds", {}, 0.05);
  m.Observe("vipu_latency_seconds", {}, 0.1);  // on the bound: counted in le=0.1
  m.Observe("vipu_latency_seconds", {}, 0.5);
  m.Observe("vipu_latency_seconds", {}, 7);
  std::string text = m.Render(MetricsFormat::kPrometheusText);
  EXPECT_THAT(text, HasSubstr("vipu_latency_seconds_bucket{le=\"0.1\"} 2\n"));
  EXPECT_THAT(text, HasSubstr("vipu_latency_seconds_bucket{le=\"1\"} 3\n"));
  EXPECT_THAT(text, HasSubstr("vipu_latency_seconds_bucket{le=\"+Inf\"} 4\n"));
  EXPECT_THAT(text, HasSubstr("vipu_latency_seconds_sum 7.65\n"));
  EXPECT_THAT(text, HasSubstr("vipu_latency_seconds_count 4\n"));
}

TEST(MetricsTest, LabelValuesAreEscaped) {
  Metrics m;
  m.DeclareCounter("vipu_x", "X.");
  m.Increment("vipu_x", {{"id", "a\"b\\c\nd"}});
  EXPECT_THAT(m.Render(MetricsFormat::kOpenMetrics), HasSubstr("{id=\"a\\\"b\\\\c\\nd\"}"));
}

TEST(MetricsTest, CollectorsRunAtEveryRender) {
  Metrics m;
  int calls = 0;
  m.AddCollector(Metrics::Type::kGauge, "vipu_g", "G.", [&] {
    ++calls;
    return std::vector<MetricSample>{{{{"s", "up"}}, 2.5}};
  });
  EXPECT_THAT(m.Render(MetricsFormat::kOpenMetrics), HasSubstr("vipu_g{s=\"up\"} 2.5\n"));
  m.Render(MetricsFormat::kPrometheusText);
  EXPECT_EQ(calls, 2);
}

TEST(MetricsTest, UndeclaredOrMistypedNamesAreIgnored) {
  Metrics m;
  m.DeclareHistogram("vipu_h_seconds", "H.", {1});
  m.Increment("vipu_nothing", {});
  m.Increment("vipu_h_seconds", {});  // not a counter
  m.Observe("vipu_nothing", {}, 1);
  std::string text = m.Render(MetricsFormat::kPrometheusText);
  EXPECT_THAT(text, Not(HasSubstr("vipu_nothing")));
  EXPECT_THAT(text, Not(HasSubstr("vipu_h_seconds_count")));
}

TEST(MetricsTest, ContentTypes) {
  EXPECT_THAT(MetricsContentType(MetricsFormat::kOpenMetrics),
              HasSubstr("application/openmetrics-text"));
  EXPECT_THAT(MetricsContentType(MetricsFormat::kPrometheusText), HasSubstr("version=0.0.4"));
}

}  // namespace
}  // namespace vipu::server
