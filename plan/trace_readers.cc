// SWF and CSV trace readers: lines to TraceJobs, skips counted, invalid lines refused by file:line.
#include "plan/trace_readers.h"

#include <zlib.h>

#include <cmath>
#include <limits>
#include <optional>
#include <set>
#include <utility>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/time/time.h"
#include "base/status_macros.h"

namespace vipu::plan {
namespace {

absl::Status LineError(const std::string& source, size_t line, absl::string_view what) {
  return absl::InvalidArgumentError(absl::StrCat(source, ":", line, ": ", what));
}

// The lines of `text` without their "\r\n" or "\n".
std::vector<absl::string_view> Lines(absl::string_view text) {
  std::vector<absl::string_view> lines = absl::StrSplit(text, '\n');
  if (!lines.empty() && lines.back().empty()) lines.pop_back();
  for (absl::string_view& l : lines) {
    if (!l.empty() && l.back() == '\r') l.remove_suffix(1);
  }
  return lines;
}

bool ParseNumber(absl::string_view text, double* out) {
  return absl::SimpleAtod(text, out) && std::isfinite(*out);
}

// ---- SWF

constexpr int kSwfFields = 18;

}  // namespace

absl::StatusOr<std::string> ReadTraceFile(const std::string& path) {
  gzFile file = gzopen(path.c_str(), "rb");
  if (file == nullptr) return absl::NotFoundError(absl::StrCat(path, ": cannot open"));
  std::string text;
  char buffer[1 << 16];
  while (true) {
    const int n = gzread(file, buffer, sizeof buffer);
    if (n < 0) {
      int code = 0;
      std::string why = gzerror(file, &code);
      gzclose(file);
      return absl::DataLossError(absl::StrCat(path, ": cannot decompress: ", why));
    }
    if (n == 0) break;
    text.append(buffer, static_cast<size_t>(n));
  }
  gzclose(file);
  return text;
}

absl::StatusOr<Trace> ParseSwf(absl::string_view text, const std::string& source,
                               uint32_t ipus_per_proc) {
  if (ipus_per_proc == 0) return absl::InvalidArgumentError("ipus-per-proc: must be at least 1");
  Trace trace;
  trace.source = source;
  const std::vector<absl::string_view> lines = Lines(text);
  for (size_t i = 0; i < lines.size(); ++i) {
    const size_t line = i + 1;
    absl::string_view l = absl::StripAsciiWhitespace(lines[i]);
    if (l.empty()) continue;
    if (l.front() == ';') {
      absl::string_view comment = absl::StripAsciiWhitespace(l.substr(1));
      if (absl::ConsumePrefix(&comment, "MaxProcs:")) {
        uint64_t procs = 0;
        if (absl::SimpleAtoi(absl::StripAsciiWhitespace(comment), &procs)) {
          trace.max_procs = procs;
        }
      }
      continue;
    }
    std::vector<absl::string_view> fields =
        absl::StrSplit(l, absl::ByAnyChar(" \t"), absl::SkipEmpty());
    if (fields.size() < kSwfFields) {
      return LineError(
          source, line,
          absl::StrCat("an SWF job has ", kSwfFields, " fields, this line has ", fields.size()));
    }
    double f[kSwfFields + 1];
    for (int k = 0; k < kSwfFields; ++k) {
      if (!ParseNumber(fields[k], &f[k + 1])) {
        return LineError(
            source, line,
            absl::StrCat("field ", k + 1, ": expected a number, got \"", fields[k], "\""));
      }
    }
    if (f[2] < 0) {
      ++trace.skipped[kSkipNegativeRun];
      continue;
    }
    if (f[4] == -1) {
      ++trace.skipped[kSkipNoEnd];
      continue;
    }
    if (f[4] < 0) {
      ++trace.skipped[kSkipNegativeRun];
      continue;
    }
    const double procs = f[5] > 0 ? f[5] : f[8];
    if (!(procs > 0)) {
      ++trace.skipped[kSkipNoIpus];
      continue;
    }
    if (procs * ipus_per_proc > std::numeric_limits<uint32_t>::max()) {
      return LineError(source, line, absl::StrCat("processors: ", procs, " is too many"));
    }
    TraceJob job;
    job.id = std::string(fields[0]);
    job.submit = f[2];
    job.run = f[4];
    job.requested = f[9] > 0 ? f[9] : -1;
    job.ipus = static_cast<uint32_t>(std::ceil(procs)) * ipus_per_proc;
    job.user = f[12] >= 0 ? std::string(fields[11]) : "";
    trace.jobs.push_back(std::move(job));
  }
  return trace;
}

absl::StatusOr<Trace> ReadSwf(const std::string& path, uint32_t ipus_per_proc) {
  ASSIGN_OR_RETURN(std::string text, ReadTraceFile(path));
  return ParseSwf(text, path, ipus_per_proc);
}

// ---- CSV

namespace {

const std::vector<std::string>& ColumnKeys() {
  static const auto* keys = new std::vector<std::string>{
      "id",   "submit", "ipus",  "duration",        "end", "start", "requested",
      "user", "model",  "steps", "ipus_per_replica"};
  return *keys;
}

// One CSV record's fields, RFC 4180: quotes around a field, "" inside.
// nullopt when a quote is left open.
std::optional<std::vector<std::string>> SplitCsv(absl::string_view line) {
  std::vector<std::string> out;
  std::string field;
  bool quoted = false;
  for (size_t i = 0; i < line.size(); ++i) {
    const char c = line[i];
    if (quoted) {
      if (c == '"') {
        if (i + 1 < line.size() && line[i + 1] == '"') {
          field.push_back('"');
          ++i;
        } else {
          quoted = false;
        }
      } else {
        field.push_back(c);
      }
    } else if (c == '"') {
      quoted = true;
    } else if (c == ',') {
      out.push_back(std::move(field));
      field.clear();
    } else {
      field.push_back(c);
    }
  }
  if (quoted) return std::nullopt;
  out.push_back(std::move(field));
  return out;
}

bool Missing(absl::string_view v) {
  v = absl::StripAsciiWhitespace(v);
  return v.empty() || v == "NA" || v == "None" || v == "null" || v == "NaN" || v == "nan";
}

// A time: seconds, or a UTC date-time (then *absolute is set).
bool ParseTime(absl::string_view text, double* out, bool* absolute) {
  text = absl::StripAsciiWhitespace(text);
  if (ParseNumber(text, out)) return true;
  absl::Time t;
  std::string err;
  for (const char* format : {"%Y-%m-%d %H:%M:%S", "%Y-%m-%dT%H:%M:%S", "%Y-%m-%d %H:%M:%E*S"}) {
    if (absl::ParseTime(format, std::string(text), absl::UTCTimeZone(), &t, &err)) {
      *out = absl::ToDoubleSeconds(t - absl::UnixEpoch());
      *absolute = true;
      return true;
    }
  }
  return false;
}

// The column of each key in a CSV row.
using ColumnIndex = std::map<std::string, size_t>;

// The columns of the keys in `header`: a key's mapped column in `columns`
// (which must be there) or else the column of its own name. Refused without
// the columns a job needs: submit, ipus and a run time.
absl::StatusOr<ColumnIndex> LocateColumns(const std::vector<std::string>& header,
                                          const ColumnMap& columns, const std::string& source) {
  std::map<std::string, size_t> index_of;
  for (size_t c = 0; c < header.size(); ++c) {
    index_of.emplace(std::string(absl::StripAsciiWhitespace(header[c])), c);
  }
  ColumnIndex at;
  for (const std::string& key : ColumnKeys()) {
    auto mapped = columns.find(key);
    const std::string& name = mapped != columns.end() ? mapped->second : key;
    auto it = index_of.find(name);
    if (it == index_of.end()) {
      if (mapped != columns.end()) {
        return absl::InvalidArgumentError(
            absl::StrCat(source, ": column \"", name, "\" (", key, "=) is not in the header"));
      }
      continue;
    }
    at[key] = it->second;
  }
  // A run time named in --columns wins over one found by its own name
  // (Helios has both duration and end_time; whoever maps end means end).
  if (columns.count("end") && !columns.count("duration")) at.erase("duration");
  if (columns.count("duration") && !columns.count("end")) at.erase("end");
  const std::string all = absl::StrJoin(header, ",");
  if (!at.count("submit")) {
    return absl::InvalidArgumentError(absl::StrCat(
        source, ": no submit column (map one with --columns submit=NAME); the header is: ", all));
  }
  if (!at.count("ipus")) {
    return absl::InvalidArgumentError(absl::StrCat(
        source, ": no ipus column (map one with --columns ipus=NAME); the header is: ", all));
  }
  const bool by_model = at.count("model") && at.count("steps");
  if (!at.count("duration") && !at.count("end") && !by_model) {
    return absl::InvalidArgumentError(
        absl::StrCat(source,
                     ": no run time: map duration=, end= (with start= or from submit), or "
                     "model= with steps=; the header is: ",
                     all));
  }
  return at;
}

// One data row of a CSV trace, with what names its fields.
struct CsvRow {
  const std::string& source;
  size_t line;
  const std::vector<std::string>& header;
  const ColumnIndex& at;
  const std::vector<std::string>& fields;

  // The key's field, stripped; nullopt when the key has no column or the
  // field is missing (empty, NA...).
  std::optional<absl::string_view> Field(const std::string& key) const {
    auto it = at.find(key);
    if (it == at.end() || Missing(fields[it->second])) return std::nullopt;
    return absl::StripAsciiWhitespace(fields[it->second]);
  }
  // Refuses the key's field, `value`, which is not the `what` expected.
  absl::Status Bad(const std::string& key, absl::string_view value, absl::string_view what) const {
    return LineError(source, line,
                     absl::StrCat(key, " (column ", header[at.at(key)], "): expected ", what,
                                  ", got \"", value, "\""));
  }
};

// A row's numeric fields, each unset when the row does not give it.
struct CsvNumbers {
  std::optional<double> submit, duration, end, start, requested, ipus, steps, per_replica;
};

// Numbers first: a word in any mapped numeric field is an invalid line even
// when the row would be skipped. *absolute is set when a time is a date.
absl::StatusOr<CsvNumbers> ParseCsvNumbers(const CsvRow& row, bool* absolute) {
  CsvNumbers n;
  for (auto [key, slot, is_time] : {std::tuple{"submit", &n.submit, true},
                                    {"duration", &n.duration, false},
                                    {"end", &n.end, true},
                                    {"start", &n.start, true},
                                    {"requested", &n.requested, false},
                                    {"ipus", &n.ipus, false},
                                    {"steps", &n.steps, false},
                                    {"ipus_per_replica", &n.per_replica, false}}) {
    std::optional<absl::string_view> v = row.Field(key);
    if (!v) continue;
    double d = 0;
    const bool ok = is_time ? ParseTime(*v, &d, absolute) : ParseNumber(*v, &d);
    if (!ok) return row.Bad(key, *v, is_time ? "seconds or YYYY-MM-DD HH:MM:SS" : "a number");
    *slot = d;
  }
  return n;
}

// The row's job added to `trace`, or the reason it is skipped counted there.
absl::Status ParseCsvRow(const CsvRow& row, uint32_t ipus_per_proc, bool* absolute, Trace* trace) {
  ASSIGN_OR_RETURN(const CsvNumbers n, ParseCsvNumbers(row, absolute));
  if (!n.submit) return LineError(row.source, row.line, "submit: missing");
  if (!n.ipus || !(*n.ipus > 0)) {
    ++trace->skipped[kSkipNoIpus];
    return absl::OkStatus();
  }
  if (*n.ipus * ipus_per_proc > std::numeric_limits<uint32_t>::max()) {
    return row.Bad("ipus", *row.Field("ipus"), "at most 4294967295 IPUs");
  }
  TraceJob job;
  job.submit = *n.submit;
  job.ipus = static_cast<uint32_t>(std::ceil(*n.ipus)) * ipus_per_proc;
  if (std::optional<absl::string_view> id = row.Field("id")) {
    job.id = std::string(*id);
  } else {
    job.id = absl::StrCat("line", row.line);
  }
  if (std::optional<absl::string_view> user = row.Field("user")) job.user = std::string(*user);
  if (n.requested && *n.requested > 0) job.requested = *n.requested;
  if (n.duration) {
    job.run = *n.duration;
  } else if (n.end) {
    job.run = *n.end - (n.start ? *n.start : *n.submit);
  } else if (std::optional<absl::string_view> model = row.Field("model"); model && n.steps) {
    if (*n.steps < 1 || *n.steps != std::floor(*n.steps)) {
      return row.Bad("steps", *row.Field("steps"), "a whole number of steps >= 1");
    }
    job.model = std::string(*model);
    job.steps = static_cast<uint64_t>(*n.steps);
    if (n.per_replica) {
      if (*n.per_replica < 1 || *n.per_replica != std::floor(*n.per_replica)) {
        return row.Bad("ipus_per_replica", *row.Field("ipus_per_replica"), "a whole number >= 1");
      }
      job.ipus_per_replica = static_cast<uint32_t>(*n.per_replica);
    }
  } else {
    ++trace->skipped[kSkipNoEnd];
    return absl::OkStatus();
  }
  if (job.model.empty() && job.run < 0) {
    ++trace->skipped[kSkipNegativeRun];
    return absl::OkStatus();
  }
  trace->jobs.push_back(std::move(job));
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<ColumnMap> ParseColumnMap(absl::string_view spec) {
  ColumnMap map;
  const std::vector<std::string>& keys = ColumnKeys();
  for (absl::string_view pair : absl::StrSplit(spec, ',', absl::SkipWhitespace())) {
    std::vector<absl::string_view> kv = absl::StrSplit(pair, absl::MaxSplits('=', 1));
    if (kv.size() != 2 || absl::StripAsciiWhitespace(kv[1]).empty()) {
      return absl::InvalidArgumentError(
          absl::StrCat("columns: expected key=column, got \"", pair, "\""));
    }
    const std::string key(absl::StripAsciiWhitespace(kv[0]));
    if (std::find(keys.begin(), keys.end(), key) == keys.end()) {
      return absl::InvalidArgumentError(
          absl::StrCat("columns: unknown key \"", key, "\"; known: ", absl::StrJoin(keys, ", ")));
    }
    if (!map.emplace(key, std::string(absl::StripAsciiWhitespace(kv[1]))).second) {
      return absl::InvalidArgumentError(absl::StrCat("columns: key \"", key, "\" given twice"));
    }
  }
  return map;
}

absl::StatusOr<Trace> ParseCsv(absl::string_view text, const std::string& source,
                               const ColumnMap& columns, uint32_t ipus_per_proc) {
  if (ipus_per_proc == 0) return absl::InvalidArgumentError("ipus-per-proc: must be at least 1");
  const std::vector<absl::string_view> lines = Lines(text);
  if (lines.empty()) return absl::InvalidArgumentError(absl::StrCat(source, ": no header line"));
  std::optional<std::vector<std::string>> header = SplitCsv(lines[0]);
  if (!header) return LineError(source, 1, "a quote is not closed");
  ASSIGN_OR_RETURN(const ColumnIndex at, LocateColumns(*header, columns, source));

  Trace trace;
  trace.source = source;
  bool absolute = false;
  for (size_t i = 1; i < lines.size(); ++i) {
    const size_t line = i + 1;
    if (absl::StripAsciiWhitespace(lines[i]).empty()) continue;
    std::optional<std::vector<std::string>> row = SplitCsv(lines[i]);
    if (!row) return LineError(source, line, "a quote is not closed");
    if (row->size() != header->size()) {
      return LineError(
          source, line,
          absl::StrCat("the header has ", header->size(), " fields, this row has ", row->size()));
    }
    RETURN_IF_ERROR(
        ParseCsvRow(CsvRow{source, line, *header, at, *row}, ipus_per_proc, &absolute, &trace));
  }
  if (absolute && !trace.jobs.empty()) {
    double origin = trace.jobs.front().submit;
    for (const TraceJob& j : trace.jobs) origin = std::min(origin, j.submit);
    for (TraceJob& j : trace.jobs) j.submit -= origin;
  }
  return trace;
}

absl::StatusOr<Trace> ReadCsv(const std::string& path, const ColumnMap& columns,
                              uint32_t ipus_per_proc) {
  ASSIGN_OR_RETURN(std::string text, ReadTraceFile(path));
  return ParseCsv(text, path, columns, ipus_per_proc);
}

}  // namespace vipu::plan
