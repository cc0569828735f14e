// The three PEM files of one mutual-TLS identity (CA, certificate, private
// key), loaded and checked with OpenSSL before anything uses them, so that a
// bad file is refused with a message naming it instead of failing every
// handshake later.
//
// Thread safety: free functions without shared state; safe from any thread.
#ifndef VIPU_TLS_TLS_FILES_H_
#define VIPU_TLS_TLS_FILES_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"

namespace vipu::tls {

// Paths of one identity. `ca` holds the pod CA that signs every peer.
struct TlsFiles {
  std::string ca;
  std::string cert;
  std::string key;
};

// The contents of a TlsFiles, as read.
struct TlsPem {
  std::string ca;
  std::string cert;
  std::string key;
};

// Reads the three files and checks that each parses, that the key belongs
// to the certificate, that the certificate was signed by the CA and that the
// CA has not expired. An expired certificate (as opposed to CA) is accepted:
// peers refuse it at the handshake, which is what renewing expects. On
// failure returns FAILED_PRECONDITION whose message starts with the path of
// the offending file.
absl::StatusOr<TlsPem> LoadTlsFiles(const TlsFiles& files);

// OK when the certificate in `cert_pem` carries every one of `dns_names`
// and `ip_addresses` as subject alternative names; NOT_FOUND naming the
// first that is missing (INVALID_ARGUMENT when it does not parse).
absl::Status CheckCertificateNames(const std::string& cert_pem,
                                   const std::vector<std::string>& dns_names,
                                   const std::vector<std::string>& ip_addresses);

// True when the certificate in `cert_pem` is past its notAfter; false when
// it is valid or does not parse.
bool CertificateExpired(const std::string& cert_pem);

}  // namespace vipu::tls

#endif  // VIPU_TLS_TLS_FILES_H_
