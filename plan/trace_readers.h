// Readers of the traces sites keep: the Standard Workload Format (SWF 2.2 of
// the Parallel Workloads Archive, plain or gzip-compressed) and CSV logs
// with a header whose columns a ColumnMap names. A row that cannot be a job
// (no IPUs, no end, a negative run time) is skipped and counted; a line
// that is not valid stops the read with INVALID_ARGUMENT naming the file
// and the line. Functions of their arguments only: thread-safe.
#ifndef VIPU_PLAN_TRACE_READERS_H_
#define VIPU_PLAN_TRACE_READERS_H_

#include <cstdint>
#include <map>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "plan/trace.h"

namespace vipu::plan {

// The whole file at `path`, decompressed when it is gzip (zlib reads a plain
// file as it is). NOT_FOUND when it cannot be opened, DATA_LOSS when the
// compressed stream is corrupt.
absl::StatusOr<std::string> ReadTraceFile(const std::string& path);

// An SWF log. Submit is field 2, run time field 4, processors field 5 or
// else field 8, requested time field 9, user field 12; `; MaxProcs: N` in
// the header is kept. A job's IPUs are its processors times
// `ipus_per_proc` (at least 1). A line with fewer than 18 fields or a
// field that is not a number is INVALID_ARGUMENT "FILE:LINE: ...".
// Skips: no processors (kSkipNoIpus), run time -1 (kSkipNoEnd), another
// negative run time or submit (kSkipNegativeRun).
absl::StatusOr<Trace> ParseSwf(absl::string_view text, const std::string& source,
                               uint32_t ipus_per_proc);
absl::StatusOr<Trace> ReadSwf(const std::string& path, uint32_t ipus_per_proc);

// Which header column holds each field of a job. Keys: id, submit, ipus,
// duration, end, start, requested, user, model, steps, ipus_per_replica.
// A key left out is looked up under its own name, except that a mapped
// end or duration is not overridden by the other found by its own name;
// submit and ipus must be found, and one of duration, end, or model with
// steps.
using ColumnMap = std::map<std::string, std::string>;

// "id=job_id,submit=submit_time,..." to a ColumnMap; INVALID_ARGUMENT
// ("columns: ...") for an unknown key, a key given twice, or a pair
// without '='.
absl::StatusOr<ColumnMap> ParseColumnMap(absl::string_view spec);

// A CSV log (RFC 4180 quoting) with a header line. Times are seconds or
// "YYYY-MM-DD HH:MM:SS" (UTC); with date-times every time is counted from
// the earliest submit. The run time is duration, else end - start when a
// start column is mapped, else end - submit. Empty, "NA", "None" and
// "null" fields are missing. IPUs are the column times `ipus_per_proc`.
// INVALID_ARGUMENT "FILE:LINE: ..." for a row with more or fewer fields
// than the header or a word where a number must be, and "FILE: ..." for a
// mapped column the header does not have.
absl::StatusOr<Trace> ParseCsv(absl::string_view text, const std::string& source,
                               const ColumnMap& columns, uint32_t ipus_per_proc);
absl::StatusOr<Trace> ReadCsv(const std::string& path, const ColumnMap& columns,
                              uint32_t ipus_per_proc);

}  // namespace vipu::plan

#endif  // VIPU_PLAN_TRACE_READERS_H_
