// What every command implementation is given besides its connection: where
// to print, whether to print JSON instead of tables, and the home directory
// holding ~/.ipuof.conf.d.
#ifndef VIPU_CLI_COMMON_COMMAND_IO_H_
#define VIPU_CLI_COMMON_COMMAND_IO_H_

#include <ostream>
#include <string>

namespace vipu::cli {

struct CommandIo {
  std::ostream& out;
  bool json = false;  // --showjson
  std::string home;   // $HOME
};

}  // namespace vipu::cli

#endif  // VIPU_CLI_COMMON_COMMAND_IO_H_
