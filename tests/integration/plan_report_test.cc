// vipu-plan's report.html in a real headless Chromium, opened from the file
// as a planner would: its four SVG charts are drawn, with data in each, and
// the figures it shows are summary.json's.
#include <cstdio>
#include <filesystem>
#include <memory>
#include <string>

#include "absl/strings/str_format.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "tests/integration/cannot_run.h"
#include "tests/integration/chromium.h"
#include "tests/integration/harness.h"

namespace vipu::testing {
namespace {

TEST(PlanReportBrowserTest, ChartsAreDrawnAndTheFiguresAreTheSummarys) {
  if (ChromiumBinary().empty()) VIPU_CANNOT_RUN_HERE() << "chromium is not installed";
  const std::string dir = MakeTempDir();
  CommandResult g = RunCommand({PlanBin(), "generate", "--jobs", "500", "--pod-ipus", "64",
                                "--load", "1.1", "--out", dir + "/trace.csv"});
  ASSERT_EQ(g.exit_code, 0) << g.err;
  CommandResult r = RunCommand({PlanBin(), "replay", dir + "/trace.csv", "--pod", "pod64",
                                "--policy", "backfill", "--machine-mtbf", "100", "--repair-hours",
                                "6", "--out", dir + "/out", "--quiet"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const nlohmann::json s = nlohmann::json::parse(ReadFile(dir + "/out/summary.json"));

  std::string error;
  // Offline: no network at all for the page.
  auto browser =
      Chromium::Start("file://" + dir + "/out/report.html", {"--proxy-server=127.0.0.1:9"}, &error);
  ASSERT_NE(browser, nullptr) << error;
  // The page is ours and loaded (the browser starts on a blank page).
  ASSERT_TRUE(
      browser->WaitUntil("location.protocol === 'file:' && document.readyState === 'complete' && "
                         "document.querySelector('section.words') !== null",
                         absl::Seconds(30)))
      << browser->log();
  EXPECT_EQ(browser->String("document.querySelectorAll('svg.chart').length"), "4");
  // Each line chart has its series, drawn inside the chart.
  EXPECT_EQ(browser->String("document.querySelectorAll('svg.chart polyline.series').length"), "3");
  EXPECT_TRUE(browser->True(
      "[...document.querySelectorAll('svg.chart polyline.series')].every(p => {"
      "  const b = p.getBBox(), svg = p.ownerSVGElement.getBBox();"
      "  return p.points.length > 10 && b.width > 0 && b.x >= svg.x && b.y >= svg.y &&"
      "         b.x + b.width <= svg.x + svg.width && b.y + b.height <= svg.y + svg.height; })"));
  // The occupancy heat map: one row per machine of the pod64.
  EXPECT_TRUE(browser->True("document.querySelectorAll('svg.occupancy rect').length > 100"));
  EXPECT_EQ(browser->String("[...document.querySelectorAll('svg.occupancy text')]"
                            ".filter(t => t.textContent.startsWith('m ')).length"),
            "16");

  auto cell = [&](const std::string& key) {
    return browser->String("document.querySelector('td[data-key=\"" + key + "\"]').textContent");
  };
  EXPECT_EQ(cell("utilisation"), absl::StrFormat("%.1f%%", 100 * s["utilisation"].get<double>()));
  EXPECT_EQ(cell("fragmentation"),
            absl::StrFormat("%.1f%%", 100 * s["fragmentation"].get<double>()));
  EXPECT_EQ(cell("bounded_slowdown_mean"),
            absl::StrFormat("%.2f", s["bounded_slowdown_mean"].get<double>()));
  EXPECT_EQ(cell("done"), std::to_string(s["done"].get<int>()));
  EXPECT_EQ(cell("rounded"), std::to_string(s["rounded"].get<int>()));
  EXPECT_EQ(cell("requeues"), std::to_string(s["requeues"].get<int>()));
  EXPECT_EQ(cell("lost_ipu_hours"), absl::StrFormat("%.1f", s["lost_ipu_hours"].get<double>()));
  EXPECT_GT(s["requeues"].get<int>(), 0);
  // The words say the same.
  const std::string words = browser->String("document.querySelector('section.words').textContent");
  EXPECT_THAT(words, ::testing::HasSubstr(absl::StrFormat("the pod was %.1f%% used",
                                                          100 * s["utilisation"].get<double>())));
  EXPECT_THAT(words, ::testing::HasSubstr(absl::StrFormat("%d jobs requeued from the start",
                                                          s["requeues"].get<int>())));
  browser.reset();
  RemoveTree(dir);
}

}  // namespace
}  // namespace vipu::testing
