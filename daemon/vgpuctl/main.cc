// vgpuctl: create, list, inspect, change and destroy vgpu.ko slots (commands.cc has the table).
#include <iostream>
#include <string>
#include <vector>

#include "commands.h"

int main(int argc, char** argv) {
  std::vector<std::string> args(argv + 1, argv + argc);
  vgpu::ctl::CommandContext ctx{false, &std::cout, &std::cerr};
  return vgpu::ctl::Dispatch(ctx, args);
}
