// The MPI communicator collectives use: the world, or the sub-group of an
// executeOnInstances call. Internal to the popdist library.
#ifndef VIPU_POPDIST_COMMUNICATOR_H_
#define VIPU_POPDIST_COMMUNICATOR_H_

#include <mpi.h>

namespace popdist::internal {

MPI_Comm CurrentCommunicator();

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
