// Replay: the event loop (arrivals, completions, machine failures and repairs) and the policies.
#include "plan/replay.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <limits>
#include <map>
#include <numeric>
#include <optional>
#include <queue>
#include <random>
#include <set>
#include <tuple>
#include <utility>

#include "absl/strings/str_cat.h"
#include "base/status_macros.h"
#include "fabric/placement.h"
#include "fabric/validation.h"

namespace vipu::plan {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

// Which kind of fault event.
enum class FaultKind { kFail, kRepair };

struct FaultEvent {
  double t = 0;
  uint64_t seq = 0;
  uint32_t machine = 0;
  FaultKind kind = FaultKind::kFail;
  bool operator>(const FaultEvent& o) const { return std::tie(t, seq) > std::tie(o.t, o.seq); }
};

struct Completion {
  double t = 0;
  uint32_t job = 0;
  uint32_t attempt = 0;
  bool operator>(const Completion& o) const { return std::tie(t, job) > std::tie(o.t, o.job); }
};

// One replay's state: the pod's masks as placement sees them, the queue,
// the running jobs and the pending events. Borrows the layout, trace and
// options for its lifetime; Run() once.
class Simulation {
 public:
  Simulation(const fabric::ClusterLayout& layout, const Trace& trace, const ReplayOptions& options)
      : layout_(layout), trace_(trace), o_(options), rng_(options.seed) {}

  absl::StatusOr<ReplayResult> Run();

 private:
  // Sizes the state for the pod and the trace: every IPU up and free, the
  // jobs in arrival order.
  void Init();
  // The job's partition size, ILDs, run time and estimate, known before
  // anything runs. False when it can never run (too big, or its model
  // refuses it; the outcome says why).
  absl::StatusOr<bool> PrepareJob(uint32_t j);
  // Every machine's first failure, when machines fail.
  void ScheduleFirstFailures();
  // The events in time order until no job waits or runs; `eligible`: the
  // jobs PrepareJob let run.
  absl::Status Loop(const std::vector<bool>& eligible);
  // A timeline point at `t` when the pod's state changed since the last.
  void RecordTimeline(double t);
  // The partition request the server would place for `size` IPUs: its
  // ILD count as ResolveDefaults gives it. Cached by size.
  absl::StatusOr<uint32_t> IldsFor(uint32_t size);
  // fabric::Place on `masks`; nullopt when no block is free.
  absl::StatusOr<std::optional<std::vector<fabric::PartitionIpu>>> TryPlace(
      uint32_t job, const fabric::IldMasks& masks);
  // A job is submitted (queued; under policy none, placed or refused).
  absl::Status Arrive(uint32_t job, double t);
  // The job holds `ipus` from `t` for its run time.
  void Start(uint32_t job, const std::vector<fabric::PartitionIpu>& ipus, double t);
  // The job's IPUs are free again.
  void Release(uint32_t job, double t);
  // A failure ends the job's run: its IPU-seconds are lost and it is queued
  // again at its place by arrival (under none: tried again at once).
  void Kill(uint32_t job, double t);
  // Starts what the policy allows at `t`.
  absl::Status Schedule(double t);
  absl::Status Backfill(double t);
  // A machine fails (its jobs are killed and requeued) or comes back.
  void HandleFault(const FaultEvent& e, double t);
  // A draw from the exponential distribution, the same on every platform.
  double Exponential(double mean);
  void MarkBlock(const Block& b, bool used, fabric::IldMasks* masks) const;
  // The occupancy chart's rows gain (sign +1) or lose the block's IPUs.
  void Occupancy(const Block& b, double t, int sign);
  uint32_t FreeIpus() const { return total_ - busy_ - down_; }
  // Fragmentation over [t0, t1), in the state after the last event.
  void Integrate(double t0, double t1);

  const fabric::ClusterLayout& layout_;
  const Trace& trace_;
  const ReplayOptions& o_;
  ReplayResult r_;
  std::mt19937_64 rng_;
  uint32_t total_ = 0, busy_ = 0, down_ = 0;
  fabric::IldMasks masks_;
  std::vector<int32_t> owner_;     // ild * 64 + topology id: the job holding it, or -1
  std::vector<uint32_t> order_;    // jobs in arrival order
  std::vector<uint32_t> rank_of_;  // job -> its place in order_
  std::vector<uint32_t> ilds_;     // job -> the ILDs its partition spans
  std::vector<uint32_t> attempt_;  // job -> runs started
  std::vector<bool> running_;
  std::vector<double> est_end_;                        // job -> start + estimate while running
  std::set<uint32_t> queue_;                           // ranks of waiting jobs
  std::set<std::pair<double, uint32_t>> by_estimate_;  // running: (estimated end, job)
  std::priority_queue<Completion, std::vector<Completion>, std::greater<Completion>> done_;
  std::priority_queue<FaultEvent, std::vector<FaultEvent>, std::greater<FaultEvent>> faults_;
  uint64_t fault_seq_ = 0;
  std::vector<uint32_t> retry_;  // policy none: jobs a failure killed, tried again
  std::map<uint32_t, absl::StatusOr<uint32_t>> ilds_by_size_;
  uint64_t creates_ = 0;
  bool head_blocked_ = false;
  double frag_weighted_ = 0;
};

absl::StatusOr<uint32_t> Simulation::IldsFor(uint32_t size) {
  auto it = ilds_by_size_.find(size);
  if (it != ilds_by_size_.end()) return it->second;
  fabric::PartitionRequest request;
  request.id = "plan";
  request.size = size;
  absl::StatusOr<uint32_t> ilds = [&]() -> absl::StatusOr<uint32_t> {
    RETURN_IF_ERROR(fabric::ValidatePartitionRequest(request));
    ASSIGN_OR_RETURN(fabric::PartitionRequest resolved,
                     fabric::ResolveValidatedDefaults(request, layout_));
    return resolved.num_ilds;
  }();
  ilds_by_size_.emplace(size, ilds);
  return ilds;
}

absl::StatusOr<std::optional<std::vector<fabric::PartitionIpu>>> Simulation::TryPlace(
    uint32_t job, const fabric::IldMasks& masks) {
  fabric::PlacementRequest request{r_.jobs[job].size, ilds_[job], {}};
  absl::StatusOr<std::vector<fabric::PartitionIpu>> ipus = fabric::Place(layout_, masks, request);
  if (absl::IsResourceExhausted(ipus.status())) return std::nullopt;
  if (!ipus.ok()) return ipus.status();
  return std::optional<std::vector<fabric::PartitionIpu>>(*std::move(ipus));
}

void Simulation::MarkBlock(const Block& b, bool used, fabric::IldMasks* masks) const {
  const uint64_t bits = (b.segment >= 64 ? ~uint64_t{0} : ((uint64_t{1} << b.segment) - 1))
                        << b.start;
  for (uint32_t i = 0; i < b.num_ilds; ++i) {
    if (used) {
      masks->used[b.first_ild + i] |= bits;
    } else {
      masks->used[b.first_ild + i] &= ~bits;
    }
  }
}

void Simulation::Occupancy(const Block& b, double t, int sign) {
  for (uint32_t i = 0; i < b.num_ilds; ++i) {
    const uint32_t ild = b.first_ild + i;
    if (r_.occupancy_by_ild) {
      r_.occupancy.push_back({t, ild, sign * static_cast<int32_t>(b.segment)});
      continue;
    }
    for (uint32_t m = b.start / fabric::kIpusPerMachine;
         m * fabric::kIpusPerMachine < b.start + b.segment; ++m) {
      const uint32_t lo = std::max(b.start, m * fabric::kIpusPerMachine);
      const uint32_t hi = std::min(b.start + b.segment, (m + 1) * fabric::kIpusPerMachine);
      r_.occupancy.push_back(
          {t, ild * layout_.machines_per_ild() + m, sign * static_cast<int32_t>(hi - lo)});
    }
  }
}

void Simulation::Start(uint32_t job, const std::vector<fabric::PartitionIpu>& ipus, double t) {
  JobOutcome& out = r_.jobs[job];
  out.block = Block{ipus.front().ild, ilds_[job], ipus.front().topology_id, out.size / ilds_[job]};
  MarkBlock(out.block, true, &masks_);
  for (const fabric::PartitionIpu& p : ipus) {
    owner_[p.ild * fabric::kMaxIpusPerIld + p.topology_id] = static_cast<int32_t>(job);
  }
  busy_ += out.size;
  out.start = t;
  out.create_seq = ++creates_;
  running_[job] = true;
  est_end_[job] = t + out.estimate;
  by_estimate_.emplace(est_end_[job], job);
  done_.push({t + out.run, job, ++attempt_[job]});
  Occupancy(out.block, t, +1);
}

void Simulation::Release(uint32_t job, double t) {
  JobOutcome& out = r_.jobs[job];
  MarkBlock(out.block, false, &masks_);
  for (uint32_t i = 0; i < out.block.num_ilds; ++i) {
    for (uint32_t k = 0; k < out.block.segment; ++k) {
      owner_[(out.block.first_ild + i) * fabric::kMaxIpusPerIld + out.block.start + k] = -1;
    }
  }
  busy_ -= out.size;
  running_[job] = false;
  by_estimate_.erase({est_end_[job], job});
  Occupancy(out.block, t, -1);
}

void Simulation::Kill(uint32_t job, double t) {
  JobOutcome& out = r_.jobs[job];
  Release(job, t);
  const double lost = out.size * (t - out.start);
  out.lost_ipu_s += lost;
  r_.lost_ipu_s += lost;
  ++out.requeues;
  ++r_.requeues;
  out.start = -1;
  if (o_.policy == Policy::kNone) {
    retry_.push_back(job);
  } else {
    queue_.insert(rank_of_[job]);
  }
}

double Simulation::Exponential(double mean) {
  const double u = static_cast<double>(rng_() >> 11) * 0x1.0p-53;
  return -std::log1p(-u) * mean;
}

void Simulation::HandleFault(const FaultEvent& e, double t) {
  // A machine's IPUs sit in one ILD.
  const uint32_t ild = layout_.PositionAt(e.machine, 0).first;
  uint64_t bits = 0;
  for (uint32_t ipu = 0; ipu < fabric::kIpusPerMachine; ++ipu) {
    bits |= uint64_t{1} << layout_.PositionAt(e.machine, ipu).second;
  }
  if (e.kind == FaultKind::kFail) {
    ++r_.machine_failures;
    for (uint32_t ipu = 0; ipu < fabric::kIpusPerMachine; ++ipu) {
      const uint32_t topology_id = layout_.PositionAt(e.machine, ipu).second;
      const int32_t holder = owner_[ild * fabric::kMaxIpusPerIld + topology_id];
      if (holder >= 0) Kill(static_cast<uint32_t>(holder), t);
    }
    masks_.allowed[ild] &= ~bits;
    down_ += fabric::kIpusPerMachine;
    faults_.push({t + o_.faults.repair_hours * 3600, fault_seq_++, e.machine, FaultKind::kRepair});
  } else {
    masks_.allowed[ild] |= bits;
    down_ -= fabric::kIpusPerMachine;
    faults_.push({t + Exponential(o_.faults.machine_mtbf_hours * 3600), fault_seq_++, e.machine,
                  FaultKind::kFail});
  }
}

absl::Status Simulation::Arrive(uint32_t job, double t) {
  if (o_.policy != Policy::kNone) {
    queue_.insert(rank_of_[job]);
    return absl::OkStatus();
  }
  // No scheduler: the create is tried once, now.
  if (FreeIpus() >= r_.jobs[job].size) {
    ASSIGN_OR_RETURN(auto placed, TryPlace(job, masks_));
    if (placed) {
      Start(job, *placed, t);
      return absl::OkStatus();
    }
  }
  r_.jobs[job].status = JobStatus::kRefused;
  r_.jobs[job].create_seq = ++creates_;
  r_.jobs[job].refusal = "did not fit when created";
  return absl::OkStatus();
}

absl::Status Simulation::Schedule(double t) {
  head_blocked_ = false;
  if (o_.policy == Policy::kNone) return absl::OkStatus();
  while (!queue_.empty()) {
    const uint32_t head = order_[*queue_.begin()];
    if (FreeIpus() < r_.jobs[head].size) break;
    ASSIGN_OR_RETURN(auto placed, TryPlace(head, masks_));
    if (!placed) break;
    Start(head, *placed, t);
    queue_.erase(queue_.begin());
  }
  head_blocked_ = !queue_.empty();
  if (o_.policy == Policy::kBackfill && head_blocked_ && FreeIpus() > 0) return Backfill(t);
  return absl::OkStatus();
}

// EASY: the head's reservation is the earliest estimated end of running
// jobs after which it fits; a later job starts now if it fits now and
// either ends (by its estimate) before the reservation or leaves the head
// room to be placed at it.
absl::Status Simulation::Backfill(double t) {
  const uint32_t head = order_[*queue_.begin()];
  const uint32_t head_size = r_.jobs[head].size;
  double shadow = kInf;
  fabric::IldMasks at_shadow = masks_;
  uint32_t freed = FreeIpus();
  for (const auto& [est_end, job] : by_estimate_) {
    MarkBlock(r_.jobs[job].block, false, &at_shadow);
    freed += r_.jobs[job].size;
    if (freed < head_size) continue;
    ASSIGN_OR_RETURN(auto fits, TryPlace(head, at_shadow));
    if (fits) {
      shadow = std::max(est_end, t);
      break;
    }
  }
  uint32_t cutoff = std::numeric_limits<uint32_t>::max();  // no smaller size failed to fit now
  uint32_t examined = 0;
  for (auto it = std::next(queue_.begin());
       it != queue_.end() && examined < o_.backfill_depth && FreeIpus() > 0 && cutoff > 1;) {
    const uint32_t job = order_[*it];
    const uint32_t size = r_.jobs[job].size;
    ++examined;
    // A free aligned block of 2s holds one of s: what does not fit now,
    // no larger size fits either.
    if (size >= cutoff || size > FreeIpus()) {
      ++it;
      continue;
    }
    ASSIGN_OR_RETURN(auto placed, TryPlace(job, masks_));
    if (!placed) {
      cutoff = size;
      ++it;
      continue;
    }
    if (t + r_.jobs[job].estimate > shadow) {
      const Block b{placed->front().ild, ilds_[job], placed->front().topology_id,
                    size / ilds_[job]};
      MarkBlock(b, true, &at_shadow);
      ASSIGN_OR_RETURN(auto head_fits, TryPlace(head, at_shadow));
      if (!head_fits) {
        MarkBlock(b, false, &at_shadow);
        ++it;
        continue;
      }
    }
    Start(job, *placed, t);
    it = queue_.erase(it);
  }
  return absl::OkStatus();
}

void Simulation::Integrate(double t0, double t1) {
  const double dt = t1 - t0;
  if (dt <= 0 || !head_blocked_) return;
  r_.blocked_s += dt;
  frag_weighted_ += dt * FreeIpus() / static_cast<double>(total_);
}

void Simulation::Init() {
  const size_t n = trace_.jobs.size();
  total_ = layout_.num_ipus();
  masks_.allowed.assign(layout_.num_ilds(), 0);
  masks_.used.assign(layout_.num_ilds(), 0);
  const uint64_t ild_bits =
      layout_.ipus_per_ild() >= 64 ? ~uint64_t{0} : ((uint64_t{1} << layout_.ipus_per_ild()) - 1);
  for (uint64_t& a : masks_.allowed) a = ild_bits;
  owner_.assign(static_cast<size_t>(layout_.num_ilds()) * fabric::kMaxIpusPerIld, -1);
  r_.occupancy_by_ild = layout_.num_ilds() >= 4;
  r_.occupancy_rows =
      r_.occupancy_by_ild ? layout_.num_ilds() : layout_.num_ilds() * layout_.machines_per_ild();
  r_.jobs.resize(n);
  ilds_.assign(n, 0);
  attempt_.assign(n, 0);
  running_.assign(n, false);
  est_end_.assign(n, 0);
  order_.resize(n);
  std::iota(order_.begin(), order_.end(), 0u);
  std::stable_sort(order_.begin(), order_.end(), [&](uint32_t a, uint32_t b) {
    return trace_.jobs[a].submit < trace_.jobs[b].submit;
  });
  rank_of_.resize(n);
  for (uint32_t k = 0; k < n; ++k) rank_of_[order_[k]] = k;
}

absl::StatusOr<bool> Simulation::PrepareJob(uint32_t j) {
  const TraceJob& job = trace_.jobs[j];
  JobOutcome& out = r_.jobs[j];
  out.size = PartitionSizeFor(job.ipus);
  if (out.size != job.ipus) ++r_.rounded;
  if (out.size > total_ || out.size == 0) {
    out.status = JobStatus::kTooBig;
    out.refusal = absl::StrCat(job.ipus, " IPUs: more than the pod's ", total_);
    return false;
  }
  absl::StatusOr<uint32_t> ilds = IldsFor(out.size);
  if (!ilds.ok()) {
    out.status = JobStatus::kTooBig;
    out.refusal = std::string(ilds.status().message());
    return false;
  }
  ilds_[j] = *ilds;
  if (!job.model.empty()) {
    if (!o_.model_run_time) {
      return absl::InvalidArgumentError(
          absl::StrCat("job ", job.id, " names model ", job.model, " but no model is available"));
    }
    absl::StatusOr<double> run = o_.model_run_time(job, out.size, *ilds);
    if (!run.ok()) {
      out.status = JobStatus::kModelRefused;
      out.refusal = std::string(run.status().message());
      return false;
    }
    out.run = *run;
  } else {
    out.run = job.run;
  }
  if (job.requested > 0) {
    out.estimate = job.requested;
    ++r_.estimated_by_requested;
  } else {
    out.estimate = out.run;
    ++r_.estimated_by_run;
  }
  if (o_.end_at_limit && job.requested > 0 && out.run > job.requested) {
    out.run = job.requested;
    out.status = JobStatus::kKilledAtLimit;
  }
  return true;
}

void Simulation::ScheduleFirstFailures() {
  if (o_.faults.machine_mtbf_hours > 0 && !trace_.jobs.empty()) {
    const double t0 = trace_.jobs[order_.front()].submit;
    for (uint32_t m = 0; m < layout_.cluster().agent_ids.size(); ++m) {
      faults_.push({t0 + Exponential(o_.faults.machine_mtbf_hours * 3600), fault_seq_++, m,
                    FaultKind::kFail});
    }
  }
}

void Simulation::RecordTimeline(double t) {
  const TimelinePoint point{t, busy_, down_, static_cast<uint32_t>(queue_.size())};
  if (r_.timeline.empty() || r_.timeline.back().busy_ipus != point.busy_ipus ||
      r_.timeline.back().down_ipus != point.down_ipus ||
      r_.timeline.back().queued != point.queued) {
    r_.timeline.push_back(point);
  }
}

absl::Status Simulation::Loop(const std::vector<bool>& eligible) {
  const size_t n = trace_.jobs.size();
  using Clock = std::chrono::steady_clock;
  Clock::time_point last_report = Clock::now();
  size_t next = 0;
  double last_t = n > 0 ? trace_.jobs[order_.front()].submit : 0;
  while (true) {
    while (next < n && !eligible[order_[next]]) ++next;
    while (!done_.empty() &&
           (!running_[done_.top().job] || attempt_[done_.top().job] != done_.top().attempt)) {
      done_.pop();
    }
    if (next >= n && done_.empty() && queue_.empty()) break;
    const double t_arrival = next < n ? trace_.jobs[order_[next]].submit : kInf;
    const double t_done = done_.empty() ? kInf : done_.top().t;
    const double t_fault = faults_.empty() ? kInf : faults_.top().t;
    const double t = std::min({t_arrival, t_done, t_fault});
    if (t == kInf) {
      return absl::InternalError("replay: jobs wait but nothing will ever free IPUs");
    }
    Integrate(last_t, t);
    last_t = t;
    while (!done_.empty() && done_.top().t <= t) {
      const Completion c = done_.top();
      done_.pop();
      if (!running_[c.job] || attempt_[c.job] != c.attempt) continue;
      Release(c.job, t);
      r_.jobs[c.job].end = t;
    }
    while (!faults_.empty() && faults_.top().t <= t) {
      const FaultEvent e = faults_.top();
      faults_.pop();
      HandleFault(e, t);
    }
    for (uint32_t job : retry_) RETURN_IF_ERROR(Arrive(job, t));
    retry_.clear();
    while (next < n && trace_.jobs[order_[next]].submit <= t) {
      if (eligible[order_[next]]) RETURN_IF_ERROR(Arrive(order_[next], t));
      ++next;
    }
    RETURN_IF_ERROR(Schedule(t));
    RecordTimeline(t);
    ++r_.events;
    if (o_.progress && (r_.events & 1023) == 0 &&
        Clock::now() - last_report > std::chrono::seconds(1)) {
      last_report = Clock::now();
      o_.progress({next, n, t - trace_.jobs[order_.front()].submit});
    }
  }
  return absl::OkStatus();
}

absl::StatusOr<ReplayResult> Simulation::Run() {
  if (o_.faults.machine_mtbf_hours < 0 || o_.faults.repair_hours < 0 ||
      !std::isfinite(o_.faults.machine_mtbf_hours) || !std::isfinite(o_.faults.repair_hours)) {
    return absl::InvalidArgumentError("faults: MTBF and repair hours must be >= 0");
  }
  if (o_.faults.machine_mtbf_hours > 0 && o_.faults.repair_hours <= 0) {
    return absl::InvalidArgumentError("repair-hours: must be > 0 when machines fail");
  }
  Init();
  const size_t n = trace_.jobs.size();
  // Sizes, ILDs and run times are known before anything runs: the ILDs a
  // partition spans are the server's default for its size.
  std::vector<bool> eligible(n, false);
  for (uint32_t j = 0; j < n; ++j) {
    ASSIGN_OR_RETURN(const bool runs, PrepareJob(j));
    eligible[j] = runs;
  }
  ScheduleFirstFailures();
  RETURN_IF_ERROR(Loop(eligible));
  for (uint32_t j = 0; j < n; ++j) {
    JobOutcome& out = r_.jobs[j];
    if (Ran(out.status)) out.run = out.end - out.start;
    if (out.status == JobStatus::kKilledAtLimit) {
      ++r_.killed_at_limit;
      r_.killed_at_limit_ipu_s += out.run * out.size;
    }
  }
  r_.fragmentation = r_.blocked_s > 0 ? frag_weighted_ / r_.blocked_s : 0;
  return std::move(r_);
}

}  // namespace

absl::StatusOr<Policy> ParsePolicy(absl::string_view name) {
  if (name == "fifo") return Policy::kFifo;
  if (name == "backfill") return Policy::kBackfill;
  if (name == "none") return Policy::kNone;
  return absl::InvalidArgumentError(
      absl::StrCat("policy: must be fifo, backfill or none, got \"", name, "\""));
}

const char* PolicyName(Policy policy) {
  switch (policy) {
    case Policy::kFifo:
      return "fifo";
    case Policy::kBackfill:
      return "backfill";
    case Policy::kNone:
      return "none";
  }
  return "?";
}

const char* JobStatusName(JobStatus status) {
  switch (status) {
    case JobStatus::kDone:
      return "done";
    case JobStatus::kRefused:
      return "refused";
    case JobStatus::kTooBig:
      return "too_big";
    case JobStatus::kModelRefused:
      return "model_refused";
    case JobStatus::kKilledAtLimit:
      return "killed_at_limit";
  }
  return "?";
}

uint32_t PartitionSizeFor(uint32_t ipus) {
  if (ipus > (uint32_t{1} << 31)) return 0;
  uint32_t size = 1;
  while (size < ipus) size *= 2;
  return size;
}

absl::StatusOr<ReplayResult> Replay(const fabric::ClusterLayout& layout, const Trace& trace,
                                    const ReplayOptions& options) {
  if (options.backfill_depth == 0) {
    return absl::InvalidArgumentError("backfill-depth: must be at least 1");
  }
  Simulation simulation(layout, trace, options);
  return simulation.Run();
}

}  // namespace vipu::plan
