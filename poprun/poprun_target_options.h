// POPLAR_TARGET_OPTIONS as poprun merges them: the partition's options (the GCD
// attributes, mirroring fabric::TargetOptions) overridden key by key by the
// environment.
#ifndef VIPU_POPRUN_POPRUN_TARGET_OPTIONS_H_
#define VIPU_POPRUN_POPRUN_TARGET_OPTIONS_H_

#include <map>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"

namespace vipu::poprun {

using TargetOptions = std::vector<std::pair<std::string, std::string>>;  // ordered

// A flat JSON object; string, number and boolean values are kept as text.
// INVALID_ARGUMENT naming `source` for anything else. Empty text is {}.
absl::StatusOr<TargetOptions> ParseTargetOptions(const std::string& json,
                                                 const std::string& source);

// {"ipuLinkDomainSize":"64",...} with keys in order.
std::string FormatTargetOptions(const TargetOptions& options);

// From a GCD's IPUoF attributes ("IPU-Link Domain Size", ...) and its
// device count: ipuLinkDomainSize, ipuLinkConfiguration, ipuLinkTopology,
// gatewayMode, instanceSize.
TargetOptions TargetOptionsFromGcd(const std::map<std::string, std::string>& attributes,
                                   size_t num_devices);

// `base` with every key of `overrides` replaced or appended.
TargetOptions MergeTargetOptions(const TargetOptions& base, const TargetOptions& overrides);

}  // namespace vipu::poprun

#endif  // VIPU_POPRUN_POPRUN_TARGET_OPTIONS_H_
