// The run report of poprun's --autoreport-dir: vipu-report.json in the instance's own directory.
#include "popdist/report.h"

#include <unistd.h>

#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <regex>
#include <string>
#include <system_error>

#include "popdist/context.h"

namespace popdist {
namespace {

// `text` as a JSON string literal. The library is installed on its own, so
// it carries this small quoting rather than linking the project's writer.
std::string Quote(const std::string& text) {
  std::string out = "\"";
  for (const char c : text) {
    switch (c) {
      case '"':
        out += "\\\"";
        break;
      case '\\':
        out += "\\\\";
        break;
      case '\n':
        out += "\\n";
        break;
      case '\t':
        out += "\\t";
        break;
      default:
        if (static_cast<unsigned char>(c) < 0x20) {
          char escaped[8];
          std::snprintf(escaped, sizeof escaped, "\\u%04x", static_cast<unsigned>(c));
          out += escaped;
        } else {
          out += c;
        }
    }
  }
  return out + "\"";
}

// The shortest text that reads back as the same double, so a reader gets
// exactly the numbers the application printed from; JSON has no NaN or
// infinity, so those become null.
std::string Number(double v) {
  if (!std::isfinite(v)) return "null";
  char text[32];
  const std::to_chars_result end = std::to_chars(text, text + sizeof text, v);
  return std::string(text, end.ptr);
}

// One "key": value member per line at `indent`, commas between them.
class Members {
 public:
  Members(std::string* out, int indent) : out_(out), indent_(indent) {}
  void Add(const std::string& key, const std::string& json_value) {
    *out_ += first_ ? "\n" : ",\n";
    first_ = false;
    *out_ += std::string(indent_, ' ') + Quote(key) + ": " + json_value;
  }

 private:
  std::string* out_;
  int indent_;
  bool first_ = true;
};

std::string Object(int indent, const std::function<void(Members&)>& fill) {
  std::string out = "{";
  Members members(&out, indent + 2);
  fill(members);
  return out + "\n" + std::string(indent, ' ') + "}";
}

std::string Instance() {
  return Object(2, [](Members& m) {
    m.Add("index", std::to_string(getInstanceIndex()));
    m.Add("instances", std::to_string(getNumInstances()));
    m.Add("local_index", std::to_string(getLocalInstanceIndex()));
    m.Add("replica_offset", std::to_string(getReplicaIndexOffset()));
    m.Add("local_replicas", std::to_string(getNumLocalReplicas()));
    m.Add("total_replicas", std::to_string(getNumTotalReplicas()));
    m.Add("ipus_per_replica", std::to_string(getNumIpusPerReplica()));
  });
}

std::string Partition(const RunReport& r) {
  if (r.partition_id.empty()) return "null";
  return Object(2, [&r](Members& m) {
    m.Add("id", Quote(r.partition_id));
    m.Add("gcd", std::to_string(r.gcd));
    m.Add("device", r.device ? std::to_string(*r.device) : "null");
    m.Add("generation", std::to_string(r.generation));
    std::string machines = "[";
    for (size_t i = 0; i < r.machines.size(); ++i) {
      machines += (i ? ", " : "") + Quote(r.machines[i]);
    }
    m.Add("machines", machines + "]");
    m.Add("routing", Quote(r.routing));
    m.Add("gw_routing", Quote(r.gw_routing));
    m.Add("sync_type", Quote(r.sync_type));
  });
}

std::string Run(const RunReport& r) {
  return Object(2, [&r](Members& m) {
    m.Add("steps", std::to_string(r.steps));
    m.Add("modelled_time_s", Number(r.modelled_time_s));
    m.Add("elapsed_s", Number(r.elapsed_s));
    m.Add("samples_per_sec", Number(r.samples_per_sec));
  });
}

std::string Step(const RunReport& r) {
  return Object(2, [&r](Members& m) {
    m.Add("source", Quote(r.step_source));
    m.Add("step_time_s", Number(r.step_time_s));
    std::string ipus = "[";
    for (size_t i = 0; i < r.ipus.size(); ++i) {
      const IpuStepTimes& t = r.ipus[i];
      ipus += i ? ",\n      " : "\n      ";
      ipus += Object(6, [&t](Members& ipu) {
        ipu.Add("ipu", std::to_string(t.ipu));
        ipu.Add("compute_s", Number(t.compute_s));
        ipu.Add("exchange_s", Number(t.exchange_s));
        ipu.Add("sync_s", Number(t.sync_s));
        ipu.Add("collectives_s", Number(t.collectives_s));
        ipu.Add("weight_update_s", Number(t.weight_update_s));
        ipu.Add("host_s", Number(t.host_s));
      });
    }
    m.Add("ipus", ipus + (r.ipus.empty() ? "]" : "\n    ]"));
  });
}

}  // namespace

bool isAutoReportEnabled() {
  const char* dir = std::getenv("POPDIST_AUTOREPORT_DIRECTORY");
  if (dir == nullptr || *dir == '\0') return false;
  const char* options = std::getenv("POPLAR_ENGINE_OPTIONS");
  if (options == nullptr) return true;
  static const std::regex all("\"autoReport\\.all\"\\s*:\\s*\"?([A-Za-z0-9]*)\"?");
  std::cmatch m;
  return !std::regex_search(options, m, all) || m[1].str() != "false";
}

std::string formatRunReport(const RunReport& report) {
  return Object(0,
                [&report](Members& m) {
                  m.Add("format", Quote("vipu-report"));
                  m.Add("version", "1");
                  m.Add("instance", Instance());
                  m.Add("partition", Partition(report));
                  m.Add("run", Run(report));
                  m.Add("step", Step(report));
                }) +
         "\n";
}

std::string writeRunReport(const RunReport& report) {
  if (!isAutoReportEnabled()) return "";
  const std::filesystem::path dir = getAutoReportDirectory();
  const std::filesystem::path path = dir / "vipu-report.json";
  const std::string text = formatRunReport(report);
  auto fail = [&path](const std::string& why) {
    return popdist_error("vipu-report: cannot write " + path.string() + ": " + why);
  };
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) throw fail(ec.message());
  // Written beside it and renamed, so a reader never sees half a report.
  const std::filesystem::path tmp = path.string() + "." + std::to_string(::getpid());
  {
    std::ofstream out(tmp, std::ios::trunc);
    out << text;
    out.close();
    if (!out) throw fail("writing " + tmp.string() + " failed");
  }
  std::filesystem::rename(tmp, path, ec);
  if (ec) {
    const std::string why = ec.message();
    std::filesystem::remove(tmp, ec);
    throw fail(why);
  }
  return path.string();
}

}  // namespace popdist
