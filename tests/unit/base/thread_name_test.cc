// NameThread: the name the kernel reports for a thread.
#include <sys/syscall.h>
#include <unistd.h>

#include <fstream>
#include <string>
#include <thread>

#include "base/mutex.h"
#include "base/thread_name.h"
#include "gtest/gtest.h"

namespace vipu {
namespace {

// What /proc says the calling thread is called.
std::string OwnName() {
  std::ifstream comm("/proc/self/task/" + std::to_string(syscall(SYS_gettid)) + "/comm");
  std::string name;
  std::getline(comm, name);
  return name;
}

// A thread that reports its name once told to, and then ends.
class Reporter {
 public:
  Reporter() : thread_([this] { Run(); }) {}
  std::string NameSeen() {
    {
      MutexLock lock(&mu_);
      asked_ = true;
      changed_.SignalAll();
      while (!answered_) changed_.Wait(&mu_);
    }
    thread_.join();
    MutexLock lock(&mu_);
    return name_;
  }
  std::thread& thread() { return thread_; }

 private:
  void Run() {
    MutexLock lock(&mu_);
    while (!asked_) changed_.Wait(&mu_);
    name_ = OwnName();
    answered_ = true;
    changed_.SignalAll();
  }
  Mutex mu_;
  CondVar changed_;
  bool asked_ ABSL_GUARDED_BY(mu_) = false;
  bool answered_ ABSL_GUARDED_BY(mu_) = false;
  std::string name_ ABSL_GUARDED_BY(mu_);
  std::thread thread_;  // last: it starts once the members above exist
};

TEST(ThreadNameTest, NamesTheGivenThreadOnly) {
  const std::string before = OwnName();
  Reporter reporter;
  NameThread(reporter.thread(), "vipu-writer");
  EXPECT_EQ(reporter.NameSeen(), "vipu-writer");
  EXPECT_EQ(OwnName(), before);
}

TEST(ThreadNameTest, CutsALongNameAtFifteenCharacters) {
  Reporter reporter;
  NameThread(reporter.thread(), "a-name-longer-than-the-kernel-keeps");
  EXPECT_EQ(reporter.NameSeen(), "a-name-longer-t");
}

}  // namespace
}  // namespace vipu
