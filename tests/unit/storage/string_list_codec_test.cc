// The TEXT encoding of a partition's errors: any bytes round-trip, and
// malformed text is refused (not misread).
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "storage/string_list_codec.h"

namespace vipu::storage {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

TEST(StorageStringListCodecTest, RoundTripsAnyBytes) {
  std::vector<std::vector<std::string>> cases = {
      {},
      {""},
      {"", ""},
      {"plain", "two words"},
      {"quote \" backslash \\ slash /", "\b\f\n\r\t"},
      {std::string("nul\0in the middle", 17), std::string(1, '\0')},
      {"ünïcödé 🎉", "\xff\xfe\x80 not utf-8", "\x7f\x01\x1f"},
      {"[\"a\",\"b\"]", ",", "]", "\\u0041"},
  };
  std::string all_bytes;
  for (int b = 0; b < 256; ++b) all_bytes.push_back(static_cast<char>(b));
  cases.push_back({all_bytes, all_bytes + all_bytes});
  for (const auto& items : cases) {
    std::string text = EncodeStringList(items);
    auto back = DecodeStringList(text);
    ASSERT_TRUE(back.ok()) << back.status() << " for " << text;
    EXPECT_EQ(*back, items) << text;
  }
}

TEST(StorageStringListCodecTest, EncodesAsJsonArray) {
  EXPECT_EQ(EncodeStringList({}), "[]");
  EXPECT_EQ(EncodeStringList({"a", "b\"c", "d\ne", std::string(1, '\x01')}),
            "[\"a\",\"b\\\"c\",\"d\\ne\",\"\\u0001\"]");
}

TEST(StorageStringListCodecTest, AcceptsWhitespaceAndJsonEscapes) {
  auto v = DecodeStringList(" [ \"a\" ,\n\"\\u00e9\\u20ac\\ud83c\\udf89\\/\" ] ");
  ASSERT_TRUE(v.ok()) << v.status();
  EXPECT_THAT(*v, ElementsAre("a", "é€🎉/"));
}

// The decoder copies plain runs in one piece: escapes at the start, the end,
// back to back and between runs must still land in place.
TEST(StorageStringListCodecTest, DecodesRunsBetweenEscapes) {
  auto v = DecodeStringList(
      "[\"\\\\start\", \"end\\n\", \"\\\"\\\"\", \"a\\tb\\u0041c\\/d\", \"plain run\", \"\"]");
  ASSERT_TRUE(v.ok()) << v.status();
  EXPECT_THAT(*v, ElementsAre("\\start", "end\n", "\"\"", "a\tbAc/d", "plain run", ""));
}

TEST(StorageStringListCodecTest, RefusesMalformedText) {
  struct Case {
    std::string text;
    std::string why;
  };
  std::vector<Case> cases = {
      {"", "expected '['"},
      {"\"a\"", "expected '['"},
      {"[", "expected '\"'"},
      {"[\"a\"", "expected ',' or ']'"},
      {"[\"a\" \"b\"]", "expected ',' or ']'"},
      {"[\"a\",]", "expected '\"'"},
      {"[1]", "expected '\"'"},
      {"[\"abc", "unterminated string"},
      {"[\"abc\\", "unterminated string"},
      {"[\"\\x\"]", "unknown escape"},
      {"[\"\\u12\"]", "bad \\u escape"},
      {"[\"\\uzzzz\"]", "bad \\u escape"},
      {"[\"\\ud83c\"]", "unpaired surrogate"},
      {"[\"\\ud83c\\u0041\"]", "unpaired surrogate"},
      {"[\"a\"] x", "trailing characters"},
      {"[][]", "trailing characters"},
  };
  for (const Case& c : cases) {
    auto v = DecodeStringList(c.text);
    ASSERT_FALSE(v.ok()) << c.text;
    EXPECT_EQ(v.status().code(), absl::StatusCode::kInvalidArgument) << c.text;
    EXPECT_THAT(std::string(v.status().message()), HasSubstr(c.why)) << c.text;
    EXPECT_THAT(std::string(v.status().message()), HasSubstr("string list: ")) << c.text;
  }
}

}  // namespace
}  // namespace vipu::storage
