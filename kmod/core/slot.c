// SPDX-License-Identifier: GPL-2.0 OR MIT
/*
 * slot.c - slots (tenants), their files, counters, the default ledger and
 * the driver-version gate.
 */
#include "vcore_internal.h"

void vcore_lock(struct vcore_slot *slot)
{
	slot->ops->lock(slot->lock);
}

void vcore_unlock(struct vcore_slot *slot)
{
	slot->ops->unlock(slot->lock);
}

void vcore_logf(struct vcore_slot *slot, enum vcore_log_level level,
		const char *fmt, ...)
{
	char msg[256];
	__builtin_va_list ap;
	int n;

	n = vcore_snprintf(msg, sizeof(msg), "slot %u: ", slot->cfg.id);
	__builtin_va_start(ap, fmt);
	vcore_vsnprintf(msg + n, sizeof(msg) - (vcore_size_t)n, fmt, ap);
	__builtin_va_end(ap);
	slot->ops->log(slot->priv, level, msg);
}

/* ---- the default in-core ledger (kernel: one slot, one ledger) ---- */

static int own_try_charge(void *ledger, vcore_u64 bytes, vcore_u64 quota)
{
	vcore_u64 *charged = ledger, now = vcore_atomic_load(charged);

	/* Called under the slot lock (vcore_charge_try). */
	if (quota && (bytes > quota || now > quota - bytes))
		return -VCORE_ENOSPC;
	vcore_atomic_store(charged, now + bytes);
	return 0;
}

/*
 * The default ledger's writers run under the slot lock, one at a time; their
 * stores are relaxed atomics only because the memory views read the word
 * without the lock (views.c, view_figures).
 */
static void own_force_charge(void *ledger, vcore_u64 bytes)
{
	vcore_u64 *charged = ledger;

	vcore_atomic_store(charged, vcore_atomic_load(charged) + bytes);
}

static void own_uncharge(void *ledger, vcore_u64 bytes)
{
	vcore_u64 *charged = ledger, now = vcore_atomic_load(charged);

	vcore_atomic_store(charged, now > bytes ? now - bytes : 0);
}

static vcore_u64 own_charged(void *ledger)
{
	return vcore_atomic_load((vcore_u64 *)ledger);
}

static const struct vcore_ledger_ops own_ledger_ops = {
	.try_charge = own_try_charge,
	.force_charge = own_force_charge,
	.uncharge = own_uncharge,
	.charged = own_charged,
};

/* Ledger calls are made under the slot lock so the in-core ledger needs no
 * lock of its own; a host ledger must still be atomic across processes. */
void vcore_note_peak_locked(struct vcore_slot *slot)
{
	vcore_u64 now = slot->ledger.ops->charged(slot->ledger.priv);

	slot->stats.charged_bytes = now;
	if (now > slot->stats.charged_peak_bytes)
		slot->stats.charged_peak_bytes = now;
}

/* @bytes against the quota, all or nothing. Slot lock held. */
int vcore_charge_try_locked(struct vcore_slot *slot, vcore_u64 bytes)
{
	int err = slot->ledger.ops->try_charge(slot->ledger.priv, bytes,
					       slot->cfg.mem_quota_bytes);

	slot->stats.charged_bytes =
		slot->ledger.ops->charged(slot->ledger.priv);
	return err;
}

int vcore_charge_try(struct vcore_slot *slot, vcore_u64 bytes)
{
	int err;

	vcore_lock(slot);
	err = vcore_charge_try_locked(slot, bytes);
	vcore_unlock(slot);
	return err;
}

void vcore_charge_force(struct vcore_slot *slot, vcore_u64 bytes)
{
	slot->ledger.ops->force_charge(slot->ledger.priv, bytes);
}

void vcore_charge_refund(struct vcore_slot *slot, vcore_u64 bytes)
{
	if (bytes)
		slot->ledger.ops->uncharge(slot->ledger.priv, bytes);
	slot->stats.charged_bytes =
		slot->ledger.ops->charged(slot->ledger.priv);
}

vcore_u64 vcore_charged(struct vcore_slot *slot)
{
	return slot->ledger.ops->charged(slot->ledger.priv);
}

/* ---- counters ---- */

void vcore_count_unknown_locked(struct vcore_unknown_list *list,
				vcore_u32 number)
{
	vcore_u32 i;

	for (i = 0; i < list->n; i++) {
		if (list->number[i] == number) {
			list->count[i]++;
			return;
		}
	}
	if (list->n < VCORE_UNKNOWN_SLOTS) {
		list->number[list->n] = number;
		list->count[list->n] = 1;
		list->n++;
		return;
	}
	list->dropped++;
}

void vcore_note_pid_locked(struct vcore_slot *slot, vcore_u32 pid)
{
	vcore_u32 i;

	if (!pid)
		return;
	for (i = 0; i < slot->n_pids; i++)
		if (slot->pids[i] == pid)
			return;
	if (slot->n_pids < VCORE_PID_SET) {
		slot->pids[slot->n_pids++] = pid;
	} else { /* keep the newest: a full set forgets the oldest pid */
		slot->pids[pid % VCORE_PID_SET] = pid;
		/* Files remember the last pid they noted: make them look
		 * again, the forgotten pid may be theirs. */
		vcore_atomic_store(&slot->pid_gen, slot->pid_gen + 1);
	}
}

void vcore_note_pid_slow(struct vcore_file *file, vcore_u32 pid)
{
	struct vcore_slot *slot = file->slot;
	vcore_u32 gen;

	vcore_lock(slot);
	vcore_note_pid_locked(slot, pid);
	gen = slot->pid_gen;
	vcore_unlock(slot);
	vcore_atomic_store(&file->pid_seen, (vcore_u64)gen << 32 | pid);
}

vcore_bool vcore_pid_in_slot(struct vcore_slot *slot, vcore_u32 pid)
{
	vcore_bool in = 0;
	vcore_u32 i;

	if (slot->ops->pid_in_slot)
		return slot->ops->pid_in_slot(slot->priv, pid);
	vcore_lock(slot);
	for (i = 0; i < slot->n_pids; i++)
		if (slot->pids[i] == pid)
			in = 1;
	vcore_unlock(slot);
	return in;
}

void vcore_slot_get_stats(struct vcore_slot *slot, struct vcore_stats *out)
{
	vcore_lock(slot);
	vcore_note_peak_locked(slot);
	*out = slot->stats;
	vcore_unlock(slot);
	out->ioctls = vcore_atomic_load(&slot->ioctls);
	out->views_rewritten = vcore_atomic_load(&slot->views_rewritten);
}

vcore_u64 vcore_slot_charged(struct vcore_slot *slot)
{
	vcore_u64 charged;

	vcore_lock(slot);
	charged = vcore_charged(slot);
	vcore_unlock(slot);
	return charged;
}

/* ---- driver version gate ---- */

static vcore_u32 version_major(const char *v)
{
	vcore_u32 major = 0, digits = 0;

	while (*v >= '0' && *v <= '9' && digits < 6) {
		major = major * 10 + (vcore_u32)(*v++ - '0');
		digits++;
	}
	if (!digits || *v != '.')
		return 0;
	return major;
}

/* A branch whose tables live outside tables_580.c (vcore_abi_add_branch). */
static struct {
	vcore_u32 major;
	const struct vcore_abi *abi;
} added_branch;

void vcore_abi_add_branch(vcore_u32 major, const struct vcore_abi *abi)
{
	added_branch.major = major;
	added_branch.abi = abi;
}

const struct vcore_abi *vcore_abi_for_version(const char *version)
{
	vcore_u32 major = version_major(version);

	/* One table set per branch: within 580, gVisor lists 580.65.06 ..
	 * 580.173.02 with no layout change after 580.65.06 (abi.md §0). */
	if (major == 580)
		return &vcore_abi_580;
	if (major && major == added_branch.major)
		return added_branch.abi;
	return VCORE_NULL;
}

/* The slot's branch, or the newest the core knows for a host without one. */
static const struct vcore_abi *abi_of(const struct vcore_slot *slot)
{
	return slot ? slot->abi : &vcore_abi_580;
}

enum vcore_class_role vcore_class_role_of(const struct vcore_slot *slot,
					  vcore_u32 cls)
{
	const struct vcore_class_row *row = vcore_abi_class(abi_of(slot), cls);

	if (!row)
		return VCORE_CLASS_UNKNOWN;
	switch (row->kind) {
	case VCORE_CLS_ROOT:
		return VCORE_CLASS_CLIENT;
	case VCORE_CLS_DEVICE:
		return VCORE_CLASS_DEVICE;
	case VCORE_CLS_SUBDEVICE:
		return VCORE_CLASS_SUBDEVICE;
	case VCORE_CLS_VIDMEM:
	case VCORE_CLS_FABRIC:
	case VCORE_CLS_SYSMEM:
	case VCORE_CLS_UNCHARGED_MEM:
	case VCORE_CLS_VA_RANGE:
	case VCORE_CLS_QUOTA_REFUSED:
		return VCORE_CLASS_MEMORY;
	case VCORE_CLS_TSG:
		return VCORE_CLASS_TSG;
	case VCORE_CLS_CHANNEL:
		return VCORE_CLASS_CHANNEL;
	default:
		return VCORE_CLASS_OTHER;
	}
}

vcore_u32 vcore_class_params_size(const struct vcore_slot *slot, vcore_u32 cls)
{
	const struct vcore_class_row *row = vcore_abi_class(abi_of(slot), cls);

	return row ? row->params_size : 0;
}

int vcore_driver_version_supported(const char *version, char *msg,
				   vcore_size_t msg_len)
{
	vcore_size_t n =
		version ? vcore_strnlen(version, VCORE_VERSION_MAX) : 0;
	int ok = n && n < VCORE_VERSION_MAX && vcore_abi_for_version(version);

	if (msg && msg_len) {
		if (ok)
			vcore_snprintf(msg, msg_len,
				       "driver %s uses the %s ABI tables",
				       version,
				       vcore_abi_for_version(version)->name);
		else
			vcore_snprintf(
				msg, msg_len,
				"driver version '%s' is not supported (known: "
				"580.x); set allow-unknown-driver-version to "
				"use the 580 tables anyway",
				n < VCORE_VERSION_MAX && version ? version
								 : "?");
	}
	return ok;
}

/* ---- slots ---- */

static int config_valid(const struct vcore_slot_config *cfg)
{
	if (cfg->unknown_policy != VCORE_UNKNOWN_STRICT &&
	    cfg->unknown_policy != VCORE_UNKNOWN_PERMISSIVE)
		return 0;
	if (cfg->managed_policy != VCORE_MANAGED_DEFAULT &&
	    cfg->managed_policy != VCORE_MANAGED_REFUSE &&
	    cfg->managed_policy != VCORE_MANAGED_ALLOW_UNCOUNTED)
		return 0;
	return vcore_strnlen(cfg->driver_version, VCORE_VERSION_MAX) <
	       VCORE_VERSION_MAX;
}

static int ops_valid(const struct vcore_host_ops *ops)
{
	return ops && ops->copy_from_user && ops->copy_to_user && ops->zalloc &&
	       ops->free && ops->lock_create && ops->lock_destroy &&
	       ops->lock && ops->unlock && ops->log && ops->clock_ns;
}

static int ledger_valid(const struct vcore_ledger *l)
{
	return l->ops && l->ops->try_charge && l->ops->force_charge &&
	       l->ops->uncharge && l->ops->charged;
}

struct vcore_slot *vcore_slot_create(const struct vcore_host_ops *ops,
				     void *priv,
				     const struct vcore_slot_config *cfg,
				     const struct vcore_ledger *ledger,
				     int *err)
{
	const struct vcore_abi *abi;
	struct vcore_slot *slot;
	char msg[192];
	int e = -VCORE_EINVAL;

	if (!ops_valid(ops) || !cfg || !config_valid(cfg) ||
	    (ledger && !ledger_valid(ledger)))
		goto fail;
	abi = vcore_abi_for_version(cfg->driver_version);
	if (!abi) {
		vcore_driver_version_supported(cfg->driver_version, msg,
					       sizeof(msg));
		if (!cfg->allow_unknown_driver_version) {
			ops->log(priv, VCORE_LOG_ERR, msg);
			e = -VCORE_EOPNOTSUPP;
			goto fail;
		}
		ops->log(priv, VCORE_LOG_WARN, msg);
		abi = &vcore_abi_580;
	}
	e = -VCORE_ENOMEM;
	slot = ops->zalloc(priv, sizeof(*slot));
	if (!slot)
		goto fail;
	slot->lock = ops->lock_create(priv);
	if (!slot->lock)
		goto err_free;
	slot->ops = ops;
	slot->priv = priv;
	slot->cfg = *cfg;
	slot->abi = abi;
	if (ledger) {
		slot->ledger = *ledger;
	} else {
		slot->ledger.ops = &own_ledger_ops;
		slot->ledger.priv = &slot->own_ledger_charged;
		slot->own_ledger = 1;
	}
	slot->stats.charged_bytes =
		slot->ledger.ops->charged(slot->ledger.priv);
	if (vcore_slot_index_build(slot))
		goto err_lock;
	return slot;

err_lock:
	ops->lock_destroy(priv, slot->lock);
err_free:
	ops->free(priv, slot);
fail:
	if (err)
		*err = e;
	return VCORE_NULL;
}

int vcore_slot_update_config(struct vcore_slot *slot,
			     const struct vcore_slot_config *cfg)
{
	if (!config_valid(cfg))
		return -VCORE_EINVAL;
	vcore_lock(slot);
	slot->cfg.id = cfg->id;
	slot->cfg.mem_quota_bytes = cfg->mem_quota_bytes;
	/* sysmem_budget_bytes stays as created: sysmem_held may exceed a
	 * lowered budget, and the budget is the node's, not the tenant's. */
	slot->cfg.unknown_policy = cfg->unknown_policy;
	slot->cfg.managed_policy = cfg->managed_policy;
	vcore_unlock(slot);
	return 0;
}

void vcore_slot_set_overquota_hook(struct vcore_slot *slot,
				   vcore_overquota_fn fn)
{
	vcore_lock(slot);
	slot->overquota_fn = fn;
	vcore_unlock(slot);
}

void vcore_slot_set_host_owns_timeslice(struct vcore_slot *slot, vcore_bool on)
{
	vcore_lock(slot);
	slot->host_owns_timeslice = on;
	vcore_unlock(slot);
}

void vcore_slot_set_client_ops(struct vcore_slot *slot,
			       const struct vcore_client_ops *ops)
{
	if (ops && !(ops->claim && ops->release && ops->driver_has))
		ops = VCORE_NULL;
	vcore_lock(slot);
	slot->client_ops = ops;
	vcore_unlock(slot);
}

void vcore_slot_destroy(struct vcore_slot *slot)
{
	const struct vcore_host_ops *ops;
	void *priv;

	if (!slot)
		return;
	ops = slot->ops;
	priv = slot->priv;
	while (slot->files)
		vcore_file_close(slot->files);
	vcore_lock(slot);
	vcore_obj_free_all_locked(slot);
	vcore_unlock(slot);
	vcore_slot_free_spare_calls(slot);
	vcore_slot_index_free(slot);
	ops->lock_destroy(priv, slot->lock);
	ops->free(priv, slot);
}

/* ---- files ---- */

struct vcore_file *vcore_file_open_err(struct vcore_slot *slot,
				       enum vcore_file_kind kind,
				       void *host_priv, int *err)
{
	struct vcore_file *file;
	vcore_bool uvm = kind == VCORE_FILE_UVM, full;

	*err = -VCORE_EINVAL;
	if (kind != VCORE_FILE_CTL && kind != VCORE_FILE_DEV && !uvm)
		return VCORE_NULL;
	*err = -VCORE_ENOMEM;
	file = slot->ops->zalloc(slot->priv, sizeof(*file));
	if (!file)
		return VCORE_NULL;
	file->slot = slot;
	file->kind = kind;
	file->host_priv = host_priv;
	if (vcore_uvm_external_open(file)) {
		slot->ops->free(slot->priv, file);
		return VCORE_NULL;
	}
	vcore_lock(slot);
	full = uvm && slot->n_uvm_files >= VCORE_SLOT_MAX_UVM_FILES;
	if (!full) {
		slot->n_uvm_files += uvm;
		file->next = slot->files;
		if (slot->files)
			slot->files->prev = file;
		slot->files = file;
		slot->stats.files++;
	}
	vcore_unlock(slot);
	if (full) {
		vcore_logf(slot, VCORE_LOG_INFO,
			   "refused a UVM file: the slot has %u open",
			   (unsigned int)VCORE_SLOT_MAX_UVM_FILES);
		vcore_uvm_external_close(file);
		slot->ops->free(slot->priv, file);
		*err = -VCORE_EMFILE;
		return VCORE_NULL;
	}
	*err = 0;
	return file;
}

struct vcore_file *vcore_file_open(struct vcore_slot *slot,
				   enum vcore_file_kind kind, void *host_priv)
{
	int err;

	return vcore_file_open_err(slot, kind, host_priv, &err);
}

/* @bytes of @file's charged UVM mappings went. Slot lock held. */
static void uvm_unmap_locked(struct vcore_file *file, vcore_u64 bytes)
{
	if (bytes > file->uvm_mapped)
		bytes = file->uvm_mapped;
	file->uvm_mapped -= bytes;
	vcore_charge_refund(file->slot, bytes);
}

void vcore_file_close(struct vcore_file *file)
{
	struct vcore_slot *slot;

	if (!file)
		return;
	slot = file->slot;
	vcore_lock(slot);
	/* The driver dropped the file's mappings before its last reference
	 * (each holds the file). */
	uvm_unmap_locked(file, file->uvm_mapped);
	/* rm_cleanup_file_private frees every client of this file
	 * (osapi.c:2858-2920, abi.md §9.1). */
	vcore_obj_free_file_clients_locked(slot, file);
	/* The driver's export objects go with the export file's last
	 * reference (rmobjexportimport.c, RmFreeObjExportHandle). */
	vcore_export_holds_free_locked(slot, file);
	if (file->prev)
		file->prev->next = file->next;
	else
		slot->files = file->next;
	if (file->next)
		file->next->prev = file->prev;
	slot->stats.files--;
	if (file->kind == VCORE_FILE_UVM)
		slot->n_uvm_files--;
	vcore_note_peak_locked(slot);
	vcore_unlock(slot);
	vcore_uvm_external_close(file);
	slot->ops->free(slot->priv, file);
}

void *vcore_file_priv(const struct vcore_file *file)
{
	return file->host_priv;
}

enum vcore_file_kind vcore_file_kind(const struct vcore_file *file)
{
	return file->kind;
}

/* ---- managed memory ---- */

/* The managed-memory policy in force. Slot lock held. */
static enum vcore_managed_policy managed_policy_locked(struct vcore_slot *slot)
{
	enum vcore_managed_policy p = slot->cfg.managed_policy;

	if (p == VCORE_MANAGED_DEFAULT)
		p = vcore_slot_has_quota(slot) ? VCORE_MANAGED_REFUSE
					       : VCORE_MANAGED_ALLOW_UNCOUNTED;
	return p;
}

vcore_bool vcore_managed_refused(struct vcore_slot *slot)
{
	vcore_bool refused;

	vcore_lock(slot);
	refused = managed_policy_locked(slot) == VCORE_MANAGED_REFUSE;
	if (refused)
		slot->stats.uvm_mmap_refused++;
	vcore_unlock(slot);
	return refused;
}

int vcore_uvm_map(struct vcore_file *file, vcore_u64 length, vcore_u64 *charged)
{
	struct vcore_slot *slot;
	int err;

	*charged = 0;
	if (!file || file->kind != VCORE_FILE_UVM)
		return -VCORE_EINVAL;
	slot = file->slot;
	vcore_lock(slot);
	if (managed_policy_locked(slot) != VCORE_MANAGED_REFUSE) {
		vcore_unlock(slot);
		return 0;
	}
	err = vcore_charge_try_locked(slot, length);
	if (err) {
		slot->stats.denied++;
		slot->stats.denied_quota++;
	} else {
		file->uvm_mapped += length;
		*charged = length;
		vcore_note_peak_locked(slot);
	}
	vcore_unlock(slot);
	if (err) {
		vcore_logf(
			slot, VCORE_LOG_INFO,
			"refused a managed-memory mapping (mmap of "
			"nvidia-uvm, %llu bytes): video memory quota exceeded",
			(unsigned long long)length);
		return -VCORE_ENOMEM;
	}
	return 0;
}

void vcore_uvm_unmap(struct vcore_file *file, vcore_u64 bytes)
{
	if (!file || file->kind != VCORE_FILE_UVM)
		return;
	vcore_lock(file->slot);
	uvm_unmap_locked(file, bytes);
	vcore_unlock(file->slot);
}
