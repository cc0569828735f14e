// --ready-file: how a script or test learns that vipu-server serves, and where.
#ifndef VIPU_SERVER_DAEMON_READY_FILE_H_
#define VIPU_SERVER_DAEMON_READY_FILE_H_

#include <string>

namespace vipu::server {

// Writes "host:port\n" to `path` through a temporary file and a rename, so a
// reader never sees it half written. Nothing when `path` is empty.
void WriteReadyFile(const std::string& path, const std::string& address);

}  // namespace vipu::server

#endif  // VIPU_SERVER_DAEMON_READY_FILE_H_
