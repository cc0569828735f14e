// RunMember: one member of a highly available control plane: standby
// listeners that forward, the leader election, and the leader's VipuServer.
#include "server/ha/member.h"

#include <fcntl.h>
#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/time/clock.h"
#include "base/mutex.h"
#include "base/repeated_warning.h"
#include "coordination/leader_election.h"
#include "server/api/endpoints.h"
#include "server/daemon/handover.h"
#include "server/daemon/run_loop.h"
#include "server/daemon/security_setup.h"
#include "server/daemon/systemd_notify.h"
#include "server/daemon/vipu_server.h"
#include "server/ha/forwarder.h"
#include "server/ha/member_addresses.h"
#include "server/ha/member_role.h"
#include "server/ha/role_interceptor.h"
#include "server/ha/standby_http.h"
#include "server/metrics/metrics_http.h"
#include "spdlog/spdlog.h"
#include "storage/etcd/etcd_client.h"
#include "storage/etcd/etcd_layout.h"
#include "storage/etcd/etcd_store.h"
#include "tls/credentials.h"
#include "tls/live_certificates.h"

namespace vipu::server {
namespace {

namespace etcd = storage::etcd;

// How long one campaign waits before the member looks at its stop flag.
constexpr absl::Duration kCampaignSlice = absl::Seconds(2);
// How often a standby asks etcd who leads.
constexpr absl::Duration kLeaderPoll = absl::Milliseconds(50);
// How long a member that leads lets its standby listeners finish their
// calls once its leader listeners listen beside them. They close in the
// background, so this delays nothing; a call still running when it ends is
// cancelled, and the caller cannot tell whether it was acted on.
constexpr std::chrono::milliseconds kStandbyDrain(500);

int Fail(const std::string& message, int code) {
  spdlog::critical("{}", message);
  std::fprintf(stderr, "vipu-server: %s\n", message.c_str());
  return code;
}

// The host of `address` ("h:p" or "[v6]:p").
std::string HostOf(const std::string& address) { return address.substr(0, address.rfind(':')); }
std::string PortOf(const std::string& address) { return address.substr(address.rfind(':') + 1); }

absl::StatusOr<MemberAddresses> SelfAddresses(const ServerOptions& o) {
  MemberAddresses self;
  absl::StatusOr<std::string> user = AdvertisedAddress(o.user_api_listen, o.advertise, "--listen");
  if (!user.ok()) return user.status();
  self.user = *user;
  // A split listener is reached on the advertised host at its own port.
  auto split = [&](const std::string& listen) {
    return listen.empty() || listen == o.user_api_listen
               ? self.user
               : absl::StrCat(HostOf(self.user), ":", PortOf(listen));
  };
  self.admin = split(o.admin_api_listen);
  self.agent = split(o.agent_api_listen);
  return self;
}

// Marks every descriptor above stderr close-on-exec: a listener a library
// opened without the flag (the HTTP console's) would otherwise hold its
// port in the new image, which then could never lead.
void CloseOnExec() {
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator("/proc/self/fd", ec)) {
    int fd = -1;
    if (!absl::SimpleAtoi(entry.path().filename().string(), &fd) || fd <= 2) continue;
    const int flags = fcntl(fd, F_GETFD);
    if (flags >= 0) fcntl(fd, F_SETFD, flags | FD_CLOEXEC);
  }
}

// Checks that `prefix` holds this version's format, or nothing yet. OK when
// it does; FAILED_PRECONDITION (and the like) when it holds another, which no
// member of this version may touch; UNAVAILABLE or DEADLINE_EXCEEDED while
// etcd does not answer.
absl::Status CheckFormat(etcd::EtcdClient& client, const etcd::EtcdLayout& layout) {
  absl::StatusOr<std::optional<storage::etcd::KeyValue>> format = client.Get(layout.FormatKey());
  if (!format.ok()) return format.status();
  if (!format->has_value()) return absl::OkStatus();
  return layout.CheckFormat((*format)->value);
}

bool EtcdAway(const absl::Status& status) {
  return absl::IsUnavailable(status) || absl::IsDeadlineExceeded(status);
}

// Tells the main thread (waiting in sigwait) that this member must stop
// leading: its state may no longer be etcd's.
void StepDown(const absl::Status& why) {
  spdlog::error("stepping down: {}", std::string(why.message()));
  kill(getpid(), SIGUSR1);
}

// One member of a highly available control plane. It owns its etcd client,
// its role, the election and, by turns, the standby's listeners (forwarding
// every call to the leader) or, once elected, the leader's VipuServer. Two
// threads of its own: the watcher asks etcd who leads while it is a
// standby, and the campaigner runs the election and, on winning, starts the
// leader. Losing the leadership raises SIGUSR1, and the run loop starts the
// process afresh. ReloadCertificates and Healthy are called from the run
// loop's thread and are thread-safe; Stop is called once, by the owner, after
// the run loop ended.
class Member : public RunningDaemon {
 public:
  // `certificates`: the server's own with --secure, else null.
  // `format_checked`: whether etcd has already shown that the prefix holds
  // this version's format (or nothing).
  Member(const ServerOptions& options, std::unique_ptr<etcd::EtcdClient> client,
         MemberAddresses self, std::unique_ptr<tls::LiveCertificates> certificates,
         bool format_checked)
      : options_(options),
        format_checked_(format_checked),
        certificates_(std::move(certificates)),
        client_(std::move(client)),
        layout_(options.etcd_prefix),
        role_(std::move(self)),
        election_(client_.get(), {layout_.ElectionName(), role_.self().Encode(),
                                  absl::Milliseconds(options.etcd_lease_ms)}) {
    election_.OnLost(StepDown);
  }

  absl::Status StartStandby() {
    // As the leader's listeners: health checking and reflection.
    EndpointSpec spec = ListenersOf(options_);
    spec.sharing = EndpointSpec::Sharing::kFirst;
    std::shared_ptr<grpc::ChannelCredentials> to_leader;
    if (certificates_) {
      // The leader asks the same of a standby as of any caller: a
      // certificate of the pod; the server's own says it is a member.
      spec.api_credentials = tls::MutualTlsServerCredentials(*certificates_);
      to_leader = tls::MutualTlsChannelCredentials(*certificates_);
    }
    spec.generic_service = [this, to_leader] {
      return std::make_shared<Forwarder>(&role_, to_leader);
    };
    spec.configure = [this](grpc::ServerBuilder& builder) {
      std::vector<std::unique_ptr<grpc::experimental::ServerInterceptorFactoryInterface>> c;
      c.push_back(std::make_unique<RoleInterceptorFactory>(&role_));
      builder.experimental().SetInterceptorCreators(std::move(c));
    };
    absl::StatusOr<std::unique_ptr<Endpoints>> endpoints = Endpoints::Start(spec);
    if (!endpoints.ok()) return endpoints.status();
    std::unique_ptr<StandbyHttp> http;
    if (const std::optional<HttpListenerOptions> listener = HttpListenerOf(options_)) {
      absl::StatusOr<std::unique_ptr<StandbyHttp>> started = StandbyHttp::Start(*listener, &role_);
      if (!started.ok()) return started.status();
      http = std::move(*started);
    }
    MutexLock lock(&mu_);
    standby_ = std::move(*endpoints);
    standby_http_ = std::move(http);
    standby_->SetServing(true);
    return absl::OkStatus();
  }

  void StartThreads() {
    watcher_ = std::thread([this] { WatchLeader(); });
    campaigner_ = std::thread([this] { Campaign(); });
  }

  // A clean stop: the leader hands over at once instead of after its lease.
  // Its listeners stop taking calls and those in flight finish; its
  // background work's writes are refused from then on, and those admitted
  // commit (so nothing it acknowledges commits after it lets go); then one
  // fenced transaction gives up the leadership and leaves the successor the
  // agents it knew were Up (server/daemon/handover.h), so that the
  // successor serves as soon as it has loaded the state; the rest of the
  // server stops after that, while the successor already serves.
  void Stop() {
    stop_.store(true);
    if (campaigner_.joinable()) campaigner_.join();
    if (standby_closer_.joinable()) standby_closer_.join();
    if (watcher_.joinable()) watcher_.join();
    std::unique_ptr<VipuServer> server;
    std::unique_ptr<Endpoints> standby;
    std::unique_ptr<StandbyHttp> standby_http;
    {
      MutexLock lock(&mu_);
      server = std::move(server_);
      standby = std::move(standby_);
      standby_http = std::move(standby_http_);
    }
    absl::Status resigned;
    if (server) {
      const absl::Time start = absl::Now();
      server->StopServing();
      server->StopAnswering();
      Handover handover = server->MakeHandover();
      handover.successor = successor();
      resigned =
          election_.ResignWith({etcd::TxnOp::Put(layout_.HandoverKey(), EncodeHandover(handover))});
      if (resigned.ok()) {
        spdlog::info("handed the leadership over with {} agents, {} ms after the stop began",
                     handover.agents.size(), absl::ToInt64Milliseconds(absl::Now() - start));
      }
    }
    server.reset();
    standby.reset();
    standby_http.reset();
    if (resigned.ok()) resigned = election_.Resign();
    if (!resigned.ok()) {
      spdlog::warn("could not hand over the leadership ({}); it lapses with the lease",
                   std::string(resigned.message()));
    }
  }

  // vipu-admin move leadership (LeadershipMover): names the successor, then
  // raises SIGUSR1; the run loop then stops this member as SIGTERM would,
  // handing over to that successor, and starts it afresh as a standby.
  absl::StatusOr<LeadershipMove> MoveLeadership(const std::string& to) {
    const MemberAddresses& self = role_.self();
    if (to == self.user || to == self.admin) {
      return absl::InvalidArgumentError(absl::StrCat("to: member ", to, " already leads"));
    }
    absl::StatusOr<std::vector<MemberAddresses>> standbys = Standbys();
    if (!standbys.ok()) {
      return absl::UnavailableError(
          absl::StrCat("cannot learn from etcd which members stand for election: ",
                       standbys.status().message()));
    }
    if (standbys->empty()) {
      return absl::FailedPreconditionError(
          "no other member stands for election: start one before moving the leadership to it");
    }
    const MemberAddresses* successor = to.empty() ? &standbys->front() : nullptr;
    std::vector<std::string> names;
    for (const MemberAddresses& m : *standbys) {
      if (m.user == to || m.admin == to) successor = &m;
      names.push_back(m.user);
    }
    if (successor == nullptr) {
      return absl::NotFoundError(
          absl::StrCat("to: no member at ", to,
                       " stands for election; the standbys that do: ", absl::StrJoin(names, ", ")));
    }
    {
      MutexLock lock(&mu_);
      if (!successor_.empty()) {
        return absl::FailedPreconditionError(
            absl::StrCat("the leadership is already being moved to ", successor_));
      }
      successor_ = successor->user;
    }
    // Answered before the handover starts: once it has, this member
    // answers nothing.
    kill(getpid(), SIGUSR1);
    return LeadershipMove{self.user, successor->user};
  }

  // The member the leadership is being moved to, or empty.
  std::string successor() const {
    MutexLock lock(&mu_);
    return successor_;
  }

  // SIGHUP: the standby's listeners and channels and, on the leader, its
  // VipuServer take the --tls-dir files again when they pass their checks.
  void ReloadCertificates() override {
    if (!certificates_) {
      spdlog::info("SIGHUP: no certificates to reload without --secure");
      return;
    }
    if (!ReloadServerCertificates(*certificates_).ok()) return;
    MutexLock lock(&mu_);
    if (server_) server_->ReloadCertificates().IgnoreError();
  }

  SystemdNotifier& notifier() { return notifier_; }
  // The systemd watchdog's question: the leader's store answers a read; a
  // standby answers as long as it runs.
  bool Healthy() override {
    MutexLock lock(&mu_);
    return server_ == nullptr || server_->DatabaseAnswers();
  }
  const MemberRole& role() const { return role_; }

 private:
  // Asks etcd who leads, every kLeaderPoll, while this member is a standby.
  // While etcd does not answer, the member says so in its refusals, and once
  // a lease has passed without an answer it names no leader: the one it
  // knew may be gone by then.
  void WatchLeader() {
    const absl::Duration lease = absl::Milliseconds(options_.etcd_lease_ms);
    absl::Time answered = absl::Now();
    RepeatedWarning warning;
    while (!stop_.load() && !role_.leader()) {
      absl::StatusOr<std::optional<std::string>> leader = election_.CurrentLeader();
      if (leader.ok()) {
        std::optional<MemberAddresses> addresses;
        if (leader->has_value()) {
          absl::StatusOr<MemberAddresses> parsed = MemberAddresses::Parse(**leader);
          if (parsed.ok()) addresses = *parsed;
        }
        role_.SetLeader(addresses);
        role_.SetEtcdProblem("");
        answered = absl::Now();
        if (warning.Clear()) spdlog::info("etcd answers again");
      } else {
        role_.SetEtcdProblem(std::string(leader.status().message()));
        warning.Say(absl::StrCat("cannot learn from etcd who leads: ", leader.status().message()));
        if (absl::Now() - answered > lease) role_.SetLeader(std::nullopt);
      }
      absl::SleepFor(kLeaderPoll);
    }
  }

  // The other members standing for election, in the order etcd would make
  // them leader.
  absl::StatusOr<std::vector<MemberAddresses>> Standbys() {
    absl::StatusOr<std::vector<std::string>> values = election_.Candidates();
    if (!values.ok()) return values.status();
    std::vector<MemberAddresses> standbys;
    for (const std::string& value : *values) {
      absl::StatusOr<MemberAddresses> m = MemberAddresses::Parse(value);
      if (m.ok() && !(*m == role_.self())) standbys.push_back(*std::move(m));
    }
    return standbys;
  }

  // When a leader moved the leadership to another member that still stands
  // (a fresh handover names it), that member; this one, elected first for
  // being older in the queue, leaves it the leadership.
  std::optional<std::string> MovedToAnother() {
    absl::StatusOr<std::optional<etcd::KeyValue>> kv = client_->Get(layout_.HandoverKey());
    if (!kv.ok() || !kv->has_value()) return std::nullopt;
    absl::StatusOr<Handover> handover = DecodeHandover((*kv)->value);
    if (!handover.ok() || handover->successor.empty() || handover->successor == role_.self().user ||
        absl::Now() - handover->made > 2 * absl::Milliseconds(options_.etcd_lease_ms)) {
      return std::nullopt;
    }
    absl::StatusOr<std::vector<MemberAddresses>> standbys = Standbys();
    if (!standbys.ok()) return std::nullopt;
    for (const MemberAddresses& m : *standbys) {
      if (m.user == handover->successor) return m.user;
    }
    return std::nullopt;
  }

  void Campaign() {
    if (!AwaitFormatChecked()) return;
    RepeatedWarning warning;
    while (!stop_.load()) {
      absl::StatusOr<etcd::LeaderKey> key = election_.WinLeadership(absl::Now() + kCampaignSlice);
      if (key.ok()) {
        if (std::optional<std::string> other = MovedToAnother()) {
          // Campaigning again puts this member behind the one named.
          spdlog::info("the leadership was moved to {}: standing aside for it", *other);
          if (absl::Status s = election_.Resign(); !s.ok()) {
            spdlog::warn("could not stand aside ({}); the lease lapses", std::string(s.message()));
          }
          continue;
        }
        Lead();
        return;
      }
      if (!absl::IsDeadlineExceeded(key.status())) {
        warning.Say(absl::StrCat("campaign for leadership: ", key.status().message()));
        absl::SleepFor(absl::Milliseconds(200));
      }
    }
  }

  // A member started while etcd did not answer has not seen the prefix's
  // format yet: it campaigns only once etcd has shown it. Returns false when
  // the member stops first. A prefix of another format ends the process
  // (status 1), as at start.
  bool AwaitFormatChecked() {
    if (format_checked_) return true;
    RepeatedWarning warning;
    while (!stop_.load()) {
      absl::Status s = CheckFormat(*client_, layout_);
      if (s.ok()) return true;
      if (!EtcdAway(s)) {
        Fail(std::string(s.message()), 1);
        std::_Exit(1);
      }
      warning.Say(absl::StrCat("etcd: ", s.message(), "; waiting for it to answer"));
      absl::SleepFor(absl::Seconds(1));
    }
    return false;
  }

  // Leadership this member cannot use goes to the others at once instead of
  // when its lease lapses, then the member starts afresh.
  void GiveUp(const absl::Status& why) {
    if (absl::Status s = election_.Resign(); !s.ok()) {
      spdlog::warn("could not resign the leadership ({})", std::string(s.message()));
    }
    StepDown(why);
  }

  void Lead() {
    spdlog::info("elected leader; loading the state from etcd under {}", options_.etcd_prefix);
    const absl::Time elected = absl::Now();
    etcd::EtcdStoreOptions store_options;
    store_options.prefix = options_.etcd_prefix;
    store_options.fence = election_.Fence();
    store_options.on_lost = StepDown;
    store_options.held_until = [this] { return election_.HeldUntil(); };
    // An answer lost to an etcd election is found out within the lease.
    store_options.commit_timeout = absl::Milliseconds(options_.etcd_lease_ms) / 3;
    store_options.lost_answer_grace = absl::Milliseconds(options_.etcd_lease_ms);
    absl::StatusOr<std::unique_ptr<etcd::EtcdStore>> store =
        etcd::EtcdStore::Open(client_.get(), store_options);
    if (!store.ok()) {
      if (absl::IsFailedPrecondition(store.status()) || absl::IsDataLoss(store.status()) ||
          absl::IsInvalidArgument(store.status())) {
        // Data this server must not touch: no member of this version can lead.
        Fail(std::string(store.status().message()), 1);
        std::_Exit(1);
      }
      GiveUp(store.status());
      return;
    }
    spdlog::info("state loaded: {} keys", (*store)->loaded_keys());
    const std::optional<Handover> handover = TakeHandover();
    role_.BecomeLeader();
    // The leader's own listeners take the addresses over: they listen
    // beside the standby's first, so that a client never finds nothing
    // listening there.
    std::unique_ptr<Endpoints> standby;
    std::unique_ptr<StandbyHttp> standby_http;
    {
      MutexLock lock(&mu_);
      standby = std::move(standby_);
      standby_http = std::move(standby_http_);
    }
    if (standby) standby->SetServing(false);
    // The console's HTTP listener does not share its address.
    standby_http.reset();
    VipuServer::LeaderStart start;
    start.notifier = &notifier_;
    start.handover = handover ? &*handover : nullptr;
    start.move_leadership = [this](const std::string& to) { return MoveLeadership(to); };
    start.listening = [this, &standby] {
      if (!standby) return;
      // What it still serves was forwarded to the leader that has just gone
      // and fails, or is refused (this member leads); clients then connect
      // again, to the leader's listeners.
      standby_closer_ = std::thread([closing = std::move(standby)]() mutable {
        closing->Shutdown(std::chrono::system_clock::now() + kStandbyDrain);
        closing.reset();
      });
    };
    absl::StatusOr<std::unique_ptr<VipuServer>> server =
        VipuServer::StartLeader(options_, std::move(*store), &role_, std::move(start));
    if (!server.ok()) {
      GiveUp(server.status());
      return;
    }
    spdlog::info("leading: serving {} ms after the election",
                 absl::ToInt64Milliseconds(absl::Now() - elected));
    notifier_.Status(absl::StrCat("leader, serving on ", (*server)->address()));
    MutexLock lock(&mu_);
    server_ = std::move(*server);
  }

  // The record a leader that stopped on purpose left, deleted once read
  // (fenced, so only while this member leads). One older than two leases
  // is ignored: a leader elected in between may have left it unread, and
  // the agents it names may be gone since.
  std::optional<Handover> TakeHandover() {
    absl::StatusOr<std::optional<etcd::KeyValue>> kv = client_->Get(layout_.HandoverKey());
    if (!kv.ok() || !kv->has_value()) return std::nullopt;
    absl::StatusOr<etcd::TxnResult> deleted =
        client_->Txn(election_.Fence(), {etcd::TxnOp::Delete(layout_.HandoverKey())});
    if (!deleted.ok() || !deleted->succeeded) return std::nullopt;
    absl::StatusOr<Handover> handover = DecodeHandover((*kv)->value);
    if (!handover.ok()) {
      spdlog::warn("ignoring the previous leader's handover: {}",
                   std::string(handover.status().message()));
      return std::nullopt;
    }
    if (absl::Now() - handover->made > 2 * absl::Milliseconds(options_.etcd_lease_ms)) {
      spdlog::info("ignoring a handover made {} ms ago",
                   absl::ToInt64Milliseconds(absl::Now() - handover->made));
      return std::nullopt;
    }
    return *std::move(handover);
  }

  const ServerOptions options_;
  const bool format_checked_;
  const std::unique_ptr<tls::LiveCertificates> certificates_;
  std::unique_ptr<etcd::EtcdClient> client_;
  const etcd::EtcdLayout layout_;
  MemberRole role_;
  coordination::LeaderElection election_;
  SystemdNotifier notifier_;
  std::atomic<bool> stop_{false};
  std::thread watcher_, campaigner_;
  std::thread standby_closer_;  // started by the campaigner once it leads
  mutable Mutex mu_;
  std::unique_ptr<Endpoints> standby_ ABSL_GUARDED_BY(mu_);
  std::unique_ptr<StandbyHttp> standby_http_ ABSL_GUARDED_BY(mu_);
  std::unique_ptr<VipuServer> server_ ABSL_GUARDED_BY(mu_);
  std::string successor_ ABSL_GUARDED_BY(mu_);  // see MoveLeadership
};

}  // namespace

int RunMember(const ServerOptions& options, char** argv) {
  absl::StatusOr<std::vector<etcd::EtcdEndpoint>> endpoints =
      etcd::ParseEtcdEndpoints(options.etcd_endpoints);
  if (!endpoints.ok()) {
    return Fail(absl::StrCat("--etcd-endpoints: ", endpoints.status().message()), 2);
  }
  if (absl::Status s = etcd::EtcdLayout::ValidatePrefix(options.etcd_prefix); !s.ok()) {
    return Fail(std::string(s.message()), 2);
  }
  absl::StatusOr<MemberAddresses> self = SelfAddresses(options);
  if (!self.ok()) return Fail(std::string(self.status().message()), 2);
  if (const std::optional<HttpListenerOptions> listener = HttpListenerOf(options)) {
    if (auto parsed = ParseListenAddress(listener->address, listener->flag); !parsed.ok()) {
      return Fail(std::string(parsed.status().message()), 2);
    }
  }
  std::unique_ptr<tls::LiveCertificates> certificates;
  if (options.secure) {
    absl::StatusOr<std::unique_ptr<tls::LiveCertificates>> loaded = LoadServerCertificates(options);
    if (!loaded.ok()) return Fail(std::string(loaded.status().message()), 1);
    certificates = std::move(*loaded);
  }

  etcd::EtcdClientOptions client_options;
  client_options.endpoints = *endpoints;
  client_options.ca_file = options.etcd_ca;
  client_options.cert_file = options.etcd_cert;
  client_options.key_file = options.etcd_key;
  // Without a probe: a member whose etcd is away starts all the same, says
  // so to its callers and campaigns once etcd answers.
  absl::StatusOr<std::unique_ptr<etcd::EtcdClient>> client =
      etcd::EtcdClient::Create(client_options);
  if (!client.ok()) return Fail(absl::StrCat("etcd: ", client.status().message()), 2);
  // A prefix of another format is refused before this member serves
  // anything when etcd answers now; otherwise before it campaigns.
  const etcd::EtcdLayout layout(options.etcd_prefix);
  const absl::Status format = CheckFormat(**client, layout);
  if (!format.ok() && !EtcdAway(format)) return Fail(std::string(format.message()), 1);
  if (!format.ok()) {
    spdlog::warn("etcd: {}; serving as a standby that knows no leader until it answers",
                 std::string(format.message()));
  }

  Member member(options, std::move(*client), *self, std::move(certificates), format.ok());
  if (absl::Status s = member.StartStandby(); !s.ok()) return Fail(std::string(s.message()), 1);
  member.StartThreads();
  Announcement announcement;
  announcement.ready_file = options.ready_file;
  announcement.address = self->user;
  announcement.ready_line = absl::StrCat("vipu-server ", VIPU_VERSION, " member ", self->user,
                                         " ready (standby until elected)");
  announcement.status = absl::StrCat("member ", self->user, ": serving as standby");
  if (RunUntilSignalled(member, member.notifier(), announcement, /*restart_on_sigusr1=*/true) ==
      RunLoopEnd::kRestart) {
    if (!member.successor().empty()) {
      // Moved on purpose: the leadership is handed over as on SIGTERM.
      member.Stop();
    }
    // Nothing of the deposed leader may act again: start afresh as a standby.
    spdlog::warn("restarting as a standby");
    // Flushed, not shut down: the deposed leader's threads still run until
    // execv and may log, and a shut-down spdlog has no logger for them.
    spdlog::apply_all([](const std::shared_ptr<spdlog::logger>& logger) { logger->flush(); });
    std::fflush(nullptr);
    CloseOnExec();
    execv("/proc/self/exe", argv);
    std::fprintf(stderr, "vipu-server: cannot restart itself: %s\n", strerror(errno));
    std::_Exit(1);
  }
  member.Stop();
  spdlog::info("stopped");
  return 0;
}

}  // namespace vipu::server
