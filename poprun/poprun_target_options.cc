// POPLAR_TARGET_OPTIONS: JSON parsing and formatting, options from a GCD, merge with the env.
#include "poprun/poprun_target_options.h"

#include <cctype>

#include "absl/strings/str_cat.h"

namespace vipu::poprun {
namespace {

class JsonReader {
 public:
  explicit JsonReader(const std::string& text) : t_(text) {}

  void Space() {
    while (i_ < t_.size() && std::isspace(static_cast<unsigned char>(t_[i_]))) ++i_;
  }
  bool Eat(char c) {
    Space();
    if (i_ < t_.size() && t_[i_] == c) {
      ++i_;
      return true;
    }
    return false;
  }
  bool String(std::string& out) {
    Space();
    if (i_ >= t_.size() || t_[i_] != '"') return false;
    ++i_;
    while (i_ < t_.size() && t_[i_] != '"') {
      if (t_[i_] == '\\') {
        if (++i_ >= t_.size()) return false;
        char c = t_[i_];
        out.push_back(c == 'n' ? '\n' : c == 't' ? '\t' : c);
      } else {
        out.push_back(t_[i_]);
      }
      ++i_;
    }
    if (i_ >= t_.size()) return false;
    ++i_;
    return true;
  }
  // Numbers and booleans, kept as written.
  bool Bare(std::string& out) {
    Space();
    while (i_ < t_.size() && (std::isalnum(static_cast<unsigned char>(t_[i_])) || t_[i_] == '.' ||
                              t_[i_] == '-' || t_[i_] == '+')) {
      out.push_back(t_[i_++]);
    }
    return !out.empty() && out != "null";
  }
  bool AtEnd() {
    Space();
    return i_ == t_.size();
  }

 private:
  const std::string& t_;
  size_t i_ = 0;
};

std::string Escape(const std::string& s) {
  std::string out;
  for (char c : s) {
    if (c == '"' || c == '\\') out.push_back('\\');
    out.push_back(c);
  }
  return out;
}

}  // namespace

absl::StatusOr<TargetOptions> ParseTargetOptions(const std::string& json,
                                                 const std::string& source) {
  TargetOptions out;
  JsonReader r(json);
  if (r.AtEnd()) return out;
  auto bad = [&] {
    return absl::InvalidArgumentError(
        absl::StrCat(source, ": must be a flat JSON object of string values, got ", json));
  };
  if (!r.Eat('{')) return bad();
  if (r.Eat('}')) return r.AtEnd() ? absl::StatusOr<TargetOptions>(out) : bad();
  do {
    std::string key, value;
    if (!r.String(key) || !r.Eat(':')) return bad();
    if (!r.String(value) && !r.Bare(value)) return bad();
    out.emplace_back(std::move(key), std::move(value));
  } while (r.Eat(','));
  if (!r.Eat('}') || !r.AtEnd()) return bad();
  return out;
}

std::string FormatTargetOptions(const TargetOptions& options) {
  std::string out = "{";
  for (size_t i = 0; i < options.size(); ++i) {
    absl::StrAppend(&out, i ? "," : "", "\"", Escape(options[i].first), "\":\"",
                    Escape(options[i].second), "\"");
  }
  return out + "}";
}

TargetOptions TargetOptionsFromGcd(const std::map<std::string, std::string>& attributes,
                                   size_t num_devices) {
  auto get = [&](const char* key, const char* fallback) {
    auto it = attributes.find(key);
    return it == attributes.end() ? std::string(fallback) : it->second;
  };
  return {
      {"ipuLinkDomainSize", get("IPU-Link Domain Size", "")},
      {"ipuLinkConfiguration", get("IPU-Link Configuration", "default")},
      {"ipuLinkTopology", get("IPU-Link Topology", "mesh")},
      {"gatewayMode", "true"},
      {"instanceSize", absl::StrCat(num_devices)},
  };
}

TargetOptions MergeTargetOptions(const TargetOptions& base, const TargetOptions& overrides) {
  TargetOptions out = base;
  for (const auto& [key, value] : overrides) {
    bool replaced = false;
    for (auto& kv : out) {
      if (kv.first == key) {
        kv.second = value;
        replaced = true;
      }
    }
    if (!replaced) out.emplace_back(key, value);
  }
  return out;
}

}  // namespace vipu::poprun
