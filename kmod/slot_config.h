/* SPDX-License-Identifier: GPL-2.0 */
/*
 * A slot's label and settings. The settings are the schema's rows
 * (uapi/vgpu_slot_fields.h), one member each, named as the row: netlink
 * (genl.c, genl_slot.c), sysfs (sysfs.c), updates (slot.c) and the filter
 * core's slot (core_slot.c) walk or read the same rows, so a setting added to
 * the schema is served everywhere or the module does not build. Numbers have
 * the row's wire type; an enum is its u32 value.
 */
#ifndef VGPU_KMOD_SLOT_CONFIG_H
#define VGPU_KMOD_SLOT_CONFIG_H

#include <linux/bits.h>
#include <linux/types.h>

#include "../uapi/vgpu_genl.h"
#include "../uapi/vgpu_slot_fields.h"

struct vgpu_slot_config {
	char name[VGPU_SLOT_NAME_LEN];
#define VGPU_CFG_NUMBER_MEMBER(field, wire, unit, def, lo, hi, attr, env)      \
	wire field;
	VGPU_SLOT_NUMBERS(VGPU_CFG_NUMBER_MEMBER)
#undef VGPU_CFG_NUMBER_MEMBER
#define VGPU_CFG_ENUM_MEMBER(field, cxx_type, values, def, sentinel, attr,     \
			     env)                                              \
	u32 field;
	VGPU_SLOT_ENUMS(VGPU_CFG_ENUM_MEMBER)
#undef VGPU_CFG_ENUM_MEMBER
};

/* Which config fields vgpu_slot_update replaces: VGPU_CFG(name),
 * VGPU_CFG(<setting>). */
/* The X-macro lists are not statements: kept as written. */
/* clang-format off */
enum vgpu_cfg_bit {
	VGPU_CFG_BIT_name,
#define VGPU_CFG_BIT_OF(field, ...) VGPU_CFG_BIT_##field,
	VGPU_SLOT_NUMBERS(VGPU_CFG_BIT_OF)
	VGPU_SLOT_ENUMS(VGPU_CFG_BIT_OF)
#undef VGPU_CFG_BIT_OF
	VGPU_CFG_BITS
};
/* clang-format on */
#define VGPU_CFG(field) BIT(VGPU_CFG_BIT_##field)

#endif /* VGPU_KMOD_SLOT_CONFIG_H */
