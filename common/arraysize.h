/*
 * arraysize.h - ARRAY_SIZE(a), the number of elements of array a.
 *
 * Given a pointer instead of an array, sizeof would quietly divide the
 * pointer's size; NOT_A_POINTER makes that a compile error (an array of
 * negative size) and is 0 otherwise.
 */
#ifndef KCTL_ARRAYSIZE_H
#define KCTL_ARRAYSIZE_H

#define NOT_A_POINTER(a)                                                                           \
	(0 * sizeof(char[1 - 2 * __builtin_types_compatible_p(__typeof__(a), __typeof__(&(a)[0]))]))
#define ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]) + NOT_A_POINTER(a))

#endif
