// EncodeStringList and DecodeStringList: a list of strings as one JSON-array TEXT column.
#include "storage/string_list_codec.h"

#include <cstdint>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "base/status_macros.h"
#include "base/absl_view.h"

namespace vipu::storage {
namespace {

void AppendUtf8(uint32_t cp, std::string* out) {
  if (cp < 0x80) {
    out->push_back(static_cast<char>(cp));
  } else if (cp < 0x800) {
    out->push_back(static_cast<char>(0xC0 | (cp >> 6)));
    out->push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else if (cp < 0x10000) {
    out->push_back(static_cast<char>(0xE0 | (cp >> 12)));
    out->push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out->push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else {
    out->push_back(static_cast<char>(0xF0 | (cp >> 18)));
    out->push_back(static_cast<char>(0x80 | ((cp >> 12) & 0x3F)));
    out->push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out->push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  }
}

class Parser {
 public:
  explicit Parser(std::string_view text) : text_(text) {}

  absl::StatusOr<std::vector<std::string>> Parse() {
    std::vector<std::string> items;
    SkipSpace();
    if (!Consume('[')) return Error("expected '['");
    SkipSpace();
    if (Consume(']')) return End(std::move(items));
    while (true) {
      SkipSpace();
      std::string item;
      RETURN_IF_ERROR(ParseString(&item));
      items.push_back(std::move(item));
      SkipSpace();
      if (Consume(']')) return End(std::move(items));
      if (!Consume(',')) return Error("expected ',' or ']'");
    }
  }

 private:
  absl::StatusOr<std::vector<std::string>> End(std::vector<std::string> items) {
    SkipSpace();
    if (pos_ != text_.size()) return Error("trailing characters after ']'");
    return items;
  }

  absl::Status ParseString(std::string* out) {
    if (!Consume('"')) return Error("expected '\"'");
    while (pos_ < text_.size()) {
      // Copy the run up to the next quote or backslash in one append.
      size_t end = pos_;
      while (end < text_.size() && text_[end] != '"' && text_[end] != '\\') ++end;
      out->append(text_.data() + pos_, end - pos_);
      pos_ = end;
      if (pos_ == text_.size()) break;
      if (text_[pos_++] == '"') return absl::OkStatus();
      if (pos_ >= text_.size()) break;
      char e = text_[pos_++];
      switch (e) {
        case '"':
        case '\\':
        case '/':
          out->push_back(e);
          break;
        case 'b':
          out->push_back('\b');
          break;
        case 'f':
          out->push_back('\f');
          break;
        case 'n':
          out->push_back('\n');
          break;
        case 'r':
          out->push_back('\r');
          break;
        case 't':
          out->push_back('\t');
          break;
        case 'u': {
          uint32_t cp = 0;
          if (!Hex4(&cp)) return Error("bad \\u escape");
          if (cp >= 0xD800 && cp < 0xDC00) {
            uint32_t low = 0;
            if (!Consume('\\') || !Consume('u') || !Hex4(&low) || low < 0xDC00 || low >= 0xE000) {
              return Error("unpaired surrogate in \\u escape");
            }
            cp = 0x10000 + ((cp - 0xD800) << 10) + (low - 0xDC00);
          }
          // What the encoder writes as \u00XX is one raw byte.
          if (cp < 0x80) {
            out->push_back(static_cast<char>(cp));
          } else {
            AppendUtf8(cp, out);
          }
          break;
        }
        default:
          return Error("unknown escape");
      }
    }
    return Error("unterminated string");
  }

  bool Hex4(uint32_t* value) {
    if (text_.size() - pos_ < 4) return false;
    uint32_t v = 0;
    for (int i = 0; i < 4; ++i) {
      char c = text_[pos_++];
      v <<= 4;
      if (c >= '0' && c <= '9') {
        v |= static_cast<uint32_t>(c - '0');
      } else if (c >= 'a' && c <= 'f') {
        v |= static_cast<uint32_t>(c - 'a' + 10);
      } else if (c >= 'A' && c <= 'F') {
        v |= static_cast<uint32_t>(c - 'A' + 10);
      } else {
        return false;
      }
    }
    *value = v;
    return true;
  }

  void SkipSpace() {
    while (pos_ < text_.size() && (text_[pos_] == ' ' || text_[pos_] == '\n' ||
                                   text_[pos_] == '\t' || text_[pos_] == '\r')) {
      ++pos_;
    }
  }

  bool Consume(char c) {
    if (pos_ < text_.size() && text_[pos_] == c) {
      ++pos_;
      return true;
    }
    return false;
  }

  absl::Status Error(std::string_view what) const {
    return absl::InvalidArgumentError(
        absl::StrCat("string list: ", AbslView(what), " at offset ", pos_, " of ", text_.size()));
  }

  std::string_view text_;
  size_t pos_ = 0;
};

}  // namespace

std::string EncodeStringList(const std::vector<std::string>& items) {
  std::string out = "[";
  for (size_t i = 0; i < items.size(); ++i) {
    if (i > 0) out.push_back(',');
    out.push_back('"');
    for (char c : items[i]) {
      unsigned char u = static_cast<unsigned char>(c);
      if (c == '"' || c == '\\') {
        out.push_back('\\');
        out.push_back(c);
      } else if (c == '\n') {
        out += "\\n";
      } else if (u < 0x20 || u == 0x7F) {
        out += absl::StrFormat("\\u%04x", u);
      } else {
        out.push_back(c);
      }
    }
    out.push_back('"');
  }
  out.push_back(']');
  return out;
}

absl::StatusOr<std::vector<std::string>> DecodeStringList(std::string_view text) {
  return Parser(text).Parse();
}

}  // namespace vipu::storage
