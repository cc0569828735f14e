// The IPUoF config files in $HOME/.ipuof.conf.d/ that `vipu create partition` writes and removes.
#include "cli/common/ipuof_files.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <system_error>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "base/status_macros.h"
#include "cli/common/json_output.h"

namespace vipu::cli {
namespace {

namespace fs = std::filesystem;

constexpr const char* kSuffix = "_ipuof.conf";

absl::Status ErrnoError(const std::string& what, int error) {
  return absl::InternalError(absl::StrCat(what, ": ", std::strerror(error)));
}

absl::Status RequireHome(const std::string& home) {
  if (home.empty()) {
    return absl::FailedPreconditionError("HOME is not set: nowhere to keep ~/.ipuof.conf.d");
  }
  return absl::OkStatus();
}

}  // namespace

std::string IpuofConfigDir(const std::string& home) { return home + "/.ipuof.conf.d"; }

std::string IpuofConfigPath(const std::string& home, const std::string& partition_id,
                            uint32_t gcd) {
  return absl::StrCat(IpuofConfigDir(home), "/", partition_id, "_gcd", gcd, kSuffix);
}

absl::StatusOr<std::string> GcdConfigJson(const virmgrpc::PartitionConfig::Gcd& gcd) {
  return MessageToJson(gcd);
}

absl::Status WriteIpuofConfig(const std::string& home, const std::string& partition_id,
                              uint32_t gcd, const std::string& content) {
  RETURN_IF_ERROR(RequireHome(home));
  std::string dir = IpuofConfigDir(home);
  if (::mkdir(dir.c_str(), 0700) != 0 && errno != EEXIST) {
    return ErrnoError(absl::StrCat("creating ", dir), errno);
  }
  std::string path = IpuofConfigPath(home, partition_id, gcd);
  std::string temp = absl::StrCat(path, ".tmp.", ::getpid());
  int fd = ::open(temp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  if (fd < 0) return ErrnoError(absl::StrCat("writing ", temp), errno);
  // The umask may only narrow the mode; make sure it is exactly 0600.
  ::fchmod(fd, 0600);
  size_t written = 0;
  while (written < content.size()) {
    ssize_t n = ::write(fd, content.data() + written, content.size() - written);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      int error = errno;
      ::close(fd);
      ::unlink(temp.c_str());
      return ErrnoError(absl::StrCat("writing ", temp), error);
    }
    written += static_cast<size_t>(n);
  }
  if (::close(fd) != 0) {
    int error = errno;
    ::unlink(temp.c_str());
    return ErrnoError(absl::StrCat("writing ", temp), error);
  }
  if (::rename(temp.c_str(), path.c_str()) != 0) {
    int error = errno;
    ::unlink(temp.c_str());
    return ErrnoError(absl::StrCat("renaming ", temp, " to ", path), error);
  }
  return absl::OkStatus();
}

absl::Status RemoveIpuofConfigs(const std::string& home, const std::string& partition_id) {
  RETURN_IF_ERROR(RequireHome(home));
  std::error_code ec;
  fs::directory_iterator it(IpuofConfigDir(home), ec);
  if (ec == std::errc::no_such_file_or_directory) return absl::OkStatus();
  if (ec) {
    return absl::InternalError(absl::StrCat("reading ", IpuofConfigDir(home), ": ", ec.message()));
  }
  std::string prefix = partition_id + "_gcd";
  for (const fs::directory_entry& entry : it) {
    std::string name = entry.path().filename().string();
    if (!absl::StartsWith(name, prefix) || !absl::EndsWith(name, kSuffix)) continue;
    absl::string_view digits(name);
    digits.remove_prefix(prefix.size());
    digits.remove_suffix(std::strlen(kSuffix));
    bool all_digits = !digits.empty();
    for (char c : digits) all_digits = all_digits && absl::ascii_isdigit(c);
    if (!all_digits) continue;
    if (!fs::remove(entry.path(), ec) && ec) {
      return absl::InternalError(
          absl::StrCat("removing ", entry.path().string(), ": ", ec.message()));
    }
  }
  return absl::OkStatus();
}

}  // namespace vipu::cli
