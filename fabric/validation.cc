// ValidateId and the partition request rules, refused as INVALID_ARGUMENT naming the field.
#include "fabric/validation.h"

#include <set>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "base/status_macros.h"
#include "fabric/enum_names.h"

namespace vipu::fabric {
namespace {

constexpr uint32_t kMaxPartitionSize = 65536;

bool IsIdChar(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' ||
         c == '_' || c == '-';
}

bool IsKnown(RoutingType r) {
  switch (r) {
    case RoutingType::kUndefined:
    case RoutingType::kDnc:
    case RoutingType::kSwnc:
    case RoutingType::kBtnc:
    case RoutingType::kRingSwnc:
      return true;
  }
  return false;
}

bool IsKnown(GwRoutingType r) {
  switch (r) {
    case GwRoutingType::kUndefined:
    case GwRoutingType::kRing:
    case GwRoutingType::kSwRing:
      return true;
  }
  return false;
}

bool IsKnown(SyncType s) {
  switch (s) {
    case SyncType::kUndefined:
    case SyncType::kGs2Default:
    case SyncType::kGs2IndependentRails:
    case SyncType::kPodNativeDefault:
    case SyncType::kPodNativeReplicatedPipeline:
      return true;
  }
  return false;
}

absl::Status Invalid(const std::string& message) { return absl::InvalidArgumentError(message); }

}  // namespace

bool IsPowerOfTwo(uint32_t n) { return n != 0 && (n & (n - 1)) == 0; }

absl::Status ValidateId(std::string_view field_view, std::string_view id_view) {
  // This abseil's string_view is not std::string_view; StrCat needs copies.
  const std::string field(field_view);
  const std::string id(id_view);
  if (id.empty()) return Invalid(absl::StrCat(field, ": must not be empty"));
  if (id.size() > kMaxIdLength) {
    return Invalid(
        absl::StrCat(field, ": must be at most ", kMaxIdLength, " characters, got ", id.size()));
  }
  for (char c : id) {
    if (!IsIdChar(c)) {
      return Invalid(absl::StrCat(field, ": may contain only letters, digits, '.', '_' and '-'; \"",
                                  id, "\" contains '", std::string(1, c), "'"));
    }
  }
  if (id[0] == '.' || id[0] == '_' || id[0] == '-') {
    return Invalid(absl::StrCat(field, ": must start with a letter or digit, got \"", id, "\""));
  }
  return absl::OkStatus();
}

absl::Status ValidatePartitionRequest(const PartitionRequest& request) {
  RETURN_IF_ERROR(ValidateId("id", request.id));
  if (!request.cluster_id.empty()) {
    RETURN_IF_ERROR(ValidateId("cluster_id", request.cluster_id));
  }
  if (!request.allocation_id.empty()) {
    RETURN_IF_ERROR(ValidateId("allocation_id", request.allocation_id));
  }
  const uint32_t size = request.size;
  if (size < 1 || size > kMaxPartitionSize) {
    return Invalid(absl::StrCat("size: must be between 1 and ", kMaxPartitionSize, ", got ", size));
  }
  if (!IsPowerOfTwo(size)) {
    return Invalid(absl::StrCat("size: must be a power of two, got ", size));
  }
  if (request.num_gcds != 0) {
    if (!IsPowerOfTwo(request.num_gcds)) {
      return Invalid(absl::StrCat("num_gcds: must be a power of two, got ", request.num_gcds));
    }
    if (request.num_gcds > size) {
      return Invalid(
          absl::StrCat("num_gcds: must divide the size ", size, ", got ", request.num_gcds));
    }
  }
  const uint32_t num_gcds = request.num_gcds == 0 ? 1 : request.num_gcds;
  // Each replica runs on at least one IPU (so each GCD holds at least as many
  // IPUs as replicas: size/num_gcds >= num_replicas/num_gcds).
  if (request.num_replicas > size) {
    return Invalid(absl::StrCat("num_replicas: must be at most the size ", size,
                                " (each replica needs at least one IPU), got ",
                                request.num_replicas));
  }
  if (request.num_replicas % num_gcds != 0) {
    return Invalid(absl::StrCat("num_replicas: must be a multiple of num_gcds ", num_gcds, ", got ",
                                request.num_replicas));
  }
  if (!IsKnown(request.routing)) {
    return Invalid(absl::StrCat("ipulink_routing_type: unknown routing type ",
                                static_cast<int>(request.routing)));
  }
  if (!IsKnown(request.gw_routing)) {
    return Invalid(absl::StrCat("gw_routing_type: unknown gateway routing type ",
                                static_cast<int>(request.gw_routing)));
  }
  if (!IsKnown(request.sync_type)) {
    return Invalid(
        absl::StrCat("sync_type: unknown sync type ", static_cast<int>(request.sync_type)));
  }
  if (request.sync_type == SyncType::kGs2IndependentRails) {
    return Invalid("sync_type: ST_GS2_INDEPENDENT_RAILS (independent rails) is not supported");
  }
  if (request.reconfigurable && request.sync_type != SyncType::kUndefined &&
      request.sync_type != SyncType::kGs2Default) {
    return Invalid(absl::StrCat(
        "reconfigurable: reconfigurable partitions support only the c2-compatible sync type, got ",
        CliName(request.sync_type)));
  }
  if (request.num_ilds != 0) {
    if (!IsPowerOfTwo(request.num_ilds)) {
      return Invalid(
          absl::StrCat("num_ipulink_segments: must be a power of two, got ", request.num_ilds));
    }
    if (request.num_ilds > size) {
      return Invalid(absl::StrCat("num_ipulink_segments: cannot exceed the size ", size, ", got ",
                                  request.num_ilds));
    }
  }
  if (!request.ipus.empty()) {
    if (request.cluster_id.empty()) {
      return Invalid("ipus: an explicit IPU list requires cluster_id");
    }
    if (request.ipus.size() != size) {
      return Invalid(absl::StrCat("ipus: ", request.ipus.size(),
                                  " IPUs listed for a partition of size ", size));
    }
  }
  return absl::OkStatus();
}

absl::Status CheckIldCount(const ClusterLayout& layout, uint32_t size, uint32_t num_ilds,
                           bool asked, std::string_view ilds_field) {
  const uint32_t has = layout.num_ilds();
  if (num_ilds <= has) return absl::OkStatus();
  const std::string ilds = absl::StrCat(has, has == 1 ? " ILD" : " ILDs");
  const std::string& cluster = layout.cluster().id;
  // Said in terms of what the caller chose: a count of ILDs it asked for
  // is the fault, not the size, which may well fit one ILD.
  if (asked) {
    return Invalid(absl::StrCat(std::string(ilds_field), ": ", num_ilds,
                                " ILDs asked for, but cluster ", cluster, " has only ", ilds));
  }
  return Invalid(absl::StrCat("size: ", size, " IPUs are more than cluster ", cluster, " holds (",
                              ilds, " of ", layout.ipus_per_ild(), " IPUs)"));
}

namespace {

// The ILDs `request` spans: those of its listed IPUs, else as few as hold
// its size. Returns the IPUs of one ILD's segment.
absl::StatusOr<uint32_t> ResolveIlds(const PartitionRequest& request, const ClusterLayout& layout,
                                     PartitionRequest* out) {
  const uint32_t size = request.size;
  const uint32_t ild_ipus = layout.ipus_per_ild();
  const std::string& cluster = layout.cluster().id;
  if (!request.ipus.empty()) {
    std::set<uint32_t> ilds;
    for (const PartitionIpu& p : request.ipus) ilds.insert(p.ild);
    const uint32_t spanned = static_cast<uint32_t>(ilds.size());
    if (request.num_ilds != 0 && request.num_ilds != spanned) {
      return Invalid(absl::StrCat("num_ipulink_segments: is ", request.num_ilds,
                                  " but the listed ipus span ", spanned, " ILD(s)"));
    }
    if (!IsPowerOfTwo(spanned)) {
      return Invalid(absl::StrCat("ipus: must span a power-of-two number of ILDs, got ", spanned));
    }
    out->num_ilds = spanned;
  } else if (out->num_ilds == 0) {
    // As few ILDs as possible (ceil(size / ILD size) for power-of-two ILDs).
    out->num_ilds = 1;
    while (size / out->num_ilds > ild_ipus) out->num_ilds *= 2;
  }
  const uint32_t segment = size / out->num_ilds;
  if (segment > ild_ipus) {
    return Invalid(absl::StrCat("num_ipulink_segments: ", out->num_ilds,
                                " ILD(s) give segments of ", segment, " IPUs, more than the ",
                                ild_ipus, " IPUs of an ILD of cluster ", cluster));
  }
  return segment;
}

// The GW-Link routing of `out`, which spans out->num_ilds ILDs of `layout`:
// none for one ILD, else the default of the cluster's GW-Link topology or
// the one asked for when that topology has it.
absl::Status ResolveGwRouting(const ClusterLayout& layout, PartitionRequest* out) {
  const std::string& cluster = layout.cluster().id;
  const ClusterTopology gw = layout.cluster().cluster_topology;
  if (out->num_ilds == 1) {
    if (out->gw_routing != GwRoutingType::kUndefined) {
      return Invalid(absl::StrCat("gw_routing_type: ", TableName(out->gw_routing),
                                  " applies only to partitions spanning more than one ILD"));
    }
  } else if (out->gw_routing == GwRoutingType::kUndefined) {
    if (gw == ClusterTopology::kLooped) {
      out->gw_routing = GwRoutingType::kRing;
    } else if (gw == ClusterTopology::kSwitched) {
      out->gw_routing = GwRoutingType::kSwRing;
    } else {
      return Invalid(absl::StrCat("num_ipulink_segments: cluster ", cluster,
                                  " has no GW-Link topology (looped or switched), so a "
                                  "partition cannot span ILDs"));
    }
  } else if (out->gw_routing == GwRoutingType::kRing && gw != ClusterTopology::kLooped) {
    return Invalid(
        absl::StrCat("gw_routing_type: RING requires a looped cluster topology; cluster ", cluster,
                     " is ", CliName(gw)));
  } else if (out->gw_routing == GwRoutingType::kSwRing && gw != ClusterTopology::kSwitched) {
    return Invalid(
        absl::StrCat("gw_routing_type: SWRING requires a switched cluster topology; cluster ",
                     cluster, " is ", CliName(gw)));
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<PartitionRequest> ResolveDefaults(const PartitionRequest& request,
                                                 const ClusterLayout& layout) {
  RETURN_IF_ERROR(ValidatePartitionRequest(request));
  return ResolveValidatedDefaults(request, layout);
}

absl::StatusOr<PartitionRequest> ResolveValidatedDefaults(const PartitionRequest& request,
                                                          const ClusterLayout& layout) {
  PartitionRequest out = request;
  const uint32_t size = request.size;
  const uint32_t ild_ipus = layout.ipus_per_ild();
  const std::string& cluster = layout.cluster().id;

  if (out.num_gcds == 0) out.num_gcds = 1;
  if (out.num_replicas == 0) out.num_replicas = out.num_gcds;
  if (out.sync_type == SyncType::kUndefined) {
    out.sync_type = out.reconfigurable ? SyncType::kGs2Default : SyncType::kPodNativeDefault;
  }

  ASSIGN_OR_RETURN(const uint32_t segment, ResolveIlds(request, layout, &out));
  RETURN_IF_ERROR(
      CheckIldCount(layout, size, out.num_ilds, request.num_ilds != 0, "num_ipulink_segments"));

  const bool whole_torus_ild =
      segment == ild_ipus && layout.cluster().topology == IldTopology::kTorus;
  if (out.routing == RoutingType::kUndefined) {
    if (size <= kIpusPerMachine) {
      out.routing = RoutingType::kDnc;
    } else if (whole_torus_ild) {
      out.routing = RoutingType::kRingSwnc;
    } else {
      out.routing = RoutingType::kSwnc;
    }
  } else if (out.routing == RoutingType::kRingSwnc && !whole_torus_ild) {
    return Invalid(
        absl::StrCat("ipulink_routing_type: RINGSWNC needs every segment to be a whole torus ILD (",
                     ild_ipus, " IPUs, cluster ", cluster, " is ",
                     CliName(layout.cluster().topology), "), got segments of ", segment));
  }

  RETURN_IF_ERROR(ResolveGwRouting(layout, &out));
  return out;
}

Partition PartitionFromRequest(const PartitionRequest& resolved, std::vector<PartitionIpu> ipus) {
  Partition p;
  p.id = resolved.id;
  p.routing = resolved.routing;
  p.gw_routing = resolved.gw_routing;
  p.sync_type = resolved.sync_type;
  p.num_gcds = resolved.num_gcds;
  p.num_ilds = resolved.num_ilds;
  p.num_replicas = resolved.num_replicas;
  p.reconfigurable = resolved.reconfigurable;
  p.disable_auto_reset = resolved.disable_auto_reset;
  p.relocatable = resolved.relocatable;
  p.ipus = std::move(ipus);
  return p;
}

}  // namespace vipu::fabric
