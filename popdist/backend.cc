// The MPI backend of popdist: initialise, query and finalise it; executeOnInstances.
#include "popdist/backend.h"

#include <mpi.h>

#include <cstdlib>
#include <string>

#include "popdist/communicator.h"
#include "popdist/context.h"

namespace popdist {

void registerDefaultBackend() {}

void initializeBackend() {
  int initialized = 0;
  MPI_Initialized(&initialized);
  if (initialized) return;
  if (MPI_Init(nullptr, nullptr) != MPI_SUCCESS) throw popdist_error("MPI_Init failed");
}

bool isBackendInitialized() {
  int initialized = 0, finalized = 0;
  MPI_Initialized(&initialized);
  MPI_Finalized(&finalized);
  return initialized && !finalized;
}

void finalizeBackend() {
  if (isBackendInitialized()) MPI_Finalize();
}

void init() {
  static bool registered = false;
  registerDefaultBackend();
  initializeBackend();
  if (!registered) {
    registered = true;
    std::atexit([] { finalizeBackend(); });
  }
}

void executeOnInstances(const std::set<unsigned>& instances, const std::function<void()>& func) {
  const bool member = instances.count(getInstanceIndex()) > 0;
  if (!isBackendInitialized()) {
    if (member) func();
    return;
  }
  MPI_Comm sub = MPI_COMM_NULL;
  MPI_Comm_split(internal::CurrentCommunicator(), member ? 1 : MPI_UNDEFINED,
                 static_cast<int>(getInstanceIndex()), &sub);
  if (!member) return;
  internal::ScopedCommunicator scope(sub);
  func();
  MPI_Comm_free(&sub);
}

}  // namespace popdist
