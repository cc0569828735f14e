// ipu-model: offline predictor of training step times on IPU pods.
#include <iostream>

#include "model/ipu-model/predict_command.h"

int main(int argc, char** argv) {
  return vipu::model::RunIpuModel(argc, argv, std::cout, std::cerr);
}
