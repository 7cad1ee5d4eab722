# SPDX-License-Identifier: GPL-2.0
# Kbuild fragment: the filter core's objects, relative to kmod/, appended to vgpu.ko by
# kmod/Kbuild (-include $(src)/core/core.mk). Keep in step with core/CMakeLists.txt.
vgpu-y += core/fmt.o core/slot.o core/objects.o core/export.o core/dispatch.o \
	  core/call.o core/escapes.o core/uvm.o core/uvm_external.o \
	  core/rm_alloc.o core/rm_alloc_post.o core/rm_alloc_verify.o \
	  core/rm_control.o core/views.o core/gpus.o core/tables_580.o core/index.o \
	  core/seal.o

# The kernel host's user copies (kmod/core_host.c), called directly by the core
# instead of through its ops table (vcore.h, VCORE_HOST_COPY_FROM_USER).
ccflags-y += -DVCORE_HOST_COPY_FROM_USER=vgpu_host_copy_from_user \
	     -DVCORE_HOST_COPY_FROM_USER2=vgpu_host_copy_from_user2 \
	     -DVCORE_HOST_COPY_TO_USER=vgpu_host_copy_to_user \
	     -DVCORE_HOST_PATCH_USER_LIST=vgpu_host_patch_user_list

# The share controller (kmod/core/sched).
ifneq ($(wildcard $(src)/core/sched/sched.mk),)
include $(src)/core/sched/sched.mk
vgpu-y += $(vcore-sched-y)
endif
