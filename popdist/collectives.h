// Host-side collectives between the instances of a poprun launch, over
// MPI. With one instance (or outside poprun) they are identities. They
// throw popdist_error when the backend is not initialised (see init()).
#ifndef VIPU_POPDIST_COLLECTIVES_H_
#define VIPU_POPDIST_COLLECTIVES_H_

#include <cstddef>
#include <cstdint>

namespace popdist {

// Stands in for poplar::Type in these signatures.
enum class Type { kFloat, kDouble, kInt32, kInt64, kUint8 };

namespace collectives {

// In place: every instance ends with the element-wise sum.
void allReduceSum(void* data, size_t count, Type type);
// `recv` holds count elements from each instance, in instance order.
void allGather(const void* send, void* recv, size_t count, Type type);
// In place, from the instance with index `rootRank`.
void broadcast(void* data, size_t count, Type type, int rootRank = 0);

inline void allReduceSum(double* d, size_t n) { allReduceSum(d, n, Type::kDouble); }
inline void allReduceSum(float* d, size_t n) { allReduceSum(d, n, Type::kFloat); }
inline void allReduceSum(int64_t* d, size_t n) { allReduceSum(d, n, Type::kInt64); }

}  // namespace collectives
}  // namespace popdist

#endif  // VIPU_POPDIST_COLLECTIVES_H_
