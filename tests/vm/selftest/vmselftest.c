// SPDX-License-Identifier: GPL-2.0
/*
 * vmselftest: the guest harness's own test module.
 *
 * It gives the harness something to load, use and unload before vgpu.ko exists, and it can
 * inject one fault at a time so the harness proves it catches each kind
 * (tests/vm/README.md, "Proving the harness fails"):
 *   fault=warn   WARN() at load          -> panic_on_warn, the run fails
 *   fault=uaf    use-after-free at load  -> KASAN report (KASAN kernel only)
 *   fault=abba   AB-BA mutex order       -> lockdep report (KASAN kernel only)
 *   fault=leak   kmalloc never freed     -> kmemleak report (KASAN kernel only)
 *
 * /dev/vmselftest answers VMSELFTEST_IOC_ECHO: out = in + 1, and counts calls.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/atomic.h>
#include <linux/fs.h>
#include <linux/ioctl.h>
#include <linux/miscdevice.h>
#include <linux/module.h>
#include <linux/mutex.h>
#include <linux/slab.h>
#include <linux/string.h>
#include <linux/uaccess.h>

#include "vmselftest_uapi.h"

static char *fault = "";
module_param(fault, charp, 0444);
MODULE_PARM_DESC(fault, "inject one fault: warn, uaf, abba or leak (harness self-test)");

static atomic64_t vmselftest_calls = ATOMIC64_INIT(0);
static void *vmselftest_leaked;

static long vmselftest_ioctl(struct file *file, unsigned int cmd,
			     unsigned long arg)
{
	struct vmselftest_echo echo;

	if (cmd != VMSELFTEST_IOC_ECHO)
		return -ENOTTY;
	if (copy_from_user(&echo, (void __user *)arg, sizeof(echo)))
		return -EFAULT;
	echo.out = echo.in + 1;
	echo.calls = atomic64_inc_return(&vmselftest_calls);
	if (copy_to_user((void __user *)arg, &echo, sizeof(echo)))
		return -EFAULT;
	return 0;
}

static void vmselftest_inject_uaf(void)
{
	volatile char *p = kmalloc(32, GFP_KERNEL);

	if (!p)
		return;
	kfree((void *)p);
	pr_info("reading freed memory: %d\n", p[3]);
}

static DEFINE_MUTEX(vmselftest_lock_a);
static DEFINE_MUTEX(vmselftest_lock_b);

static void vmselftest_inject_abba(void)
{
	mutex_lock(&vmselftest_lock_a);
	mutex_lock(&vmselftest_lock_b);
	mutex_unlock(&vmselftest_lock_b);
	mutex_unlock(&vmselftest_lock_a);
	mutex_lock(&vmselftest_lock_b);
	mutex_lock(&vmselftest_lock_a);
	mutex_unlock(&vmselftest_lock_a);
	mutex_unlock(&vmselftest_lock_b);
}

static void vmselftest_inject(void)
{
	if (!strcmp(fault, "warn")) {
		WARN(1, "vmselftest: injected warning (fault=warn)");
	} else if (!strcmp(fault, "uaf")) {
		vmselftest_inject_uaf();
	} else if (!strcmp(fault, "abba")) {
		vmselftest_inject_abba();
	} else if (!strcmp(fault, "leak")) {
		vmselftest_leaked = kmalloc(256, GFP_KERNEL);
		/* Lose the only reference so kmemleak sees an orphan. */
		vmselftest_leaked = NULL;
	}
}

static const struct file_operations vmselftest_fops;

static struct miscdevice vmselftest_misc = {
	.minor = MISC_DYNAMIC_MINOR,
	.name = "vmselftest",
	.fops = &vmselftest_fops,
	.mode = 0666,
};

static int __init vmselftest_init(void)
{
	int ret;

	ret = misc_register(&vmselftest_misc);
	if (ret)
		return ret;
	vmselftest_inject();
	pr_info("loaded (fault=%s)\n", fault[0] ? fault : "none");
	return 0;
}

static void __exit vmselftest_exit(void)
{
	misc_deregister(&vmselftest_misc);
	pr_info("unloaded after %lld calls\n",
		(long long)atomic64_read(&vmselftest_calls));
}

static const struct file_operations vmselftest_fops = {
	.owner = THIS_MODULE,
	.unlocked_ioctl = vmselftest_ioctl,
	.compat_ioctl = compat_ptr_ioctl,
	.llseek = noop_llseek,
};

module_init(vmselftest_init);
module_exit(vmselftest_exit);
MODULE_LICENSE("GPL");
MODULE_DESCRIPTION("vgpu guest harness self-test module");
