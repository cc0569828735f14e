// The MPI communicator collectives use: the world, or the sub-group of an
// executeOnInstances call. Internal to the popdist library.
#ifndef VIPU_POPDIST_COMMUNICATOR_H_
#define VIPU_POPDIST_COMMUNICATOR_H_

#include <mpi.h>

namespace popdist::internal {

MPI_Comm CurrentCommunicator();

// Makes `comm` the current communicator for its scope and restores the
// previous one when destroyed. Borrows `comm`: the caller frees it after the
// scope. The current communicator is per thread, so scopes on different
// threads do not interfere; on one thread they must nest.
class ScopedCommunicator {
 public:
  explicit ScopedCommunicator(MPI_Comm comm);
  ~ScopedCommunicator();
  ScopedCommunicator(const ScopedCommunicator&) = delete;
  ScopedCommunicator& operator=(const ScopedCommunicator&) = delete;

 private:
  MPI_Comm previous_;
};

}  // namespace popdist::internal

#endif  // VIPU_POPDIST_COMMUNICATOR_H_
