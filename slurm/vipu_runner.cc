// Runs the `vipu` command line for the Slurm plugin: partition create,
// get, list and remove, with the plugin's connection settings.
#include "slurm/vipu_runner.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "base/status_macros.h"

namespace vipu::slurm {
namespace {

// The CLI's own deadlines are api-timeout per call and for the wait for
// ACTIVE; this bound only guards against a child that never ends.
std::chrono::seconds ChildDeadline(uint32_t api_timeout_seconds) {
  return std::chrono::seconds(2 * static_cast<int64_t>(api_timeout_seconds) + 30);
}

std::string LastLine(const std::string& text) {
  std::vector<std::string> lines =
      absl::StrSplit(absl::StripTrailingAsciiWhitespace(text), '\n', absl::SkipWhitespace());
  return lines.empty() ? std::string() : lines.back();
}

// A private HOME for the child: `vipu create partition` writes the IPUoF
// files of the partition there, which the tasks do not need (they get
// IPUOF_VIPU_API_* instead). Removed when the object goes away.
class ScratchHome {
 public:
  ScratchHome() {
    char path[] = "/tmp/vipu_spank.XXXXXX";
    if (mkdtemp(path) != nullptr) path_ = path;
  }
  ~ScratchHome() {
    if (path_.empty()) return;
    std::error_code ignored;
    std::filesystem::remove_all(path_, ignored);
  }
  ScratchHome(const ScratchHome&) = delete;
  ScratchHome& operator=(const ScratchHome&) = delete;
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

// Starts `argv` with `env`, stdin from /dev/null and stdout and stderr into
// `out_fd`. posix_spawn rather than fork: slurmstepd is multithreaded, and
// spawn runs nothing of ours between fork and exec. Returns posix_spawn's
// error number (0 on success).
int Spawn(std::vector<std::string>& argv, std::vector<std::string>& env, int out_fd, pid_t* pid) {
  std::vector<char*> cargv;
  for (std::string& a : argv) cargv.push_back(a.data());
  cargv.push_back(nullptr);
  std::vector<char*> cenv;
  for (std::string& e : env) cenv.push_back(e.data());
  cenv.push_back(nullptr);
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_adddup2(&actions, out_fd, 1);
  posix_spawn_file_actions_adddup2(&actions, out_fd, 2);
  // Slurm may block or ignore signals in its threads; the child starts clean.
  posix_spawnattr_t attr;
  posix_spawnattr_init(&attr);
  sigset_t none;
  sigemptyset(&none);
  sigset_t all;
  sigfillset(&all);
  posix_spawnattr_setsigmask(&attr, &none);
  posix_spawnattr_setsigdefault(&attr, &all);
  posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF);
  const int rc = posix_spawn(pid, cargv[0], &actions, &attr, cargv.data(), cenv.data());
  posix_spawn_file_actions_destroy(&actions);
  posix_spawnattr_destroy(&attr);
  return rc;
}

// Reads `fd` into *output until its writers close it or `deadline` passes;
// false when the deadline passed first.
bool ReadUntil(int fd, std::chrono::steady_clock::time_point deadline, std::string* output) {
  for (;;) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) return false;
    pollfd p{fd, POLLIN, 0};
    const int n = poll(&p, 1, static_cast<int>(std::min<int64_t>(left.count(), 1000)));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) continue;
    char buf[4096];
    const ssize_t got = read(fd, buf, sizeof buf);
    if (got < 0 && errno == EINTR) continue;
    if (got <= 0) return true;
    output->append(buf, static_cast<size_t>(got));
  }
}

}  // namespace

absl::Status VipuRunner::LoadCredentials() {
  if (config_.api_access_key_file.empty()) return absl::OkStatus();
  std::ifstream in(config_.api_access_key_file);
  if (!in) {
    return absl::FailedPreconditionError(absl::StrCat("api-access-key-file: cannot read '",
                                                      config_.api_access_key_file, "' (",
                                                      strerror(errno), ")"));
  }
  std::stringstream buffer;
  buffer << in.rdbuf();
  access_key_ = std::string(absl::StripAsciiWhitespace(buffer.str()));
  if (access_key_.empty()) {
    return absl::FailedPreconditionError(
        absl::StrCat("api-access-key-file: '", config_.api_access_key_file, "' is empty"));
  }
  return absl::OkStatus();
}

std::vector<std::string> VipuRunner::CommandLine(const std::vector<std::string>& args) const {
  // --config /dev/null: the plugin's arguments are the only settings, not
  // whatever /etc/vipu/vipu-cli.hcl of the node says.
  std::vector<std::string> argv = {config_.vipu,
                                   "--config",
                                   "/dev/null",
                                   "--api-host",
                                   config_.api_host,
                                   "--api-port",
                                   absl::StrCat(config_.api_port),
                                   "--api-timeout",
                                   absl::StrCat(config_.api_timeout_seconds)};
  if (!config_.api_user_id.empty()) argv.insert(argv.end(), {"--api-user-id", config_.api_user_id});
  if (!config_.api_tls_ca.empty()) argv.insert(argv.end(), {"--api-tls-ca", config_.api_tls_ca});
  if (!config_.api_tls_cert.empty()) {
    argv.insert(argv.end(),
                {"--api-tls-cert", config_.api_tls_cert, "--api-tls-key", config_.api_tls_key});
  }
  argv.insert(argv.end(), args.begin(), args.end());
  return argv;
}

absl::StatusOr<VipuRunner::Result> VipuRunner::Run(const std::vector<std::string>& args) {
  ScratchHome home;
  if (home.path().empty()) {
    return absl::InternalError(
        absl::StrCat("cannot create a directory in /tmp: ", strerror(errno)));
  }
  std::vector<std::string> argv = CommandLine(args);
  std::vector<std::string> env = {"PATH=/usr/sbin:/usr/bin:/sbin:/bin", "HOME=" + home.path()};
  if (!access_key_.empty()) env.push_back("VIPU_CLI_API_ACCESS_KEY=" + access_key_);

  int fds[2];
  if (pipe2(fds, O_CLOEXEC) != 0) {
    return absl::InternalError(absl::StrCat("pipe: ", strerror(errno)));
  }
  pid_t pid = -1;
  const int rc = Spawn(argv, env, fds[1], &pid);
  close(fds[1]);
  if (rc != 0) {
    close(fds[0]);
    return absl::FailedPreconditionError(
        absl::StrCat("cannot run '", config_.vipu, "' (plugin argument vipu=): ", strerror(rc)));
  }

  Result result;
  const bool finished = ReadUntil(
      fds[0], std::chrono::steady_clock::now() + ChildDeadline(config_.api_timeout_seconds),
      &result.output);
  if (!finished) kill(pid, SIGKILL);
  close(fds[0]);
  int status = 0;
  while (waitpid(pid, &status, 0) < 0) {
    if (errno != EINTR) return absl::InternalError(absl::StrCat("waitpid: ", strerror(errno)));
  }
  if (!finished) {
    return absl::DeadlineExceededError(
        absl::StrCat("'", config_.vipu, "' did not finish within ",
                     ChildDeadline(config_.api_timeout_seconds).count(), " s"));
  }
  result.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  return result;
}

absl::Status VipuRunner::FailureOf(const Result& result) {
  std::string line = LastLine(result.output);
  if (line.empty()) line = absl::StrCat("vipu exited with code ", result.exit_code);
  // "create partition (slurm_7): failure: <reason>": the reason is the news.
  const size_t at = line.find(": failure: ");
  const std::string reason = at == std::string::npos ? line : line.substr(at + 11);
  if (absl::StrContains(reason, "not found")) return absl::NotFoundError(reason);
  if (absl::StrContains(reason, "already exists")) return absl::AlreadyExistsError(reason);
  if (absl::StrContains(reason, "cannot reach")) return absl::UnavailableError(reason);
  // The server's hint names the CLI's flags; the plugin's are arguments.
  if (absl::StartsWith(reason, "unauthenticated")) {
    return absl::UnauthenticatedError(
        absl::StrCat("no credentials vipu-server accepts (plugin arguments api-user-id and "
                     "api-access-key-file): ",
                     reason));
  }
  if (result.exit_code == 2) return absl::InvalidArgumentError(reason);
  return absl::FailedPreconditionError(reason);
}

absl::Status VipuRunner::CreatePartition(const std::string& id, const IpuRequest& request) {
  std::vector<std::string> args = {"create", "partition", id, "--size", absl::StrCat(request.ipus)};
  if (request.gcds > 1) args.insert(args.end(), {"--num-gcds", absl::StrCat(request.gcds)});
  if (request.reconfigurable) {
    // The server takes reconfigurable partitions with C2-compatible sync only.
    args.insert(args.end(), {"--reconfigurable", "--sync-type", "c2-compatible"});
  }
  if (!config_.allocation.empty()) args.insert(args.end(), {"--allocation", config_.allocation});
  auto result = Run(args);
  absl::Status status = result.ok()
                            ? (result->exit_code == 0 ? absl::OkStatus() : FailureOf(*result))
                            : result.status();
  if (status.ok()) return status;
  // The server may have made the partition before the failure (e.g. it never
  // became ACTIVE in time); a refused job must leave nothing behind. A
  // partition of the same id that existed before (ALREADY_EXISTS) is left
  // alone: it may be the job's own, made by another step.
  if (!absl::IsUnavailable(status) && !absl::IsInvalidArgument(status) &&
      !absl::IsUnauthenticated(status) && !absl::IsAlreadyExists(status)) {
    (void)RemovePartition(id);
  }
  return status;
}

absl::Status VipuRunner::RemovePartition(const std::string& id) {
  ASSIGN_OR_RETURN(auto result, Run({"remove", "partition", id, "--force"}));
  if (result.exit_code == 0) return absl::OkStatus();
  absl::Status status = FailureOf(result);
  return absl::IsNotFound(status) ? absl::OkStatus() : status;
}

absl::StatusOr<PartitionInfo> VipuRunner::GetPartition(const std::string& id) {
  ASSIGN_OR_RETURN(auto result, Run({"--showjson", "get", "partition", id}));
  if (result.exit_code != 0) return FailureOf(result);
  // `vipu --showjson get partition` prints the partition in proto field
  // names: one "topology_id" per IPU, "num_gcds", "ready_state".
  const std::string& out = result.output;
  PartitionInfo info;
  static const std::regex ipu_re(R"re("topology_id":)re");
  info.size = static_cast<uint32_t>(
      std::distance(std::sregex_iterator(out.begin(), out.end(), ipu_re), std::sregex_iterator()));
  std::smatch m;
  static const std::regex gcds_re(R"re("num_gcds":\s*([0-9]+))re");
  info.gcds = 1;
  if (std::regex_search(out, m, gcds_re)) (void)absl::SimpleAtoi(m[1].str(), &info.gcds);
  if (info.gcds == 0) info.gcds = 1;
  static const std::regex active_re(R"re("ready_state":\s*"PS_ACTIVE")re");
  info.active = std::regex_search(out, active_re);
  return info;
}

absl::StatusOr<std::vector<std::string>> VipuRunner::ListPartitions() {
  ASSIGN_OR_RETURN(auto result, Run({"list", "partitions"}));
  if (result.exit_code != 0) return FailureOf(result);
  std::vector<std::string> ids;
  bool past_rule = false;
  for (absl::string_view line : absl::StrSplit(result.output, '\n')) {
    if (absl::StartsWith(line, "---")) {
      past_rule = true;
      continue;
    }
    if (!past_rule || line.empty()) continue;
    std::vector<std::string> cells = absl::StrSplit(line, '|');
    std::string id(absl::StripAsciiWhitespace(cells[0]));
    if (!id.empty()) ids.push_back(id);
  }
  return ids;
}

}  // namespace vipu::slurm
