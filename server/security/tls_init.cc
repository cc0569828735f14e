// GenerateTlsCertificates: the CA, server and client certificates of `--tls-init` (OpenSSL).
#include "server/security/tls_init.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <openssl/bn.h>
#include <openssl/ec.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/rand.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <ctime>
#include <filesystem>
#include <memory>
#include <set>
#include <utility>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "base/status_macros.h"
#include "fabric/validation.h"
#include "spdlog/spdlog.h"
#include "tls/peer_identity.h"

namespace vipu::server {
namespace {

namespace fs = std::filesystem;

struct KeyFree {
  void operator()(EVP_PKEY* k) const { EVP_PKEY_free(k); }
};
struct CertFree {
  void operator()(X509* c) const { X509_free(c); }
};
using Key = std::unique_ptr<EVP_PKEY, KeyFree>;
using Cert = std::unique_ptr<X509, CertFree>;

// The OpenSSL error queue as text, then cleared.
std::string OpensslError(const char* what) {
  std::string out = what;
  unsigned long e;
  while ((e = ERR_get_error()) != 0) {
    char buf[256];
    ERR_error_string_n(e, buf, sizeof(buf));
    absl::StrAppend(&out, ": ", buf);
  }
  return out;
}

bool IsIpLiteral(const std::string& host) {
  unsigned char buf[16];
  return inet_pton(AF_INET, host.c_str(), buf) == 1 || inet_pton(AF_INET6, host.c_str(), buf) == 1;
}

absl::Status ValidateHost(const std::string& host, const char* flag = "--tls-hosts") {
  if (host.empty()) return absl::InvalidArgumentError(absl::StrCat(flag, ": empty host name"));
  if (IsIpLiteral(host)) return absl::OkStatus();
  if (host.size() > 253) {
    return absl::InvalidArgumentError(
        absl::StrCat(flag, ": host name longer than 253 characters: ", host.substr(0, 20)));
  }
  for (char c : host) {
    if (!absl::ascii_isalnum(static_cast<unsigned char>(c)) && c != '-' && c != '.' && c != '*') {
      return absl::InvalidArgumentError(absl::StrCat(
          flag, ": '", host, "' is neither an IP address nor a DNS name ([A-Za-z0-9.-*])"));
    }
  }
  return absl::OkStatus();
}

absl::StatusOr<Key> NewKey() {
  Key key(EVP_EC_gen("P-256"));
  if (!key) return absl::InternalError(OpensslError("EC P-256 key generation failed"));
  return key;
}

absl::Status AddExtension(X509* cert, X509* issuer, int nid, const std::string& value) {
  X509V3_CTX ctx;
  X509V3_set_ctx_nodb(&ctx);
  X509V3_set_ctx(&ctx, issuer, cert, nullptr, nullptr, 0);
  X509_EXTENSION* ext = X509V3_EXT_nconf_nid(nullptr, &ctx, nid, value.c_str());
  if (ext == nullptr) {
    return absl::InternalError(OpensslError(absl::StrCat("extension ", value).c_str()));
  }
  int ok = X509_add_ext(cert, ext, -1);
  X509_EXTENSION_free(ext);
  if (ok != 1) return absl::InternalError(OpensslError("X509_add_ext"));
  return absl::OkStatus();
}

struct CertSpec {
  std::string common_name;
  bool ca = false;
  std::string extended_usage;  // "serverAuth", "clientAuth"
  std::string subject_alt_names;
  int validity_days = 825;
};

// Signs `subject_key` with `issuer_key`; issuer null: self-signed.
absl::StatusOr<Cert> Issue(const CertSpec& spec, EVP_PKEY* subject_key, X509* issuer,
                           EVP_PKEY* issuer_key) {
  Cert cert(X509_new());
  if (!cert) return absl::InternalError("X509_new failed");
  X509_set_version(cert.get(), 2);  // v3
  unsigned char serial_bytes[16];
  if (RAND_bytes(serial_bytes, sizeof(serial_bytes)) != 1) {
    return absl::InternalError(OpensslError("RAND_bytes"));
  }
  serial_bytes[0] &= 0x7f;  // positive
  BIGNUM* bn = BN_bin2bn(serial_bytes, sizeof(serial_bytes), nullptr);
  BN_to_ASN1_INTEGER(bn, X509_get_serialNumber(cert.get()));
  BN_free(bn);

  const long day = 24L * 3600;
  if (spec.validity_days > 0) {
    X509_gmtime_adj(X509_getm_notBefore(cert.get()), -3600);  // tolerate clock skew
    X509_gmtime_adj(X509_getm_notAfter(cert.get()), day * spec.validity_days);
  } else {
    X509_gmtime_adj(X509_getm_notBefore(cert.get()), -2 * day);
    X509_gmtime_adj(X509_getm_notAfter(cert.get()), -day);
  }
  X509_NAME* name = X509_get_subject_name(cert.get());
  X509_NAME_add_entry_by_txt(name, "O", MBSTRING_ASC,
                             reinterpret_cast<const unsigned char*>("open V-IPU"), -1, -1, 0);
  X509_NAME_add_entry_by_txt(name, "CN", MBSTRING_ASC,
                             reinterpret_cast<const unsigned char*>(spec.common_name.c_str()), -1,
                             -1, 0);
  X509_set_issuer_name(cert.get(), issuer ? X509_get_subject_name(issuer) : name);
  X509_set_pubkey(cert.get(), subject_key);
  X509* issuer_cert = issuer ? issuer : cert.get();
  absl::Status s;
  if (spec.ca) {
    s = AddExtension(cert.get(), issuer_cert, NID_basic_constraints, "critical,CA:TRUE,pathlen:0");
    if (s.ok())
      s = AddExtension(cert.get(), issuer_cert, NID_key_usage, "critical,keyCertSign,cRLSign");
  } else {
    s = AddExtension(cert.get(), issuer_cert, NID_basic_constraints, "critical,CA:FALSE");
    if (s.ok()) {
      s = AddExtension(cert.get(), issuer_cert, NID_key_usage, "critical,digitalSignature");
    }
    if (s.ok()) s = AddExtension(cert.get(), issuer_cert, NID_ext_key_usage, spec.extended_usage);
    if (s.ok() && !spec.subject_alt_names.empty()) {
      s = AddExtension(cert.get(), issuer_cert, NID_subject_alt_name, spec.subject_alt_names);
    }
  }
  if (s.ok()) s = AddExtension(cert.get(), issuer_cert, NID_subject_key_identifier, "hash");
  if (s.ok() && issuer != nullptr) {
    s = AddExtension(cert.get(), issuer_cert, NID_authority_key_identifier, "keyid:always");
  }
  RETURN_IF_ERROR(s);
  if (X509_sign(cert.get(), issuer_key ? issuer_key : subject_key, EVP_sha256()) == 0) {
    return absl::InternalError(OpensslError("X509_sign"));
  }
  return cert;
}

// Writes through a temporary file and rename, so a crash never leaves half a
// key; `mode` is set before any byte is written.
absl::Status WritePem(const fs::path& path, mode_t mode, const std::function<int(FILE*)>& write) {
  fs::path tmp = path;
  tmp += ".tmp";
  int fd = open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, mode);
  if (fd < 0) return absl::InternalError(absl::StrCat("cannot write ", tmp.string()));
  fchmod(fd, mode);
  FILE* f = fdopen(fd, "w");
  if (f == nullptr) {
    close(fd);
    return absl::InternalError(absl::StrCat("cannot write ", tmp.string()));
  }
  int ok = write(f);
  bool flushed = std::fflush(f) == 0 && fsync(fileno(f)) == 0;
  std::fclose(f);
  if (ok != 1 || !flushed) {
    return absl::InternalError(OpensslError(absl::StrCat("writing ", path.string()).c_str()));
  }
  std::error_code ec;
  fs::rename(tmp, path, ec);
  if (ec) return absl::InternalError(absl::StrCat("rename to ", path.string(), ": ", ec.message()));
  return absl::OkStatus();
}

absl::Status WriteCert(const fs::path& path, X509* cert) {
  return WritePem(path, 0644, [cert](FILE* f) { return PEM_write_X509(f, cert); });
}

absl::Status WriteKey(const fs::path& path, EVP_PKEY* key) {
  return WritePem(path, 0600, [key](FILE* f) {
    return PEM_write_PrivateKey(f, key, nullptr, nullptr, 0, nullptr, nullptr);
  });
}

absl::StatusOr<Cert> ReadCert(const fs::path& path) {
  FILE* f = std::fopen(path.c_str(), "r");
  if (f == nullptr) return absl::NotFoundError(absl::StrCat("cannot read ", path.string()));
  Cert cert(PEM_read_X509(f, nullptr, nullptr, nullptr));
  std::fclose(f);
  if (!cert) return absl::InvalidArgumentError(OpensslError(path.c_str()));
  return cert;
}

absl::StatusOr<Key> ReadKey(const fs::path& path) {
  FILE* f = std::fopen(path.c_str(), "r");
  if (f == nullptr) return absl::NotFoundError(absl::StrCat("cannot read ", path.string()));
  Key key(PEM_read_PrivateKey(f, nullptr, nullptr, nullptr));
  std::fclose(f);
  if (!key) return absl::InvalidArgumentError(OpensslError(path.c_str()));
  return key;
}

// Writes DIR/<role>/{cert.pem,key.pem,ca.pem}.
absl::Status WriteRole(const fs::path& dir, const CertSpec& spec, X509* ca, EVP_PKEY* ca_key) {
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec)
    return absl::InternalError(absl::StrCat("cannot create ", dir.string(), ": ", ec.message()));
  ASSIGN_OR_RETURN(Key key, NewKey());
  ASSIGN_OR_RETURN(Cert cert, Issue(spec, key.get(), ca, ca_key));
  absl::Status s = WriteKey(dir / "key.pem", key.get());
  if (s.ok()) s = WriteCert(dir / "cert.pem", cert.get());
  if (s.ok()) s = WriteCert(dir / "ca.pem", ca);
  return s;
}

absl::StatusOr<std::pair<Cert, Key>> ReadCa(const fs::path& dir) {
  auto c = ReadCert(dir / "ca.pem");
  if (!c.ok()) return absl::FailedPreconditionError(c.status().message());
  auto k = ReadKey(dir / "ca-key.pem");
  if (!k.ok()) return absl::FailedPreconditionError(k.status().message());
  if (X509_check_private_key(c->get(), k->get()) != 1) {
    ERR_clear_error();
    return absl::FailedPreconditionError(absl::StrCat(
        dir.string(), ": ca-key.pem does not belong to ca.pem; remove both to start afresh"));
  }
  return std::make_pair(*std::move(c), *std::move(k));
}

absl::StatusOr<CertSpec> AgentSpec(const AgentCertificateSpec& agent, int validity_days) {
  if (agent.ids.empty()) return absl::InvalidArgumentError("--tls-agents: an entry names no agent");
  std::string sans;
  for (const std::string& id : agent.ids) {
    if (absl::Status s = fabric::ValidateId("agent id", id); !s.ok()) {
      return absl::InvalidArgumentError(absl::StrCat("--tls-agents: ", s.message()));
    }
    absl::StrAppend(&sans, sans.empty() ? "" : ",", "DNS:", id);
  }
  for (const std::string& host : agent.hosts) {
    RETURN_IF_ERROR(ValidateHost(host, "--tls-agents"));
    absl::StrAppend(&sans, ",", IsIpLiteral(host) ? "IP:" : "DNS:", host);
  }
  return CertSpec{agent.ids.front(), false, "serverAuth,clientAuth", sans, validity_days};
}

absl::StatusOr<std::string> IssueAgent(const fs::path& dir, const AgentCertificateSpec& agent,
                                       int validity_days, X509* ca, EVP_PKEY* ca_key) {
  ASSIGN_OR_RETURN(const CertSpec spec, AgentSpec(agent, validity_days));
  const fs::path agent_dir = dir / "agents" / agent.ids.front();
  RETURN_IF_ERROR(WriteRole(agent_dir, spec, ca, ca_key));
  return agent_dir.string();
}

}  // namespace

absl::StatusOr<std::vector<AgentCertificateSpec>> ParseTlsAgents(const std::string& list) {
  std::vector<AgentCertificateSpec> agents;
  std::set<std::string> seen;
  for (absl::string_view entry : absl::StrSplit(list, ',')) {
    if (entry.empty()) return absl::InvalidArgumentError("--tls-agents: empty entry");
    AgentCertificateSpec agent;
    const size_t at = entry.find('@');
    absl::string_view ids = entry.substr(0, at);
    for (absl::string_view id : absl::StrSplit(ids, '+')) agent.ids.emplace_back(id);
    if (at != absl::string_view::npos) {
      for (absl::string_view host : absl::StrSplit(entry.substr(at + 1), '+')) {
        agent.hosts.emplace_back(host);
      }
    }
    RETURN_IF_ERROR(AgentSpec(agent, 1));
    for (const std::string& id : agent.ids) {
      if (!seen.insert(id).second) {
        return absl::InvalidArgumentError(
            absl::StrCat("--tls-agents: agent id '", id, "' given twice"));
      }
    }
    agents.push_back(std::move(agent));
  }
  return agents;
}

absl::StatusOr<std::string> IssueAgentCertificate(const std::string& dir,
                                                  const AgentCertificateSpec& agent,
                                                  int validity_days) {
  ASSIGN_OR_RETURN(const auto ca, ReadCa(fs::path(dir)));
  return IssueAgent(fs::path(dir), agent, validity_days, ca.first.get(), ca.second.get());
}

absl::StatusOr<TlsInitResult> GenerateTlsCertificates(const TlsInitOptions& options) {
  if (options.dir.empty()) return absl::InvalidArgumentError("--tls-init: must name a directory");
  if (options.validity_days > 36500) {
    return absl::InvalidArgumentError(
        absl::StrCat("--tls-validity-days: must be at most 36500, got ", options.validity_days));
  }
  std::string sans =
      absl::StrCat("URI:", tls::kServerCertificateUri, ",DNS:localhost,IP:127.0.0.1");
  for (const AgentCertificateSpec& agent : options.agents) {
    RETURN_IF_ERROR(AgentSpec(agent, options.validity_days));
  }
  for (const std::string& host : options.extra_hosts) {
    RETURN_IF_ERROR(ValidateHost(host));
    absl::StrAppend(&sans, ",", IsIpLiteral(host) ? "IP:" : "DNS:", host);
  }
  const fs::path dir(options.dir);
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) {
    return absl::InternalError(
        absl::StrCat("--tls-init: cannot create ", options.dir, ": ", ec.message()));
  }
  TlsInitResult result;
  result.server_dir = (dir / "server").string();
  result.client_dir = (dir / "client").string();

  Cert ca;
  Key ca_key;
  if (fs::exists(dir / "ca.pem") && fs::exists(dir / "ca-key.pem")) {
    auto pair = ReadCa(dir);
    if (!pair.ok()) return absl::InvalidArgumentError(pair.status().message());
    ca = std::move(pair->first);
    ca_key = std::move(pair->second);
    result.reused_ca = true;
  } else {
    ASSIGN_OR_RETURN(Key k, NewKey());
    CertSpec spec{"open V-IPU CA", /*ca=*/true, "", "", options.validity_days};
    ASSIGN_OR_RETURN(Cert c, Issue(spec, k.get(), nullptr, nullptr));
    RETURN_IF_ERROR(WriteKey(dir / "ca-key.pem", k.get()));
    RETURN_IF_ERROR(WriteCert(dir / "ca.pem", c.get()));
    ca = std::move(c);
    ca_key = std::move(k);
  }
  CertSpec server{"vipu-server", false, "serverAuth,clientAuth", sans, options.validity_days};
  RETURN_IF_ERROR(WriteRole(dir / "server", server, ca.get(), ca_key.get()));
  CertSpec client{"vipu-client", false, "clientAuth", "", options.validity_days};
  RETURN_IF_ERROR(WriteRole(dir / "client", client, ca.get(), ca_key.get()));
  for (const AgentCertificateSpec& agent : options.agents) {
    ASSIGN_OR_RETURN(std::string agent_dir,
                     IssueAgent(dir, agent, options.validity_days, ca.get(), ca_key.get()));
    result.agent_dirs.push_back(std::move(agent_dir));
  }
  spdlog::debug("tls-init: {} ({} CA), validity {} days", options.dir,
                result.reused_ca ? "kept the" : "new", options.validity_days);
  return result;
}

}  // namespace vipu::server
