// vgpuctl's subcommands as a table: one row per command. Another part adds a command with one
// row here pointing at a function it defines (e.g. `topo`, implemented in topology/).
#pragma once

#include <iosfwd>
#include <span>
#include <string>
#include <string_view>

namespace vgpu::ctl {

struct CommandContext {
  bool json = false;  // --json: machine-readable output on stdout
  std::ostream* out;  // results
  std::ostream* err;  // errors and usage
};

// Returns the process exit status: 0 ok, 1 the request failed, 2 bad usage.
using CommandFn = int (*)(CommandContext& ctx, std::span<const std::string> args);

struct Command {
  std::string_view name;
  std::string_view usage;  // arguments, after the name
  std::string_view help;   // one line
  CommandFn run;
};

std::span<const Command> Commands();
// Finds the command and runs it; prints usage for an unknown command (exit 2).
int Dispatch(CommandContext& ctx, std::span<const std::string> argv);

}  // namespace vgpu::ctl
