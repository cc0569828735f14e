// vipu-plan: capacity planning by trace replay on a simulated pod.
#include <iostream>

#include "plan/vipu-plan/plan_command.h"

int main(int argc, char** argv) {
  return vipu::plan::RunVipuPlan(argc, argv, std::cout, std::cerr);
}
