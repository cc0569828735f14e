// A minimal streaming JSON writer (the console's responses, the audit log): commas and
// string escaping are its job, the shape is the caller's. Owns the text it
// builds until Take(). Not thread-safe: one writer per response.
#ifndef VIPU_BASE_JSON_WRITER_H_
#define VIPU_BASE_JSON_WRITER_H_

#include <cstdint>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

namespace vipu {

class JsonWriter {
 public:
  JsonWriter& BeginObject() { return Open('{'); }
  JsonWriter& EndObject() { return Close('}'); }
  JsonWriter& BeginArray() { return Open('['); }
  JsonWriter& EndArray() { return Close(']'); }
  JsonWriter& Key(std::string_view key);
  JsonWriter& String(std::string_view value);
  JsonWriter& Int(int64_t value);
  JsonWriter& Double(double value);  // non-finite values become null
  JsonWriter& Bool(bool value);
  JsonWriter& Null();
  // Key(key) then the value.
  template <typename T>
  JsonWriter& Field(std::string_view key, const T& value);

  const std::string& str() const { return out_; }
  std::string Take() { return std::move(out_); }

 private:
  JsonWriter& Open(char c);
  JsonWriter& Close(char c);
  void Separate();

  std::string out_;
  std::vector<bool> first_;  // per open container: nothing written yet
  bool after_key_ = false;
};

// `text` as a JSON string literal, quotes included; bytes that are not
// valid UTF-8 become U+FFFD so the output always parses.
std::string JsonQuote(std::string_view text);

template <typename T>
JsonWriter& JsonWriter::Field(std::string_view key, const T& value) {
  if constexpr (std::is_convertible_v<T, std::string_view>) {
    return Key(key).String(value);
  } else if constexpr (std::is_same_v<T, bool>) {
    return Key(key).Bool(value);
  } else if constexpr (std::is_floating_point_v<T>) {
    return Key(key).Double(value);
  } else {
    return Key(key).Int(static_cast<int64_t>(value));
  }
}

}  // namespace vipu

#endif  // VIPU_BASE_JSON_WRITER_H_
