// allReduceSum, allGather and broadcast between poprun's instances over MPI.
#include "popdist/collectives.h"

#include <mpi.h>

#include "popdist/backend.h"
#include "popdist/communicator.h"
#include "popdist/context.h"

namespace popdist {
namespace internal {
namespace {
thread_local MPI_Comm current = MPI_COMM_WORLD;
}  // namespace

MPI_Comm CurrentCommunicator() { return current; }
ScopedCommunicator::ScopedCommunicator(MPI_Comm comm) : previous_(current) { current = comm; }
ScopedCommunicator::~ScopedCommunicator() { current = previous_; }

}  // namespace internal

namespace collectives {
namespace {

MPI_Datatype ToMpi(Type t) {
  switch (t) {
    case Type::kFloat:
      return MPI_FLOAT;
    case Type::kDouble:
      return MPI_DOUBLE;
    case Type::kInt32:
      return MPI_INT32_T;
    case Type::kInt64:
      return MPI_INT64_T;
    case Type::kUint8:
      return MPI_UINT8_T;
  }
  return MPI_BYTE;
}

void Check(const char* what, int rc) {
  if (!isBackendInitialized()) {
    throw popdist_error(std::string(what) +
                        ": the PopDist backend is not initialised; call "
                        "popdist::init() first");
  }
  if (rc != MPI_SUCCESS) throw popdist_error(std::string(what) + ": MPI call failed");
}

void RequireBackend(const char* what) { Check(what, MPI_SUCCESS); }

}  // namespace

void allReduceSum(void* data, size_t count, Type type) {
  RequireBackend("allReduceSum");
  Check("allReduceSum", MPI_Allreduce(MPI_IN_PLACE, data, static_cast<int>(count), ToMpi(type),
                                      MPI_SUM, internal::CurrentCommunicator()));
}

void allGather(const void* send, void* recv, size_t count, Type type) {
  RequireBackend("allGather");
  Check("allGather",
        MPI_Allgather(send, static_cast<int>(count), ToMpi(type), recv, static_cast<int>(count),
                      ToMpi(type), internal::CurrentCommunicator()));
}

void broadcast(void* data, size_t count, Type type, int rootRank) {
  RequireBackend("broadcast");
  Check("broadcast", MPI_Bcast(data, static_cast<int>(count), ToMpi(type), rootRank,
                               internal::CurrentCommunicator()));
}

}  // namespace collectives
}  // namespace popdist
