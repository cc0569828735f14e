// vipu-admin `inject fault` and `test cluster`: flag parsing, the calls and the results table.
#include "cli/common/health_commands.h"

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "base/status_macros.h"
#include "cli/common/json_output.h"
#include "fabric/link_topology.h"
#include "fabric/types.h"

namespace vipu::cli {
namespace {

namespace fabric = ::vipu::fabric;

absl::StatusOr<uint32_t> Number(const std::string& flag, const std::string& text, uint32_t max) {
  uint64_t n = 0;
  if (!absl::SimpleAtoi(text, &n) || n > max) {
    return absl::InvalidArgumentError(absl::StrCat(flag, ": must be an integer in 0..", max,
                                                   ", got ",
                                                   text.empty() ? "an empty value" : text));
  }
  return static_cast<uint32_t>(n);
}

// Drops the field name fabric puts first ("ipu: ...") in favour of the flag.
absl::Status AsFlag(const absl::Status& s) {
  absl::string_view m = s.message();
  const size_t colon = m.find(": ");
  const std::string field = std::string(m.substr(0, colon));
  std::string flag = field == "duration_ms" ? "--duration-ms"
                     : field == "agent_id"  ? "agent id"
                                            : absl::StrCat("--", field);
  if (colon == absl::string_view::npos) return s;
  return absl::InvalidArgumentError(absl::StrCat(flag, ": ", m.substr(colon + 2)));
}

}  // namespace

absl::StatusOr<fabric::FaultRequest> ParseFaultFlags(const FaultFlags& flags) {
  fabric::FaultRequest r;
  r.agent_id = flags.agent_id;
  if (!flags.kind) return absl::InvalidArgumentError("--kind: is required");
  auto kind = fabric::ParseFaultKind(*flags.kind);
  if (!kind.ok()) return AsFlag(kind.status());
  r.kind = *kind;
  if (flags.ipu) {
    ASSIGN_OR_RETURN(auto n, Number("--ipu", *flags.ipu, fabric::kIpusPerMachine - 1));
    r.ipu = n;
  }
  if (flags.link) {
    ASSIGN_OR_RETURN(auto n, Number("--link", *flags.link, fabric::kPortsPerMachine - 1));
    r.link = n;
  }
  if (flags.duration_ms) {
    ASSIGN_OR_RETURN(auto n, Number("--duration-ms", *flags.duration_ms, fabric::kMaxHangMs));
    r.duration_ms = n;
  }
  if (absl::Status s = fabric::ValidateFaultRequest(r); !s.ok()) return AsFlag(s);
  return r;
}

std::string RenderTestResults(const vipuadmin::TestClusterReply& reply) {
  size_t type_w = std::string("Test Type").size();
  size_t dur_w = std::string("Duration").size();
  size_t pass_w = std::string("Passed").size();
  std::vector<std::array<std::string, 4>> rows;
  for (const auto& r : reply.results()) {
    rows.push_back({r.test_type(), absl::StrFormat("%.2fs", r.duration_s()),
                    absl::StrCat(r.passed(), "/", r.total()), r.summary()});
    type_w = std::max(type_w, rows.back()[0].size());
    dur_w = std::max(dur_w, rows.back()[1].size());
    pass_w = std::max(pass_w, rows.back()[2].size());
  }
  auto line = [&](const std::array<std::string, 4>& cells) {
    return absl::StrFormat("%-*s | %-*s | %-*s | %s\n", type_w, cells[0], dur_w, cells[1], pass_w,
                           cells[2], cells[3]);
  };
  const std::string rule(78, '-');
  std::string out = absl::StrCat("Showing test results for cluster ", reply.cluster_id(), "\n");
  absl::StrAppend(&out, line({"Test Type", "Duration", "Passed", "Summary"}), rule, "\n");
  for (const auto& row : rows) absl::StrAppend(&out, line(row));
  absl::StrAppend(&out, rule, "\n");
  for (const auto& r : reply.results()) {
    for (const auto& f : r.failures()) absl::StrAppend(&out, "  ", r.test_type(), ": ", f, "\n");
  }
  return out;
}

absl::Status InjectFault(Connection& conn, const CommandIo& io,
                         const fabric::FaultRequest& request) {
  vipuadmin::InjectFaultRequest wire;
  wire.set_agent_id(request.agent_id);
  wire.set_kind(static_cast<vipuadmin::FaultKind>(request.kind));  // numbers equal
  if (request.ipu) wire.set_ipu(*request.ipu);
  if (request.link) wire.set_link(*request.link);
  wire.set_duration_ms(request.duration_ms);
  vipuadmin::InjectFaultReply reply;
  RETURN_IF_ERROR(conn.Call(CallKind::kMutating, [&](Stubs& stubs, grpc::ClientContext* ctx) {
    return stubs.admin().InjectFault(ctx, wire, &reply);
  }));
  if (io.json) return WriteJson(io.out, reply);
  io.out << "inject fault (" << request.agent_id << "): " << reply.description() << "\n";
  return absl::OkStatus();
}

absl::Status TestCluster(Connection& conn, const CommandIo& io, const std::string& cluster_id,
                         bool force) {
  vipuadmin::TestClusterRequest request;
  request.set_cluster_id(cluster_id);
  request.set_force(force);
  vipuadmin::TestClusterReply reply;
  RETURN_IF_ERROR(conn.Call(CallKind::kMutating, [&](Stubs& stubs, grpc::ClientContext* ctx) {
    return stubs.admin().TestCluster(ctx, request, &reply);
  }));
  if (io.json) {
    RETURN_IF_ERROR(WriteJson(io.out, reply));
  } else {
    io.out << RenderTestResults(reply);
  }
  uint32_t failed = 0;
  for (const auto& r : reply.results()) failed += r.total() - r.passed();
  if (failed > 0) {
    return absl::AbortedError(absl::StrCat(failed, " test item(s) failed on cluster ", cluster_id));
  }
  return absl::OkStatus();
}

}  // namespace vipu::cli
