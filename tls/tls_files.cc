// LoadTlsFiles: reads a CA, certificate and key and checks them with OpenSSL.
#include "tls/tls_files.h"

#include <openssl/bio.h>
#include <openssl/err.h>
#include <openssl/pem.h>
#include <openssl/x509.h>
#include <openssl/x509_vfy.h>
#include <openssl/x509v3.h>

#include <fstream>
#include <memory>
#include <sstream>

#include "absl/strings/str_cat.h"
#include "base/status_macros.h"

namespace vipu::tls {
namespace {

struct BioFree {
  void operator()(BIO* b) const { BIO_free(b); }
};
struct CertFree {
  void operator()(X509* c) const { X509_free(c); }
};
struct KeyFree {
  void operator()(EVP_PKEY* k) const { EVP_PKEY_free(k); }
};
struct StoreFree {
  void operator()(X509_STORE* s) const { X509_STORE_free(s); }
};
struct StoreCtxFree {
  void operator()(X509_STORE_CTX* c) const { X509_STORE_CTX_free(c); }
};
using Cert = std::unique_ptr<X509, CertFree>;
using Key = std::unique_ptr<EVP_PKEY, KeyFree>;

absl::Status Refuse(const std::string& path, absl::string_view why) {
  ERR_clear_error();
  return absl::FailedPreconditionError(absl::StrCat(path, ": ", why));
}

absl::StatusOr<std::string> ReadWhole(const std::string& path, absl::string_view role) {
  if (path.empty()) {
    return absl::FailedPreconditionError(absl::StrCat("no ", role, " file given"));
  }
  std::ifstream in(path, std::ios::binary);
  if (!in) return Refuse(path, absl::StrCat("cannot read the ", role, " (missing or unreadable)"));
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

std::unique_ptr<BIO, BioFree> MemBio(const std::string& pem) {
  return std::unique_ptr<BIO, BioFree>(BIO_new_mem_buf(pem.data(), static_cast<int>(pem.size())));
}

Cert ParseCert(const std::string& pem) {
  auto bio = MemBio(pem);
  return Cert(bio ? PEM_read_bio_X509(bio.get(), nullptr, nullptr, nullptr) : nullptr);
}

}  // namespace

absl::Status CheckCertificateNames(const std::string& cert_pem,
                                   const std::vector<std::string>& dns_names,
                                   const std::vector<std::string>& ip_addresses) {
  Cert cert = ParseCert(cert_pem);
  ERR_clear_error();
  if (!cert) return absl::InvalidArgumentError("not a PEM certificate");
  for (const std::string& name : dns_names) {
    if (X509_check_host(cert.get(), name.data(), name.size(), X509_CHECK_FLAG_NO_WILDCARDS,
                        nullptr) != 1) {
      return absl::NotFoundError(absl::StrCat("the certificate does not name ", name));
    }
  }
  for (const std::string& ip : ip_addresses) {
    if (X509_check_ip_asc(cert.get(), ip.c_str(), 0) != 1) {
      return absl::NotFoundError(absl::StrCat("the certificate does not name ", ip));
    }
  }
  ERR_clear_error();
  return absl::OkStatus();
}

bool CertificateExpired(const std::string& cert_pem) {
  Cert cert = ParseCert(cert_pem);
  ERR_clear_error();
  return cert && X509_cmp_current_time(X509_get0_notAfter(cert.get())) < 0;
}

absl::StatusOr<TlsPem> LoadTlsFiles(const TlsFiles& files) {
  TlsPem pem;
  ASSIGN_OR_RETURN(auto ca, ReadWhole(files.ca, "CA certificate"));
  ASSIGN_OR_RETURN(auto cert, ReadWhole(files.cert, "certificate"));
  ASSIGN_OR_RETURN(auto key, ReadWhole(files.key, "private key"));
  pem.ca = std::move(ca);
  pem.cert = std::move(cert);
  pem.key = std::move(key);

  Cert ca_cert = ParseCert(pem.ca);
  if (!ca_cert) return Refuse(files.ca, "not a PEM certificate");
  Cert leaf = ParseCert(pem.cert);
  if (!leaf) return Refuse(files.cert, "not a PEM certificate");
  auto key_bio = MemBio(pem.key);
  Key private_key(key_bio ? PEM_read_bio_PrivateKey(key_bio.get(), nullptr, nullptr, nullptr)
                          : nullptr);
  if (!private_key) return Refuse(files.key, "not a PEM private key");
  if (X509_check_private_key(leaf.get(), private_key.get()) != 1) {
    return Refuse(files.key, absl::StrCat("does not belong to the certificate ", files.cert));
  }
  if (X509_cmp_current_time(X509_get0_notAfter(ca_cert.get())) < 0) {
    return Refuse(files.ca, "the CA certificate has expired");
  }
  if (X509_cmp_current_time(X509_get0_notBefore(ca_cert.get())) > 0) {
    return Refuse(files.ca, "the CA certificate is not valid yet");
  }
  // Chains to the CA; the leaf's own dates are left to the peers (see the
  // header), so time is not checked here.
  std::unique_ptr<X509_STORE, StoreFree> store(X509_STORE_new());
  std::unique_ptr<X509_STORE_CTX, StoreCtxFree> ctx(X509_STORE_CTX_new());
  if (!store || !ctx || X509_STORE_add_cert(store.get(), ca_cert.get()) != 1 ||
      X509_STORE_CTX_init(ctx.get(), store.get(), leaf.get(), nullptr) != 1) {
    return Refuse(files.ca, "cannot build a certificate store (OpenSSL)");
  }
  X509_STORE_CTX_set_flags(ctx.get(), X509_V_FLAG_NO_CHECK_TIME);
  if (X509_verify_cert(ctx.get()) != 1) {
    const int error = X509_STORE_CTX_get_error(ctx.get());
    return Refuse(files.cert, absl::StrCat("not signed by the CA ", files.ca, " (",
                                           X509_verify_cert_error_string(error), ")"));
  }
  ERR_clear_error();
  return pem;
}

}  // namespace vipu::tls
