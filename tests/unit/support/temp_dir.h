// A fresh directory under the system temp dir for one test, removed with
// everything in it when the TempDir goes away.
#ifndef VIPU_TESTS_UNIT_SUPPORT_TEMP_DIR_H_
#define VIPU_TESTS_UNIT_SUPPORT_TEMP_DIR_H_

#include <stdlib.h>

#include <filesystem>
#include <string>
#include <system_error>

#include "gtest/gtest.h"

namespace vipu::test {

class TempDir {
 public:
  // `prefix` names the directory (e.g. "vipu-storage"), to tell leftovers apart.
  explicit TempDir(const std::string& prefix = "vipu-test") {
    std::string pattern = (std::filesystem::temp_directory_path() / (prefix + "-XXXXXX")).string();
    if (mkdtemp(pattern.data()) == nullptr) {
      ADD_FAILURE() << "mkdtemp " << pattern << " failed";
      return;
    }
    path_ = pattern;
  }
  ~TempDir() {
    if (path_.empty()) return;
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;

  const std::string& path() const { return path_; }
  // `name` inside the directory.
  std::string File(const std::string& name) const { return path_ + "/" + name; }

 private:
  std::string path_;
};

}  // namespace vipu::test

#endif  // VIPU_TESTS_UNIT_SUPPORT_TEMP_DIR_H_
