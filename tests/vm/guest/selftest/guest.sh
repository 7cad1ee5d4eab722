# The harness's own suite: vmselftest.ko load -> use (C and GoogleTest programs) -> unload.
# VMTEST_FAULT (kernel command line vmtest.fault=...) injects one fault to prove the harness
# catches it (tests/vm/harness/CMakeLists.txt, vm_harness_catches_*).
set -e
insmod ./mod/vmselftest.ko ${VMTEST_FAULT:+fault=$VMTEST_FAULT}
./selftest_echo
./selftest_gtest --gtest_brief=1 --gtest_output=xml:$OUT/selftest_gtest.xml
rmmod vmselftest
