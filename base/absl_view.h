// This abseil is built with its own string_view
// (ABSL_OPTION_USE_STD_STRING_VIEW 0), so a std::string_view does not convert
// to StrCat's AlphaNum by itself.
#ifndef VIPU_BASE_ABSL_VIEW_H_
#define VIPU_BASE_ABSL_VIEW_H_

#include <string_view>

#include "absl/strings/string_view.h"

namespace vipu {

inline absl::string_view AbslView(std::string_view s) { return {s.data(), s.size()}; }

}  // namespace vipu

#endif  // VIPU_BASE_ABSL_VIEW_H_
