// poprun's log level, its `HH:MM:SS.mmm PID POPRUN [I]` lines and its POPRUN ERROR line.
#include "poprun/poprun_log.h"

#include <sys/time.h>
#include <unistd.h>

#include <cstdio>
#include <ctime>
#include <string>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

namespace vipu::poprun {

absl::StatusOr<LogLevel> ResolveLogLevel(Verbosity verbosity,
                                         const std::optional<std::string>& env_value) {
  if (verbosity == Verbosity::kDebug) return LogLevel::kDebug;
  if (verbosity == Verbosity::kInfo) return LogLevel::kInfo;
  if (!env_value.has_value() || env_value->empty()) return LogLevel::kWarn;
  const std::string v = absl::AsciiStrToUpper(*env_value);
  if (v == "TRACE") return LogLevel::kTrace;
  if (v == "DEBUG") return LogLevel::kDebug;
  if (v == "INFO") return LogLevel::kInfo;
  if (v == "WARN") return LogLevel::kWarn;
  if (v == "ERR") return LogLevel::kErr;
  if (v == "OFF") return LogLevel::kOff;
  return absl::InvalidArgumentError(absl::StrCat(
      "POPRUN_LOG_LEVEL: must be one of TRACE, DEBUG, INFO, WARN, ERR, OFF, got ", *env_value));
}

std::string FormatLogLine(int hour, int minute, int second, int millis, long pid, LogLevel level,
                          const std::string& message) {
  static constexpr char kLetters[] = {'T', 'D', 'I', 'W', 'E', 'O'};
  return absl::StrFormat("%02d:%02d:%02d.%03d %d POPRUN [%c] %s\n", hour, minute, second, millis,
                         pid, kLetters[static_cast<int>(level)], message);
}

void Logger::Log(LogLevel l, const std::string& message) const {
  if (!Enabled(l)) return;
  struct timeval tv;
  gettimeofday(&tv, nullptr);
  struct tm tm;
  localtime_r(&tv.tv_sec, &tm);
  const std::string line =
      FormatLogLine(tm.tm_hour, tm.tm_min, tm.tm_sec, static_cast<int>(tv.tv_usec / 1000),
                    ::getpid(), l, message);
  std::fputs(line.c_str(), out_);
  std::fflush(out_);
}

int ReportError(absl::string_view message) {
  std::fprintf(stderr, "POPRUN ERROR: %s\n", std::string(message).c_str());
  return 1;
}

}  // namespace vipu::poprun
