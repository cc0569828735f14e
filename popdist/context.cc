// popdist's getters over the POPDIST_* environment, with single-instance defaults.
#include "popdist/context.h"

#include <cerrno>
#include <cstdlib>
#include <regex>
#include <string>

namespace popdist {
namespace {

unsigned ReadUnsigned(const char* name, unsigned fallback) {
  const char* v = std::getenv(name);
  if (v == nullptr || *v == '\0') return fallback;
  char* end = nullptr;
  errno = 0;
  const unsigned long n = std::strtoul(v, &end, 10);
  if (*end != '\0' || errno != 0 || n > 0xffffffffUL || *v == '-' || *v == '+') {
    throw popdist_error(std::string(name) + ": must be a non-negative integer, got " + v);
  }
  return static_cast<unsigned>(n);
}

unsigned ReadPositive(const char* name) {
  const unsigned n = ReadUnsigned(name, 1);
  if (n == 0) throw popdist_error(std::string(name) + ": must be a positive integer, got 0");
  return n;
}

// instanceSize from POPLAR_TARGET_OPTIONS, 0 when absent.
unsigned InstanceSize() {
  const char* v = std::getenv("POPLAR_TARGET_OPTIONS");
  if (v == nullptr) return 0;
  static const std::regex re("\"instanceSize\"\\s*:\\s*\"?([0-9]+)\"?");
  std::cmatch m;
  if (!std::regex_search(v, m, re)) return 0;
  return static_cast<unsigned>(std::stoul(m[1].str()));
}

}  // namespace

bool isPopdistEnvSet() {
  const char* v = std::getenv("POPDIST_NUM_TOTAL_REPLICAS");
  return v != nullptr && *v != '\0';
}

unsigned getNumTotalReplicas() { return ReadPositive("POPDIST_NUM_TOTAL_REPLICAS"); }
unsigned getNumLocalReplicas() { return ReadPositive("POPDIST_NUM_LOCAL_REPLICAS"); }
unsigned getNumIpusPerReplica() { return ReadPositive("POPDIST_NUM_IPUS_PER_REPLICA"); }
unsigned getReplicaIndexOffset() { return ReadUnsigned("POPDIST_REPLICA_INDEX_OFFSET", 0); }
unsigned getLocalInstanceIndex() { return ReadUnsigned("POPDIST_LOCAL_INSTANCE_INDEX", 0); }

std::string getAutoReportDirectory() {
  const char* v = std::getenv("POPDIST_AUTOREPORT_DIRECTORY");
  if (v == nullptr || *v == '\0') return "";
  std::string dir = v;
  if (dir.back() != '/') dir += '/';
  return dir + std::to_string(getInstanceIndex());
}

bool isUniformReplicasPerInstance() {
  return ReadUnsigned("POPDIST_UNIFORM_REPLICAS_PER_INSTANCE", 1) == 1;
}

unsigned getNumInstances() {
  if (!isUniformReplicasPerInstance()) {
    throw popdist_error("getNumInstances: requires a uniform number of replicas per instance");
  }
  return getNumTotalReplicas() / getNumLocalReplicas();
}

unsigned getInstanceIndex() {
  if (!isUniformReplicasPerInstance()) {
    throw popdist_error("getInstanceIndex: requires a uniform number of replicas per instance");
  }
  return getReplicaIndexOffset() / getNumLocalReplicas();
}

unsigned getDeviceId(unsigned ipusPerReplica) {
  const unsigned ipr = ipusPerReplica == 0 ? getNumIpusPerReplica() : ipusPerReplica;
  const unsigned width = getNumLocalReplicas() * ipr;
  unsigned n = InstanceSize();
  if (n == 0) n = getNumTotalReplicas() * ipr;
  if (width > n) {
    throw popdist_error("getDeviceId: this instance needs " + std::to_string(width) +
                        " IPUs, more than the " + std::to_string(n) + " of its domain");
  }
  unsigned id = 0;
  for (unsigned s = 1; s < width; s *= 2) id += n / s;
  return id + (getReplicaIndexOffset() * ipr % n) / width;
}

bool checkNumIpusPerReplica(unsigned expected) { return getNumIpusPerReplica() == expected; }

}  // namespace popdist
