// SPDX-License-Identifier: GPL-2.0 OR MIT
/*
 * fmt.c - a small snprintf for log lines. The core includes no libc or
 * kernel header (vcore_types.h), so it formats its own messages: %s %c %d
 * %u %x %ld %lu %lx %lld %llu %llx, with an optional '0' flag and width.
 */
#include "vcore_internal.h"

struct out {
	char *buf;
	vcore_size_t len;
	vcore_size_t pos;
};

static void put(struct out *o, char c)
{
	if (o->pos + 1 < o->len)
		o->buf[o->pos] = c;
	o->pos++;
}

static void put_num(struct out *o, vcore_u64 v, unsigned int base,
		    vcore_bool neg, unsigned int width, char padc)
{
	char tmp[24];
	unsigned int n = 0;

	do {
		unsigned int d = (unsigned int)(v % base);

		tmp[n++] = (char)(d < 10 ? '0' + d : 'a' + d - 10);
		v /= base;
	} while (v && n < sizeof(tmp));
	if (neg)
		tmp[n < sizeof(tmp) ? n++ : n - 1] = '-';
	while (width > n) {
		put(o, padc);
		width--;
	}
	while (n)
		put(o, tmp[--n]);
}

int vcore_vsnprintf(char *buf, vcore_size_t len, const char *fmt,
		    __builtin_va_list ap)
{
	struct out o = {buf, len, 0};

	for (; *fmt; fmt++) {
		unsigned int width = 0, lng = 0;
		char padc = ' ';
		vcore_u64 u;
		vcore_s64 s;

		if (*fmt != '%') {
			put(&o, *fmt);
			continue;
		}
		fmt++;
		if (*fmt == '0') {
			padc = '0';
			fmt++;
		}
		while (*fmt >= '0' && *fmt <= '9')
			width = width * 10 + (unsigned int)(*fmt++ - '0');
		while (*fmt == 'l') {
			lng++;
			fmt++;
		}
		switch (*fmt) {
		case 's': {
			const char *str = __builtin_va_arg(ap, const char *);

			if (!str)
				str = "(null)";
			while (*str)
				put(&o, *str++);
			break;
		}
		case 'c':
			put(&o, (char)__builtin_va_arg(ap, int));
			break;
		case 'd':
			if (lng >= 2)
				s = __builtin_va_arg(ap, long long);
			else if (lng == 1)
				s = __builtin_va_arg(ap, long);
			else
				s = __builtin_va_arg(ap, int);
			put_num(&o,
				s < 0 ? (vcore_u64)0 - (vcore_u64)s
				      : (vcore_u64)s,
				10, s < 0, width, padc);
			break;
		case 'u':
		case 'x':
			if (lng >= 2)
				u = __builtin_va_arg(ap, unsigned long long);
			else if (lng == 1)
				u = __builtin_va_arg(ap, unsigned long);
			else
				u = __builtin_va_arg(ap, unsigned int);
			put_num(&o, u, *fmt == 'x' ? 16 : 10, 0, width, padc);
			break;
		case '%':
			put(&o, '%');
			break;
		case '\0':
			fmt--;
			break;
		default:
			put(&o, '%');
			put(&o, *fmt);
			break;
		}
	}
	if (o.len)
		o.buf[o.pos < o.len ? o.pos : o.len - 1] = '\0';
	return (int)o.pos;
}

int vcore_snprintf(char *buf, vcore_size_t len, const char *fmt, ...)
{
	__builtin_va_list ap;
	int n;

	__builtin_va_start(ap, fmt);
	n = vcore_vsnprintf(buf, len, fmt, ap);
	__builtin_va_end(ap);
	return n;
}

vcore_size_t vcore_strnlen(const char *s, vcore_size_t max)
{
	vcore_size_t n = 0;

	while (n < max && s[n])
		n++;
	return n;
}

int vcore_strncmp(const char *a, const char *b, vcore_size_t n)
{
	for (; n; n--, a++, b++) {
		if (*a != *b)
			return (unsigned char)*a - (unsigned char)*b;
		if (!*a)
			return 0;
	}
	return 0;
}
