# kbuild objects of the share controller, relative to kmod/core/ (include this from core.mk:
#   include $(src)/core/sched/sched.mk   or list $(vcore-sched-y) in the module's objects).
vcore-sched-y := core/sched/vcore_sched.o core/sched/vcore_sched_cap.o \
		 core/sched/vcore_sched_weight.o core/sched/vcore_sched_stats.o \
		 core/sched/vcore_sched_ctrl.o

