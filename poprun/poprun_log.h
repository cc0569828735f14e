// poprun's log lines on stderr: `HH:MM:SS.mmm PID POPRUN [I] message`
// as Graphcore's poprun writes them. The level comes from -v / -vv, else from
// POPRUN_LOG_LEVEL (TRACE DEBUG INFO WARN ERR OFF), else WARN. An error
// that ends the run is one "POPRUN ERROR: ..." line, at every level.
#ifndef VIPU_POPRUN_POPRUN_LOG_H_
#define VIPU_POPRUN_POPRUN_LOG_H_

#include <cstdio>
#include <optional>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "poprun/poprun_options.h"

namespace vipu::poprun {

enum class LogLevel { kTrace = 0, kDebug, kInfo, kWarn, kErr, kOff };

// INVALID_ARGUMENT for an unknown POPRUN_LOG_LEVEL value.
absl::StatusOr<LogLevel> ResolveLogLevel(Verbosity verbosity,
                                         const std::optional<std::string>& env_value);

// Borrows `out`, which it never closes. Thread-safe: it is immutable and each
// line goes out in one fputs, which stdio does not interleave.
class Logger {
 public:
  explicit Logger(LogLevel level, std::FILE* out = stderr) : level_(level), out_(out) {}

  bool Enabled(LogLevel l) const { return l >= level_ && level_ != LogLevel::kOff; }
  void Log(LogLevel l, const std::string& message) const;
  void Trace(const std::string& m) const { Log(LogLevel::kTrace, m); }
  void Debug(const std::string& m) const { Log(LogLevel::kDebug, m); }
  void Info(const std::string& m) const { Log(LogLevel::kInfo, m); }
  void Warn(const std::string& m) const { Log(LogLevel::kWarn, m); }
  void Error(const std::string& m) const { Log(LogLevel::kErr, m); }

 private:
  LogLevel level_;
  std::FILE* out_;
};

// "HH:MM:SS.mmm PID POPRUN [L] message" for the given local time parts.
std::string FormatLogLine(int hour, int minute, int second, int millis, long pid, LogLevel level,
                          const std::string& message);

// Prints "POPRUN ERROR: <message>" on stderr, whatever the log level, and
// returns 1, poprun's exit code for its own errors.
int ReportError(absl::string_view message);

}  // namespace vipu::poprun

#endif  // VIPU_POPRUN_POPRUN_LOG_H_
