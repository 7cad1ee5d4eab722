# kbuild objects of the share controller, relative to kmod/core/ (include this from core.mk:
#   include $(src)/core/sched/sched.mk   or list $(vcore-sched-y) in the module's objects).
vcore-sched-y := core/sched/vcore_sched.o core/sched/vcore_sched_ctrl.o

# The controller's kernel host (kmod/compute*.c, also the compute engineer's): the per-GPU
# thread, its RM actions and measurement sources. Relative to kmod/ like the objects above;
# listed here because kmod/Kbuild takes this file in through core.mk.
vcore-sched-y += compute.o compute_meter.o
