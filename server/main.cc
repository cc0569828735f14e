// vipu-server: parses the command line, then runs the security commands, a
// member of a highly available control plane, or the single server.
#include <grpc/support/log.h>
#include <malloc.h>

#include <string>
#include <variant>

#include "absl/synchronization/mutex.h"
#include "server/daemon/command_line.h"
#include "server/daemon/run_loop.h"
#include "server/daemon/security_setup.h"
#include "server/daemon/single_server.h"
#include "server/ha/member.h"
#include "spdlog/spdlog.h"

namespace {

// gRPC's own log lines, at debug level in ours. A failure they describe
// (a port already in use prints a multi-line chttp2_server dump) reaches the
// operator as the one-line error the server prints; the dump stays for
// --log-level debug.
void GrpcLogToDebug(gpr_log_func_args* args) {
  spdlog::debug("grpc: {}:{}: {}", args->file, args->line, args->message);
}

}  // namespace

int main(int argc, char** argv) {
  // Free memory at the top of a thread's heap is kept up to this size
  // instead of being handed back after each SQLite transaction: each
  // hand-back (madvise) interrupts every core the process runs on.
  mallopt(M_TRIM_THRESHOLD, 64 << 20);
  // Debian's abseil checks every Mutex acquisition for lock-order cycles (a
  // debug default it was built with). gRPC takes many locks per call and the
  // check is a measurable share of it; TSan runs catch lock-order bugs.
  absl::SetMutexDeadlockDetectionMode(absl::OnDeadlockCycle::kIgnore);
  // Before the first gRPC call, so that none of its lines reach stderr.
  gpr_set_log_function(GrpcLogToDebug);
  std::variant<vipu::server::CommandLine, int> parsed = vipu::server::ParseCommandLine(argc, argv);
  if (const int* code = std::get_if<int>(&parsed)) return *code;
  const vipu::server::CommandLine& line = std::get<vipu::server::CommandLine>(parsed);
  spdlog::set_level(spdlog::level::from_str(line.options.log_level));
  spdlog::set_pattern("%Y-%m-%dT%H:%M:%S.%e %^%l%$ vipu-server %v");
  if (int code = vipu::server::RunSecurityCommands(line.options); code >= 0) return code;
  // Before any thread starts, so that every thread inherits the mask.
  vipu::server::BlockDaemonSignals();
  if (!line.options.etcd_endpoints.empty()) return vipu::server::RunMember(line.options, argv);
  return vipu::server::RunSingleServer(line.options, line.pod);
}
