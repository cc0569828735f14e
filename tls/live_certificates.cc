// LiveCertificates: checked copies of the TLS files that a gRPC file watcher serves.
#include "tls/live_certificates.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <vector>

#include "absl/strings/str_cat.h"
#include "base/status_macros.h"

namespace vipu::tls {
namespace {

namespace fs = std::filesystem;

std::string PrivateParent() {
  for (const char* name : {"RUNTIME_DIRECTORY", "TMPDIR"}) {
    const char* value = std::getenv(name);
    // systemd may list several runtime directories separated by ':'.
    if (value != nullptr && *value != '\0') {
      std::string dir(value);
      return dir.substr(0, dir.find(':'));
    }
  }
  return "/tmp";
}

// Writes through a temporary file and a rename, so the watcher never reads
// half a file.
absl::Status WriteAtomically(const fs::path& path, const std::string& data, mode_t mode) {
  const fs::path tmp = path.string() + ".tmp";
  int fd = open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, mode);
  if (fd < 0) {
    return absl::InternalError(
        absl::StrCat("cannot write ", tmp.string(), ": ", std::strerror(errno)));
  }
  fchmod(fd, mode);
  size_t done = 0;
  while (done < data.size()) {
    ssize_t n = write(fd, data.data() + done, data.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      close(fd);
      return absl::InternalError(absl::StrCat("cannot write ", tmp.string()));
    }
    done += static_cast<size_t>(n);
  }
  close(fd);
  std::error_code ec;
  fs::rename(tmp, path, ec);
  if (ec) return absl::InternalError(absl::StrCat("rename to ", path.string(), ": ", ec.message()));
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<std::unique_ptr<LiveCertificates>> LiveCertificates::Start(const TlsFiles& files) {
  ASSIGN_OR_RETURN(auto pem, LoadTlsFiles(files));
  std::string pattern = PrivateParent() + "/vipu-tls-XXXXXX";
  std::vector<char> buffer(pattern.begin(), pattern.end());
  buffer.push_back('\0');
  if (mkdtemp(buffer.data()) == nullptr) {
    return absl::InternalError(
        absl::StrCat("cannot create a private directory ", pattern, ": ", std::strerror(errno)));
  }
  std::unique_ptr<LiveCertificates> live(new LiveCertificates(files, buffer.data()));
  RETURN_IF_ERROR(live->Install(pem));
  const fs::path dir(live->live_dir_);
  live->provider_ = std::make_shared<grpc::experimental::FileWatcherCertificateProvider>(
      (dir / "key.pem").string(), (dir / "cert.pem").string(), (dir / "ca.pem").string(),
      kRefreshSeconds);
  return live;
}

LiveCertificates::~LiveCertificates() {
  provider_.reset();
  std::error_code ec;
  fs::remove_all(live_dir_, ec);
}

absl::Status LiveCertificates::Install(const TlsPem& pem) {
  const fs::path dir(live_dir_);
  // Each file is replaced whole. A refresh that falls between the key and
  // the certificate may read a pair that does not match; handshakes in that
  // moment fail and the next refresh (kRefreshSeconds later) reads the
  // matching pair.
  RETURN_IF_ERROR(WriteAtomically(dir / "key.pem", pem.key, 0600));
  RETURN_IF_ERROR(WriteAtomically(dir / "cert.pem", pem.cert, 0600));
  return WriteAtomically(dir / "ca.pem", pem.ca, 0600);
}

bool LiveCertificates::CertificateExpired() const {
  std::ifstream in(fs::path(live_dir_) / "cert.pem");
  std::stringstream pem;
  pem << in.rdbuf();
  return tls::CertificateExpired(pem.str());
}

absl::Status LiveCertificates::Reload() {
  vipu::MutexLock lock(&mu_);
  ASSIGN_OR_RETURN(auto pem, LoadTlsFiles(files_));
  return Install(pem);
}

}  // namespace vipu::tls
