// The certificates a process is serving and dialing with right now, and how
// they change without a restart. gRPC 1.51 has no call that pushes new
// certificates into running credentials, but its
// FileWatcherCertificateProvider re-reads files on a timer and hands new
// contents to every TLS credential built on it: new handshakes use them,
// established connections (and the calls on them) are left alone. So the
// configured files are checked (LoadTlsFiles) and copied into a private
// directory that the provider watches; Reload() checks them again and
// replaces the copies, or refuses and keeps the old ones. A file changed in
// place but never reloaded is never picked up.
//
// Ownership: owns the private directory (mode 0700, under $RUNTIME_DIRECTORY
// when set, else $TMPDIR or /tmp) and removes it when destroyed; the
// provider is shared with the credentials built on it.
// Thread safety: Reload() and the accessors may be called from any thread.
#ifndef VIPU_TLS_LIVE_CERTIFICATES_H_
#define VIPU_TLS_LIVE_CERTIFICATES_H_

#include <grpcpp/security/tls_certificate_provider.h>

#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "base/mutex.h"
#include "tls/tls_files.h"

namespace vipu::tls {

class LiveCertificates {
 public:
  // How often the provider looks at the private copies: the longest a
  // reloaded certificate waits before new handshakes use it.
  static constexpr unsigned kRefreshSeconds = 1;

  // Checks `files`, copies them into a new private directory and starts
  // watching it. FAILED_PRECONDITION naming the bad file (LoadTlsFiles);
  // INTERNAL when the private directory cannot be written.
  static absl::StatusOr<std::unique_ptr<LiveCertificates>> Start(const TlsFiles& files);
  ~LiveCertificates();  // removes the private directory

  LiveCertificates(const LiveCertificates&) = delete;
  LiveCertificates& operator=(const LiveCertificates&) = delete;

  // Checks the configured files again and, if they pass, replaces the
  // private copies. On failure returns the error (naming the file) and
  // leaves the certificates in use unchanged.
  absl::Status Reload();

  // True when the certificate in use is past its notAfter: peers refuse
  // it, which is worth a warning after a start or a reload.
  bool CertificateExpired() const;

  const TlsFiles& files() const { return files_; }
  // The private copies the provider watches (for tests and logs).
  const std::string& LiveDirForTesting() const { return live_dir_; }
  std::shared_ptr<grpc::experimental::CertificateProviderInterface> provider() const {
    return provider_;
  }

 private:
  LiveCertificates(TlsFiles files, std::string live_dir)
      : files_(std::move(files)), live_dir_(std::move(live_dir)) {}
  absl::Status Install(const TlsPem& pem);

  const TlsFiles files_;
  const std::string live_dir_;
  vipu::Mutex mu_;  // serialises Reload()
  std::shared_ptr<grpc::experimental::CertificateProviderInterface> provider_;
};

}  // namespace vipu::tls

#endif  // VIPU_TLS_LIVE_CERTIFICATES_H_
