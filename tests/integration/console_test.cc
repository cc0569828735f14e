// The pod console end to end: a real vipu-server --simulate pod16 serving
// the console on --http-listen, and a real headless Chromium loading it and
// driven over the DevTools protocol. Machines and partitions appear; a
// partition created with the CLI and an injected fault show up without a
// reload; every link that is down shows on top of the map, inside a machine
// too; the key gives each partition's colour and its state in the CLI's
// words; the map scales to its panel; in secure mode a user sees only its
// own partitions. Screenshots go to VIPU_SCREENSHOT_DIR in the build tree.
// Also the listener's flags.
#include <cstdio>
#include <filesystem>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/string_view.h"
#include "absl/strings/strip.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/integration/cannot_run.h"
#include "tests/integration/chromium.h"
#include "tests/integration/daemon_process.h"
#include "tests/integration/harness.h"

namespace vipu::testing {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

std::string Shot(const std::string& name) {
  return absl::StrCat(VIPU_SCREENSHOT_DIR, "/", name, ".png");
}

// "ok" when every link the map marks down is what the browser shows on top
// at its midpoint and is drawn red and dotted there; otherwise what is
// wrong, naming the element that hides it.
constexpr char kDownLinksOnTop[] = R"js((() => {
  const links = Array.from(document.querySelectorAll('#podmap .link.down'));
  if (links.length === 0) return 'no link is marked down';
  const wrong = [];
  for (const link of links) {
    const shape = link instanceof SVGGeometryElement ? link : link.querySelector('path, line');
    link.scrollIntoView({block: 'center', inline: 'center'});
    const mid = shape.getPointAtLength(shape.getTotalLength() / 2)
                    .matrixTransform(shape.getScreenCTM());
    const hit = document.elementFromPoint(mid.x, mid.y);
    const name = link.getAttribute('data-link');
    if (hit !== link && !link.contains(hit)) {
      wrong.push(name + ' is under ' + (hit ? hit.tagName + '.' +
          (hit.getAttribute('class') || '') : 'nothing'));
      continue;
    }
    const red = [link, ...link.querySelectorAll('*')].some((e) => {
      const style = getComputedStyle(e);
      return style.stroke === 'rgb(255, 0, 0)' && style.strokeDasharray !== 'none' &&
             style.display !== 'none' && style.visibility === 'visible';
    });
    if (!red) wrong.push(name + ' is not red and dotted');
  }
  return wrong.length ? wrong.join('; ') : 'ok';
})())js";

TEST(ConsoleListenTest, HttpListenServesConsoleAndMetrics) {
  const int port = FreePort();
  auto server = ServerProcess::Start("pod4", {"--http-listen", absl::StrCat("127.0.0.1:", port)});
  ASSERT_NE(server, nullptr);
  EXPECT_THAT(HttpGet(port, "/"), HasSubstr("V-IPU pod console"));
  EXPECT_THAT(HttpGet(port, "/metrics"), HasSubstr("vipu_agents"));
  // The console looks at the pod every 200 ms; the cluster was created just
  // before the server said ready.
  EXPECT_TRUE(WaitFor(
      [&] { return HttpGet(port, "/api/state").find("\"agent\":\"ag1\"") != std::string::npos; },
      absl::Seconds(5)));
  EXPECT_THAT(HttpGet(port, "/api/state"), HasSubstr("\"control_plane\":{\"mode\":\"single\"}"));
  EXPECT_THAT(HttpGetRaw(port, "/api/state?bad=1"), HasSubstr("HTTP/1.1 400"));
}

TEST(ConsoleListenTest, BadOrConflictingListenFlagsAreRefused) {
  CommandResult r = RunCommand({VIPU_SERVER_BIN, "--http-listen", "2113"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_THAT(r.err, HasSubstr("--http-listen: expected host:port"));
  r = RunCommand(
      {VIPU_SERVER_BIN, "--http-listen", "127.0.0.1:1", "--metrics-listen", "127.0.0.1:2"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_THAT(r.err, HasSubstr("--http-listen and --metrics-listen name the same listener"));
}

class ConsoleBrowserTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (ChromiumBinary().empty()) VIPU_CANNOT_RUN_HERE() << "chromium is not installed";
  }
  std::unique_ptr<Chromium> Open(const std::string& url, const std::vector<std::string>& flags) {
    std::string error;
    auto browser = Chromium::Start(url, flags, &error);
    EXPECT_NE(browser, nullptr) << error;
    return browser;
  }
};

TEST_F(ConsoleBrowserTest, ShowsThePodAndFollowsChangesWithoutReload) {
  const int port = FreePort();
  auto server = ServerProcess::Start("pod16", {"--http-listen", absl::StrCat("127.0.0.1:", port)});
  ASSERT_NE(server, nullptr);
  ASSERT_EQ(server->Vipu({"create", "partition", "p1", "--size", "8"}).exit_code, 0);
  auto browser = Open(absl::StrCat("http://127.0.0.1:", port, "/"), {});
  ASSERT_NE(browser, nullptr);

  // The four machines with their IPUs and links, and p1 in the table and
  // on the map.
  ASSERT_TRUE(
      browser->WaitUntil("document.querySelectorAll('#podmap .machine').length === 4 && "
                         "document.querySelector('#partitions tr[data-partition=\"p1\"]')",
                         absl::Seconds(30)))
      << browser->log();
  EXPECT_EQ(browser->String("document.querySelectorAll('#podmap .ipu').length"), "16");
  EXPECT_EQ(browser->String("document.querySelectorAll('#podmap .ipu[data-partition=\"p1\"]')"
                            ".length"),
            "8");
  EXPECT_TRUE(browser->True("document.querySelectorAll('#podmap .link.sync').length > 0"));
  EXPECT_EQ(browser->String("document.querySelector('#capacity tr[data-allocation=\"default\"]')"
                            ".getAttribute('data-free')"),
            "8");
  EXPECT_TRUE(
      browser->WaitUntil("document.body.getAttribute('data-live') === 'live'", absl::Seconds(10)));
  EXPECT_EQ(browser->String("document.getElementById('control-plane').textContent"),
            "control plane: single server; state in SQLite");

  // A partition created with the CLI appears without a reload.
  ASSERT_TRUE(browser->True("(window.consoleTestMarker = 'same page') !== ''"));
  ASSERT_EQ(server->Vipu({"create", "partition", "p2", "--size", "4"}).exit_code, 0);
  const absl::Time created = absl::Now();
  EXPECT_TRUE(browser->WaitUntil("document.querySelector('#partitions tr[data-partition=\"p2\"]')",
                                 absl::Seconds(2)));
  const absl::Duration shown = absl::Now() - created;
  EXPECT_EQ(browser->String("window.consoleTestMarker"), "same page");
  EXPECT_EQ(browser->String("document.querySelectorAll('#podmap .ipu[data-partition=\"p2\"]')"
                            ".length"),
            "4");
  EXPECT_TRUE(
      browser->WaitUntil("document.querySelector('#capacity tr[data-allocation=\"default\"]')"
                         ".getAttribute('data-free') === '4'",
                         absl::Seconds(2)));
  std::printf("created partition shown after %s\n", absl::FormatDuration(shown).c_str());

  // Selecting p1 shows its IPUoF configuration, target options and the
  // model's prediction.
  ASSERT_TRUE(browser->True(
      "(document.querySelector('#partitions tr[data-partition=\"p1\"]').click(), true)"));
  EXPECT_TRUE(
      browser->WaitUntil("document.querySelector('#detail [data-table=\"target-options\"]') && "
                         "document.querySelector('#detail [data-prediction]') && "
                         "document.querySelectorAll('#podmap .ipu.highlight').length === 8",
                         absl::Seconds(10)));
  EXPECT_THAT(browser->String("document.getElementById('detail').textContent"),
              HasSubstr("ipuLinkDomainSize"));
  // BERT-Large's [3,7,7,7] fits: the memory line under the figure.
  EXPECT_THAT(browser->String("document.querySelector('#detail [data-memory]').textContent"),
              HasSubstr("memory: IPU 1 of each replica, the fullest, needs at least "));
  EXPECT_TRUE(browser->Screenshot(Shot("console-pod16"))) << Shot("console-pod16");

  // An injected fault is marked within 2 s.
  CommandResult fault =
      server->VipuAdmin({"inject", "fault", "ag2", "--kind", "ipu-error", "--ipu", "1"});
  ASSERT_EQ(fault.exit_code, 0) << fault.err;
  const absl::Time injected = absl::Now();
  EXPECT_TRUE(browser->WaitUntil(
      "document.querySelector('#podmap .ipu.error[data-agent=\"ag2\"][data-ipu=\"1\"]')",
      absl::Seconds(2)));
  std::printf("IPU fault marked after %s\n", absl::FormatDuration(absl::Now() - injected).c_str());
  fault = server->VipuAdmin({"inject", "fault", "ag3", "--kind", "link-down", "--link", "4"});
  ASSERT_EQ(fault.exit_code, 0) << fault.err;
  EXPECT_TRUE(browser->WaitUntil(
      "document.querySelector('#podmap .link.down[data-link=\"ag3.ipu1-ag4.ipu3\"]')",
      absl::Seconds(2)));
  // The partition on the failed IPU shows its error in the table.
  EXPECT_TRUE(browser->WaitUntil(
      "Array.from(document.querySelectorAll('#partitions tr[data-state=\"ERROR\"]')).length > 0",
      absl::Seconds(5)));
  EXPECT_EQ(browser->String("window.consoleTestMarker"), "same page");
  EXPECT_TRUE(browser->Screenshot(Shot("console-fault"))) << Shot("console-fault");

  // Without --secure everyone may remove, after confirming.
  ASSERT_TRUE(browser->True(
      "(document.querySelector('#partitions button[data-action=\"remove\"][data-id=\"p2\"]')"
      ".click(), true)"));
  ASSERT_TRUE(browser->WaitUntil("document.getElementById('confirm').open", absl::Seconds(5)));
  EXPECT_THAT(browser->String("document.getElementById('confirm-text').textContent"),
              HasSubstr("remove partition p2"));
  ASSERT_TRUE(browser->True("(document.getElementById('confirm-yes').click(), true)"));
  EXPECT_TRUE(browser->WaitUntil("!document.querySelector('#partitions tr[data-partition=\"p2\"]')",
                                 absl::Seconds(10)));
  EXPECT_THAT(server->Vipu({"list", "partitions"}).out, Not(HasSubstr("p2")));

  // A machine whose agent stops answering is marked down, and again up.
  fault = server->VipuAdmin(
      {"inject", "fault", "ag4", "--kind", "agent-hang", "--duration-ms", "3000"});
  ASSERT_EQ(fault.exit_code, 0) << fault.err;
  EXPECT_TRUE(browser->WaitUntil(
      "document.querySelector('#podmap .machine.down[data-agent=\"ag4\"]')", absl::Seconds(5)));
  EXPECT_TRUE(browser->WaitUntil(
      "document.querySelector('#podmap .machine[data-agent=\"ag4\"][data-up=\"true\"]')",
      absl::Seconds(15)));
  EXPECT_EQ(browser->String("window.consoleTestMarker"), "same page");
}

TEST_F(ConsoleBrowserTest, ShowsEveryIldWithItsGwLinks) {
  const int port = FreePort();
  auto server = ServerProcess::Start("pod128", {"--http-listen", absl::StrCat("127.0.0.1:", port)});
  ASSERT_NE(server, nullptr);
  ASSERT_EQ(server->Vipu({"create", "partition", "wide", "--size", "128"}).exit_code, 0);
  auto browser = Open(absl::StrCat("http://127.0.0.1:", port, "/"), {});
  ASSERT_NE(browser, nullptr);
  ASSERT_TRUE(browser->WaitUntil(
      "document.querySelectorAll('#podmap .machine').length === 32 && "
      "document.querySelectorAll('#podmap .ipu[data-partition=\"wide\"]').length === 128",
      absl::Seconds(30)))
      << browser->log();
  // One column per ILD, and every GW-Link the server knows is drawn.
  EXPECT_TRUE(browser->True("document.querySelectorAll('#podmap .machine').length === 32"));
  const std::string gw =
      browser->String("view.state.clusters[0].links.filter((l) => l.kind === 'GW-Link').length");
  EXPECT_NE(gw, "0");
  EXPECT_EQ(browser->String("document.querySelectorAll('#podmap .link.gw').length"), gw);
  EXPECT_EQ(browser->String("view.state.clusters[0].num_ilds"), "2");
  EXPECT_TRUE(browser->Screenshot(Shot("console-pod128"))) << Shot("console-pod128");

  // The links that loop round the torus show on top when down: a wrap rail
  // and Sync-Link of the last machine of ILD 0, and the GW-Link from ILD 1
  // back to ILD 0.
  for (const auto& [agent, link] : std::vector<std::pair<std::string, std::string>>{
           {"ag16", "4"}, {"ag16", "8"}, {"ag17", "12"}}) {
    CommandResult fault =
        server->VipuAdmin({"inject", "fault", agent, "--kind", "link-down", "--link", link});
    ASSERT_EQ(fault.exit_code, 0) << fault.err;
  }
  ASSERT_TRUE(
      browser->WaitUntil("document.querySelectorAll('#podmap .link.down').length === 3 && "
                         "view.state.clusters[0].links.filter((l) => l.down).length === 3",
                         absl::Seconds(5)));
  EXPECT_TRUE(browser->True(
      "view.state.clusters[0].links.filter((l) => l.down && (l.wrap || l.kind === 'GW-Link'))"
      ".length === 3"));
  EXPECT_EQ(browser->String(kDownLinksOnTop), "ok");
  EXPECT_TRUE(browser->Screenshot(Shot("console-pod128-wraps"))) << Shot("console-pod128-wraps");
}

TEST_F(ConsoleBrowserTest, EveryLinkFaultIsDrawnOnTopEvenInsideAMachine) {
  const int port = FreePort();
  auto server = ServerProcess::Start("pod16", {"--http-listen", absl::StrCat("127.0.0.1:", port)});
  ASSERT_NE(server, nullptr);
  ASSERT_EQ(server->Vipu({"create", "partition", "all", "--size", "16"}).exit_code, 0);
  auto browser = Open(absl::StrCat("http://127.0.0.1:", port, "/"), {});
  ASSERT_NE(browser, nullptr);
  ASSERT_TRUE(browser->WaitUntil(
      "document.querySelectorAll('#podmap .ipu[data-partition=\"all\"]').length === 16",
      absl::Seconds(30)))
      << browser->log();

  // A rung inside ag1 (port 0): the server reports it down, an internal link.
  CommandResult fault =
      server->VipuAdmin({"inject", "fault", "ag1", "--kind", "link-down", "--link", "0"});
  ASSERT_EQ(fault.exit_code, 0) << fault.err;
  ASSERT_TRUE(browser->WaitUntil("document.querySelector('#podmap .link.down')", absl::Seconds(5)));
  EXPECT_TRUE(
      browser->True("view.state.clusters[0].links.filter((l) => l.down).every((l) => l.internal && "
                    "l.a.agent === 'ag1' && l.b.agent === 'ag1')"));
  EXPECT_EQ(browser->String(kDownLinksOnTop), "ok");
  EXPECT_TRUE(browser->Screenshot(Shot("console-link-inside"))) << Shot("console-link-inside");

  // More kinds: a rail inside a machine, a rail between two, a Sync-Link.
  // Every link the server reports down is marked, and each shows on top,
  // also with its partition selected (highlighted).
  for (const auto& [agent, link] :
       std::vector<std::pair<std::string, std::string>>{{"ag2", "2"}, {"ag3", "4"}, {"ag3", "8"}}) {
    fault = server->VipuAdmin({"inject", "fault", agent, "--kind", "link-down", "--link", link});
    ASSERT_EQ(fault.exit_code, 0) << fault.err;
  }
  const std::string marked_all =
      "view.state.clusters[0].links.filter((l) => l.down).length === "
      "document.querySelectorAll('#podmap .link.down').length";
  ASSERT_TRUE(browser->WaitUntil(
      absl::StrCat("document.querySelectorAll('#podmap .link.down').length >= 4 && ", marked_all),
      absl::Seconds(5)));
  EXPECT_EQ(browser->String(kDownLinksOnTop), "ok");
  ASSERT_TRUE(browser->True(
      "(document.querySelector('#partitions tr[data-partition=\"all\"]').click(), true)"));
  ASSERT_TRUE(browser->WaitUntil("document.querySelector('#podmap .link.down.highlight')",
                                 absl::Seconds(5)));
  EXPECT_EQ(browser->String(kDownLinksOnTop), "ok");
  EXPECT_TRUE(browser->Screenshot(Shot("console-links-down"))) << Shot("console-links-down");
}

// A row of `vipu list partitions` for `id`, split on its cell borders.
std::vector<std::string> CliRow(const std::string& table, const std::string& id) {
  for (absl::string_view line : absl::StrSplit(table, '\n')) {
    std::vector<std::string> cells;
    for (absl::string_view cell : absl::StrSplit(line, '|')) {
      cell = absl::StripAsciiWhitespace(cell);
      if (!cell.empty()) cells.emplace_back(cell);
    }
    if (!cells.empty() && cells[0] == id) return cells;
  }
  return {};
}

TEST_F(ConsoleBrowserTest, KeyNamesEachPartitionsColourAndItsStateAsTheCliDoes) {
  const int port = FreePort();
  auto server = ServerProcess::Start("pod16", {"--http-listen", absl::StrCat("127.0.0.1:", port)});
  ASSERT_NE(server, nullptr);
  ASSERT_EQ(server->Vipu({"create", "partition", "p1", "--size", "8"}).exit_code, 0);
  ASSERT_EQ(server->Vipu({"create", "partition", "p2", "--size", "4"}).exit_code, 0);
  auto browser = Open(absl::StrCat("http://127.0.0.1:", port, "/"), {});
  ASSERT_NE(browser, nullptr);
  ASSERT_TRUE(
      browser->WaitUntil("document.querySelector('#partition-key li[data-partition=\"p1\"]') && "
                         "document.querySelector('#partition-key li[data-partition=\"p2\"]')",
                         absl::Seconds(30)))
      << browser->log();

  // Each partition's swatch has the colour its IPUs have on the map, and
  // the colours differ.
  for (const char* id : {"p1", "p2"}) {
    const std::string key = absl::StrCat("#partition-key li[data-partition=\"", id, "\"]");
    const std::string swatch = browser->String(
        absl::StrCat("document.querySelector('", key, " .swatch rect')", ".getAttribute('fill')"));
    EXPECT_THAT(swatch, HasSubstr("hsl(")) << id;
    EXPECT_TRUE(browser->True(absl::StrCat(
        "Array.from(document.querySelectorAll('#podmap .ipu[data-partition=\"", id,
        "\"] rect')).every((r) => r.getAttribute('fill') === ", JsonString(swatch), ")")))
        << id;
  }
  EXPECT_NE(browser->String("document.querySelector('#partition-key li[data-partition=\"p1\"] "
                            ".swatch rect').getAttribute('fill')"),
            browser->String("document.querySelector('#partition-key li[data-partition=\"p2\"] "
                            ".swatch rect').getAttribute('fill')"));

  // The state is the word `vipu list partitions` prints: in the key, in
  // the table's State cell, and in the detail's heading.
  auto shows_cli_state = [&](const std::string& id) {
    const std::vector<std::string> row = CliRow(server->Vipu({"list", "partitions"}).out, id);
    if (row.empty()) return false;
    const std::string word = JsonString(row.back());
    return browser->True(absl::StrCat("document.querySelector('#partition-key li[data-partition=\"",
                                      id,
                                      "\"]')"
                                      ".getAttribute('data-state') === ",
                                      word,
                                      " && "
                                      "document.querySelector('#partition-key li[data-partition=\"",
                                      id,
                                      "\"] .state')"
                                      ".textContent.startsWith(",
                                      word,
                                      ") && "
                                      "document.querySelector('#partitions tr[data-partition=\"",
                                      id,
                                      "\"]')"
                                      ".children[7].textContent === ",
                                      word));
  };
  EXPECT_TRUE(WaitFor([&] { return shows_cli_state("p1"); }, absl::Seconds(10)));
  EXPECT_TRUE(WaitFor([&] { return shows_cli_state("p2"); }, absl::Seconds(10)));
  EXPECT_THAT(CliRow(server->Vipu({"list", "partitions"}).out, "p1"),
              ::testing::Contains("ACTIVE"));

  // An IPU error puts p1 in ERROR: the CLI's word, not the wire's PS_ERROR.
  const std::string agent = browser->String(
      "document.querySelector('#podmap .ipu[data-partition=\"p1\"]').getAttribute('data-agent')");
  const std::string ipu = browser->String(
      "document.querySelector('#podmap .ipu[data-partition=\"p1\"]').getAttribute('data-ipu')");
  CommandResult fault =
      server->VipuAdmin({"inject", "fault", agent, "--kind", "ipu-error", "--ipu", ipu});
  ASSERT_EQ(fault.exit_code, 0) << fault.err;
  EXPECT_TRUE(
      browser->WaitUntil("document.querySelector('#partition-key li[data-partition=\"p1\"]')"
                         ".getAttribute('data-state') === 'ERROR'",
                         absl::Seconds(5)));
  EXPECT_TRUE(WaitFor([&] { return shows_cli_state("p1"); }, absl::Seconds(10)));
  EXPECT_THAT(CliRow(server->Vipu({"list", "partitions"}).out, "p1"), ::testing::Contains("ERROR"));
  ASSERT_TRUE(browser->True(
      "(document.querySelector('#partition-key li[data-partition=\"p1\"]').click(), true)"));
  EXPECT_TRUE(
      browser->WaitUntil("document.querySelector('#detail h3') && "
                         "document.querySelector('#detail h3').textContent.includes('(ERROR')",
                         absl::Seconds(10)));
  EXPECT_TRUE(
      browser->True("document.querySelector('#partition-key li[data-partition=\"p1\"]')"
                    ".classList.contains('selected')"));
  const std::string page = browser->String("document.body.innerText");
  EXPECT_THAT(page, Not(HasSubstr("PS_")));
  EXPECT_THAT(page, Not(HasSubstr("POS_")));
  EXPECT_TRUE(browser->Screenshot(Shot("console-key"))) << Shot("console-key");
}

TEST_F(ConsoleBrowserTest, MapScalesToItsPanel) {
  const int port = FreePort();
  auto server = ServerProcess::Start("pod16", {"--http-listen", absl::StrCat("127.0.0.1:", port)});
  ASSERT_NE(server, nullptr);
  auto browser = Open(absl::StrCat("http://127.0.0.1:", port, "/"), {});
  ASSERT_NE(browser, nullptr);
  ASSERT_TRUE(browser->WaitUntil("document.querySelectorAll('#podmap .machine').length === 4",
                                 absl::Seconds(30)))
      << browser->log();
  // The map spans its panel, and is drawn larger than its natural size
  // (the pod16 is taller than wide: the window's height sets how much),
  // yet stays within the window's height.
  const std::string panel = "document.getElementById('map-section').getBoundingClientRect()";
  const std::string map = "document.getElementById('podmap').getBoundingClientRect()";
  const std::string scale = "document.getElementById('podmap').getScreenCTM().a";
  EXPECT_TRUE(browser->True(absl::StrCat(map, ".width >= 0.9 * ", panel, ".width")))
      << browser->String(map + ".width") << " of " << browser->String(panel + ".width");
  EXPECT_TRUE(browser->True(absl::StrCat(scale, " >= 2"))) << browser->String(scale);
  EXPECT_TRUE(browser->True(absl::StrCat(map, ".height <= 0.8 * window.innerHeight + 1")))
      << browser->String(map + ".height");
  // A wider than tall window: the width is spent, the height still kept.
  ASSERT_FALSE(browser
                   ->Call("Emulation.setDeviceMetricsOverride",
                          "{\"width\":1000,\"height\":700,\"deviceScaleFactor\":1,"
                          "\"mobile\":false}")
                   .empty());
  EXPECT_TRUE(browser->WaitUntil(
      absl::StrCat("window.innerWidth === 1000 && ", map, ".width >= 0.9 * ", panel, ".width && ",
                   map, ".height <= 0.8 * window.innerHeight + 1 && ", scale, " >= 1"),
      absl::Seconds(5)))
      << browser->String(map + ".width") << " of " << browser->String(panel + ".width") << ", "
      << browser->String(map + ".height");
  EXPECT_TRUE(browser->Screenshot(Shot("console-narrow"))) << Shot("console-narrow");
}

// --- Secure mode --------------------------------------------------------

// The key printed by `vipu-admin create user`.
std::string KeyOf(const std::string& out) {
  const std::string marker = "Access key is '";
  const size_t at = out.find(marker);
  if (at == std::string::npos) return "";
  const size_t from = at + marker.size();
  return out.substr(from, out.find('\'', from) - from);
}

TEST_F(ConsoleBrowserTest, SecureUserSeesOnlyItsOwnPartitions) {
  struct Scratch {
    std::string path = MakeTempDir();
    ~Scratch() { RemoveTree(path); }  // also when an assertion ends the test
  } scratch;
  const std::string& work = scratch.path;
  const std::string tls = work + "/tls";
  ASSERT_EQ(RunCommand({VIPU_SERVER_BIN, "--tls-init", tls}).exit_code, 0);
  const int port = FreePort();
  auto server =
      ServerProcess::Start("pod16", {"--secure", "--tls-dir", tls, "--default-user-id", "root",
                                     "--http-listen", absl::StrCat("127.0.0.1:", port)});
  ASSERT_NE(server, nullptr);
  const std::string root = DefaultAdminKey(*server);
  ASSERT_FALSE(root.empty());
  auto as = [&](const std::string& user, const std::string& key) {
    return Join({"--api-user-id", user, "--api-access-key", key}, ClientTls(tls));
  };
  CommandResult created = RunCommand(
      Join({"/bin/sh", "-c", "cd \"$0\" && shift && exec \"$@\"", work, "ignored", VIPU_ADMIN_BIN,
            "--api-host", "127.0.0.1", "--api-port", std::to_string(server->port())},
           Join(as("root", root), {"create", "user", "alice", "--allocations", "default"})),
      {{"HOME", server->home()}});
  ASSERT_EQ(created.exit_code, 0) << created.err;
  const std::string alice = KeyOf(created.out);
  ASSERT_FALSE(alice.empty()) << created.out;
  ASSERT_EQ(server->Vipu(Join(as("alice", alice), {"create", "partition", "mine", "--size", "4"}))
                .exit_code,
            0);
  ASSERT_EQ(server->Vipu(Join(as("root", root), {"create", "partition", "roots", "--size", "8"}))
                .exit_code,
            0);

  // Plain HTTP is not served: the listener speaks TLS only.
  EXPECT_THAT(HttpGetRaw(port, "/api/state"), Not(HasSubstr("\"partitions\"")));

  auto browser =
      Open(absl::StrCat("https://127.0.0.1:", port, "/"), {"--ignore-certificate-errors"});
  ASSERT_NE(browser, nullptr);
  ASSERT_TRUE(browser->WaitUntil("!document.getElementById('login').hidden", absl::Seconds(30)))
      << browser->log();
  // A wrong key is refused by the AccessControl gate.
  ASSERT_TRUE(
      browser->True("(document.getElementById('login-user').value = 'alice', "
                    "document.getElementById('login-key').value = 'wrong', "
                    "document.getElementById('login-form').requestSubmit(), true)"));
  EXPECT_TRUE(browser->WaitUntil("document.getElementById('login-error').textContent !== ''",
                                 absl::Seconds(10)));
  ASSERT_TRUE(browser->True(absl::StrCat(
      "(document.getElementById('login-user').value = 'alice', "
      "document.getElementById('login-key').value = ",
      JsonString(alice), ", document.getElementById('login-form').requestSubmit(), true)")));
  ASSERT_TRUE(browser->WaitUntil(
      "document.querySelector('#partitions tr[data-partition=\"mine\"]')", absl::Seconds(10)));
  EXPECT_FALSE(browser->True("document.querySelector('#partitions tr[data-partition=\"roots\"]')"));
  // root's IPUs show as taken, without its partition's name.
  EXPECT_EQ(browser->String("document.querySelectorAll('#podmap .ipu[data-partition=\"roots\"]')"
                            ".length"),
            "0");
  EXPECT_EQ(browser->String("document.querySelectorAll('#podmap .ipu[data-partition=\"mine\"]')"
                            ".length"),
            "4");
  EXPECT_THAT(browser->String("document.getElementById('map').textContent"),
              Not(HasSubstr("roots")));
  // A user reads; it gets no remove or reset buttons.
  EXPECT_FALSE(browser->True("document.querySelector('#partitions button[data-action]')"));
  // The session cookie is HttpOnly (scripts cannot read it), Secure and
  // SameSite=Strict, as the browser itself recorded it.
  EXPECT_EQ(browser->String("document.cookie"), "");
  const std::string cookies = browser->Call(
      "Network.getCookies", absl::StrCat("{\"urls\":[\"https://127.0.0.1:", port, "/\"]}"));
  EXPECT_THAT(cookies, HasSubstr("\"name\":\"vipu_console\""));
  EXPECT_THAT(cookies, HasSubstr("\"httpOnly\":true"));
  EXPECT_THAT(cookies, HasSubstr("\"secure\":true"));
  EXPECT_THAT(cookies, HasSubstr("\"sameSite\":\"Strict\""));
  EXPECT_TRUE(browser->Screenshot(Shot("console-secure-user"))) << Shot("console-secure-user");
  // Even with its session's CSRF token, a user's change is refused.
  EXPECT_EQ(browser->String("fetch('/api/action', {method: 'POST', headers: {'Content-Type': "
                            "'application/x-www-form-urlencoded', 'X-CSRF-Token': "
                            "view.session.csrf}, body: 'action=remove&id=mine'})"
                            ".then((r) => r.status)"),
            "403");
  // Without the token, so is an admin's (below) and anyone's.
  EXPECT_EQ(browser->String("fetch('/api/action', {method: 'POST', headers: {'Content-Type': "
                            "'application/x-www-form-urlencoded'}, body: 'action=remove&id=mine'})"
                            ".then((r) => r.status)"),
            "403");

  // The admin logs in on the same page and removes root's partition after
  // confirming.
  ASSERT_TRUE(browser->True("(document.getElementById('logout').click(), true)"));
  ASSERT_TRUE(browser->WaitUntil("!document.getElementById('login').hidden", absl::Seconds(10)));
  ASSERT_TRUE(browser->True(absl::StrCat(
      "(document.getElementById('login-user').value = 'root', "
      "document.getElementById('login-key').value = ",
      JsonString(root), ", document.getElementById('login-form').requestSubmit(), true)")));
  ASSERT_TRUE(browser->WaitUntil(
      "document.querySelector('#partitions button[data-action=\"remove\"][data-id=\"roots\"]')",
      absl::Seconds(10)));
  EXPECT_TRUE(browser->True("document.querySelector('#partitions tr[data-partition=\"mine\"]')"));
  ASSERT_TRUE(browser->True(
      "(document.querySelector('#partitions button[data-action=\"remove\"][data-id=\"roots\"]')"
      ".click(), true)"));
  ASSERT_TRUE(browser->WaitUntil("document.getElementById('confirm').open", absl::Seconds(5)));
  ASSERT_TRUE(browser->True("(document.getElementById('confirm-yes').click(), true)"));
  EXPECT_TRUE(browser->WaitUntil(
      "!document.querySelector('#partitions tr[data-partition=\"roots\"]')", absl::Seconds(10)));
  EXPECT_THAT(server->Vipu(Join(as("root", root), {"list", "partitions"})).out,
              Not(HasSubstr("roots")));
}

}  // namespace
}  // namespace vipu::testing
