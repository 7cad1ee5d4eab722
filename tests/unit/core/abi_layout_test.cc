// The 580 ABI rows against NVIDIA's own headers: tests/data/abi/rm-580.txt holds the sizes,
// offsets and numbers of open-gpu-kernel-modules 580.142 for everything the core relies on
// (scripts/abi-layout.sh over tests/data/abi/rm-layout-list.h). Here the same list is compiled
// against the core's definitions (kmod/core/abi/), and every row of the tables is held to the
// struct it names: a struct that drifts, a row that spells its own size, or a number that differs
// from the driver's fails.
#include <gtest/gtest.h>

#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <vector>

extern "C" {
#include "kmod/core/abi/classes.h"
#include "kmod/core/abi/ctrl.h"
#include "kmod/core/abi/nv_escape.h"
#include "kmod/core/abi/uvm.h"
#include "kmod/core/vcore_internal.h"
}

namespace {

std::map<std::string, uint64_t> Golden() {
  std::map<std::string, uint64_t> g;
  std::ifstream in(VGPU_ABI_GOLDEN);
  std::string kind, name;
  uint64_t v;
  for (std::string line; std::getline(in, line);) {
    std::istringstream ls(line);
    if (line.empty() || line[0] == '#' || !(ls >> kind >> name >> v)) {
      continue;
    }
    g[kind + " " + name] = v;
  }
  return g;
}

struct Fact {
  std::string key;
  uint64_t value;
};

// The list, compiled against kmod/core/abi/.
std::vector<Fact> CoreFacts() {
  std::vector<Fact> f;
#define S(t) f.push_back({"size " #t, sizeof(t)});
#define O(t, m) f.push_back({"off " #t "." #m, __builtin_offsetof(t, m)});
#define N(n) f.push_back({"num " #n, static_cast<uint64_t>(n)});
#include "tests/data/abi/rm-layout-list.h"
#undef S
#undef O
#undef N
  return f;
}

TEST(AbiLayout580, EveryStructAndOffsetOfTheCoreIsTheDriversOwn) {
  auto g = Golden();
  ASSERT_GT(g.size(), 100u) << VGPU_ABI_GOLDEN;
  for (const Fact& f : CoreFacts()) {
    auto it = g.find(f.key);
    ASSERT_NE(it, g.end()) << f.key << " is not in rm-580.txt: run scripts/abi-layout.sh";
    EXPECT_EQ(f.value, it->second) << f.key;
  }
}

// The names the 580.142 headers do not define: gVisor's names for numbers libcuda/NVML issue,
// and one control the measured 580.159.04 driver serves that the headers name only from 590.
const std::set<std::string> kNotIn580142 = {
    "NV2080_CTRL_CMD_GPU_ACQUIRE_COMPUTE_MODE_RESERVATION",
    "NV2080_CTRL_CMD_GPU_RELEASE_COMPUTE_MODE_RESERVATION",
    "NVC36F_CTRL_GET_CLASS_ENGINEID",
    "UNKNOWN_CONTROL_COMMAND_80028B",
    "NV2080_CTRL_CMD_ECC_GET_UNREPAIRABLE_MEMORY_FLAG",  // ctrl2080ecc.h of 590.48.01
};

void CheckNumber(const std::map<std::string, uint64_t>& g, const char* name, uint32_t number,
                 std::set<std::string>* missing) {
  auto it = g.find(std::string("num ") + name);
  if (it == g.end()) {
    missing->insert(name);
    return;
  }
  EXPECT_EQ(number, it->second) << name;
}

// A row's size is sizeof the struct it names, and the driver's size of that struct.
void CheckSize(const std::map<std::string, uint64_t>& g, const char* row, const char* params,
               uint32_t size) {
  auto it = g.find(std::string("size ") + params);
  ASSERT_NE(it, g.end()) << row << ": " << params << " is not in rm-580.txt";
  EXPECT_EQ(size, it->second) << row << " (" << params << ")";
}

TEST(AbiLayout580, EveryRowIsTheDriversNumberSizeAndStatusOffset) {
  auto g = Golden();
  const vcore_abi& abi = vcore_abi_580;
  std::set<std::string> missing;
  for (size_t i = 0; i < abi.n_esc; ++i) {
    const vcore_esc_row& r = abi.esc[i];
    CheckNumber(g, r.name, r.nr, &missing);
    if (r.params == nullptr) {
      // No params: an escape RmIoctl has no handler for, or an array of NvU32 (ATTACH_GPUS).
      EXPECT_TRUE(r.size == 0 || (r.nr == NV_ESC_ATTACH_GPUS_TO_FD && r.size == 4)) << r.name;
      continue;
    }
    CheckSize(g, r.name, r.params, r.size);
    if (!(r.flags & VCORE_ESC_NO_STATUS)) {
      bool found = false;
      for (const char* field : {".status", ".Status", ".params.status"}) {
        auto it = g.find(std::string("off ") + r.params + field);
        if (it != g.end()) {
          EXPECT_EQ(r.status_off, it->second) << r.name;
          found = true;
        }
      }
      EXPECT_TRUE(found) << r.name << ": its status offset is not in rm-580.txt";
    }
  }
  const vcore_esc_row* alloc = vcore_abi_esc(&abi, NV_ESC_RM_ALLOC);
  EXPECT_EQ(alloc->alt_size, g["size NVOS21_PARAMETERS"]);
  for (const auto* table : {&abi.ctrl, &abi.ctrl_pass}) {
    const size_t n = table == &abi.ctrl ? abi.n_ctrl : abi.n_ctrl_pass;
    for (size_t i = 0; i < n; ++i) {
      const vcore_ctrl_row& r = (*table)[i];
      CheckNumber(g, r.name, r.cmd, &missing);
      if (r.flags & VCORE_CTRL_ANY_SIZE) {
        EXPECT_EQ(r.params, nullptr) << r.name << ": an exact struct makes an exact row";
        continue;
      }
      ASSERT_NE(r.params, nullptr) << r.name << ": an exact size names its struct";
      CheckSize(g, r.name, r.params, r.size);
    }
  }
  for (size_t i = 0; i < abi.n_cls; ++i) {
    const vcore_class_row& r = abi.cls[i];
    CheckNumber(g, r.name, r.cls, &missing);
    if (r.params == nullptr) {
      EXPECT_EQ(r.params_size, 0u) << r.name;
    } else {
      CheckSize(g, r.name, r.params, r.params_size);
    }
  }
  for (size_t i = 0; i < abi.n_uvm; ++i) {
    CheckNumber(g, abi.uvm[i].name, abi.uvm[i].cmd, &missing);
  }
  EXPECT_EQ(missing, kNotIn580142) << "names the 580.142 headers lack";
}

// The offsets the handlers use through named constants.
TEST(AbiLayout580, TheCoresNamedOffsetsAreTheDrivers) {
  auto g = Golden();
  EXPECT_EQ(NV0000_CTRL_OS_UNIX_EXPORT_OBJECT_TO_FD_FD_OFF,
            g["off NV0000_CTRL_OS_UNIX_EXPORT_OBJECT_TO_FD_PARAMS.fd"]);
  EXPECT_EQ(NV0000_CTRL_OS_UNIX_CREATE_EXPORT_OBJECT_FD_FD_OFF,
            g["off NV0000_CTRL_OS_UNIX_CREATE_EXPORT_OBJECT_FD_PARAMS.fd"]);
  EXPECT_EQ(NV00FD_CTRL_ATTACH_GPU_DEV_DESCRIPTOR_OFF,
            g["off NV00FD_CTRL_ATTACH_GPU_PARAMS.devDescriptor"]);
  EXPECT_EQ(NV00E0_CTRL_EXPORT_MEM_DEV_DESCRIPTOR_OFF,
            g["off NV00E0_CTRL_EXPORT_MEM_PARAMS.devDescriptor"]);
  EXPECT_EQ(NV00F8_ALLOC_SIZE_OFF, g["off NV00F8_ALLOCATION_PARAMETERS.allocSize"]);
  EXPECT_EQ(NV_CHANNEL_ALLOC_ENGINE_TYPE_OFF, g["off NV_CHANNEL_ALLOC_PARAMS.engineType"]);
  EXPECT_EQ(NVOS32_ALLOCSIZE_HMEMORY_OFF - g["off NVOS32_PARAMETERS.data"], 4u)
      << "data.AllocSize.hMemory follows owner";
}

}  // namespace
