// The replay: each policy on tiny traces whose start times are worked out
// by hand, placement checked against fabric::Place itself, the metrics
// recomputed from jobs.csv, and no IPU held twice over a long trace.
#include "plan/replay.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_split.h"
#include "fabric/placement.h"
#include "fabric/topology.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "model/step_predictor.h"
#include "model/system_spec.h"
#include "model/workload.h"
#include "plan/generator.h"
#include "plan/model_run_time.h"
#include "plan/pod.h"
#include "plan/report.h"
#include "plan/summary.h"

namespace vipu::plan {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

fabric::ClusterLayout LayoutOf(const std::string& pod) {
  absl::StatusOr<PlanPod> p = ParsePod(pod);
  EXPECT_TRUE(p.ok()) << p.status();
  absl::StatusOr<fabric::ClusterLayout> layout = fabric::ClusterLayout::Build(p->cluster);
  EXPECT_TRUE(layout.ok()) << layout.status();
  return *layout;
}

TraceJob Job(const std::string& id, double submit, uint32_t ipus, double run,
             double requested = -1) {
  TraceJob j;
  j.id = id;
  j.submit = submit;
  j.ipus = ipus;
  j.run = run;
  j.requested = requested;
  return j;
}

Trace TraceOf(std::vector<TraceJob> jobs) {
  Trace t;
  t.source = "test";
  t.jobs = std::move(jobs);
  return t;
}

std::vector<double> Starts(const ReplayResult& r) {
  std::vector<double> starts;
  for (const JobOutcome& o : r.jobs) starts.push_back(o.start);
  return starts;
}

ReplayResult ReplayOn(const std::string& pod, const Trace& trace, Policy policy) {
  ReplayOptions o;
  o.policy = policy;
  absl::StatusOr<ReplayResult> r = Replay(LayoutOf(pod), trace, o);
  EXPECT_TRUE(r.ok()) << r.status();
  return *r;
}

// pod4: one machine, 4 IPUs. A holds 2 until 100; B wants all 4; C and D
// want one each.
Trace HeadBlocked() {
  return TraceOf({Job("A", 0, 2, 100), Job("B", 1, 4, 10), Job("C", 2, 1, 5), Job("D", 3, 1, 500)});
}

TEST(ReplayTest, FifoStartsInArrivalOrderAndTheHeadBlocksTheRest) {
  const ReplayResult r = ReplayOn("pod4", HeadBlocked(), Policy::kFifo);
  // B waits for A's end; C and D wait behind B until it ends at 110.
  EXPECT_THAT(Starts(r), ElementsAre(0, 100, 110, 110));
  EXPECT_EQ(r.jobs[1].end, 110);
  EXPECT_EQ(r.jobs[3].end, 610);
}

TEST(ReplayTest, BackfillStartsALaterJobOnlyWhenItDelaysNoOneAhead) {
  const ReplayResult r = ReplayOn("pod4", HeadBlocked(), Policy::kBackfill);
  // B's reservation is 100 (A's end). C ends at 7, before it: starts now.
  // D would hold an IPU past 100 and B needs all four: it waits.
  EXPECT_THAT(Starts(r), ElementsAre(0, 100, 2, 110));
  EXPECT_EQ(r.estimated_by_run, 4u);
  EXPECT_EQ(r.estimated_by_requested, 0u);
}

TEST(ReplayTest, BackfillEstimatesFromTheRequestedTimeWhenGiven) {
  Trace t = HeadBlocked();
  t.jobs[2].requested = 500;  // C asks for longer than B's reservation
  const ReplayResult r = ReplayOn("pod4", t, Policy::kBackfill);
  EXPECT_THAT(Starts(r), ElementsAre(0, 100, 110, 110));
  EXPECT_EQ(r.estimated_by_requested, 1u);
  EXPECT_EQ(r.estimated_by_run, 3u);
}

TEST(ReplayTest, BackfillLetsALongJobPassWhenTheHeadStillFitsAtItsReservation) {
  // pod16: A holds 0-7 and X 8-11 until 100; B wants an aligned 8, which
  // only frees at 100; C (4 IPUs, 1000 s) fits now at 12-15, and with C
  // there B still fits at 0-7 at 100.
  const Trace t =
      TraceOf({Job("A", 0, 8, 100), Job("X", 0, 4, 100), Job("B", 1, 8, 10), Job("C", 2, 4, 1000)});
  const ReplayResult fifo = ReplayOn("pod16", t, Policy::kFifo);
  EXPECT_THAT(Starts(fifo), ElementsAre(0, 0, 100, 100));
  const ReplayResult backfill = ReplayOn("pod16", t, Policy::kBackfill);
  EXPECT_THAT(Starts(backfill), ElementsAre(0, 0, 100, 2));
  // C sits in the only free aligned block of 4.
  EXPECT_EQ(backfill.jobs[3].block.start, 12u);
}

TEST(ReplayTest, AJobIsEndedAtItsRequestedTimeSoTheHeadStartsAtItsReservation) {
  // pod4: A holds 2 IPUs and asked for 100 s, but its run would take 300.
  // B, the head, wants all 4: its reservation is A's requested end, 100.
  // C (1 IPU, ends at 7 by its request) backfills at once.
  const Trace t = TraceOf({Job("A", 0, 2, 300, 100), Job("B", 1, 4, 10, 10), Job("C", 2, 1, 5, 5)});
  const ReplayResult ended = ReplayOn("pod4", t, Policy::kBackfill);
  EXPECT_THAT(Starts(ended), ElementsAre(0, 100, 2));
  EXPECT_EQ(ended.jobs[0].status, JobStatus::kKilledAtLimit);
  EXPECT_EQ(ended.jobs[0].end, 100);
  EXPECT_EQ(ended.jobs[0].run, 100);
  EXPECT_EQ(ended.jobs[1].status, JobStatus::kDone);
  EXPECT_EQ(ended.killed_at_limit, 1u);
  EXPECT_DOUBLE_EQ(ended.killed_at_limit_ipu_s, 2 * 100);
  const Summary s = Summarise(t, ended, "pod4", 4, ReplayOptions());
  EXPECT_EQ(s.done, 2u);
  EXPECT_EQ(s.killed_at_limit, 1u);
  EXPECT_DOUBLE_EQ(s.killed_at_limit_ipu_hours, 200.0 / 3600);
  EXPECT_THAT(SummaryJson(s), HasSubstr("\"killed_at_limit\":1"));
  EXPECT_THAT(JobsCsv(t, ended, LayoutOf("pod4")), HasSubstr(",killed_at_limit,"));
  // Let run past its limit, A holds its IPUs to 300 and the head waits past
  // its reservation: the wait backfill promised is not the one it gets.
  ReplayOptions past;
  past.policy = Policy::kBackfill;
  past.end_at_limit = false;
  absl::StatusOr<ReplayResult> overrun = Replay(LayoutOf("pod4"), t, past);
  ASSERT_TRUE(overrun.ok()) << overrun.status();
  EXPECT_THAT(Starts(*overrun), ElementsAre(0, 300, 2));
  EXPECT_EQ(overrun->jobs[0].status, JobStatus::kDone);
  EXPECT_EQ(overrun->killed_at_limit, 0u);
}

TEST(ReplayTest, NoneRefusesACreateThatDoesNotFitAndNeverQueues) {
  const Trace t =
      TraceOf({Job("A", 0, 2, 100), Job("B", 1, 4, 10), Job("C", 2, 1, 5), Job("D", 100, 4, 1)});
  const ReplayResult r = ReplayOn("pod4", t, Policy::kNone);
  EXPECT_EQ(r.jobs[1].status, JobStatus::kRefused);
  EXPECT_THAT(Starts(r), ElementsAre(0, -1, 2, 100));  // A ends at 100 before D arrives
  EXPECT_EQ(r.blocked_s, 0);
}

TEST(ReplayTest, SizesAreRoundedUpToAPartitionSizeAndTooBigJobsCounted) {
  const Trace t = TraceOf({Job("A", 0, 3, 10), Job("B", 0, 8, 10), Job("C", 0, 1, 10)});
  const ReplayResult r = ReplayOn("pod4", t, Policy::kFifo);
  EXPECT_EQ(r.jobs[0].size, 4u);
  EXPECT_EQ(r.rounded, 1u);  // 3 -> 4; 8 is a partition size, only larger than the pod
  EXPECT_EQ(r.jobs[1].status, JobStatus::kTooBig);
  EXPECT_THAT(Starts(r), ElementsAre(0, -1, 10));
}

TEST(ReplayTest, PlacementIsTheServersFabricPlace) {
  // The first 2-IPU job on an empty pod64 gets what fabric::Place gives.
  const fabric::ClusterLayout layout = LayoutOf("pod64");
  const ReplayResult r = ReplayOn("pod64", TraceOf({Job("A", 0, 2, 10)}), Policy::kFifo);
  fabric::IldMasks masks;
  masks.allowed.assign(1, ~uint64_t{0});
  masks.used.assign(1, 0);
  absl::StatusOr<std::vector<fabric::PartitionIpu>> ipus =
      fabric::Place(layout, masks, fabric::PlacementRequest{2, 1, {}});
  ASSERT_TRUE(ipus.ok());
  EXPECT_EQ(r.jobs[0].block.first_ild, (*ipus)[0].ild);
  EXPECT_EQ(r.jobs[0].block.start, (*ipus)[0].topology_id);
  // A 128-IPU job on pod256 spans two ILDs at the same offset, as the
  // server's default for that size.
  const ReplayResult big = ReplayOn("pod256", TraceOf({Job("B", 0, 128, 10)}), Policy::kFifo);
  EXPECT_EQ(big.jobs[0].block.num_ilds, 2u);
  EXPECT_EQ(big.jobs[0].block.segment, 64u);
}

TEST(ReplayTest, PodsAreThePresetsOrIldsByMachines) {
  EXPECT_EQ(LayoutOf("pod256").num_ipus(), 256u);
  EXPECT_EQ(LayoutOf("bow-pod64").num_ipus(), 64u);
  const fabric::ClusterLayout big = LayoutOf("64x16");
  EXPECT_EQ(big.num_ipus(), 4096u);
  EXPECT_EQ(big.num_ilds(), 64u);
  for (const char* bad : {"pod7", "64x17", "0x16", "x", "16x", "4097x1", ""}) {
    absl::StatusOr<PlanPod> p = ParsePod(bad);
    ASSERT_FALSE(p.ok()) << bad;
    EXPECT_THAT(p.status().message(), HasSubstr("pod:")) << bad;
  }
}

TEST(ReplayTest, ModelJobsRunForStepsTimesThePredictedStepAtTheirPlacedSize) {
  TraceJob small = Job("s", 0, 16, -1);
  small.model = "bert-base";
  small.steps = 1000;
  small.ipus_per_replica = 4;  // BERT-Base's weights and LAMB state need 4 IPUs
  TraceJob large = small;
  large.id = "l";
  large.ipus = 64;
  TraceJob unknown = small;
  unknown.id = "u";
  unknown.model = "no-such-model";
  const Trace t = TraceOf({small, large, unknown});
  absl::StatusOr<PlanPod> pod = ParsePod("pod64");
  ASSERT_TRUE(pod.ok());
  ModelRunTime model(pod->spec);
  ReplayOptions o;
  o.model_run_time = [&](const TraceJob& j, uint32_t size, uint32_t ilds) {
    return model.RunSeconds(j, size, ilds);
  };
  absl::StatusOr<ReplayResult> r = Replay(LayoutOf("pod64"), t, o);
  ASSERT_TRUE(r.ok()) << r.status();
  for (int k : {0, 1}) {
    model::Workload w = *model::WorkloadPreset("bert-base");
    w.ipus_per_replica = 4;
    w.replicas = t.jobs[k].ipus / 4;
    absl::StatusOr<model::StepPrediction> p =
        model::PredictStep(w, model::SystemSpecFromPod(pod->spec));
    ASSERT_TRUE(p.ok()) << p.status();
    EXPECT_DOUBLE_EQ(r->jobs[k].end - r->jobs[k].start, 1000 * p->step_time_s);
  }
  EXPECT_NE(r->jobs[0].end - r->jobs[0].start, r->jobs[1].end - r->jobs[1].start);
  EXPECT_EQ(r->jobs[2].status, JobStatus::kModelRefused);
  EXPECT_THAT(r->jobs[2].refusal, HasSubstr("no-such-model"));
  // Without a model the replay refuses to guess.
  EXPECT_FALSE(Replay(LayoutOf("pod64"), t, ReplayOptions{}).ok());
}

// jobs.csv parsed back: one map of column to value per row.
std::vector<std::map<std::string, std::string>> ParseJobsCsv(const std::string& csv) {
  std::vector<std::string> lines = absl::StrSplit(csv, '\n', absl::SkipEmpty());
  std::vector<std::string> header = absl::StrSplit(lines[0], ',');
  std::vector<std::map<std::string, std::string>> rows;
  for (size_t i = 1; i < lines.size(); ++i) {
    std::vector<std::string> fields = absl::StrSplit(lines[i], ',');
    EXPECT_EQ(fields.size(), header.size()) << lines[i];
    std::map<std::string, std::string> row;
    for (size_t c = 0; c < header.size() && c < fields.size(); ++c) row[header[c]] = fields[c];
    rows.push_back(std::move(row));
  }
  return rows;
}

double Num(const std::string& s) {
  double v = 0;
  EXPECT_TRUE(absl::SimpleAtod(s, &v)) << s;
  return v;
}

struct LongRun {
  Trace trace;
  ReplayResult result;
  Summary summary;
  std::string csv;
};

LongRun RunLong(const std::string& pod, Policy policy, uint64_t jobs, double mtbf_hours,
                uint64_t seed) {
  const fabric::ClusterLayout layout = LayoutOf(pod);
  GeneratorOptions g;
  g.jobs = jobs;
  g.pod_ipus = layout.num_ipus();
  g.max_ipus = layout.num_ipus() / 2;
  g.load = 1.2;
  g.seed = 7;
  LongRun run;
  run.trace = *Generate(g);
  ReplayOptions o;
  o.policy = policy;
  o.seed = seed;
  o.faults.machine_mtbf_hours = mtbf_hours;
  o.faults.repair_hours = mtbf_hours > 0 ? 12 : 0;
  absl::StatusOr<ReplayResult> r = Replay(layout, run.trace, o);
  EXPECT_TRUE(r.ok()) << r.status();
  run.result = *r;
  run.summary = Summarise(run.trace, run.result, pod, layout.num_ipus(), o);
  run.csv = JobsCsv(run.trace, run.result, layout);
  return run;
}

TEST(ReplayMetricsTest, EveryFigureOfTheSummaryIsRecomputedFromJobsCsv) {
  for (Policy policy : {Policy::kFifo, Policy::kBackfill, Policy::kNone}) {
    const LongRun run = RunLong("pod16", policy, 400, 0, 1);
    const Summary& s = run.summary;
    std::vector<double> waits;
    double ipu_s = 0, slowdown = 0, first_submit = 1e300, last_end = 0;
    uint64_t refused = 0, rounded = 0, done = 0;
    for (const auto& row : ParseJobsCsv(run.csv)) {
      first_submit = std::min(first_submit, Num(row.at("submit")));
      if (row.at("ipus_asked") != row.at("ipus")) ++rounded;
      if (row.at("status") == "refused") ++refused;
      if (row.at("status") == "done") ++done;
      if (row.at("status") != "done" && row.at("status") != "killed_at_limit") continue;
      const double start = Num(row.at("start")), end = Num(row.at("end"));
      const double wait = start - Num(row.at("submit")), run_s = end - start;
      EXPECT_EQ(Num(row.at("wait")), wait);
      waits.push_back(wait);
      ipu_s += run_s * Num(row.at("ipus"));
      slowdown += std::max(1.0, (wait + run_s) / std::max(run_s, 10.0));
      last_end = std::max(last_end, end);
    }
    std::sort(waits.begin(), waits.end());
    auto rank = [&](double p) {
      return waits[static_cast<size_t>(std::ceil(p * waits.size())) - 1];
    };
    SCOPED_TRACE(PolicyName(policy));
    ASSERT_FALSE(waits.empty());
    EXPECT_EQ(s.done, done);
    EXPECT_EQ(s.done + s.killed_at_limit, waits.size());
    EXPECT_EQ(s.refused, refused);
    EXPECT_EQ(s.rounded, rounded);
    EXPECT_GT(s.rounded, 0u);
    EXPECT_DOUBLE_EQ(s.makespan_s, last_end - first_submit);
    EXPECT_DOUBLE_EQ(s.utilisation, ipu_s / (16 * (last_end - first_submit)));
    EXPECT_DOUBLE_EQ(s.wait_p50_s, rank(0.50));
    EXPECT_DOUBLE_EQ(s.wait_p95_s, rank(0.95));
    EXPECT_DOUBLE_EQ(s.wait_p99_s, rank(0.99));
    EXPECT_DOUBLE_EQ(s.wait_max_s, waits.back());
    EXPECT_NEAR(s.bounded_slowdown_mean, slowdown / waits.size(), 1e-9 * slowdown);
    EXPECT_GE(s.fragmentation, 0);
    EXPECT_LE(s.fragmentation, 1);
    if (policy == Policy::kNone) {
      EXPECT_GT(s.refused, 0u);
    } else {
      EXPECT_EQ(s.refused, 0u);
    }
  }
}

// Every IPU's runs, from jobs.csv, never overlap; each run holds its size.
void ExpectNoIpuHeldTwice(const LongRun& run) {
  std::map<std::string, std::vector<std::pair<double, double>>> by_ipu;
  uint64_t done = 0;
  for (const auto& row : ParseJobsCsv(run.csv)) {
    if (row.at("status") != "done") continue;
    ++done;
    std::vector<std::string> placed = absl::StrSplit(row.at("placed"), ';');
    EXPECT_EQ(placed.size(), Num(row.at("ipus"))) << row.at("id");
    EXPECT_EQ(std::set<std::string>(placed.begin(), placed.end()).size(), placed.size());
    for (const std::string& ipu : placed) {
      by_ipu[ipu].emplace_back(Num(row.at("start")), Num(row.at("end")));
    }
  }
  EXPECT_GT(done, 0u);
  for (auto& [ipu, runs] : by_ipu) {
    std::sort(runs.begin(), runs.end());
    for (size_t i = 1; i < runs.size(); ++i) {
      ASSERT_LE(runs[i - 1].second, runs[i].first) << ipu << " held twice";
    }
  }
}

TEST(ReplayInvariantTest, NoIpuIsHeldByTwoJobsOverALongTrace) {
  // 8 ILDs of 8 machines: partitions up to 128 IPUs span ILDs.
  const LongRun backfill = RunLong("8x8", Policy::kBackfill, 3000, 0, 1);
  ExpectNoIpuHeldTwice(backfill);
  EXPECT_EQ(backfill.summary.done, backfill.trace.jobs.size());
  bool multi_ild = false;
  for (const JobOutcome& o : backfill.result.jobs) multi_ild |= o.block.num_ilds > 1;
  EXPECT_TRUE(multi_ild);
  ExpectNoIpuHeldTwice(RunLong("8x8", Policy::kFifo, 1500, 0, 1));
}

TEST(ReplayFaultTest, FailedMachinesRequeueTheirJobsAndTheSameSeedGivesTheSameRun) {
  const LongRun a = RunLong("pod64", Policy::kBackfill, 800, 100, 5);
  ExpectNoIpuHeldTwice(a);
  EXPECT_GT(a.summary.machine_failures, 0u);
  EXPECT_GT(a.summary.requeues, 0u);
  EXPECT_GT(a.summary.lost_ipu_hours, 0);
  EXPECT_EQ(a.summary.done, a.trace.jobs.size());  // every requeued job ran in the end
  double lost = 0;
  for (const auto& row : ParseJobsCsv(a.csv)) lost += Num(row.at("lost_ipu_s"));
  EXPECT_NEAR(lost / 3600, a.summary.lost_ipu_hours, 1e-6);
  const LongRun again = RunLong("pod64", Policy::kBackfill, 800, 100, 5);
  EXPECT_EQ(again.csv, a.csv);
  EXPECT_EQ(SummaryJson(again.summary), SummaryJson(a.summary));
  const LongRun other = RunLong("pod64", Policy::kBackfill, 800, 100, 6);
  EXPECT_NE(other.csv, a.csv);
  // Without faults nothing is lost.
  const LongRun calm = RunLong("pod64", Policy::kBackfill, 800, 0, 5);
  EXPECT_EQ(calm.summary.requeues, 0u);
  EXPECT_EQ(calm.summary.lost_ipu_hours, 0);
}

TEST(ReplayTest, OptionsOutOfRangeAreRefused) {
  const Trace t = HeadBlocked();
  ReplayOptions o;
  o.backfill_depth = 0;
  EXPECT_FALSE(Replay(LayoutOf("pod4"), t, o).ok());
  o = ReplayOptions{};
  o.faults.machine_mtbf_hours = 10;  // no repair time
  EXPECT_FALSE(Replay(LayoutOf("pod4"), t, o).ok());
  o.faults.machine_mtbf_hours = -1;
  o.faults.repair_hours = 1;
  EXPECT_FALSE(Replay(LayoutOf("pod4"), t, o).ok());
  EXPECT_FALSE(ParsePolicy("sjf").ok());
}

}  // namespace
}  // namespace vipu::plan
