#include "commands.h"

#include <algorithm>
#include <functional>
#include <iostream>

#include "cli.h"
#ifndef VGPUCTL_NO_TOPO  // the static guest build (tests/vm/guest/vgpu) leaves topology out
#include "topo_command.h"
#endif
#include "vgpu/kmodclient.h"
#ifndef VGPUCTL_NO_DIAGNOSE  // the static guest build leaves the reports out
#include "diagnose_command.h"
#endif

namespace vgpu::ctl {
namespace {

constexpr FlagSpec kConfigFlags[] = {{"--name", true}, {"--memory", true},  {"--share", true},
                                     {"--mode", true}, {"--managed", true}, {"--unknown", true}};
constexpr FlagSpec kCreateFlags[] = {{"--gpu", true},     {"--name", true}, {"--memory", true},
                                     {"--share", true},   {"--mode", true}, {"--managed", true},
                                     {"--unknown", true}, {"--uvm", false}};
constexpr FlagSpec kDestroyFlags[] = {{"--defer", false}};
constexpr FlagSpec kEventsFlags[] = {{"--count", true}, {"--timeout", true}};

// Errors go to stderr as one line; exit 2 for usage, 1 for a failed request.
int Fail(CommandContext& ctx, const Status& s) {
  *ctx.err << "vgpuctl: " << s.message() << '\n';
  return s.code() == StatusCode::kInvalidArgument ? 2 : 1;
}

Result<std::unique_ptr<kmod::Client>> Connect() { return kmod::Client::Open(); }

Result<uint32_t> SlotIdArg(const ParsedArgs& a, std::string_view cmd) {
  if (a.positional.size() != 1) {
    return InvalidArgumentError(std::string(cmd) + ": needs exactly one slot ID");
  }
  return ParseU32("slot ID", a.positional[0], 0, VGPU_MAX_SLOTS - 1);
}

// Connects to the module and runs `command` with the client; a failed connect is reported as
// any failed request is.
int WithClient(CommandContext& ctx, const std::function<int(kmod::Client&)>& command) {
  auto c = Connect();
  if (!c.ok()) return Fail(ctx, c.status());
  return command(**c);
}

// Sends the request and prints the one slot the module answers with (create, set, inspect).
int PrintSlotFrom(CommandContext& ctx,
                  const std::function<Result<kmod::SlotInfo>(kmod::Client&)>& request) {
  return WithClient(ctx, [&](kmod::Client& c) {
    auto s = request(c);
    if (!s.ok()) return Fail(ctx, s.status());
    if (ctx.json)
      *ctx.out << SlotToJson(*s).dump(2) << '\n';
    else
      *ctx.out << SlotDetail(*s);
    return 0;
  });
}

int RunCreate(CommandContext& ctx, std::span<const std::string> args) {
  auto a = ParseArgs("create", args, kCreateFlags);
  if (!a.ok()) return Fail(ctx, a.status());
  if (!a->positional.empty())
    return Fail(ctx, InvalidArgumentError("create: unexpected '" + a->positional[0] + "'"));
  if (!a->Has("--gpu")) return Fail(ctx, InvalidArgumentError("create: --gpu is required"));
  auto gpu = ParseU32("--gpu", a->flags["--gpu"], 0, 254);
  if (!gpu.ok()) return Fail(ctx, gpu.status());
  auto cfg = ParseSlotConfig(*a);
  if (!cfg.ok()) return Fail(ctx, cfg.status());
  kmod::SlotSpec spec{*gpu, a->Has("--uvm") ? uint32_t{VGPU_SLOT_F_UVM} : 0u, *cfg};
  return PrintSlotFrom(ctx, [&](kmod::Client& c) { return c.CreateSlot(spec); });
}

int RunSet(CommandContext& ctx, std::span<const std::string> args) {
  auto a = ParseArgs("set", args, kConfigFlags);
  if (!a.ok()) return Fail(ctx, a.status());
  auto id = SlotIdArg(*a, "set");
  if (!id.ok()) return Fail(ctx, id.status());
  auto cfg = ParseSlotConfig(*a);
  if (!cfg.ok()) return Fail(ctx, cfg.status());
  return PrintSlotFrom(ctx, [&](kmod::Client& c) { return c.UpdateSlot(*id, *cfg); });
}

int RunDestroy(CommandContext& ctx, std::span<const std::string> args) {
  auto a = ParseArgs("destroy", args, kDestroyFlags);
  if (!a.ok()) return Fail(ctx, a.status());
  auto id = SlotIdArg(*a, "destroy");
  if (!id.ok()) return Fail(ctx, id.status());
  auto c = Connect();
  if (!c.ok()) return Fail(ctx, c.status());
  Status s = (*c)->DestroySlot(*id, a->Has("--defer") ? VGPU_DEL_F_DEFER : 0);
  if (!s.ok()) return Fail(ctx, s);
  if (ctx.json)
    *ctx.out << nlohmann::json{{"destroyed", *id}}.dump() << '\n';
  else
    *ctx.out << "slot " << *id << " destroyed\n";
  return 0;
}

int RunList(CommandContext& ctx, std::span<const std::string> args) {
  auto a = ParseArgs("list", args, {});
  if (!a.ok()) return Fail(ctx, a.status());
  if (!a->positional.empty()) return Fail(ctx, InvalidArgumentError("list: takes no arguments"));
  auto c = Connect();
  if (!c.ok()) return Fail(ctx, c.status());
  auto slots = (*c)->ListSlots();
  if (!slots.ok()) return Fail(ctx, slots.status());
  if (ctx.json) {
    nlohmann::json arr = nlohmann::json::array();
    for (const auto& s : *slots) arr.push_back(SlotToJson(s));
    *ctx.out << arr.dump(2) << '\n';
  } else {
    *ctx.out << SlotTable(*slots);
  }
  return 0;
}

int RunInspect(CommandContext& ctx, std::span<const std::string> args) {
  auto a = ParseArgs("inspect", args, {});
  if (!a.ok()) return Fail(ctx, a.status());
  auto id = SlotIdArg(*a, "inspect");
  if (!id.ok()) return Fail(ctx, id.status());
  return PrintSlotFrom(ctx, [&](kmod::Client& c) { return c.GetSlot(*id); });
}

int RunDriver(CommandContext& ctx, std::span<const std::string> args) {
  auto a = ParseArgs("driver", args, {});
  if (!a.ok()) return Fail(ctx, a.status());
  return WithClient(ctx, [&](kmod::Client& c) {
    auto d = c.GetDriver();
    if (!d.ok()) return Fail(ctx, d.status());
    if (ctx.json) {
      *ctx.out << nlohmann::json{{"bound", d->bound},
                                 {"ctl_path", d->ctl_path},
                                 {"dev_fmt", d->dev_fmt},
                                 {"slots", d->slots},
                                 {"generation", d->generation}}
                      .dump(2)
               << '\n';
    } else {
      *ctx.out << "real driver  " << (d->bound ? "bound" : "not bound") << " (" << d->ctl_path
               << ", " << d->dev_fmt << ")\nslots        " << d->slots << "\ngeneration   "
               << d->generation << '\n';
    }
    return 0;
  });
}

int RunBind(CommandContext& ctx, std::span<const std::string> args) {
  auto a = ParseArgs("bind", args, {});
  if (!a.ok()) return Fail(ctx, a.status());
  return WithClient(ctx, [&](kmod::Client& c) {
    if (Status s = c.Bind(); !s.ok()) return Fail(ctx, s);
    *ctx.out << (ctx.json ? "{\"bound\": true}\n" : "bound to the real driver\n");
    return 0;
  });
}

int RunEvents(CommandContext& ctx, std::span<const std::string> args) {
  auto a = ParseArgs("events", args, kEventsFlags);
  if (!a.ok()) return Fail(ctx, a.status());
  uint32_t count = 0, timeout_s = 0;
  if (a->Has("--count")) {
    auto n = ParseU32("--count", a->flags["--count"], 1, 1000000);
    if (!n.ok()) return Fail(ctx, n.status());
    count = *n;
  }
  if (a->Has("--timeout")) {
    auto n = ParseU32("--timeout", a->flags["--timeout"], 1, 86400);
    if (!n.ok()) return Fail(ctx, n.status());
    timeout_s = *n;
  }
  auto c = Connect();
  if (!c.ok()) return Fail(ctx, c.status());
  if (Status s = (*c)->SubscribeEvents(); !s.ok()) return Fail(ctx, s);
  for (uint32_t seen = 0; count == 0 || seen < count;) {
    auto e = (*c)->NextEvent(timeout_s ? static_cast<int>(timeout_s) * 1000 : -1);
    if (!e.ok()) return Fail(ctx, e.status());
    if (!e->has_value()) break;  // timed out
    *ctx.out << (ctx.json ? EventToJson(**e).dump() : EventLine(**e)) << std::endl;
    ++seen;
  }
  return 0;
}

int RunHelp(CommandContext& ctx, std::span<const std::string>);

// The table of contents. Add a command with one row.
constexpr Command kCommands[] = {
    {"create",
     "--gpu N [--name S] [--memory SIZE] [--share PCT] [--mode cap|weight] "
     "[--managed refuse|allow-uncounted] "
     "[--unknown refuse|allow-log] [--uvm]",
     "create a slot on GPU N", RunCreate},
    {"list", "", "list slots with usage", RunList},
    {"inspect", "ID", "show one slot with every counter", RunInspect},
    {"set",
     "ID [--name S] [--memory SIZE] [--share PCT] [--mode cap|weight] [--managed ...] "
     "[--unknown ...]",
     "change a slot's limits and policies", RunSet},
    {"destroy", "ID [--defer]", "destroy a slot (--defer: revoke open files, free at last close)",
     RunDestroy},
    {"driver", "", "show the real driver binding", RunDriver},
    {"bind", "", "resolve the real driver's nodes now", RunBind},
    {"events", "[--count N] [--timeout S]", "print slot events (quota denials, attach, exit)",
     RunEvents},
#ifndef VGPUCTL_NO_DIAGNOSE
    {"diagnose", "[--container] [--root DIR] [--control-socket PATH]",
     "one report: module, driver binding, slots, refusals, versions (--container: the "
     "enforcement in force for this container)",
     RunDiagnose},
#endif
#ifndef VGPUCTL_NO_TOPO
    {"topo", "[--fixture FILE] [--record FILE] [--gpus] (--help for more)",
     "GPU link matrix like nvidia-smi topo -m (topology/)",
     [](CommandContext& ctx, std::span<const std::string> args) {
       return topology::RunTopoCommand(args, ctx.json, *ctx.out, *ctx.err);
     }},
#endif
    {"help", "", "this text", RunHelp},
};

int RunHelp(CommandContext& ctx, std::span<const std::string>) {
  *ctx.out << "usage: vgpuctl [--json] COMMAND [ARGS]\n\ncommands:\n";
  for (const Command& c : kCommands) {
    *ctx.out << "  " << c.name << (c.usage.empty() ? "" : " ") << c.usage << "\n      " << c.help
             << '\n';
  }
  *ctx.out << "\nSIZE: bytes, or with Ki/Mi/Gi/Ti (1024) or K/M/G/T (1000), e.g. 4Gi\n";
  return 0;
}

}  // namespace

std::span<const Command> Commands() { return kCommands; }

int Dispatch(CommandContext& ctx, std::span<const std::string> argv) {
  size_t i = 0;
  while (i < argv.size() && argv[i] == "--json") {
    ctx.json = true;
    ++i;
  }
  if (i == argv.size()) {
    RunHelp(ctx, {});
    return 2;
  }
  // --help and -h are the help command, as every other CLI spells it.
  const std::string& name = argv[i] == "--help" || argv[i] == "-h" ? "help" : argv[i];
  auto it = std::find_if(std::begin(kCommands), std::end(kCommands),
                         [&](const Command& c) { return c.name == name; });
  if (it == std::end(kCommands)) {
    *ctx.err << "vgpuctl: unknown command '" << name << "' (try 'vgpuctl help')\n";
    return 2;
  }
  // --json is also accepted after the command.
  std::vector<std::string> rest;
  for (size_t j = i + 1; j < argv.size(); ++j) {
    if (argv[j] == "--json")
      ctx.json = true;
    else
      rest.push_back(argv[j]);
  }
  return it->run(ctx, rest);
}

}  // namespace vgpu::ctl
