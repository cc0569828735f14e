// The communication backend between instances: MPI, as launched by poprun's
// mpirun. Collectives need an initialised backend; init() does it and finalises
// at exit.
#ifndef VIPU_POPDIST_BACKEND_H_
#define VIPU_POPDIST_BACKEND_H_

#include <functional>
#include <optional>
#include <set>
#include <type_traits>

namespace popdist {

// The default (and only) backend is OpenMPI; registering it is a no-op kept
// for API compatibility.
void registerDefaultBackend();
void initializeBackend();
bool isBackendInitialized();
void finalizeBackend();

// registerDefaultBackend + initializeBackend + finalizeBackend at exit.
void init();

// Runs `func` only on the instances in `instances`; collectives inside it
// involve those instances only. Every instance must call it (it is a
// collective when the backend is initialised). Returns func's result on a
// member instance, nothing elsewhere.
void executeOnInstances(const std::set<unsigned>& instances, const std::function<void()>& func);

template <typename F, typename R = std::invoke_result_t<F>>
std::enable_if_t<!std::is_void_v<R>, std::optional<R>> executeOnInstances(
    const std::set<unsigned>& instances, F func) {
  std::optional<R> result;
  executeOnInstances(instances, std::function<void()>([&] { result = func(); }));
  return result;
}

}  // namespace popdist

#endif  // VIPU_POPDIST_BACKEND_H_
