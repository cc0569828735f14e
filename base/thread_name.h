// Names threads, so that `top -H`, `ps -L`, perf and gdb tell the server's
// threads apart.
#ifndef VIPU_BASE_THREAD_NAME_H_
#define VIPU_BASE_THREAD_NAME_H_

#include <pthread.h>

#include <string>
#include <string_view>
#include <thread>

namespace vipu {

// Names `thread` (which must be running) as `name`; by the time this returns
// the kernel reports the new name. It keeps at most 15 characters: a longer
// `name` is cut there. A name the kernel refuses leaves the old one; nothing
// the caller could act on, so nothing is returned.
inline void NameThread(std::thread& thread, std::string_view name) {
  const std::string cut(name.substr(0, 15));
  pthread_setname_np(thread.native_handle(), cut.c_str());
}

}  // namespace vipu

#endif  // VIPU_BASE_THREAD_NAME_H_
