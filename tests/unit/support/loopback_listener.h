// A socket listening on a free 127.0.0.1 port, for tests of what finds a
// port taken.
#ifndef VIPU_TESTS_UNIT_SUPPORT_LOOPBACK_LISTENER_H_
#define VIPU_TESTS_UNIT_SUPPORT_LOOPBACK_LISTENER_H_

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstdint>

namespace vipu::test {

// Listens for as long as it lives; port() is 0 when no port could be had.
// Not thread-safe.
class Listener {
 public:
  Listener() : fd_(socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0)) {
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof addr;
    if (bind(fd_, reinterpret_cast<sockaddr*>(&addr), len) == 0 && listen(fd_, 1) == 0 &&
        getsockname(fd_, reinterpret_cast<sockaddr*>(&addr), &len) == 0) {
      port_ = ntohs(addr.sin_port);
    }
  }
  ~Listener() { close(fd_); }
  Listener(const Listener&) = delete;
  Listener& operator=(const Listener&) = delete;
  uint32_t port() const { return port_; }

 private:
  int fd_;
  uint32_t port_ = 0;
};

}  // namespace vipu::test

#endif  // VIPU_TESTS_UNIT_SUPPORT_LOOPBACK_LISTENER_H_
