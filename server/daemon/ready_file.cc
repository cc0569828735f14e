// WriteReadyFile: the --ready-file of a single server and of a member.
#include "server/daemon/ready_file.h"

#include <filesystem>
#include <fstream>

namespace vipu::server {

void WriteReadyFile(const std::string& path, const std::string& address) {
  if (path.empty()) return;
  const std::string tmp = path + ".tmp";
  { std::ofstream(tmp) << address << "\n"; }
  std::filesystem::rename(tmp, path);
}

}  // namespace vipu::server
