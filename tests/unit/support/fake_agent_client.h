// FakeAgentClient: an AgentClient for unit tests, scriptable per agent and
// operation to succeed, fail with a given status, or hang until the test
// completes the call (in whatever order it chooses). It records every call.
#ifndef VIPU_TESTS_UNIT_SUPPORT_FAKE_AGENT_CLIENT_H_
#define VIPU_TESTS_UNIT_SUPPORT_FAKE_AGENT_CLIENT_H_

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/time/time.h"
#include "server/fleet/agent_client.h"

namespace vipu::server {

// Unscripted calls succeed. Succeeding and failing calls complete on the
// caller's thread before the call returns; held calls complete on the
// thread of the test that completes them (or in the destructor, CANCELLED).
// Thread-safe.
class FakeAgentClient : public AgentClient {
 public:
  enum class Op {
    kConfigure,
    kReset,
    kRelease,
    kSetTopology,
    kGetInfo,
    kInjectFault,
    kTestLinks,
    kRunWorkload,
    kCheckPartition,
  };

  // One call as the fake received it; the fields the operation has are set.
  struct Call {
    Op op = Op::kConfigure;
    AgentAddress agent;
    AgentPartitionRef partition;
    AgentPartitionConfig config;                   // kConfigure
    AgentTopology topology;                        // kSetTopology
    fabric::FaultRequest fault;                    // kInjectFault
    AgentLinkTest test = AgentLinkTest::kCabling;  // kTestLinks
  };

  explicit FakeAgentClient(absl::Duration deadline = absl::Seconds(1)) : deadline_(deadline) {}
  // Completes the calls still held with CANCELLED.
  ~FakeAgentClient() override { CompleteAllHeld(absl::CancelledError("test ended")); }

  // Scripting, for `op` on `agent_id` ("" for every agent without a script
  // of its own); applies to calls made afterwards.
  void Succeed(const std::string& agent_id, Op op) { Script(agent_id, op, {Mode::kSucceed, {}}); }
  void Fail(const std::string& agent_id, Op op, absl::Status status) {
    Script(agent_id, op, {Mode::kFail, std::move(status)});
  }
  void Hang(const std::string& agent_id, Op op) { Script(agent_id, op, {Mode::kHang, {}}); }

  // What successful value-returning calls answer (default: empty results,
  // "agent <id>: fault injected").
  void SetInfo(const std::string& agent_id, AgentInfo info) {
    std::lock_guard<std::mutex> lock(mu_);
    info_[agent_id] = std::move(info);
  }
  void SetLinkTest(const std::string& agent_id, AgentLinkTestResult result) {
    std::lock_guard<std::mutex> lock(mu_);
    link_tests_[agent_id] = std::move(result);
  }

  // Calls held now.
  size_t held() const {
    std::lock_guard<std::mutex> lock(mu_);
    return held_.size();
  }
  // Waits until at least `n` calls are held; false after `timeout`.
  bool AwaitHeld(size_t n, absl::Duration timeout = absl::Seconds(10)) {
    std::unique_lock<std::mutex> lock(mu_);
    return cv_.wait_for(lock, absl::ToChronoMilliseconds(timeout),
                        [&] { return held_.size() >= n; });
  }
  // Completes the oldest held call of `op` on `agent_id` with `status`
  // (a value-returning call answers its scripted value when OK). False
  // when no such call is held.
  bool CompleteHeld(const std::string& agent_id, Op op, absl::Status status = absl::OkStatus()) {
    std::function<void(absl::Status)> complete;
    {
      std::lock_guard<std::mutex> lock(mu_);
      for (auto it = held_.begin(); it != held_.end(); ++it) {
        if (it->agent_id != agent_id || it->op != op) continue;
        complete = std::move(it->complete);
        held_.erase(it);
        break;
      }
    }
    if (!complete) return false;
    complete(std::move(status));
    return true;
  }
  // Completes every held call, oldest first, with `status`.
  void CompleteAllHeld(absl::Status status = absl::OkStatus()) {
    std::deque<HeldCall> held;
    {
      std::lock_guard<std::mutex> lock(mu_);
      held.swap(held_);
    }
    for (HeldCall& h : held) h.complete(status);
  }

  // Every call received so far, in order.
  std::vector<Call> calls() const {
    std::lock_guard<std::mutex> lock(mu_);
    return calls_;
  }
  // The calls of `op`, in order.
  std::vector<Call> calls(Op op) const {
    std::vector<Call> out;
    for (Call& c : calls()) {
      if (c.op == op) out.push_back(std::move(c));
    }
    return out;
  }
  // The agents the calls of `op` for `generation` of a partition went to,
  // in order.
  std::vector<std::string> agents(Op op, uint64_t generation) const {
    std::vector<std::string> out;
    for (const Call& c : calls(op)) {
      if (c.partition.generation == generation) out.push_back(c.agent.agent_id);
    }
    return out;
  }

  absl::Duration deadline() const override { return deadline_; }

  void Configure(const AgentAddress& agent, const AgentPartitionConfig& config,
                 Done done) override {
    Call c = Make(Op::kConfigure, agent);
    c.partition = config.partition;
    c.config = config;
    Dispatch(std::move(c), std::move(done));
  }
  void Reset(const AgentAddress& agent, const AgentPartitionRef& partition, Done done) override {
    Call c = Make(Op::kReset, agent);
    c.partition = partition;
    Dispatch(std::move(c), std::move(done));
  }
  void Release(const AgentAddress& agent, const AgentPartitionRef& partition, Done done) override {
    Call c = Make(Op::kRelease, agent);
    c.partition = partition;
    Dispatch(std::move(c), std::move(done));
  }
  void SetTopology(const AgentAddress& agent, const AgentTopology& topology, absl::Duration,
                   Done done) override {
    Call c = Make(Op::kSetTopology, agent);
    c.topology = topology;
    Dispatch(std::move(c), std::move(done));
  }
  void GetInfo(const AgentAddress& agent, DoneWith<AgentInfo> done) override {
    AgentInfo info;
    {
      std::lock_guard<std::mutex> lock(mu_);
      info = info_[agent.agent_id];
    }
    Dispatch(Make(Op::kGetInfo, agent), WithValue(std::move(done), std::move(info)));
  }
  void InjectFault(const AgentAddress& agent, const fabric::FaultRequest& fault,
                   DoneWith<std::string> done) override {
    Call c = Make(Op::kInjectFault, agent);
    c.fault = fault;
    Dispatch(std::move(c),
             WithValue(std::move(done), "agent " + agent.agent_id + ": fault injected"));
  }
  void TestLinks(const AgentAddress& agent, AgentLinkTest test,
                 DoneWith<AgentLinkTestResult> done) override {
    AgentLinkTestResult result;
    {
      std::lock_guard<std::mutex> lock(mu_);
      result = link_tests_[agent.agent_id];
    }
    Call c = Make(Op::kTestLinks, agent);
    c.test = test;
    Dispatch(std::move(c), WithValue(std::move(done), std::move(result)));
  }
  void RunWorkload(const AgentAddress& agent, const AgentWorkloadRun& run,
                   DoneWith<AgentWorkloadResult> done) override {
    Call c = Make(Op::kRunWorkload, agent);
    c.partition = run.partition;
    Dispatch(std::move(c), WithValue(std::move(done), AgentWorkloadResult{}));
  }
  void CheckPartition(const AgentAddress& agent, const AgentPartitionRef& partition,
                      Done done) override {
    Call c = Make(Op::kCheckPartition, agent);
    c.partition = partition;
    Dispatch(std::move(c), std::move(done));
  }

 private:
  enum class Mode { kSucceed, kFail, kHang };
  struct Behaviour {
    Mode mode = Mode::kSucceed;
    absl::Status status;  // kFail
  };
  struct HeldCall {
    std::string agent_id;
    Op op;
    std::function<void(absl::Status)> complete;
  };

  static Call Make(Op op, const AgentAddress& agent) {
    Call c;
    c.op = op;
    c.agent = agent;
    return c;
  }

  // A completion taking a status for a call that answers `value` when OK.
  template <typename T>
  static std::function<void(absl::Status)> WithValue(DoneWith<T> done, T value) {
    return [done = std::move(done), value = std::move(value)](absl::Status s) {
      if (s.ok()) {
        done(value);
      } else {
        done(std::move(s));
      }
    };
  }

  void Script(const std::string& agent_id, Op op, Behaviour b) {
    std::lock_guard<std::mutex> lock(mu_);
    script_[{agent_id, op}] = std::move(b);
  }

  void Dispatch(Call call, std::function<void(absl::Status)> complete) {
    Behaviour b;
    {
      std::lock_guard<std::mutex> lock(mu_);
      auto it = script_.find({call.agent.agent_id, call.op});
      if (it == script_.end()) it = script_.find({"", call.op});
      if (it != script_.end()) b = it->second;
      calls_.push_back(call);
      if (b.mode == Mode::kHang) {
        held_.push_back({call.agent.agent_id, call.op, std::move(complete)});
        cv_.notify_all();
        return;
      }
    }
    complete(b.mode == Mode::kFail ? b.status : absl::OkStatus());
  }

  const absl::Duration deadline_;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::map<std::pair<std::string, Op>, Behaviour> script_;
  std::map<std::string, AgentInfo> info_;
  std::map<std::string, AgentLinkTestResult> link_tests_;
  std::vector<Call> calls_;
  std::deque<HeldCall> held_;
};

}  // namespace vipu::server

#endif  // VIPU_TESTS_UNIT_SUPPORT_FAKE_AGENT_CLIENT_H_
