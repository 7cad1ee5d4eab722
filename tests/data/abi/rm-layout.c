/*
 * Prints the sizes, offsets and numbers the vgpu filter core relies on, as NVIDIA's own headers
 * define them: compiled against a checkout of NVIDIA/open-gpu-kernel-modules by
 * scripts/abi-layout.sh, whose output is tests/data/abi/rm-580.txt (the golden file
 * tests/unit/core/abi_layout_test.cc compares the core's tables and structs with). One line per
 * fact: "size STRUCT N", "off STRUCT.FIELD N", "num NAME N" (decimal). Add a line here when the
 * core gains a row or reads a field, then regenerate.
 */
#include <stddef.h>
#include <stdio.h>

#include "nvtypes.h"
#include "nvos.h"
#include "nv_escape.h"
#include "nv-ioctl-numbers.h"
#include "nv-ioctl.h"
#include "nv-ioctl-numa.h"
#include "nv-unix-nvos-params-wrappers.h"
#include "rm-layout-includes.h" /* every ctrl/, class/ and alloc/ header (the script lists them) */

#define S(t) printf("size %s %zu\n", #t, sizeof(t))
#define O(t, f) printf("off %s.%s %zu\n", #t, #f, offsetof(t, f))
#define N(n) printf("num %s %llu\n", #n, (unsigned long long)(n))

int main(void)
{
#include "rm-layout-list.h"
	return 0;
}
