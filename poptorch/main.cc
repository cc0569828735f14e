// poptorch-pod: a PopTorch program's link to the pod, one JSON request a line on stdin.
#include <cstring>
#include <iostream>
#include <string>

#include "nlohmann/json.hpp"
#include "popdist/ipuof_client.h"
#include "poptorch/pod_session.h"

int main(int argc, char** argv) {
  if (argc > 1 && (std::strcmp(argv[1], "--help") == 0 || std::strcmp(argv[1], "-h") == 0)) {
    std::cout << "Usage: poptorch-pod\n"
                 "The pod's side of open V-IPU's PopTorch for the simulated pod: the poptorch\n"
                 "Python package starts it. It reads one JSON request a line on standard input\n"
                 "(attach, run, detach) and answers one JSON line on standard output.\n"
                 "The IPUs are those of the GCD that IPUOF_VIPU_API_HOST, _PORT, _PARTITION_ID\n"
                 "and _GCD_ID name (as poprun sets them), or IPUOF_CONFIG_PATH.\n";
    return 0;
  }
  if (argc > 1 && std::strcmp(argv[1], "--version") == 0) {
    std::cout << "poptorch-pod (open V-IPU) " << VIPU_VERSION << "\n";
    return 0;
  }
  if (argc > 1) {
    std::cerr << "poptorch-pod: takes no arguments, got " << argv[1] << " (see --help)\n";
    return 2;
  }
  vipu::poptorch::PodSession session(vipu::popdist::ipuof::ProcessEnvironment());
  std::string line;
  while (std::getline(std::cin, line)) {
    if (line.empty()) continue;
    nlohmann::json request = nlohmann::json::parse(line, nullptr, /*allow_exceptions=*/false);
    nlohmann::json answer =
        request.is_discarded()
            ? nlohmann::json{{"ok", false},
                             {"code", "INVALID_ARGUMENT"},
                             {"message", "request: not JSON: " + line.substr(0, 80)}}
            : session.Handle(request);
    std::cout << answer.dump() << std::endl;
  }
  // End of input: the program is gone; the attachment goes with the session.
  return 0;
}
