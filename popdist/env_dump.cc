// popdist_env_dump: what a launched instance sees. Prints the launch
// variables and every popdist getter as NAME=VALUE lines; with
// --collectives also runs allReduceSum, allGather, broadcast and
// executeOnInstances between the instances. Used by poprun's tests.
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <string>
#include <vector>

#include "popdist/backend.h"
#include "popdist/collectives.h"
#include "popdist/context.h"

extern char** environ;

int main(int argc, char** argv) {
  const bool collectives = argc > 1 && std::strcmp(argv[1], "--collectives") == 0;
  for (char** e = environ; *e != nullptr; ++e) {
    const std::string kv = *e;
    for (const char* prefix :
         {"POPDIST_", "IPUOF_", "POPLAR_TARGET_OPTIONS=", "POPTORCH_CACHE_DIR=",
          "POPART_CACHE_DIR=", "POPXL_CACHE_DIR=", "TF_POPLAR_FLAGS="}) {
      if (kv.rfind(prefix, 0) == 0) std::cout << kv << "\n";
    }
  }
  try {
    std::cout << "popdist.isPopdistEnvSet=" << popdist::isPopdistEnvSet() << "\n"
              << "popdist.getNumTotalReplicas=" << popdist::getNumTotalReplicas() << "\n"
              << "popdist.getNumLocalReplicas=" << popdist::getNumLocalReplicas() << "\n"
              << "popdist.getNumIpusPerReplica=" << popdist::getNumIpusPerReplica() << "\n"
              << "popdist.getReplicaIndexOffset=" << popdist::getReplicaIndexOffset() << "\n"
              << "popdist.getNumInstances=" << popdist::getNumInstances() << "\n"
              << "popdist.getInstanceIndex=" << popdist::getInstanceIndex() << "\n"
              << "popdist.getLocalInstanceIndex=" << popdist::getLocalInstanceIndex() << "\n"
              << "popdist.isUniformReplicasPerInstance=" << popdist::isUniformReplicasPerInstance()
              << "\n"
              << "popdist.getDeviceId=" << popdist::getDeviceId() << "\n"
              << "popdist.getAutoReportDirectory=" << popdist::getAutoReportDirectory() << "\n";
    if (collectives) {
      popdist::init();
      const int64_t index = popdist::getInstanceIndex();
      int64_t sum = index + 1;
      popdist::collectives::allReduceSum(&sum, 1);
      std::vector<int64_t> all(popdist::getNumInstances());
      popdist::collectives::allGather(&index, all.data(), 1, popdist::Type::kInt64);
      double value = index == 0 ? 42.5 : 0;
      popdist::collectives::broadcast(&value, 1, popdist::Type::kDouble, 0);
      // Only instances 0 and 1 take part in this sum.
      auto sub = popdist::executeOnInstances({0, 1}, [&] {
        int64_t s = 10 + index;
        popdist::collectives::allReduceSum(&s, 1);
        return s;
      });
      std::cout << "collectives.allReduceSum=" << sum << "\ncollectives.allGather=";
      for (size_t i = 0; i < all.size(); ++i) std::cout << (i ? "," : "") << all[i];
      std::cout << "\ncollectives.broadcast=" << value
                << "\ncollectives.executeOnInstances=" << (sub ? std::to_string(*sub) : "none")
                << "\n";
    }
  } catch (const popdist::popdist_error& e) {
    std::cerr << "popdist error: " << e.what() << "\n";
    return 2;
  }
  return 0;
}
